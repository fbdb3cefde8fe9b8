"""Redaction within bounds: what a tool printed may be megabytes, and the hook runs while the
agent waits. A field is cut to what is kept of it before it is redacted, with a margin on the
side of each cut, so that a secret reaching the part kept is still seen whole (a private key
block, whose header may lie a few kilobytes before); a field that cannot be cut (a command is
stored as it ran) is redacted up to a budget, past which it is masked whole. Stdlib only."""

from __future__ import annotations

from remem.record.redact import MASK, redact_text

REDACTION_MARGIN_CHARS = 16 * 1024
FIELD_BUDGET_CHARS = 256 * 1024


def redacted_head(text: str, limit: int) -> str:
    """The first `limit` characters of the text once redacted."""
    return redact_text(text[: limit + REDACTION_MARGIN_CHARS])[:limit]


def redacted_tail(text: str, limit: int) -> str:
    """The last `limit` characters of the text once redacted."""
    return redact_text(text[-(limit + REDACTION_MARGIN_CHARS) :])[-limit:]


def redacted_cut(text: str, limit: int) -> str:
    """The text redacted, and past `limit` characters cut, saying how much was."""
    if len(text) <= limit + REDACTION_MARGIN_CHARS:
        redacted = redact_text(text)
        if len(redacted) <= limit:
            return redacted
        return f"{redacted[:limit]}…[{len(redacted) - limit} more]"
    return f"{redacted_head(text, limit)}…[{len(text) - limit} more]"


def redact_field(text: str) -> str:
    """A field kept whole, redacted; past FIELD_BUDGET_CHARS, masked whole."""
    return redact_text(text) if len(text) <= FIELD_BUDGET_CHARS else MASK
