"""Planning a forgetting: what a selection finds in one database, read without changing
anything. The events table may be large: a pattern is searched here, over rows read in batches,
SQLite having no regular expressions of its own."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, Table, text

from remem.capture import spool
from remem.config import Settings
from remem.db.driver import with_ids
from remem.db.engine import READ_ONLY
from remem.db.schema import metadata, tables_marked
from remem.errors import NotFound
from remem.forgetting import places
from remem.forgetting.selection import (
    Item,
    Lines,
    Plan,
    Selection,
    chunks,
    compile_pattern,
    excerpt,
    hit,
)
from remem.json_contract import rfc3339
from remem.procedures.groups import Group
from remem.queue import store as queue
from remem.record import rewrite as files
from remem.regex import Regex

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
# The runs of a workflow group (remem/db/schema.py marks them).
RUN_TABLES = tuple(table.name for table in tables_marked("runs"))


def event_columns(table: Table) -> list[str]:
    """The columns of `table` that name a captured event (evidence names its events without a
    foreign key)."""
    return [
        column.name
        for column in table.columns
        if column.name == "event_id"
        or any(key.target_fullname == "captured_events.id" for key in column.foreign_keys)
    ]


# The lessons a forgotten event (in :ids) takes with it: those it resolved, and those whose
# streak it was an attempt of. Before the attempts that show the streak go.
LESSONS_OF_EVENTS = (
    "lessons WHERE resolved_by_event_id IN :ids OR EXISTS (SELECT 1 FROM "
    "attempts a WHERE a.event_id IN :ids AND a.resolved_by_event_id = "
    "lessons.resolved_by_event_id AND a.project_id = lessons.project_id AND a.branch = "
    "lessons.branch AND a.directory = lessons.directory AND a.workflow_hash = "
    "lessons.workflow_hash)"
)
_KNOWN_OF_EVENTS = "known_errors WHERE " + " OR ".join(
    f"{column} IN :ids" for column in event_columns(metadata.tables["known_errors"])
)
_LESSONS_GOING = with_ids(
    "SELECT id, branch AS label, coalesce(last_error, first_error, error_key, pitfall) AS shown "
    f"FROM {LESSONS_OF_EVENTS}"
)
_KNOWN_GOING = with_ids(f"SELECT id, workflow AS label, error AS shown FROM {_KNOWN_OF_EVENTS}")


def plan(
    engine: Engine,
    settings: Settings,
    selection: Selection,
    machine_files: bool = True,
    user_home: str | None = None,
) -> Plan:
    """What `forget` would delete, read without changing anything. Without machine_files
    (the team database) this machine's spool, logs and transcripts are not looked at; the
    agents' transcript folders are those under user_home (when given)."""
    pattern = None if selection.pattern is None else compile_pattern(selection.pattern)
    words = places.Words(pattern)
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        project_id = _project_id(connection, selection.project)
        _require(connection, "captured_events", selection.event_ids, "event")
        _require(connection, "procedures", selection.procedure_ids, "procedure")
        event_ids, procedure_ids = set(selection.event_ids), set(selection.procedure_ids)
        task_errors: tuple[int, ...] = ()
        found: dict[str, set[int]] = {kind: set() for kind in PULLED}
        if pattern is not None:
            found = _matching(connection, pattern, project_id, words)
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
        lessons = _going(connection, _LESSONS_GOING, event_ids, pattern)
        known_errors = _going(connection, _KNOWN_GOING, event_ids, pattern)
        beyond = _beyond(connection, keys, procedure_ids, words)
        named = _transcripts_named(connection, event_ids) if machine_files else set()
    lines = Lines(pattern, selection.project, frozenset(keys))
    return Plan(
        events=events,
        procedures=procedures,
        team_procedures=pulled["team_procedure"],
        team_lessons=pulled["team_lesson"],
        rederived_procedure_ids=rederived,
        task_errors=task_errors,
        lessons=lessons,
        known_errors=known_errors,
        session_ids=tuple(sorted(sessions)),
        project_ids=tuple(sorted(projects)),
        **_files(settings, lines, machine_files),
        **beyond,
        transcripts=_transcripts(named, user_home, words) if machine_files else {},
        # A match narrowed to one project keeps the others' copies: not masked elsewhere.
        words=words.recorded() if selection.project is None else frozenset(),
        unrecorded=words.unrecorded(),
    )


def _files(settings: Settings, lines: Lines, machine_files: bool) -> dict[str, Any]:
    """The spool and log lines that carry what is forgotten, by file; none without
    machine_files (the team database)."""
    logs = files.visible_files(settings.log_dir) if lines.pattern and machine_files else []
    spooled = spool.spool_files(settings.spool_dir) if machine_files else []
    return {
        "lines": lines,
        "spool_lines": files.count_matching(spooled, lines.spool_line),
        "log_lines": files.count_matching(logs, lines.log_line),
    }


def _beyond(
    connection: Connection, keys: set[str], procedure_ids: set[int], words: places.Words
) -> dict[str, Any]:
    """The drop ledger's rows and the exported drafts that go."""
    return {
        "drops": places.matching_drops(connection, words.pattern, keys, words),
        "drafts": places.matching_drafts(connection, words.pattern, procedure_ids, words),
    }


def _transcripts(named: set[str], user_home: str | None, words: places.Words) -> dict[str, int]:
    if words.pattern is None:
        return {}
    paths = places.transcript_files(named, user_home)
    return places.matching_transcripts(paths, words.pattern, words)


def _transcripts_named(connection: Connection, event_ids: set[int]) -> set[str]:
    sql = with_ids("SELECT DISTINCT transcript_path FROM captured_events WHERE id IN :ids")
    return {
        path
        for chunk in chunks(event_ids)
        for path in connection.execute(sql, {"ids": chunk}).scalars()
        if path
    }


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
    for chunk in chunks(ids):
        found.update(
            connection.execute(
                with_ids(f"SELECT id FROM {table} WHERE id IN :ids"), {"ids": chunk}
            ).scalars()
        )
    missing = sorted(set(ids) - found)
    if missing:
        where = "remem procedures list --all" if kind == "procedure" else "remem procedures show ID"
        raise NotFound(f"No {kind} {missing[0]}: see `{where}` for the ids there are.")


def _matching(
    connection: Connection,
    pattern: Regex,
    project_id: int | None,
    words: places.Words,
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
        for row in result:
            if hit(pattern, row[1:]):
                found[kind].add(row[0])
                words.add(row[1:])
    return found


# A lesson's failed attempts: the errors it quotes. Without them its streak is gone, and the
# success that closed it stays a verified run.
_STREAK_EVENTS = text(
    "SELECT a.event_id FROM attempts a JOIN lessons l ON a.project_id = l.project_id "
    "AND a.branch = l.branch AND a.directory = l.directory AND a.workflow_hash = l.workflow_hash "
    "AND a.resolved_by_event_id = l.resolved_by_event_id WHERE l.id = :id"
)


def _matching_task_errors(connection: Connection, pattern: Regex) -> tuple[int, ...]:
    """Tasks whose last error quotes the match: the task stays, its error text goes."""
    rows = queue.tasks_with_errors(connection)
    return tuple(task_id for task_id, error in rows if hit(pattern, (error,)))


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
    connection: Connection, event_ids: set[int], pattern: Regex | None
) -> tuple[tuple[Item, ...], set[str], set[int], set[int]]:
    """The events that exist among event_ids (evidence may name a gone one), their
    idempotency keys (a spooled copy of them goes too), sessions and projects."""
    items, keys, sessions, projects = [], set(), set(), set()
    sql = with_ids(
        "SELECT id, event_at, command, kind, idempotency_key, session_id, project_id "
        "FROM captured_events WHERE id IN :ids ORDER BY id"
    )
    for chunk in chunks(event_ids):
        for row in connection.execute(sql, {"ids": chunk}):
            items.append(
                Item(
                    row.id,
                    rfc3339(row.event_at) or "",
                    excerpt(row.command or f"({row.kind})", pattern),
                )
            )
            keys.add(row.idempotency_key)
            sessions.add(row.session_id)
            projects.add(row.project_id)
    return tuple(items), keys, sessions, projects


def _procedures(
    connection: Connection, procedure_ids: set[int], pattern: Regex | None
) -> tuple[Item, ...]:
    sql = with_ids("SELECT id, status, command FROM procedures WHERE id IN :ids ORDER BY id")
    return tuple(
        Item(row.id, row.status, excerpt(row.command, pattern))
        for chunk in chunks(procedure_ids)
        for row in connection.execute(sql, {"ids": chunk})
    )


def _pulled(
    connection: Connection, kind: str, ids: set[int], pattern: Regex | None
) -> tuple[Item, ...]:
    sql = with_ids(PULLED[kind] + " WHERE id IN :ids ORDER BY id")
    return tuple(
        Item(row.id, row.label, excerpt(row.shown or "", pattern))
        for chunk in chunks(ids)
        for row in connection.execute(sql, {"ids": chunk})
    )


def _going(
    connection: Connection, sql: Any, event_ids: set[int], pattern: Regex | None
) -> tuple[Item, ...]:
    """The derived rows a statement finds for the events (id, label, shown), by id."""
    rows = {
        row.id: row
        for chunk in chunks(event_ids)
        for row in connection.execute(sql, {"ids": chunk})
    }
    return tuple(
        Item(row.id, row.label, excerpt(row.shown or "", pattern))
        for _id, row in sorted(rows.items())
    )


def _rederived(connection: Connection, event_ids: set[int], deleted: set[int]) -> tuple[int, ...]:
    """Procedures citing a forgotten event: by the evidence table's index on events."""
    sql = with_ids("SELECT DISTINCT procedure_id FROM procedure_evidence WHERE event_id IN :ids")
    found = {
        procedure_id
        for chunk in chunks(event_ids)
        for procedure_id in connection.execute(sql, {"ids": chunk}).scalars()
    }
    return tuple(sorted(found - deleted))
