"""The captured event record. A namedtuple, not a dataclass: `dataclasses` costs the hook more
start-up time than everything else it does."""

from __future__ import annotations

from collections import namedtuple

CapturedEvent = namedtuple(
    "CapturedEvent",
    [
        "idempotency_key",
        "host",
        "session_key",
        "hook_event",
        "kind",
        "tool_name",
        "tool_use_id",
        "command",
        "outcome",
        "exit_code",
        "exit_code_source",
        "error_excerpt",
        "project_root",
        "branch",
        "cwd",
        "files",
        "change_hash",
        "transcript_path",
        "payload",
        "event_at",
        "captured_at",
    ],
)
EVENT_FIELDS = CapturedEvent._fields

HOSTS = ("claude-code", "codex", "cursor", "generic")
ERROR_EXCERPT_CHARS = 500


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
