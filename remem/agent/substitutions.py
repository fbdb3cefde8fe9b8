"""What passed instead of the commands that fail here (DESIGN.md §6, substitutions): read for
the digest (remem.agent.context), `remem procedures errors` and `show`, and the MCP tools.

Stdlib only, without `typing` or `dataclasses` at run time: the hook imports it.
"""

from __future__ import annotations

from remem.db.vocabulary import ACTIVE
from remem.record.frozen import Record, in_list

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from remem.db.snapshot import Execute


class Substitution(Record):
    """A workflow that failed here and another, for the same purpose, that passed after it in
    the same session with no edit in between: "instead of `workflow`, `instead` worked"; or,
    when `workflow` could not run here (as its wrappers ran it: `rtk bun run test`), the first
    sibling that ran after it, in any session, passed or red."""

    project: str
    directory: str
    workflow: str
    error: str | None  # the newest failure's salient line
    error_key: str | None
    failures: int
    sessions: int  # the sessions it failed in here, as the PreToolUse warning counts them
    last_seen_at: float
    instead: str  # the command that passed, as it was run the last time
    instead_workflow: str
    instead_directory: str  # where it passed: `directory`, or where the same command works
    instead_procedure_id: int | None = None  # its active procedure, when one is verified
    instead_verified_runs: int | None = None
    kind: str = "substitution"
    # What that procedure runs, changed or gone since it was last verified (`Makefile (test)`).
    instead_changed_inputs: tuple[str, ...] = ()
    id: int = 0  # its newest row
    # The newest substitute passed; else it ran red (a test failing is still running).
    instead_passed: bool = True

    def recorded_text(self) -> str:
        """What a query's words are looked for in."""
        return "\n".join((self.workflow, self.error or "", self.instead))


SUBSTITUTIONS_SHOWN = 5
_SUBSTITUTIONS = (
    "SELECT pr.root, s.directory, s.failed_workflow_hash, s.substitute_workflow_hash, "
    "s.failed_workflow, s.error, s.error_key, s.session_id, s.found_at, s.substitute_command, "
    "s.substitute_workflow, s.substitute_directory, s.id, s.project_id, s.substitute_event_id, "
    "s.failed_at FROM substitutions s "
    "JOIN projects pr ON pr.id = s.project_id "
    "WHERE 1 = 1{where} ORDER BY s.found_at DESC, s.id DESC LIMIT 2000"
)
# Whether what runs instead passed, or ran red: a test failing is still running.
SUBSTITUTE_PASSED = "SELECT 1 FROM verifications WHERE event_id = :event LIMIT 1"
RAN_RED = "it runs here; its run failed on the code, not the command"
# A failing workflow that passed where it failed since its last failure runs here now: what
# ran instead of it is no longer news.
PASSED_SINCE = (
    "SELECT 1 FROM verifications WHERE project_id = :project AND directory = :directory "
    "AND workflow_hash = :hash AND verified_at > :at LIMIT 1"
)
# The sessions a workflow failed in, in a directory of a project: one count, whichever reader
# (the digest, advice at a failure, the warning before a command) says it.
FAILED_SESSIONS = (
    "SELECT count(DISTINCT session_id) FROM attempts WHERE project_id = :project "
    "AND directory = :directory AND workflow_hash = :hash"
)
_ACTIVE_WORKFLOWS = (
    "SELECT pr.root, p.directory, p.workflow_hash, p.id, p.verified_runs, p.inputs "
    "FROM procedures p "
    "JOIN projects pr ON pr.id = p.project_id WHERE p.status = :active "
    "AND p.workflow_hash IN ({hashes}){where} ORDER BY p.verified_runs DESC, p.id"
)


def read_substitutions(
    execute: Execute, root: str | None, workflow_hashes: Sequence[str] | None = None
) -> list[Substitution]:
    """The substitutions of a project (None: of every project), one per (failing workflow,
    workflow that passed instead), most sessions first, then newest; `workflow_hashes`: only
    those where either side is one of them. A failing workflow that is itself verified now, or
    passed since it last failed, is no longer shown failing."""
    params: dict[str, Any] = {}
    where = ""
    if root is not None:
        where, params["root"] = " AND pr.root = :root", root
    if workflow_hashes is not None:
        if not workflow_hashes:
            return []
        hashes = in_list("w", workflow_hashes, params)
        where += (
            f" AND (s.failed_workflow_hash IN ({hashes}) "
            f"OR s.substitute_workflow_hash IN ({hashes}))"
        )
    found: dict[tuple[str, str, str, str, str], list[Any]] = {}
    for row in execute(_SUBSTITUTIONS.format(where=where), params):
        found.setdefault((*row[:4], row[11]), []).append(row)
    if not found:
        return []
    active = _active_workflows(execute, root, {h for key in found for h in key[2:4]})
    result = []
    for (project, directory, failed_hash, substitute_hash, ran_in), rows in found.items():
        if (project, directory, failed_hash) in active:
            continue
        newest = rows[0]
        since = {"project": newest[13], "directory": directory, "hash": failed_hash}
        if execute(PASSED_SINCE, {**since, "at": max(row[15] for row in rows)}):
            continue
        procedure_id, runs, inputs = active.get((project, ran_in, substitute_hash), _NONE)
        # Counted where it failed, by the index on its workflow: as the warning before it says.
        params = {"project": newest[13], "directory": directory, "hash": failed_hash}
        failed = int(execute(FAILED_SESSIONS, params)[0][0])
        sessions = max(len({row[7] for row in rows}), failed)
        passed = procedure_id is not None or bool(execute(SUBSTITUTE_PASSED, {"event": newest[14]}))
        result.append(
            Substitution(
                project, directory, newest[4], newest[5], newest[6], len(rows), sessions,
                newest[8], newest[9], newest[10], ran_in, procedure_id, runs,
                instead_changed_inputs=_changed(inputs, project), id=newest[12],
                instead_passed=passed,
            )
        )  # fmt: skip
    result.sort(key=lambda s: (-s.sessions, -s.last_seen_at, s.workflow, s.instead_workflow))
    return result


_NONE = (None, None, "[]")


def _changed(inputs: str, root: str) -> tuple[str, ...]:
    from remem.record.inputs import check

    found = check(inputs, root)
    return found.changed + found.missing


def _active_workflows(
    execute: Execute, root: str | None, hashes: set[str]
) -> dict[tuple[str, str, str], tuple[int, int, str]]:
    """(project, directory, workflow hash) -> the id, verified runs and inputs of its most
    verified active procedure, on any branch."""
    params: dict[str, Any] = {"active": ACTIVE}
    where = ""
    if root is not None:
        where, params["root"] = " AND pr.root = :root", root
    query = _ACTIVE_WORKFLOWS.format(hashes=in_list("h", sorted(hashes), params), where=where)
    found: dict[tuple[str, str, str], tuple[int, int, str]] = {}
    for project, directory, workflow_hash, procedure_id, runs, inputs in execute(query, params):
        found.setdefault((project, directory, workflow_hash), (procedure_id, runs, inputs))
    return found


def digest_substitutions(execute: Execute, root: str) -> list[Substitution]:
    """For each failing workflow, what the digest says works instead: a verified procedure
    first, then what passed in the most sessions."""
    shown: dict[tuple[str, str], Substitution] = {}
    ranked = sorted(
        read_substitutions(execute, root),
        key=lambda s: (s.instead_procedure_id is None, -s.sessions, -s.last_seen_at),
    )
    for substitution in ranked:
        shown.setdefault((substitution.directory, substitution.workflow), substitution)
    return list(shown.values())[:SUBSTITUTIONS_SHOWN]
