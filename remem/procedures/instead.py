"""Persisting substitutions (remem/procedures/substitutions.py): re-derived, as a window's runs
are stored, for the stretch of its session between the edits around them.

An edit ends every substitution that spans it, so the stretch from the session's last edit
before the window's earliest run to its first edit after the window's latest run holds every
substitution those runs can make or change: a Codex run resolved late, which lies among
earlier runs, included. That stretch is read and its rows are written again where they
changed, a few indexed ranges as small as the stretch. What the window holds (`Held`: its
events, and the runs it stored of them) is not read again: a window of a whole session reads
only the session's stored substitutions.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import text

from remem.db.driver import Driver
from remem.procedures.lessons import error_key_of
from remem.procedures.steps import FAILED, VERIFIED, workflow_hash
from remem.procedures.substitutions import Pair, SessionRun, pair
from remem.procedures.tally import GroupRun
from remem.procedures.window import WindowEvent
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
# A session's substitutions, a few at most: read with the edits that bound the stretch.
_STORED = text(
    "SELECT id, failed_event_id, failed_step, substitute_event_id, substitute_workflow_hash "
    "FROM substitutions WHERE session_id = :session_id"
)
INSERT = text(
    "INSERT INTO substitutions (project_id, session_id, branch, directory, failed_event_id, "
    "failed_step, failed_workflow, failed_workflow_hash, error, error_key, "
    "substitute_event_id, substitute_workflow, substitute_workflow_hash, substitute_command, "
    "substitute_directory, failed_at, found_at) VALUES (:project_id, :session_id, :branch, "
    ":directory, :failed_event_id, :failed_step, :failed_workflow, :failed_workflow_hash, "
    ":error, :error_key, :substitute_event_id, :substitute_workflow, :substitute_workflow_hash, "
    ":substitute_command, :substitute_directory, :failed_at, :found_at)"
)
_DELETE = text("DELETE FROM substitutions WHERE id = :id")


class StretchRun(NamedTuple):
    """A failed or verified run as FAILED_RUNS and PASSED_RUNS read it."""

    event_id: int
    step: int
    directory: str
    workflow: str
    workflow_hash: str
    project_id: int
    branch: str
    command: str
    at: float
    error: str | None
    error_excerpt: str | None
    cannot_run: int

    @classmethod
    def of(cls, row: dict[str, Any]) -> StretchRun:
        """From the row a window inserted (remem/procedures/reads.py, INSERT_RUN)."""
        return cls(
            row["event_id"],
            row["step"],
            row["directory"],
            row["workflow"],
            row["workflow_hash"],
            row["project_id"],
            row["branch"],
            row["command"],
            row["at"],
            row.get("salient_error"),
            row.get("error_excerpt"),
            row.get("cannot_run", 0),
        )


@dataclass(frozen=True)
class Held:
    """What a window holds of its session: every event with an id from `first` to `last`,
    the ids of the edits among them, and every failed and verified run of those events, as
    the database holds them once the window is applied (none was stored before it)."""

    session_id: int
    first: int
    last: int
    edits: Sequence[int]
    failed: Sequence[StretchRun]
    passed: Sequence[StretchRun]

    @classmethod
    def of(cls, events: Sequence[WindowEvent], rows: dict[str, list[dict[str, Any]]]) -> Held:
        """What a window of `events` holds, given the rows it inserted (Reads.rows)."""
        first, last = events[0].id, events[-1].id

        def own(verdict: str) -> list[StretchRun]:
            return [StretchRun.of(r) for r in rows[verdict] if first <= r["event_id"] <= last]

        edits = [event.id for event in events if event.kind == "edit"]
        return cls(events[0].session_id, first, last, edits, own(FAILED), own(VERIFIED))

    def runs(self, after: int, before: int, passed: bool) -> list[StretchRun]:
        return [r for r in (self.passed if passed else self.failed) if after < r.event_id < before]

    def edit_before(self, at: int) -> int | None:
        """The session's last edit before `at`, when the window can tell."""
        if not self.first <= at <= self.last + 1:
            return None
        index = bisect_left(self.edits, at)
        return self.edits[index - 1] if index else None

    def edit_after(self, at: int) -> int | None:
        """The session's first edit after `at`, when the window can tell."""
        if not self.first - 1 <= at <= self.last:
            return None
        index = bisect_right(self.edits, at)
        return self.edits[index] if index < len(self.edits) else None


def spans(runs: Iterable[GroupRun]) -> dict[int, tuple[int, int]]:
    """Session id -> the first and last event of its new failed or verified runs."""
    found: dict[int, tuple[int, int]] = {}
    for run in runs:
        if run.verdict in (FAILED, VERIFIED):
            first, last = found.get(run.session_id, (run.event_id, run.event_id))
            found[run.session_id] = (min(first, run.event_id), max(last, run.event_id))
    return found


def derive(
    connection: Driver, spanned: dict[int, tuple[int, int]], held: Held | None = None
) -> Counter[str]:
    """Re-derive the substitutions the window's new runs (failed or verified; `spans`) can
    touch; `held`: what the window holds, not read again."""
    stats: Counter[str] = Counter()
    for session_id, (first, last) in sorted(spanned.items()):
        own = held if held is not None and held.session_id == session_id else None
        stats.update(_derive_stretch(connection, session_id, first, last, own))
    return stats


def _derive_stretch(
    connection: Driver, session_id: int, first: int, last: int, held: Held | None
) -> Counter[str]:
    # Each group of reads is sent whole before any is read (one wait on a server).
    before_edit = held.edit_before(first) if held else None
    after_edit = held.edit_after(last) if held else None
    params: dict[str, Any] = {"session_id": session_id, "at": first}
    stored_rows = connection.execute(_STORED, params)
    asked_before = asked_after = session_span = None
    if before_edit is None:
        asked_before = connection.execute(_EDIT_BEFORE, params)
    if after_edit is None:
        asked_after = connection.execute(_EDIT_AFTER, {**params, "at": last})
    if asked_before is not None or asked_after is not None:
        session_span = connection.execute(_SESSION_SPAN, params)
    if asked_before is not None:
        before_edit = asked_before.scalar()
    if asked_after is not None:
        after_edit = asked_after.scalar()
    if before_edit is None or after_edit is None:
        assert session_span is not None
        start, end = session_span.one()
        before_edit = (start - 1) if before_edit is None else before_edit
        after_edit = (end + 1) if after_edit is None else after_edit
    params = {"session_id": session_id, "after": before_edit, "before": after_edit}
    # The stretch's runs and edits: those the window holds, and the rest read, on either side.
    parts = [(before_edit, after_edit)]
    if held is not None:
        parts = [
            (before_edit, min(held.first, after_edit)),
            (max(held.last, before_edit), after_edit),
        ]
        parts = [(after, before) for after, before in parts if after + 1 < before]
    sent = [
        [
            connection.execute(statement, {**params, "after": after, "before": before})
            for statement in (FAILED_RUNS, PASSED_RUNS, _EDITS_BETWEEN)
        ]
        for after, before in parts
    ]
    failed_rows = [row for reads in sent for row in reads[0]]
    passed_rows = [row for reads in sent for row in reads[1]]
    edits = [edit for reads in sent for edit in reads[2].scalars()]
    if held is not None:
        failed_rows += held.runs(before_edit, after_edit, passed=False)
        passed_rows += held.runs(before_edit, after_edit, passed=True)
        edits += [e for e in held.edits if before_edit < e < after_edit]
    failed = {(row.event_id, row.step): row for row in failed_rows}
    if not failed:
        return Counter()  # a row is a failed run's: none, no row either
    stored = {
        (row.failed_event_id, row.failed_step): row
        for row in stored_rows
        if before_edit < row.failed_event_id < after_edit
    }
    passed = {(row.event_id, row.step): row for row in passed_rows}
    runs = [session_run(row, False) for row in failed.values()]
    runs += [session_run(row, True) for row in passed.values()]
    wanted = {(p.failed.event_id, p.failed.step): p for p in pair(runs, edits)}
    # A row whose substitute is none of the stretch's passes after its failure was found
    # across sessions or edits, or before it (remem/procedures/siblings.py): the stretch
    # replaces it only with a pair of its own.
    own = {event_id for event_id, _step in passed}
    stale = [
        {"id": row.id}
        for key, row in stored.items()
        if (key in wanted and _changed(row, wanted[key]))
        or (
            key not in wanted
            and row.substitute_event_id in own
            and row.substitute_event_id > row.failed_event_id
        )
    ]
    kept = {key for key, row in stored.items() if key in wanted and not _changed(row, wanted[key])}
    fresh = [
        row_of(session_id, failed[key], passed[(p.substitute.event_id, p.substitute.step)], p)
        for key, p in wanted.items()
        if key not in kept
    ]
    if stale:
        connection.execute(_DELETE, stale)
    if fresh:
        connection.execute(INSERT, fresh)
    return Counter(substitutions=len(fresh))


def session_run(row: Any, passed: bool) -> SessionRun:
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


def row_of(session_id: int, failed: Any, passed: Any, found: Pair) -> dict[str, Any]:
    error = failed.error or recognisers.telling_line(failed.error_excerpt)
    # What failed is the workflow as its wrappers ran it: the same text when none did.
    form = found.failed.form
    form_hash = failed.workflow_hash if form == failed.workflow else workflow_hash(form)
    return {
        "project_id": failed.project_id,
        "session_id": session_id,
        "branch": failed.branch,
        "directory": failed.directory,
        "failed_event_id": failed.event_id,
        "failed_step": failed.step,
        "failed_workflow": form,
        "failed_workflow_hash": form_hash,
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
