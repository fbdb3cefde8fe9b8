"""Pulling: the team's procedures and lessons of the shared projects into the local database,
so the SessionStart digest reads them locally and works offline (DESIGN.md §9).

Each pull replaces a project's pulled rows in one local transaction: what the team archived or
forgot disappears here too. A project the team database does not know yet has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, Table, text

from remem.db import schema
from remem.db.columns import names
from remem.db.driver import with_ids
from remem.db.engine import READ_ONLY

SELECT_LINKS = text("SELECT project_id, project_key FROM team_links ORDER BY project_id")
UNLINKED = tuple(
    text(f"DELETE FROM {table.name} WHERE project_id NOT IN (SELECT project_id FROM team_links)")
    for table in schema.tables_marked("pulled")
)
TEAM_PROJECT = text("SELECT id FROM projects WHERE root = :key")


def _shared(copy: Table, source: Table) -> str:
    """The columns a pulled copy has of the team's table (remem/db/schema.py builds them from
    it), but its own id and project."""
    return names(
        tuple(
            column.name
            for column in copy.columns
            if column.name in source.c and column.name not in ("id", "project_id")
        )
    )


TEAM_PROCEDURES = text(
    f"SELECT id, {_shared(schema.team_procedures, schema.procedures)} FROM procedures "
    "WHERE project_id = :project_id AND status != 'archived' ORDER BY id"
)
# The machines a procedure's evidence ran on: its sessions' machines.
TEAM_MACHINES = with_ids(
    "SELECT pe.procedure_id, count(DISTINCT s.machine) FROM procedure_evidence pe "
    "JOIN captured_events e ON e.id = pe.event_id JOIN sessions s ON s.id = e.session_id "
    "WHERE pe.procedure_id IN :ids GROUP BY pe.procedure_id"
)
# Enough for every pitfall and known error the digest shows, newest first.
LESSONS_PULLED = 500
TEAM_LESSONS = text(
    f"SELECT id, {_shared(schema.team_lessons, schema.lessons)} FROM lessons "
    "WHERE project_id = :project_id ORDER BY resolved_at DESC, id DESC LIMIT :limit"
)
CLEAR = tuple(
    text(f"DELETE FROM {table.name} WHERE project_id = :project_id")
    for table in schema.tables_marked("pulled")
)
# Words forgotten anywhere on the team (remem/record/forgotten.py): this machine's hook masks
# them too from the next pull on.
TEAM_FORGOTTEN = text("SELECT bucket, salt, digest, forgotten_at FROM forgotten_texts")
KEEP_FORGOTTEN = text(
    "INSERT INTO forgotten_texts (bucket, salt, digest, forgotten_at) "
    "VALUES (:bucket, :salt, :digest, :forgotten_at) ON CONFLICT (digest) DO NOTHING"
)
MARK_PULLED = text("UPDATE team_links SET pulled_at = :now WHERE project_id = :project_id")


@dataclass(frozen=True)
class PullReport:
    projects: int
    procedures: int
    lessons: int


def pull(local: Engine, team: Engine, now: float) -> PullReport:
    with local.connect().execution_options(**{READ_ONLY: True}) as connection:
        links = connection.execute(SELECT_LINKS).all()
    pulled_procedures = pulled_lessons = 0
    for project_id, key in links:
        procedures, lessons = _read_team(team, key)
        with local.begin() as connection:
            for statement in CLEAR:
                connection.execute(statement, {"project_id": project_id})
            if procedures:
                rows = [{**row, "project_id": project_id, "pulled_at": now} for row in procedures]
                connection.execute(schema.team_procedures.insert(), rows)
            if lessons:
                rows = [{**row, "project_id": project_id, "pulled_at": now} for row in lessons]
                connection.execute(schema.team_lessons.insert(), rows)
            connection.execute(MARK_PULLED, {"project_id": project_id, "now": now})
        pulled_procedures += len(procedures)
        pulled_lessons += len(lessons)
    with local.begin() as connection:
        for statement in UNLINKED:
            connection.execute(statement)
    _pull_forgotten(local, team)
    return PullReport(len(links), pulled_procedures, pulled_lessons)


def _pull_forgotten(local: Engine, team: Engine) -> None:
    with team.connect().execution_options(**{READ_ONLY: True}) as connection:
        rows = [dict(row._mapping) for row in connection.execute(TEAM_FORGOTTEN)]
    if rows:
        with local.begin() as connection:
            connection.execute(KEEP_FORGOTTEN, rows)


def _read_team(team: Engine, key: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with team.connect().execution_options(**{READ_ONLY: True}) as connection:
        project = connection.execute(TEAM_PROJECT, {"key": key}).scalar()
        if project is None:
            return [], []
        procedures = [
            dict(row._mapping)
            for row in connection.execute(TEAM_PROCEDURES, {"project_id": project})
        ]
        machines: dict[int, int] = {}
        if procedures:
            ids = [row["id"] for row in procedures]
            machines = dict(connection.execute(TEAM_MACHINES, {"ids": ids}).tuples().all())
        lessons = [
            dict(row._mapping)
            for row in connection.execute(
                TEAM_LESSONS, {"project_id": project, "limit": LESSONS_PULLED}
            )
        ]
    for row in procedures:
        row["team_procedure_id"] = row.pop("id")
        row["machines"] = max(machines.get(row["team_procedure_id"], 0), 1)
    for row in lessons:
        row["team_lesson_id"] = row.pop("id")
    return procedures, lessons
