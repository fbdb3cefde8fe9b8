"""The captured event record and the Dropped signal. Stdlib only: the hook imports this."""

from __future__ import annotations

from remem.db.columns import EVENT_FIELDS

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from typing import Any


class CapturedEvent:
    """One normalised, redacted event: the record that crosses from capture to storage.

    A slotted class rather than a dataclass or namedtuple: building either costs the hook more
    start-up time than the rest of its work.
    """

    __slots__ = EVENT_FIELDS

    idempotency_key: str
    host: str
    session_key: str
    hook_event: str
    kind: str
    tool_name: str | None
    tool_use_id: str | None
    command: str | None
    outcome: str | None
    exit_code: int | None
    exit_code_source: str | None
    error_excerpt: str | None
    output_excerpt: str | None
    project_root: str
    branch: str | None
    cwd: str
    directory: str
    files: list[str] | None
    change_hash: str | None
    transcript_path: str | None
    payload: str
    event_at: float
    captured_at: float
    event_at_reported: str | None

    def __init__(self, **fields: object) -> None:
        for name in EVENT_FIELDS:
            object.__setattr__(self, name, fields.pop(name))
        if fields:
            raise TypeError(f"unknown event fields: {sorted(fields)}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("CapturedEvent is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CapturedEvent) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"CapturedEvent({self.as_dict()!r})"

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in EVENT_FIELDS}


HOSTS = ("claude-code", "codex", "cursor", "generic")
ERROR_EXCERPT_CHARS = 500
# A long output keeps its head and its tail, where test runners print their summaries.
OUTPUT_HEAD_CHARS = 1000
OUTPUT_TAIL_CHARS = 3000
# What `remem drops` shows of a dropped payload: its start, redacted.
DROP_EXCERPT_CHARS = 300
# Drop reasons that lose nothing the memory needs: an event kept with its output cut, remem's own
# command, and what a host sends beyond the events and tools remem reads.
DROPS_BY_DESIGN = ("output_cut", "own_command", "ignored_event", "ignored_tool")


class Dropped(Exception):
    """A payload deliberately not stored; the reason goes to the drop ledger."""

    def __init__(
        self, reason: str, detail: str = "", host: str | None = None, hook_event: str | None = None
    ) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.host = host
        self.hook_event = hook_event
