"""Persisting substitutions (remem/procedures/substitutions.py): re-derived, as a window's runs
are stored, for the stretch of its session between the edits around them.

An edit ends every substitution that spans it, so the stretch from the session's last edit
before the window's earliest run to its first edit after the window's latest run holds every
substitution those runs can make or change: a Codex run resolved late, which lies among
earlier runs, included. That stretch is read and its rows are written again where they
changed, a few indexed ranges as small as the stretch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from sqlalchemy import text

from remem.db.driver import Driver
from remem.procedures.lessons import error_key_of
from remem.procedures.steps import FAILED, VERIFIED
from remem.procedures.substitutions import Pair, SessionRun, pair
from remem.procedures.tally import GroupRun
from remem.shell import recognisers

_EDIT_BEFORE = text(
    "SELECT id FROM captured_events WHERE session_id = :session_id AND id < :at "
    "AND kind = 'edit' ORDER BY id DESC LIMIT 1"
)
_EDIT_AFTER = text(
    "SELECT id FROM captured_events WHERE session_id = :session_id AND id > :at "
    "AND kind = 'edit' ORDER BY id LIMIT 1"
)
_SESSION_SPAN = text("SELECT MIN(id), MAX(id) FROM captured_events WHERE session_id = :session_id")
_EDITS_BETWEEN = text(
    "SELECT id FROM captured_events WHERE session_id = :session_id AND id > :after "
    "AND id < :before AND kind = 'edit'"
)
# A session's runs between two of its events, found through its events (the index on session
# and id), not by a range of event ids, which other sessions' runs share. The session's ledger
# reads them too (remem/procedures/ledger_rows.py).
_RUN = (
    "SELECT r.event_id, r.step, r.directory, r.workflow, r.workflow_hash, r.project_id, "
    "r.branch, r.command, {columns} FROM captured_events e JOIN {table} r "
    "ON r.event_id = e.id WHERE e.session_id = :session_id AND e.id > :after AND e.id < :before"
)
_NO_ERROR = "NULL AS error, NULL AS error_excerpt, 0 AS cannot_run"
FAILED_RUNS, PASSED_RUNS, UNVERIFIED_RUNS = (
    text(_RUN.format(table=table, columns=columns))
    for table, columns in (
        ("attempts", "r.failed_at AS at, r.salient_error AS error, r.error_excerpt, r.cannot_run"),
        ("verifications", f"r.verified_at AS at, {_NO_ERROR}"),
        ("unverified_runs", f"r.ran_at AS at, {_NO_ERROR}"),
    )
)
_STORED = text(
    "SELECT id, failed_event_id, failed_step, substitute_event_id, substitute_workflow_hash "
    "FROM substitutions WHERE session_id = :session_id AND failed_event_id > :after "
    "AND failed_event_id < :before"
)
_INSERT = text(
    "INSERT INTO substitutions (project_id, session_id, branch, directory, failed_event_id, "
    "failed_step, failed_workflow, failed_workflow_hash, error, error_key, "
    "substitute_event_id, substitute_workflow, substitute_workflow_hash, substitute_command, "
    "substitute_directory, failed_at, found_at) VALUES (:project_id, :session_id, :branch, "
    ":directory, :failed_event_id, :failed_step, :failed_workflow, :failed_workflow_hash, "
    ":error, :error_key, :substitute_event_id, :substitute_workflow, :substitute_workflow_hash, "
    ":substitute_command, :substitute_directory, :failed_at, :found_at)"
)
_DELETE = text("DELETE FROM substitutions WHERE id = :id")


def derive(connection: Driver, runs: Iterable[GroupRun]) -> Counter[str]:
    """Re-derive the substitutions the window's new runs (failed or verified) can touch."""
    stats: Counter[str] = Counter()
    spans: dict[int, tuple[int, int]] = {}
    for run in runs:
        if run.verdict in (FAILED, VERIFIED):
            first, last = spans.get(run.session_id, (run.event_id, run.event_id))
            spans[run.session_id] = (min(first, run.event_id), max(last, run.event_id))
    for session_id, (first, last) in sorted(spans.items()):
        stats.update(_derive_stretch(connection, session_id, first, last))
    return stats


def _derive_stretch(connection: Driver, session_id: int, first: int, last: int) -> Counter[str]:
    # Each group of reads is sent whole before any is read (one wait on a server).
    params: dict[str, Any] = {"session_id": session_id, "at": first}
    edit_before = connection.execute(_EDIT_BEFORE, params)
    edit_after = connection.execute(_EDIT_AFTER, {**params, "at": last})
    session_span = connection.execute(_SESSION_SPAN, params)
    before_edit, after_edit = edit_before.scalar(), edit_after.scalar()
    if before_edit is None or after_edit is None:
        start, end = session_span.one()
        before_edit = (start - 1) if before_edit is None else before_edit
        after_edit = (end + 1) if after_edit is None else after_edit
    params = {"session_id": session_id, "after": before_edit, "before": after_edit}
    failed_rows = connection.execute(FAILED_RUNS, params)
    stored_rows = connection.execute(_STORED, params)
    passed_rows = connection.execute(PASSED_RUNS, params)
    edit_rows = connection.execute(_EDITS_BETWEEN, params)
    failed = {(row.event_id, row.step): row for row in failed_rows}
    if not failed:
        return Counter()  # a row is a failed run's: none, no row either
    stored = {(row.failed_event_id, row.failed_step): row for row in stored_rows}
    passed = {(row.event_id, row.step): row for row in passed_rows}
    edits = edit_rows.scalars()
    runs = [_session_run(row, False) for row in failed.values()]
    runs += [_session_run(row, True) for row in passed.values()]
    wanted = {(p.failed.event_id, p.failed.step): p for p in pair(runs, edits)}
    stale = [
        {"id": row.id}
        for key, row in stored.items()
        if key not in wanted or _changed(row, wanted[key])
    ]
    kept = {key for key, row in stored.items() if key in wanted and not _changed(row, wanted[key])}
    fresh = [
        _row(session_id, failed[key], passed[(p.substitute.event_id, p.substitute.step)], p)
        for key, p in wanted.items()
        if key not in kept
    ]
    if stale:
        connection.execute(_DELETE, stale)
    if fresh:
        connection.execute(_INSERT, fresh)
    return Counter(substitutions=len(fresh))


def _session_run(row: Any, passed: bool) -> SessionRun:
    # A failure that could run (red, or nothing says otherwise): the tool works here.
    ran = not passed and not row.cannot_run
    return SessionRun(
        row.event_id,
        row.step,
        row.directory,
        row.workflow,
        row.workflow_hash,
        row.command,
        passed,
        ran,
    )


def _changed(row: Any, found: Pair) -> bool:
    substitute = found.substitute
    return (row.substitute_event_id, row.substitute_workflow_hash) != (
        substitute.event_id,
        substitute.workflow_hash,
    )


def _row(session_id: int, failed: Any, passed: Any, found: Pair) -> dict[str, Any]:
    error = failed.error or recognisers.telling_line(failed.error_excerpt)
    return {
        "project_id": failed.project_id,
        "session_id": session_id,
        "branch": failed.branch,
        "directory": failed.directory,
        "failed_event_id": failed.event_id,
        "failed_step": failed.step,
        "failed_workflow": failed.workflow,
        "failed_workflow_hash": failed.workflow_hash,
        "error": error,
        "error_key": error_key_of(error, failed.branch or None),
        "substitute_event_id": passed.event_id,
        "substitute_workflow": passed.workflow,
        "substitute_workflow_hash": passed.workflow_hash,
        "substitute_command": passed.command,
        "substitute_directory": passed.directory,
        "failed_at": failed.at,
        "found_at": passed.at,
    }
