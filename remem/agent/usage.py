"""Did the memory help (DESIGN.md §7): what the SessionStart digest's printed page held,
recorded for its session, and what became of the procedures shown, read back to rank the
digest by it. The worker judges each session (remem/procedures/ledger.py); this reads the
sums.

Stdlib only, without `typing` or `dataclasses` at run time: the hook imports it.
"""

from __future__ import annotations

from remem.capture.fields import key_hash
from remem.db.vocabulary import KNOWN_ERROR, PROCEDURE
from remem.record.frozen import Record

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from remem.db.snapshot import Execute

# Shown in this many sessions and never used: below every procedure that is used.
IGNORED_AFTER_SESSIONS = 5
# The digest's order by use: used and passing, not known yet, ignored, followed and failing.
USED, UNKNOWN, IGNORED, FAILING = 0, 1, 2, 3

SHOWN_INSERT = (
    "INSERT INTO digest_shown (session_id, event_id, project_id, kind, procedure_id, "
    "directory, workflow_hash, error_key_hash, page, shown_at) "
    "SELECT e.session_id, e.id, e.project_id, ?, ?, ?, ?, ?, ?, ? FROM captured_events e "
    "WHERE e.idempotency_key = ?"
)


def shown_rows(event_key: str, held: Sequence[Any], page: int, now: float) -> list[tuple[Any, ...]]:
    """SHOWN_INSERT's rows for what one page held: this machine's procedures (the team's ids
    are the team database's) and the known errors with a key."""
    rows: list[tuple[Any, ...]] = []
    for item in held:
        if hasattr(item, "workflow_hash") and getattr(item, "source", "") == "local":
            rows.append(
                (PROCEDURE, item.id, item.directory, item.workflow_hash, None, page, now, event_key)
            )
        elif getattr(item, "error_key", None):
            error = key_hash(item.error_key)
            rows.append((KNOWN_ERROR, None, None, None, error, page, now, event_key))
    return rows


class Use(Record):
    """What became of a workflow's procedure after the digest showed it, over every session."""

    shown_sessions: int = 0
    used_sessions: int = 0
    passed_sessions: int = 0
    failed_at: float | None = None  # the latest session where it was used and failed last


_SHOWN = (
    "SELECT d.directory, d.workflow_hash, count(DISTINCT d.session_id) FROM digest_shown d "
    "JOIN projects pr ON pr.id = d.project_id WHERE pr.root = :root AND d.kind = 'procedure' "
    "GROUP BY d.directory, d.workflow_hash"
)
# Used: a shown procedure that ran; failing: one followed (shown, or named by advice) whose
# run then failed.
_USED = (
    "SELECT l.directory, l.workflow_hash, "
    "count(DISTINCT CASE WHEN l.kind = 'procedure' AND l.used = 1 THEN l.session_id END), "
    "count(DISTINCT CASE WHEN l.kind = 'procedure' AND l.passed = 1 THEN l.session_id END), "
    "max(CASE WHEN l.failed_after = 1 THEN l.failed_at END) FROM session_ledger l "
    "JOIN projects pr ON pr.id = l.project_id WHERE pr.root = :root "
    "AND l.workflow_hash IS NOT NULL AND (l.used = 1 OR l.followed = 1) "
    "GROUP BY l.directory, l.workflow_hash"
)


def read_use(execute: Execute, root: str) -> dict[tuple[str, str], Use]:
    """Per (directory, workflow hash) of the project: in how many sessions it was shown, used
    and passed, and when it last failed after being followed (shown, or named by advice)."""
    found: dict[tuple[str, str], Use] = {}
    for directory, workflow_hash, sessions in execute(_SHOWN, {"root": root}):
        found[(directory, workflow_hash)] = Use(sessions)
    for directory, workflow_hash, used, passed, failed_at in execute(_USED, {"root": root}):
        held = found.get((directory, workflow_hash), Use())
        found[(directory, workflow_hash)] = held.but(
            used_sessions=used, passed_sessions=passed, failed_at=failed_at
        )
    return found


def failing_since(use: Use | None, last_verified_at: float) -> bool:
    """Followed, then failed, and not verified since: flagged and ranked down until it passes."""
    return use is not None and use.failed_at is not None and use.failed_at > last_verified_at


def use_rank(use: Use | None, last_verified_at: float) -> int:
    """Where a procedure goes in the digest by what happened after it was shown."""
    if failing_since(use, last_verified_at):
        return FAILING
    if use is None:
        return UNKNOWN
    if use.used_sessions and use.passed_sessions:
        return USED
    if not use.used_sessions and use.shown_sessions >= IGNORED_AFTER_SESSIONS:
        return IGNORED
    return UNKNOWN
