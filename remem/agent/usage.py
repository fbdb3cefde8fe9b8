"""Did the memory help (DESIGN.md §7): what the SessionStart digest's printed page held,
recorded for its session, and what became of the procedures shown, read back to rank the
digest by it. The worker judges each session (remem/procedures/ledger.py); this reads the
sums.

Stdlib only, without `typing` or `dataclasses` at run time: the hook imports it.
"""

from __future__ import annotations

import json

from remem.capture.fields import key_hash
from remem.record.frozen import Record

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from remem.db.snapshot import Execute

LOCAL = "local"  # remem.agent.known.LOCAL: the source of this machine's entries
# Shown in this many sessions and never used: below every procedure that is used.
IGNORED_AFTER_SESSIONS = 5
# The digest's order by use: used and passing, not known yet, ignored, followed and failing.
USED, UNKNOWN, IGNORED, FAILING = 0, 1, 2, 3

SHOWN_INSERT = (
    "INSERT INTO digest_shown (session_id, event_id, project_id, page, procedures, "
    "known_errors, shown_at) SELECT e.session_id, e.id, e.project_id, :page, :procedures, "
    ":known_errors, :now FROM captured_events e WHERE e.idempotency_key = :key"
)


def shown_params(event_key: str, held: Sequence[Any], page: int, now: float) -> dict[str, Any]:
    """SHOWN_INSERT's parameters for what one page held: this machine's procedures (the team's
    ids are the team database's) and the known errors with a key, those its pitfalls quote
    too."""
    procedures = [
        [item.id, item.directory, item.workflow_hash]
        for item in held
        if hasattr(item, "workflow_hash") and getattr(item, "source", "") == LOCAL
    ]
    errors = [key_hash(item.error_key) for item in held if getattr(item, "error_key", None)]
    # A known error a procedure's pitfall quotes is shown there, not again among the errors.
    errors += [key_hash(key) for item in held for key in getattr(item, "pitfall_keys", ())]
    return {
        "key": event_key,
        "page": page,
        "procedures": json.dumps(procedures),
        "known_errors": json.dumps(list(dict.fromkeys(errors))),
        "now": now,
    }


class Use(Record):
    """What became of a workflow's procedure after the digest showed it, over every session
    the worker judged (workflow_use)."""

    shown_sessions: int = 0
    used_sessions: int = 0
    passed_sessions: int = 0
    failed_at: float | None = None  # the latest run that failed when followed


_USE = (
    "SELECT u.directory, u.workflow_hash, u.shown_sessions, u.used_sessions, "
    "u.passed_sessions, u.failed_at FROM workflow_use u JOIN projects pr "
    "ON pr.id = u.project_id WHERE pr.root = :root"
)


def read_use(execute: Execute, root: str) -> dict[tuple[str, str], Use]:
    """Per (directory, workflow hash) of the project: in how many sessions it was shown, used
    and passed, and when it last failed after being followed (shown, or named by advice)."""
    return {
        (directory, workflow_hash): Use(*counts)
        for directory, workflow_hash, *counts in execute(_USE, {"root": root})
    }


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
