"""Shipping: the events of shared projects, from the local database to the team's.

Each shared project has a cursor in `team_links`: the newest local event shipped. A batch goes
to the team database in one transaction (sessions, events, the sessions' promote tasks), then
the cursor moves in the local one. A crash in between ships the batch again, and the team
database ignores what it already holds: an event's team key is its local key under this
machine's name. What leaves the machine is what promotion needs: the project's key instead of
its path, the directory within it, no transcript path and no raw payload.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, text

from remem.capture.store import MASKED_EVENT_FIELDS, known_forgotten, raise_task
from remem.config import Settings
from remem.db.columns import EVENT_COLUMNS, names
from remem.db.engine import READ_ONLY, executor
from remem.faults import crash_point
from remem.procedures.inputs import event_inputs
from remem.record.forgotten import Known
from remem.record.identity import directory_under
from remem.record.output import output_excerpt, output_text
from remem.team.keys import is_shared, project_key
from remem.team.pull import CLEAR

BATCH_EVENTS = 2000

SELECT_PROJECTS = text("SELECT id, root, project_key FROM projects ORDER BY id")
SET_PROJECT_KEY = text("UPDATE projects SET project_key = :key WHERE id = :id")
SELECT_LINKS = text("SELECT project_id, project_key, shipped_event_id FROM team_links")
INSERT_LINK = text(
    "INSERT INTO team_links (project_id, project_key, shipped_event_id, created_at) "
    "VALUES (:project_id, :key, 0, :now)"
)
UPDATE_LINK_KEY = text("UPDATE team_links SET project_key = :key WHERE project_id = :project_id")
# A project no longer shared loses its link and the team's memory pulled for it.
UNLINK = (*CLEAR, text("DELETE FROM team_links WHERE project_id = :project_id"))
MOVE_CURSOR = text(
    "UPDATE team_links SET shipped_event_id = :event_id, shipped_at = :now "
    "WHERE project_id = :project_id AND shipped_event_id < :event_id"
)

# What leaves the machine of an event: the team gives it the team's session and project, and
# neither the transcript's path nor the raw payload goes.
_SHIPPED = (
    "id",
    *(
        name
        for name in EVENT_COLUMNS
        if name not in ("session_id", "project_id", "transcript_path", "payload")
    ),
)
SELECT_BATCH = text(
    "SELECT " + names(_SHIPPED, "e.") + ", s.host, s.session_key, s.started_at, "
    "CASE WHEN e.output_excerpt IS NULL AND e.kind = 'command' THEN e.payload END "
    "FROM captured_events e JOIN sessions s ON s.id = e.session_id "
    "WHERE e.project_id = :project_id AND e.id > :cursor ORDER BY e.id LIMIT :limit"
)

UPSERT_TEAM_PROJECT = text(
    "INSERT INTO projects (root, created_at, project_key) VALUES (:key, :now, :key) "
    "ON CONFLICT (root) DO UPDATE SET project_key = excluded.project_key RETURNING id"
)
UPSERT_TEAM_SESSION = text(
    "INSERT INTO sessions (host, session_key, project_id, started_at, last_event_at, machine) "
    "VALUES (:host, :session_key, :project_id, :started_at, :last_event_at, :machine) "
    "ON CONFLICT (host, session_key) DO UPDATE SET last_event_at = CASE "
    "WHEN excluded.last_event_at > sessions.last_event_at THEN excluded.last_event_at "
    "ELSE sessions.last_event_at END RETURNING id"
)


@dataclass(frozen=True)
class Linked:
    project_id: int
    root: str
    key: str
    cursor: int


@dataclass
class ShipReport:
    events: int = 0  # new in the team database
    already_there: int = 0  # shipped before (a crash between ship and cursor)
    batches: int = 0
    projects: int = 0


def link_projects(local: Engine, settings: Settings, now: float) -> list[Linked]:
    """Read each project's key from its git config and keep `team_links` to the projects
    `share` matches: a project that stops matching is unlinked and its pulled memory goes."""
    with local.connect().execution_options(**{READ_ONLY: True}) as connection:
        projects = connection.execute(SELECT_PROJECTS).all()
        links = {row.project_id: row for row in connection.execute(SELECT_LINKS)}
    # A work tree that is gone (a clone deleted, a disk not mounted) keeps the key it had.
    keys = {
        row.id: project_key(row.root) if os.path.isdir(row.root) else row.project_key
        for row in projects
    }
    linked: list[Linked] = []
    changes: list[tuple[Any, dict[str, Any]]] = []
    for row in projects:
        key = keys[row.id]
        if key != row.project_key:
            changes.append((SET_PROJECT_KEY, {"key": key, "id": row.id}))
        link = links.get(row.id)
        if key is None or not is_shared(key, settings.team_share):
            if link is not None:
                changes += [(statement, {"project_id": row.id}) for statement in UNLINK]
            continue
        if link is None:
            changes.append((INSERT_LINK, {"project_id": row.id, "key": key, "now": now}))
        elif link.project_key != key:  # the remote moved: a new name on the team
            changes.append((UPDATE_LINK_KEY, {"project_id": row.id, "key": key}))
        linked.append(Linked(row.id, row.root, key, link.shipped_event_id if link else 0))
    if changes:  # the write lock only when something changed: hooks share it
        with local.begin() as connection:
            for statement, params in changes:
                connection.execute(statement, params)
    return linked


def ship(
    local: Engine,
    team: Engine,
    settings: Settings,
    now: float,
    batch_events: int = BATCH_EVENTS,
) -> ShipReport:
    """Every event of the shared projects past their cursors, in batches."""
    report = ShipReport()
    for link in link_projects(local, settings, now):
        report.projects += 1
        team_project: int | None = None
        cursor = link.cursor
        while True:
            with local.connect().execution_options(**{READ_ONLY: True}) as connection:
                rows = connection.execute(
                    SELECT_BATCH,
                    {"project_id": link.project_id, "cursor": cursor, "limit": batch_events},
                ).all()
            if not rows:
                break
            with team.begin() as connection:
                if team_project is None:
                    team_project = connection.execute(
                        UPSERT_TEAM_PROJECT, {"key": link.key, "now": now}
                    ).scalar_one()
                new = _store(connection, team_project, link, rows, settings.team_machine, now)
            crash_point("shipped")
            cursor = rows[-1].id
            with local.begin() as connection:
                connection.execute(
                    MOVE_CURSOR, {"project_id": link.project_id, "event_id": cursor, "now": now}
                )
            shippable = sum(1 for row in rows if row.kind != "session_start")
            report.events += new
            report.already_there += shippable - new
            report.batches += 1
            if len(rows) < batch_events:
                break
    return report


def _store(
    connection: Connection,
    team_project: int,
    link: Linked,
    rows: Iterable[Any],
    machine: str,
    now: float,
) -> int:
    """One batch into the team database: its sessions, its new events, their tasks. Returns
    how many events were new there."""
    sessions: dict[tuple[str, str], int] = {}
    values = []
    # What the team forgot goes on arrival too: a machine ships what it captured before.
    known = known_forgotten(executor(connection))
    for row in rows:
        if row.kind == "session_start":
            continue
        host, session_key = row[-4], row[-3]
        key = (host, f"{machine}/{session_key}")
        if key not in sessions:
            sessions[key] = connection.execute(
                UPSERT_TEAM_SESSION,
                {
                    "host": host,
                    "session_key": key[1],
                    "project_id": team_project,
                    "started_at": row[-2],
                    "last_event_at": row.event_at,
                    "machine": machine,
                },
            ).scalar_one()
        event = _team_event(row, link, machine, team_project, sessions[key], now)
        values.append(_masked(known, event))
    if not values:
        return 0
    inserted = _insert_new(connection, values)
    latest: dict[int, int] = {}
    for event_id, session_id in inserted:
        latest[session_id] = max(latest.get(session_id, 0), event_id)
    execute = executor(connection)
    for session_id, event_id in latest.items():
        raise_task(execute, session_id, event_id, now)
    return len(inserted)


# What a shipped event holds in the team database: its columns, and what its verified steps
# ran as this machine read it (the team has no files to read).
_TEAM_COLUMNS = (*EVENT_COLUMNS, "inputs")
# The team database takes a batch by COPY into a scratch table, then one INSERT … SELECT that
# skips the events it holds: a statement with a parameter per field of a thousand rows would
# cost more to build and parse than to run.
_SCRATCH = (
    "CREATE TEMPORARY TABLE ship_batch ON COMMIT DROP AS SELECT 0::bigint AS ord, "
    + names(_TEAM_COLUMNS)
    + " FROM captured_events WITH NO DATA"
)
_COPY = f"COPY ship_batch (ord, {names(_TEAM_COLUMNS)}) FROM STDIN"
# Ids are given in the order the events were captured here: a session's windows follow them.
_INSERT_NEW = (
    f"INSERT INTO captured_events ({names(_TEAM_COLUMNS)}) "
    f"SELECT {names(_TEAM_COLUMNS)} FROM ship_batch ORDER BY ord "
    "ON CONFLICT (idempotency_key) DO NOTHING RETURNING id, session_id"
)


def _insert_new(connection: Connection, values: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """The batch's events the team database did not hold yet, inserted: (id, session_id)."""
    connection.exec_driver_sql(_SCRATCH)
    raw = connection.connection.driver_connection
    assert raw is not None
    with raw.cursor() as cursor, cursor.copy(_COPY) as copy:
        for order, event in enumerate(values):
            copy.write_row([order, *(event[name] for name in _TEAM_COLUMNS)])
    return [(int(i), int(s)) for i, s in connection.exec_driver_sql(_INSERT_NEW).all()]


def _masked(known: Known | None, event: dict[str, Any]) -> dict[str, Any]:
    if not known:
        return event
    for name in (*MASKED_EVENT_FIELDS, "files"):
        if isinstance(event.get(name), str):
            event[name] = known.mask(event[name])
    return event


def _team_event(
    row: Any, link: Linked, machine: str, team_project: int, team_session: int, now: float
) -> dict[str, Any]:
    event = {name: getattr(row, name) for name in _SHIPPED if name != "id"}
    directory = event["directory"] or directory_under(event["cwd"], link.root)
    if event["output_excerpt"] is None and row[-1]:
        try:
            found = output_text(event["host"], json.loads(row[-1]))
        except ValueError:
            found = None
        event["output_excerpt"] = output_excerpt(found)
    event["inputs"] = None
    if event["kind"] == "command" and event["outcome"] == "success" and event["command"]:
        event["inputs"] = event_inputs(
            event["command"], event["output_excerpt"], event["cwd"], directory, link.root, now
        )
    for name, value in event.items():
        # PostgreSQL text holds no NUL character, which an output may: shown as U+FFFD.
        if isinstance(value, str) and "\x00" in value:
            event[name] = value.replace("\x00", "\ufffd")
    event.update(
        idempotency_key=f"{machine}/{event['idempotency_key']}",
        session_id=team_session,
        project_id=team_project,
        # The path on this machine stays here: the team knows the place by key and directory.
        cwd=link.key if directory == "." else f"{link.key}/{directory}",
        directory=directory,
        transcript_path=None,
        payload="{}",
    )
    return event
