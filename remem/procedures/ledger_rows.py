"""Persisting a session's ledger (remem/procedures/ledger.py): re-judged whole, as each window
of the session is applied, from what the digest showed it (digest_shown), the advice it was
given (advice_given), and its runs and commands. A session shown nothing and given nothing has
no ledger, and costs one indexed lookup per window.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from sqlalchemy import text

from remem.capture.fields import key_hash
from remem.db.driver import Driver
from remem.db.vocabulary import BEFORE, KNOWN_ERROR, PROCEDURE, SUBSTITUTION
from remem.procedures.instead import FAILED_RUNS, PASSED_RUNS, UNVERIFIED_RUNS
from remem.procedures.known import OPEN
from remem.procedures.ledger import Call, Given, Judged, Run, Shown, judge
from remem.procedures.lessons import error_key_of
from remem.shell.recognisers import telling_line

_SHOWN = text(
    "SELECT event_id, shown_at, procedures, known_errors FROM digest_shown "
    "WHERE session_id = :session_id"
)
_GIVEN = text(
    "SELECT event_id, given_at, kind, key, follow FROM advice_given WHERE session_id = :session_id"
)
_PROJECT = text("SELECT project_id FROM sessions WHERE id = :session_id")
_CALLS = text(
    "SELECT id, event_at, outcome, kind, files FROM captured_events "
    "WHERE session_id = :session_id AND kind IN ('command', 'edit') ORDER BY id"
)
_DELETE = text("DELETE FROM session_ledger WHERE session_id = :session_id")
_WORKFLOWS = text(
    "SELECT DISTINCT directory, workflow_hash FROM session_ledger "
    "WHERE session_id = :session_id AND workflow_hash IS NOT NULL"
)
# A workflow's sums over every session's ledger, by the index on its workflow.
_SUMS = text(
    "SELECT count(DISTINCT CASE WHEN kind = 'procedure' THEN session_id END), "
    "count(DISTINCT CASE WHEN kind = 'procedure' AND used = 1 THEN session_id END), "
    "count(DISTINCT CASE WHEN kind = 'procedure' AND passed = 1 THEN session_id END), "
    "max(CASE WHEN failed_after = 1 THEN failed_at END), count(*) FROM session_ledger "
    "WHERE project_id = :project_id AND directory = :directory "
    "AND workflow_hash = :workflow_hash"
)
_UPSERT_USE = text(
    "INSERT INTO workflow_use (project_id, directory, workflow_hash, shown_sessions, "
    "used_sessions, passed_sessions, failed_at, updated_at) VALUES (:project_id, :directory, "
    ":workflow_hash, :shown, :used, :passed, :failed_at, :now) "
    "ON CONFLICT (project_id, directory, workflow_hash) DO UPDATE SET "
    "shown_sessions = excluded.shown_sessions, used_sessions = excluded.used_sessions, "
    "passed_sessions = excluded.passed_sessions, failed_at = excluded.failed_at, "
    "updated_at = excluded.updated_at"
)
_DELETE_USE = text(
    "DELETE FROM workflow_use WHERE project_id = :project_id AND directory = :directory "
    "AND workflow_hash = :workflow_hash"
)
_INSERT = text(
    "INSERT INTO session_ledger (session_id, project_id, kind, procedure_id, directory, "
    "workflow_hash, item_key, used, passed, repeated, followed, failed_after, failed_at, at) "
    "VALUES (:session_id, :project_id, :kind, :procedure_id, :directory, :workflow_hash, "
    ":item_key, :used, :passed, :repeated, :followed, :failed_after, :failed_at, :at)"
)


def derive(connection: Driver, session_id: int, now: float) -> Counter[str]:
    """Judge the session again from all it holds; its rows are replaced whole, and the sums
    of the workflows they name (before or after) are read again."""
    params = {"session_id": session_id}
    shown_rows, given_rows = connection.execute(_SHOWN, params), connection.execute(_GIVEN, params)
    shown = [item for row in shown_rows for item in _shown(*row)]
    given = [_given(row) for row in given_rows]
    if not shown and not given:
        return Counter()
    whole = {**params, "after": 0, "before": OPEN}
    runs = [_run(row, True) for row in connection.execute(PASSED_RUNS, whole)]
    runs += [_run(row, False) for row in connection.execute(FAILED_RUNS, whole)]
    workflows: dict[int, set[tuple[str, str]]] = {}
    for row in (*runs, *map(_unverified, connection.execute(UNVERIFIED_RUNS, whole))):
        workflows.setdefault(row.event_id, set()).add((row.directory, row.workflow_hash))
    calls = [
        Call(
            event_id,
            at,
            outcome == "failure",
            frozenset(workflows.get(event_id, ())),
            frozenset(json.loads(files or "[]")) if kind == "edit" else frozenset(),
        )
        for event_id, at, outcome, kind, files in connection.execute(_CALLS, params)
    ]
    judged = judge(shown, given, runs, calls)
    project_id = connection.execute(_PROJECT, params).scalar_one()
    touched = {tuple(row) for row in connection.execute(_WORKFLOWS, params)}
    connection.execute(_DELETE, params)
    if judged:
        connection.execute(_INSERT, [_row(session_id, project_id, item) for item in judged])
    touched |= {(i.directory, i.workflow_hash) for i in judged if i.workflow_hash is not None}
    for directory, workflow_hash in sorted(touched):
        key = {"project_id": project_id, "directory": directory, "workflow_hash": workflow_hash}
        _sum(connection, key, now)
    return Counter(ledger_rows=len(judged))


def _sum(connection: Driver, key: dict[str, Any], now: float) -> None:
    shown, used, passed, failed_at, rows = connection.execute(_SUMS, key).one()
    if not rows:
        connection.execute(_DELETE_USE, key)
        return
    sums = {"shown": shown, "used": used, "passed": passed, "failed_at": failed_at, "now": now}
    connection.execute(_UPSERT_USE, {**key, **sums})


def _shown(event_id: int, at: float, procedures: str, known_errors: str) -> list[Shown]:
    """The items of one printed page (digest_shown)."""
    items = [
        Shown(event_id, at, PROCEDURE, procedure_id, directory, workflow_hash)
        for procedure_id, directory, workflow_hash in json.loads(procedures or "[]")
    ]
    items += [
        Shown(event_id, at, KNOWN_ERROR, error_key_hash=error)
        for error in json.loads(known_errors or "[]")
    ]
    return items


def _given(row: Any) -> Given:
    event_id, at, kind, key, follow = row
    if follow:
        return Given(event_id, at, kind, key, tuple(json.loads(follow)))
    # Given before what follows it was recorded: a substitute is named in the key (A>B).
    named = (key.split(">", 1)[1],) if kind in (SUBSTITUTION, BEFORE) and ">" in key else ()
    return Given(event_id, at, kind, key, named)


def _run(row: Any, passed: bool) -> Run:
    error_hash = None
    if not passed:
        key = error_key_of(row.error or telling_line(row.error_excerpt), row.branch or None)
        error_hash = key_hash(key) if key else None
    return Run(row.event_id, row.at, row.directory, row.workflow_hash, passed, error_hash)


def _unverified(row: Any) -> Run:
    return Run(row.event_id, row.at, row.directory, row.workflow_hash, False)


def _row(session_id: int, project_id: int, item: Judged) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "project_id": project_id,
        "kind": item.kind,
        "procedure_id": item.procedure_id,
        "directory": item.directory,
        "workflow_hash": item.workflow_hash,
        "item_key": item.item_key,
        "used": int(item.used),
        "passed": int(item.passed),
        "repeated": int(item.repeated),
        "followed": int(item.followed),
        "failed_after": int(item.failed_after),
        "failed_at": item.failed_at,
        "at": item.at,
    }
