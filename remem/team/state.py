"""What the daemon last heard from the team database, kept in the local one (`team_state`), so
that `remem status` reports the team link without ever connecting to it.

Rows by name: `contact` (value: the team database's schema revision; updated_at: when it last
answered), `error` (value: the last failure, one redacted line; removed by the next success),
`ship` and `pull` (value: how many rows the last one moved; updated_at: when it ended).
Stdlib only: the fast `remem status` reads it through an `execute(sql, params) -> rows` callable.
"""

from __future__ import annotations

from dataclasses import dataclass

from remem.record.redact import redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from remem.db.snapshot import Execute

CONTACT, ERROR, SHIP, PULL = "contact", "error", "ship", "pull"
ERROR_CHARS = 300

_READ = "SELECT name, value, updated_at FROM team_state"
_PUT = (
    "INSERT INTO team_state (name, value, updated_at) VALUES (:name, :value, :at) "
    "ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
)
_CLEAR = "DELETE FROM team_state WHERE name = :name"
# Events of shared projects past their cursor; session starts are never shipped.
_WAITING = (
    "SELECT count(*) FROM team_links l JOIN captured_events e ON e.project_id = l.project_id "
    "AND e.id > l.shipped_event_id WHERE e.kind != 'session_start'"
)
_LINKED = "SELECT count(*) FROM team_links"


@dataclass(frozen=True)
class Link:
    """The team link as this machine last saw it; times are epoch seconds or None."""

    contact_at: float | None
    revision: str | None
    error: str | None
    error_at: float | None
    shipped_at: float | None
    pulled_at: float | None
    projects: int
    waiting: int


def read_link(execute: Execute) -> Link:
    found = {name: (value, at) for name, value, at in execute(_READ, {})}
    contact = found.get(CONTACT, (None, None))
    error = found.get(ERROR, (None, None))
    return Link(
        contact_at=contact[1],
        revision=contact[0],
        error=error[0],
        error_at=error[1],
        shipped_at=found.get(SHIP, (None, None))[1],
        pulled_at=found.get(PULL, (None, None))[1],
        projects=int(execute(_LINKED, {})[0][0]),
        waiting=int(execute(_WAITING, {})[0][0]),
    )


def put(execute: Execute, name: str, value: str | None, at: float) -> None:
    execute(_PUT, {"name": name, "value": value, "at": at})


def clear(execute: Execute, name: str) -> None:
    execute(_CLEAR, {"name": name})


def one_line(message: str) -> str:
    """A driver's message as one printable line: redacted (it can quote a connection string),
    its lines joined, its length cut."""
    text = " ".join(redact_text(message).split())
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"
