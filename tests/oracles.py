"""Oracles: plain, slow ways to derive what the library derives fast (window by window, in
batches), which tests compare it with, and the plain forms of what it returns. remem itself
never uses them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from remem.agent.digest import paginate_held
from remem.db.driver import Driver
from remem.procedures import journal

_IN_GROUP_BY_STEP = f"WHERE {journal.GROUP} ORDER BY event_id, step"
SELECT_ATTEMPTS = text(
    "SELECT id, event_id, failed_at, change_hash, attempt_number, duplicate_of, "
    "resolved_by_event_id, exit_code, error_excerpt, salient_error, session_id, branch, "
    f"command, masked, workflow FROM attempts {_IN_GROUP_BY_STEP}"
)
SELECT_SUCCESSES = text(
    "SELECT event_id, verified_at, session_id, branch, command, masked FROM verifications "
    + _IN_GROUP_BY_STEP
)


def edits_before(
    connection: Driver, group: dict[str, Any], session_id: int, event_id: int
) -> tuple[list[str], str | None]:
    """Files edited in the session since its previous run of this command, and one hash of
    those edits (None when there were none), asked for one run alone."""
    return journal.edits_from(journal.send_edits(connection, group, session_id, event_id).all())


def load_history(connection: Driver, group: dict[str, Any]) -> journal.History:
    """Every run of a group at once. A run is an event: the same workflow twice in one command
    (`make && make`) is one (of two steps of one event, the later is kept)."""
    attempts = {row.event_id: row for row in connection.execute(SELECT_ATTEMPTS, group).all()}
    successes = {row.event_id: row for row in connection.execute(SELECT_SUCCESSES, group).all()}
    return journal.History(attempts, successes)


def paginate(*args: Any, **kwargs: Any) -> list[str]:
    """The digest's pages as text alone (remem.agent.digest.paginate_held)."""
    return [page for page, _held in paginate_held(*args, **kwargs)]
