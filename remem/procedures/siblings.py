"""Substitutions across sessions and edits (DESIGN.md §6): a run that could not run here, in
any session, and a sibling that ran (remem/procedures/substitutions.py, sibling). Derived as
a window's runs are stored, after the substitutions of their session's stretch
(remem/procedures/instead.py), which are kept: a row is a failed run's, once.

A run that could not run takes the latest sibling that ran before it; else it waits for the
first that runs after it, whichever way its session's events come in windows. Either holds
only while its own form (its workflow as its wrappers ran it) did not run where it failed
between them. The waiting runs are read by the project's index and the rows without a
substitution: few, as most failures are red.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import text

from remem.db.driver import Driver
from remem.procedures.instead import (
    FAILED_RUNS,
    INSERT,
    PASSED_RUNS,
    Held,
    row_of,
    session_run,
)
from remem.procedures.substitutions import Pair, SessionRun, sibling
from remem.shell.purpose import form_of

_WAITING = text(
    "SELECT a.event_id, a.step, a.directory, a.workflow, a.workflow_hash, a.project_id, "
    "a.branch, a.command, a.failed_at AS at, a.salient_error AS error, a.error_excerpt, "
    "a.cannot_run, a.session_id FROM attempts a LEFT JOIN substitutions s "
    "ON s.failed_event_id = a.event_id AND s.failed_step = a.step "
    "WHERE a.project_id = :project AND a.cannot_run = 1 AND a.event_id < :before "
    "AND s.id IS NULL ORDER BY a.event_id"
)
# The runs of a project that ran before a run that could not run, newest first: a window's
# failures that could not run look back at them once.
RAN_BEFORE_READ = 2_000
_RAN_BEFORE = text(
    "SELECT * FROM (SELECT event_id, step, directory, workflow, workflow_hash, project_id, "
    "branch, command, verified_at AS at, NULL AS error, NULL AS error_excerpt, "
    "0 AS cannot_run, 1 AS passed FROM verifications WHERE project_id = :project "
    "AND event_id < :before UNION ALL SELECT event_id, step, directory, workflow, "
    "workflow_hash, project_id, branch, command, failed_at AS at, salient_error AS error, "
    "error_excerpt, cannot_run, 0 AS passed FROM attempts WHERE project_id = :project "
    "AND event_id < :before AND cannot_run = 0) runs "
    f"ORDER BY event_id DESC, step DESC LIMIT {RAN_BEFORE_READ}"
)
# The runs of a waiting run's workflow that ran where it failed, between two events: its own
# form among them means it runs itself.
_RAN_BETWEEN = text(
    "SELECT command FROM verifications WHERE project_id = :project AND directory = :directory "
    "AND workflow_hash = :hash AND event_id > :after AND event_id < :before "
    "UNION ALL SELECT command FROM attempts WHERE project_id = :project "
    "AND directory = :directory AND workflow_hash = :hash AND event_id > :after "
    "AND event_id < :before AND cannot_run = 0"
)

Ran = tuple[Any, bool]  # a run as read, and whether it passed


def derive(
    connection: Driver, spanned: dict[int, tuple[int, int]], held: Held | None = None
) -> Counter[str]:
    """The substitutes the window's new runs (`spans`: session -> first, last event) give
    the runs that could not run and wait, in any session of their projects."""
    stats: Counter[str] = Counter()
    for session_id, (first, last) in sorted(spanned.items()):
        own = held if held is not None and held.session_id == session_id else None
        stats.update(_derive_window(connection, session_id, first, last, own))
    return stats


def _derive_window(
    connection: Driver, session_id: int, first: int, last: int, held: Held | None
) -> Counter[str]:
    ran: list[Ran] = []
    projects: set[int] = set()
    for passed in (True, False):
        if held is not None:
            rows: Iterable[Any] = held.runs(first - 1, last + 1, passed)
        else:
            params = {"session_id": session_id, "after": first - 1, "before": last + 1}
            rows = connection.execute(PASSED_RUNS if passed else FAILED_RUNS, params)
        for row in rows:
            projects.add(row.project_id)
            if not row.cannot_run:
                ran.append((row, passed))
    ran.sort(key=lambda item: (item[0].event_id, item[0].step))
    fresh = []
    for project_id in sorted(projects):
        mine = [item for item in ran if item[0].project_id == project_id]
        before: list[Ran] | None = None  # read once, for the window's own failures
        params = {"project": project_id, "before": last + 1}
        for failed in list(connection.execute(_WAITING, params)):
            waiting = session_run(failed, False)
            found = None
            if failed.event_id >= first:  # new: every run before it is stored
                if before is None:
                    before = _ran_before(connection, project_id, last + 1)
                found = _latest_before(connection, failed, waiting, before)
            found = found or _first_after(connection, failed, waiting, mine)
            if found is not None:
                row, passed = found
                pair = Pair(waiting, session_run(row, passed))
                fresh.append(row_of(failed.session_id, failed, row, pair))
    if fresh:
        connection.execute(INSERT, fresh)
    return Counter(substitutions=len(fresh))


def _ran_before(connection: Driver, project_id: int, before: int) -> list[Ran]:
    rows = connection.execute(_RAN_BEFORE, {"project": project_id, "before": before})
    return [(row, bool(row.passed)) for row in rows]


def _first_after(
    connection: Driver, failed: Any, waiting: SessionRun, ran: Sequence[Ran]
) -> Ran | None:
    """The first of `ran` after `failed` that is its sibling, unless its own form ran
    between them."""
    for row, passed in ran:
        if row.event_id > failed.event_id and _is_sibling(failed, waiting, row, passed):
            between = (failed.event_id, row.event_id)
            return None if _ran_itself(connection, failed, waiting, *between) else (row, passed)
    return None


def _latest_before(
    connection: Driver, failed: Any, waiting: SessionRun, newest_first: Sequence[Ran]
) -> Ran | None:
    """The latest of `newest_first` before `failed` that is its sibling, unless its own
    form ran between them."""
    for row, passed in newest_first:
        if row.event_id < failed.event_id and _is_sibling(failed, waiting, row, passed):
            between = (row.event_id, failed.event_id)
            return None if _ran_itself(connection, failed, waiting, *between) else (row, passed)
    return None


def _is_sibling(failed: Any, waiting: SessionRun, row: Any, passed: bool) -> bool:
    """A sibling that runs without the error `failed` could not run with."""
    if row.error and row.error == failed.error:
        return False
    return sibling(waiting, session_run(row, passed))


def _ran_itself(
    connection: Driver, failed: Any, waiting: SessionRun, after: int, before: int
) -> bool:
    params = {
        "project": failed.project_id, "directory": failed.directory,
        "hash": failed.workflow_hash, "after": after, "before": before,
    }  # fmt: skip
    commands = connection.execute(_RAN_BETWEEN, params).scalars()
    return any(form_of(command, failed.workflow) == waiting.form for command in commands)
