"""The captured event record and the Dropped signal. Stdlib only: the hook imports this."""

from __future__ import annotations

from remem.record.frozen import Record

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from typing import Any


class CapturedEvent(Record):
    """One normalised, redacted event: the record that crosses from capture to storage. Its
    fields are the event columns (remem.db.columns.EVENT_FIELDS), in their order."""

    idempotency_key: str
    session_key: str
    project_root: str
    host: str
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

    def as_dict(self) -> dict[str, Any]:
        return self.fields()


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
