"""The team's procedures as they were pulled into the local database (remem/team/pull.py), for
`remem procedures team` and the MCP server. Stdlib only, like the digest that also reads them.
"""

from __future__ import annotations

import json

from remem.procedures.digest import needs_credentials

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from remem.db.snapshot import Execute


class TeamProcedure:
    """A team procedure as it was pulled into this database, whatever its status: what
    `remem procedures team` shows. Times are epoch seconds; `id` is this database's row."""

    __slots__ = (
        "body",
        "branch",
        "branches",
        "command",
        "confidence",
        "directory",
        "distinct_sessions",
        "files",
        "files_more",
        "first_verified_at",
        "id",
        "last_verified_at",
        "machines",
        "project",
        "pulled_at",
        "scope",
        "status",
        "team_procedure_id",
        "verified_runs",
        "workflow",
    )

    def __init__(self, row: Sequence[Any]) -> None:
        (
            self.id,
            self.project,
            self.team_procedure_id,
            self.scope,
            branch,
            self.directory,
            self.workflow,
            self.command,
            self.status,
            self.confidence,
            self.verified_runs,
            self.distinct_sessions,
            self.machines,
            branches,
            files,
            self.files_more,
            self.first_verified_at,
            self.last_verified_at,
            self.body,
            self.pulled_at,
        ) = row
        self.branch: str | None = None if self.scope == "project" else branch
        self.branches: list[str] = json.loads(branches)
        self.files: list[str] = json.loads(files)

    @property
    def needs_credentials(self) -> bool:
        return needs_credentials(self.command)

    def as_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__slots__}
        data["needs_credentials"] = self.needs_credentials
        return data


_TEAM_PROCEDURES = (
    "SELECT t.id, pr.root, t.team_procedure_id, t.scope, t.branch, t.directory, t.workflow, "
    "t.command, t.status, t.confidence, t.verified_runs, t.distinct_sessions, t.machines, "
    "t.branches, t.files, t.files_more, t.first_verified_at, t.last_verified_at, t.body, "
    "t.pulled_at FROM team_procedures t JOIN projects pr ON pr.id = t.project_id WHERE {where} "
    "ORDER BY t.confidence DESC, t.last_verified_at DESC, t.id"
)


def read_team_procedures(execute: Execute, root: str) -> list[TeamProcedure]:
    """The team's procedures pulled for the project, by confidence, then most recently
    verified, then id."""
    rows = execute(_TEAM_PROCEDURES.format(where="pr.root = :root"), {"root": root})
    return [TeamProcedure(row) for row in rows]


def read_team_procedure(execute: Execute, row_id: int) -> TeamProcedure | None:
    rows = execute(_TEAM_PROCEDURES.format(where="t.id = :id"), {"id": row_id})
    return TeamProcedure(rows[0]) if rows else None
