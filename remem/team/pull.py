"""Pulling: the team's procedures and lessons of the shared projects into the local database,
so the SessionStart digest reads them locally and works offline (DESIGN.md §9).

Each pull replaces a project's pulled rows in one local transaction: what the team archived or
forgot disappears here too. A project the team database does not know yet has none.

Whoever can write the team database writes what every member's agent is told, so its rows are
data, never remem's own text: a procedure's figures are bounded by the evidence the team holds
for it and its body is rendered here from its fields; the words the team forgot are accepted
up to bounds per forget, per machine and in all, and those the team no longer holds go here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Engine, Table, text

from remem.config import Settings
from remem.db import schema
from remem.db.columns import names
from remem.db.driver import with_ids
from remem.db.engine import READ_ONLY
from remem.team.made_here import made_here

CHUNK = 500

SELECT_LINKS = text(
    "SELECT l.project_id, l.project_key, p.root FROM team_links l "
    "JOIN projects p ON p.id = l.project_id ORDER BY l.project_id"
)
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
# What a procedure's evidence holds: its runs, their sessions and machines, first and last.
TEAM_EVIDENCE = with_ids(
    "SELECT pe.procedure_id, count(*), count(DISTINCT e.session_id), count(DISTINCT s.machine), "
    "min(pe.verified_at), max(pe.verified_at) FROM procedure_evidence pe "
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
# them too from the next pull on. Oldest first, so that a flood of new rows displaces none, at
# most :per_forget of one forget and :per_machine of one machine.
TEAM_FORGOTTEN = text(
    "SELECT bucket, salt, digest, forgotten_at, machine, forget_key FROM ("
    " SELECT *, row_number() OVER (PARTITION BY machine ORDER BY id) AS nth_of_machine FROM ("
    "  SELECT id, bucket, salt, digest, forgotten_at, machine, forget_key, row_number() OVER"
    "  (PARTITION BY machine, forget_key ORDER BY id) AS nth_of_forget FROM forgotten_texts"
    " ) of_forget WHERE nth_of_forget <= :per_forget"
    ") of_machine WHERE nth_of_machine <= :per_machine ORDER BY id LIMIT :total"
)
PULLED_FORGOTTEN = text("SELECT digest FROM forgotten_texts WHERE pulled_at IS NOT NULL")
GONE_FORGOTTEN = with_ids(
    "DELETE FROM forgotten_texts WHERE pulled_at IS NOT NULL AND digest IN :ids"
)
KEEP_FORGOTTEN = text(
    "INSERT INTO forgotten_texts (bucket, salt, digest, forgotten_at, machine, forget_key, "
    "pulled_at) VALUES (:bucket, :salt, :digest, :forgotten_at, :machine, :forget_key, :now) "
    "ON CONFLICT (digest) DO NOTHING"
)
MARK_PULLED = text("UPDATE team_links SET pulled_at = :now WHERE project_id = :project_id")


@dataclass(frozen=True)
class PullReport:
    projects: int
    procedures: int
    lessons: int
    forgotten: int = 0  # words the team forgot, held here after the pull


@dataclass(frozen=True)
class Bounds:
    """How many of the team's forgotten words a pull accepts."""

    per_forget: int
    per_machine: int
    total: int

    @classmethod
    def of(cls, settings: Settings) -> Bounds:
        return cls(
            settings.team_forgotten_per_forget,
            settings.team_forgotten_per_machine,
            settings.team_forgotten_total,
        )


def pull(local: Engine, team: Engine, now: float, settings: Settings) -> PullReport:
    with local.connect().execution_options(**{READ_ONLY: True}) as connection:
        links = connection.execute(SELECT_LINKS).all()
    pulled_procedures = pulled_lessons = 0
    for project_id, key, root in links:
        procedures, lessons = _read_team(team, key)
        procedures = made_here(procedures, root, now, settings.max_age_s)
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
    forgotten = _pull_forgotten(local, team, now, Bounds.of(settings))
    return PullReport(len(links), pulled_procedures, pulled_lessons, forgotten)


def _pull_forgotten(local: Engine, team: Engine, now: float, bounds: Bounds) -> int:
    """The team's forgotten words, within bounds, mirrored here: a record the team no longer
    holds (or holds past the bounds) goes."""
    with team.connect().execution_options(**{READ_ONLY: True}) as connection:
        rows = [
            {**row._mapping, "now": now}
            for row in connection.execute(TEAM_FORGOTTEN, asdict(bounds))
        ]
    accepted = {row["digest"] for row in rows}
    with local.begin() as connection:
        held = set(connection.execute(PULLED_FORGOTTEN).scalars())
        gone = sorted(held - accepted)
        for start in range(0, len(gone), CHUNK):
            connection.execute(GONE_FORGOTTEN, {"ids": gone[start : start + CHUNK]})
        new = [row for row in rows if row["digest"] not in held]
        if new:
            connection.execute(KEEP_FORGOTTEN, new)
    return len(accepted)


def _read_team(team: Engine, key: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with team.connect().execution_options(**{READ_ONLY: True}) as connection:
        project = connection.execute(TEAM_PROJECT, {"key": key}).scalar()
        if project is None:
            return [], []
        procedures = [
            dict(row._mapping)
            for row in connection.execute(TEAM_PROCEDURES, {"project_id": project})
        ]
        held: dict[int, tuple[Any, ...]] = {}
        for start in range(0, len(procedures), CHUNK):
            ids = [row["id"] for row in procedures[start : start + CHUNK]]
            held.update(
                (row[0], tuple(row[1:])) for row in connection.execute(TEAM_EVIDENCE, {"ids": ids})
            )
        lessons = [
            dict(row._mapping)
            for row in connection.execute(
                TEAM_LESSONS, {"project_id": project, "limit": LESSONS_PULLED}
            )
        ]
    for row in procedures:
        row["team_procedure_id"] = row.pop("id")
        row["evidence"] = held.get(row["team_procedure_id"])
    for row in lessons:
        row["team_lesson_id"] = row.pop("id")
    return procedures, lessons
