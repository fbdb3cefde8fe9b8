"""What `remem status` and `remem doctor` read of the queue, through `execute(sql, params) ->
rows`: the stdlib snapshot and an SQLAlchemy connection (remem.db.engine.executor) alike.
Stdlib only: the fast read path imports this."""

from __future__ import annotations

from remem.db.vocabulary import TASK_STATUSES
from remem.queue import statements as sql

TYPE_CHECKING = False  # `typing` is not imported on the fast read path
if TYPE_CHECKING:
    from remem.db.snapshot import Execute


def count_by_status(execute: Execute) -> dict[str, int]:
    """How many tasks are in each status, every status named (0 when none)."""
    found = {str(status): int(count) for status, count in execute(sql.COUNT_BY_STATUS, {})}
    return {status: found.get(status, 0) for status in TASK_STATUSES}


def oldest_pending_at(execute: Execute) -> float | None:
    """When the longest-waiting pending task was last touched; None when none is pending."""
    rows = execute(sql.OLDEST_PENDING_AT, {})
    return None if not rows or rows[0][0] is None else float(rows[0][0])


def latest_failed(execute: Execute) -> tuple[int, str | None] | None:
    """The task that failed for good most recently, with its last error."""
    rows = execute(sql.LATEST_FAILED, {})
    return (int(rows[0][0]), rows[0][1]) if rows else None
