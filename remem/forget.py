"""Forgetting: the way out when a secret got through redaction anyway.

What goes is chosen by event id, by procedure (its evidence and every run of its workflow
group) or by a regular expression over everything captured. The events and the rows derived
from them are deleted; everything derived is then re-derived from what remains by
`procedures.rebuild`. Archived procedures survive a rebuild, so those that match are deleted
here. Spool, dead-letter and log lines that carry what was forgotten are rewritten away (the
spool reads and rewrites its own files), and the caller then runs `db.engine.compact`, so that
the bytes leave the database file too. The team's memory pulled here goes when it matches; with a
team, the caller then forgets the same on the team database (remem/team/forget.py) and pulls
again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, text

from remem import files
from remem.agent.json_contract import rfc3339
from remem.capture import spool
from remem.capture.redact import redact_text
from remem.config import Settings
from remem.db.engine import READ_ONLY, begin_secure_delete
from remem.errors import NotFound, RememError
from remem.procedures import rebuild
from remem.procedures.groups import Group

EXCERPT_CHARS = 100
MASK = "[forgotten]"
CHUNK = 500  # ids per IN (...): far below SQLite's bound-parameter limit

# Where captured text is kept, and what a match there makes us forget: (kind, id, rows, text).
# Derived rows are searched too: a rebuild would otherwise derive the same text again.
MATCHED = (
    (
        "event",
        "r.id",
        "captured_events r JOIN sessions s ON s.id = r.session_id",
        "r.command, r.payload, r.output_excerpt, r.error_excerpt, r.cwd, r.files, r.branch, "
        "r.directory, r.transcript_path, s.session_key",
    ),
    ("event", "r.event_id", "verifications r", "r.command, r.workflow"),
    ("event", "r.event_id", "unverified_runs r", "r.command, r.workflow"),
    (
        "event",
        "r.event_id",
        "attempts r",
        "r.command, r.workflow, r.error_excerpt, r.salient_error, r.files",
    ),
    (
        "lesson",
        "r.id",
        "lessons r",
        "r.first_error, r.last_error, r.error_key, r.fix_files, r.body, r.pitfall",
    ),
    (
        "procedure",
        "r.id",
        "procedures r",
        "r.command, r.workflow, r.variants, r.body, r.files, r.branches, r.branch, r.directory",
    ),
    # Pulled from the team: deleted, never re-derived; the next pull brings back what the team
    # still holds.
    (
        "team_procedure",
        "r.id",
        "team_procedures r",
        "r.command, r.workflow, r.body, r.files, r.branches, r.branch, r.directory",
    ),
    (
        "team_lesson",
        "r.id",
        "team_lessons r",
        "r.last_error, r.error_key, r.repeats, r.fix_files, r.branch, r.directory",
    ),
)
PULLED = {
    "team_procedure": "SELECT id, status AS label, command AS shown FROM team_procedures",
    "team_lesson": "SELECT id, branch AS label, "
    "coalesce(last_error, error_key, workflow_hash) AS shown FROM team_lessons",
}
RUN_TABLES = ("verifications", "attempts", "unverified_runs")


class BadPattern(RememError):
    def __init__(self, pattern: str, problem: str) -> None:
        super().__init__(f"--match {pattern!r} is not a Python regular expression: {problem}.")


def compile_pattern(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise BadPattern(pattern, str(exc)) from None


@dataclass(frozen=True)
class Selection:
    event_ids: tuple[int, ...] = ()
    procedure_ids: tuple[int, ...] = ()
    pattern: str | None = None
    project: str | None = None  # a project root: --match only looks there


@dataclass(frozen=True)
class Item:
    """An event or a procedure that goes, with a redacted excerpt of its command."""

    id: int
    label: str  # the event's time, the procedure's status
    command: str

    def as_json(self, label: str) -> dict[str, Any]:
        return {"id": self.id, label: self.label, "command": self.command}


@dataclass(frozen=True)
class Plan:
    events: tuple[Item, ...]
    procedures: tuple[Item, ...]  # deleted, whatever their status
    team_procedures: tuple[Item, ...]  # pulled from the team
    team_lessons: tuple[Item, ...]
    rederived_procedure_ids: tuple[int, ...]  # lose evidence and are re-derived
    task_errors: tuple[int, ...]  # tasks whose last error quotes the match
    spool_lines: dict[str, int]  # matching lines by file name
    log_lines: dict[str, int]
    lines: _Lines = field(repr=False)
    session_ids: tuple[int, ...] = field(repr=False)
    project_ids: tuple[int, ...] = field(repr=False)

    def empty(self) -> bool:
        return not (self.touches_database() or self.spool_lines or self.log_lines)

    def touches_database(self) -> bool:
        return bool(
            self.events
            or self.procedures
            or self.team_procedures
            or self.team_lessons
            or self.task_errors
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "events": [event.as_json("at") for event in self.events],
            "procedures": [procedure.as_json("status") for procedure in self.procedures],
            "team_procedures": [item.as_json("status") for item in self.team_procedures],
            "team_lessons": [item.as_json("branch") for item in self.team_lessons],
            "rederived_procedures": list(self.rederived_procedure_ids),
            "task_errors_cleared": len(self.task_errors),
            "spool_lines": self.spool_lines,
            "log_lines": self.log_lines,
        }


@dataclass(frozen=True)
class Forgotten:
    plan: Plan
    events_deleted: int
    procedures_deleted: int
    derived_rows_deleted: dict[str, int]
    pulled_rows_deleted: dict[str, int]  # the team's memory pulled here
    sessions_deleted: int
    projects_deleted: int
    rebuild: rebuild.RebuildReport | None

    def as_json(self) -> dict[str, Any]:
        return {
            **self.plan.as_json(),
            "events_deleted": self.events_deleted,
            "procedures_deleted": self.procedures_deleted,
            "derived_rows_deleted": self.derived_rows_deleted,
            "pulled_rows_deleted": self.pulled_rows_deleted,
            "sessions_deleted": self.sessions_deleted,
            "projects_deleted": self.projects_deleted,
            "rebuild": self.rebuild.as_dict() if self.rebuild else None,
        }


def plan(
    engine: Engine, settings: Settings, selection: Selection, machine_files: bool = True
) -> Plan:
    """What `forget` would delete, read without changing anything. Without machine_files
    (the team database) this machine's spool and logs are not looked at."""
    pattern = None if selection.pattern is None else compile_pattern(selection.pattern)
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        project_id = _project_id(connection, selection.project)
        _require(connection, "captured_events", selection.event_ids, "event")
        _require(connection, "procedures", selection.procedure_ids, "procedure")
        event_ids, procedure_ids = set(selection.event_ids), set(selection.procedure_ids)
        task_errors: tuple[int, ...] = ()
        found: dict[str, set[int]] = {kind: set() for kind in PULLED}
        if pattern is not None:
            found = _matching(connection, pattern, project_id)
            event_ids |= found["event"]
            procedure_ids |= found["procedure"]
            for lesson_id in found["lesson"]:
                event_ids.update(connection.execute(_STREAK_EVENTS, {"id": lesson_id}).scalars())
            task_errors = _matching_task_errors(connection, pattern)
        event_ids |= _procedure_events(connection, procedure_ids)
        events, keys, sessions, projects = _events(connection, event_ids, pattern)
        procedures = _procedures(connection, procedure_ids, pattern)
        pulled = {kind: _pulled(connection, kind, found[kind], pattern) for kind in PULLED}
        rederived = _rederived(connection, event_ids, procedure_ids)
    lines = _Lines(pattern, selection.project, frozenset(keys))
    logs = files.visible_files(settings.log_dir) if pattern and machine_files else []
    spooled = spool.spool_files(settings.spool_dir) if machine_files else []
    return Plan(
        events=events,
        procedures=procedures,
        team_procedures=pulled["team_procedure"],
        team_lessons=pulled["team_lesson"],
        rederived_procedure_ids=rederived,
        task_errors=task_errors,
        spool_lines=files.count_matching(spooled, lines.spool_line),
        log_lines=files.count_matching(logs, lines.log_line),
        lines=lines,
        session_ids=tuple(sorted(sessions)),
        project_ids=tuple(sorted(projects)),
    )


def forget(
    engine: Engine,
    settings: Settings,
    selection: Selection,
    now: float,
    machine_files: bool = True,
) -> Forgotten:
    """Delete what the selection names, re-derive what remains, rewrite the spool and the logs.
    The plan is made again under the spool's ingestion lock (a worker may have ingested a
    spooled line since the caller's dry run), which also keeps a worker from ingesting a line
    between our deleting its event and our rewriting its file. Without machine_files (the team
    database) the spool and the logs, forgotten by the local run, are left alone."""
    lock = spool.IngestLock(settings.spool_dir) if machine_files else nullcontext()
    with lock:
        found = plan(engine, settings, selection, machine_files)
        deleted = _delete(engine, found, now) if found.touches_database() else {}
        for name in found.spool_lines:
            spool.rewrite_without(os.path.join(settings.spool_dir, name), found.lines.spool_line)
    report, sessions, projects = None, 0, 0
    if found.events or found.procedures:
        report = rebuild.rebuild(engine, now, settings.ignore_commands)
        sessions, projects = _delete_orphans(engine, found)
    for name in found.log_lines:
        # A log writer takes no lock: what it appends meanwhile is kept, filtered.
        files.rewrite_without(os.path.join(settings.log_dir, name), found.lines.log_line)
    return Forgotten(
        plan=found,
        events_deleted=deleted.pop("captured_events", 0),
        procedures_deleted=deleted.pop("procedures", 0),
        pulled_rows_deleted={table: deleted.pop(table, 0) for table in PULLED_TABLES},
        derived_rows_deleted=deleted,
        sessions_deleted=sessions,
        projects_deleted=projects,
        rebuild=report,
    )


def _chunks(ids: Iterable[int]) -> Iterator[list[int]]:
    ordered = sorted(ids)
    for start in range(0, len(ordered), CHUNK):
        yield ordered[start : start + CHUNK]


def _in(sql: str) -> Any:
    return text(sql).bindparams(bindparam("ids", expanding=True))


def _project_id(connection: Connection, root: str | None) -> int | None:
    if root is None:
        return None
    found = connection.execute(text("SELECT id FROM projects WHERE root = :root"), {"root": root})
    project_id = found.scalar()
    if project_id is None:
        raise NotFound(f"No project {root} in the memory: give its root directory to --project.")
    return int(project_id)


def _require(connection: Connection, table: str, ids: tuple[int, ...], kind: str) -> None:
    found: set[int] = set()
    for chunk in _chunks(ids):
        found.update(
            connection.execute(
                _in(f"SELECT id FROM {table} WHERE id IN :ids"), {"ids": chunk}
            ).scalars()
        )
    missing = sorted(set(ids) - found)
    if missing:
        where = "remem procedures list --all" if kind == "procedure" else "remem procedures show ID"
        raise NotFound(f"No {kind} {missing[0]}: see `{where}` for the ids there are.")


def _matching(
    connection: Connection, pattern: re.Pattern[str], project_id: int | None
) -> dict[str, set[int]]:
    """Ids of what a match forgets, by kind. The events table may be large: rows are read in
    batches and searched here, SQLite having no regular expressions of its own."""
    found: dict[str, set[int]] = {kind: set() for kind, *_rest in MATCHED}
    for kind, key, rows, columns in MATCHED:
        sql = f"SELECT {key}, p.root, {columns} FROM {rows} JOIN projects p ON p.id = r.project_id"
        params: dict[str, Any] = {}
        if project_id is not None:
            sql += " WHERE r.project_id = :project_id"
            params["project_id"] = project_id
        result = connection.execute(text(sql).execution_options(yield_per=1000), params)
        found[kind].update(row[0] for row in result if _hit(pattern, row[1:]))
    return found


def _hit(pattern: re.Pattern[str], values: Iterable[Any]) -> bool:
    return any(isinstance(value, str) and pattern.search(value) for value in values)


# A lesson's failed attempts: the errors it quotes. Without them its streak is gone, and the
# success that closed it stays a verified run.
_STREAK_EVENTS = text(
    "SELECT a.event_id FROM attempts a JOIN lessons l ON a.project_id = l.project_id "
    "AND a.branch = l.branch AND a.directory = l.directory AND a.workflow_hash = l.workflow_hash "
    "AND a.resolved_by_event_id = l.resolved_by_event_id WHERE l.id = :id"
)


def _matching_task_errors(connection: Connection, pattern: re.Pattern[str]) -> tuple[int, ...]:
    """Tasks whose last error quotes the match: the task stays, its error text goes."""
    rows = connection.execute(
        text("SELECT id, last_error FROM extraction_tasks WHERE last_error IS NOT NULL")
    )
    return tuple(row[0] for row in rows if _hit(pattern, row[1:]))


def _procedure_events(connection: Connection, procedure_ids: set[int]) -> set[int]:
    """A procedure's evidence, and every run of its workflow group (all branches for a
    project-wide procedure): what would derive it again."""
    ids: set[int] = set()
    query = text(
        "SELECT id, project_id, scope, branch, directory, workflow, workflow_hash "
        "FROM procedures WHERE id = :id"
    )
    evidence = text("SELECT event_id FROM procedure_evidence WHERE procedure_id = :id")
    for procedure_id in sorted(procedure_ids):
        row = connection.execute(query, {"id": procedure_id}).one()
        ids.update(connection.execute(evidence, {"id": procedure_id}).scalars())
        group = Group(*row[1:7])
        for table in RUN_TABLES:
            sql = text(f"SELECT event_id FROM {table} WHERE {group.where()}")
            ids.update(connection.execute(sql, group.params()).scalars())
    return ids


def _events(
    connection: Connection, event_ids: set[int], pattern: re.Pattern[str] | None
) -> tuple[tuple[Item, ...], set[str], set[int], set[int]]:
    """The events that exist among event_ids (evidence may name a gone one), their
    idempotency keys (a spooled copy of them goes too), sessions and projects."""
    items, keys, sessions, projects = [], set(), set(), set()
    sql = _in(
        "SELECT id, event_at, command, kind, idempotency_key, session_id, project_id "
        "FROM captured_events WHERE id IN :ids ORDER BY id"
    )
    for chunk in _chunks(event_ids):
        for row in connection.execute(sql, {"ids": chunk}):
            items.append(
                Item(
                    row.id,
                    rfc3339(row.event_at) or "",
                    _excerpt(row.command or f"({row.kind})", pattern),
                )
            )
            keys.add(row.idempotency_key)
            sessions.add(row.session_id)
            projects.add(row.project_id)
    return tuple(items), keys, sessions, projects


def _procedures(
    connection: Connection, procedure_ids: set[int], pattern: re.Pattern[str] | None
) -> tuple[Item, ...]:
    sql = _in("SELECT id, status, command FROM procedures WHERE id IN :ids ORDER BY id")
    return tuple(
        Item(row.id, row.status, _excerpt(row.command, pattern))
        for chunk in _chunks(procedure_ids)
        for row in connection.execute(sql, {"ids": chunk})
    )


def _pulled(
    connection: Connection, kind: str, ids: set[int], pattern: re.Pattern[str] | None
) -> tuple[Item, ...]:
    sql = _in(PULLED[kind] + " WHERE id IN :ids ORDER BY id")
    return tuple(
        Item(row.id, row.label, _excerpt(row.shown or "", pattern))
        for chunk in _chunks(ids)
        for row in connection.execute(sql, {"ids": chunk})
    )


def _excerpt(command: str, pattern: re.Pattern[str] | None) -> str:
    """Redacted, and without the match itself: what is printed must not repeat it."""
    shown = redact_text(command)
    if pattern is not None:
        shown = pattern.sub(MASK, shown)
    shown = " ".join(shown.split())
    return shown if len(shown) <= EXCERPT_CHARS else shown[: EXCERPT_CHARS - 1] + "…"


def _rederived(connection: Connection, event_ids: set[int], deleted: set[int]) -> tuple[int, ...]:
    """Procedures citing a forgotten event: by the evidence table's index on events."""
    sql = _in("SELECT DISTINCT procedure_id FROM procedure_evidence WHERE event_id IN :ids")
    found = {
        procedure_id
        for chunk in _chunks(event_ids)
        for procedure_id in connection.execute(sql, {"ids": chunk}).scalars()
    }
    return tuple(sorted(found - deleted))


# (table, statement) in deletion order: lessons whose streak included a forgotten attempt go
# before the attempts that show it, and every run before the event it points at.
DELETIONS = (
    (
        "lessons",
        "DELETE FROM lessons WHERE resolved_by_event_id IN :ids OR EXISTS (SELECT 1 FROM "
        "attempts a WHERE a.event_id IN :ids AND a.resolved_by_event_id = "
        "lessons.resolved_by_event_id AND a.project_id = lessons.project_id AND a.branch = "
        "lessons.branch AND a.directory = lessons.directory AND a.workflow_hash = "
        "lessons.workflow_hash)",
    ),
    ("attempts", "DELETE FROM attempts WHERE event_id IN :ids OR resolved_by_event_id IN :ids"),
    ("verifications", "DELETE FROM verifications WHERE event_id IN :ids"),
    ("unverified_runs", "DELETE FROM unverified_runs WHERE event_id IN :ids"),
    ("procedure_evidence", "DELETE FROM procedure_evidence WHERE event_id IN :ids"),
    ("captured_events", "DELETE FROM captured_events WHERE id IN :ids"),
)


_OWE_REBUILD = text(
    "INSERT INTO pending_jobs (name, reason, created_at) VALUES (:name, 'forget', :now) "
    "ON CONFLICT (name) DO NOTHING"
)


PULLED_TABLES = ("team_procedures", "team_lessons")


def _delete(engine: Engine, found: Plan, now: float) -> dict[str, int]:
    tables = (*(table for table, _sql in DELETIONS), "procedures", *PULLED_TABLES)
    deleted = dict.fromkeys(tables, 0)
    event_ids = {event.id for event in found.events}
    # Deleted cells are zeroed, not left in free space, should the VACUUM not run.
    with begin_secure_delete(engine) as connection:
        for chunk in _chunks(event_ids):
            for table, statement in DELETIONS:
                deleted[table] += connection.execute(_in(statement), {"ids": chunk}).rowcount
        for chunk in _chunks(procedure.id for procedure in found.procedures):
            statement = _in("DELETE FROM procedures WHERE id IN :ids")
            deleted["procedures"] += connection.execute(statement, {"ids": chunk}).rowcount
        for table, items in (
            ("team_procedures", found.team_procedures),
            ("team_lessons", found.team_lessons),
        ):
            for chunk in _chunks(item.id for item in items):
                statement = _in(f"DELETE FROM {table} WHERE id IN :ids")
                deleted[table] += connection.execute(statement, {"ids": chunk}).rowcount
        if found.events or found.procedures:
            # Should we stop before the rebuild that follows, the next worker runs it.
            connection.execute(_OWE_REBUILD, {"name": rebuild.REBUILD_JOB, "now": now})
        for chunk in _chunks(found.task_errors):
            statement = _in("UPDATE extraction_tasks SET last_error = NULL WHERE id IN :ids")
            connection.execute(statement, {"ids": chunk})
    return deleted


_ORPHAN_SESSIONS = (
    "SELECT id FROM sessions WHERE id IN :ids AND NOT EXISTS "
    "(SELECT 1 FROM captured_events e WHERE e.session_id = sessions.id)"
)
_ORPHAN_PROJECTS = "SELECT id FROM projects WHERE id IN :ids" + "".join(
    f" AND NOT EXISTS (SELECT 1 FROM {table} t WHERE t.project_id = projects.id)"
    for table in (
        "captured_events",
        "sessions",
        "procedures",
        "lessons",
        "verifications",
        "attempts",
        "unverified_runs",
        # A shared project keeps its link and what it pulled from the team that did not match:
        # the team's copies are forgotten on the team database, then pulled again.
        "team_links",
        "team_procedures",
        "team_lessons",
    )
)


def _delete_orphans(engine: Engine, found: Plan) -> tuple[int, int]:
    """Sessions and projects the forgotten events leave empty (after the rebuild, which
    cleared what was derived from them), and the ids kept for the deleted procedures."""
    sessions = projects = 0
    with engine.begin() as connection:
        for chunk in _chunks(procedure.id for procedure in found.procedures):
            statement = "DELETE FROM procedure_identities WHERE procedure_id IN :ids"
            connection.execute(_in(statement), {"ids": chunk})
        for chunk in _chunks(found.session_ids):
            empty = list(connection.execute(_in(_ORPHAN_SESSIONS), {"ids": chunk}).scalars())
            if empty:
                connection.execute(
                    _in("DELETE FROM extraction_tasks WHERE session_id IN :ids"), {"ids": empty}
                )
                sessions += connection.execute(
                    _in("DELETE FROM sessions WHERE id IN :ids"), {"ids": empty}
                ).rowcount
        for chunk in _chunks(found.project_ids):
            empty = list(connection.execute(_in(_ORPHAN_PROJECTS), {"ids": chunk}).scalars())
            if empty:
                connection.execute(
                    _in("DELETE FROM procedure_identities WHERE project_id IN :ids"), {"ids": empty}
                )
                projects += connection.execute(
                    _in("DELETE FROM projects WHERE id IN :ids"), {"ids": empty}
                ).rowcount
    return sessions, projects


@dataclass(frozen=True)
class _Lines:
    """Which spool and log lines carry what is forgotten."""

    pattern: re.Pattern[str] | None
    project: str | None
    keys: frozenset[str]  # idempotency keys of the forgotten events

    def spool_line(self, line: bytes) -> bool:
        events, strings = spool.search_line(line)
        if any(event.get("idempotency_key") in self.keys for event in events):
            return True
        if self.pattern is None:
            return False
        if self.project is not None and events and events[-1].get("project_root") != self.project:
            return False  # another project's event: --project keeps it
        return _hit(self.pattern, strings)

    def log_line(self, line: bytes) -> bool:
        return self.pattern is not None and _hit(
            self.pattern, [line.decode("utf-8", "surrogateescape")]
        )
