"""A command's output as the hosts report it, and the excerpt of it that is kept: what the
hook stores, what the worker reads from a rollout, and what the team ships. Stdlib only.
"""

from __future__ import annotations

from remem.record.bounded import REDACTION_MARGIN_CHARS, redacted_head, redacted_tail
from remem.record.event import OUTPUT_HEAD_CHARS, OUTPUT_TAIL_CHARS
from remem.record.masking import MASK
from remem.record.redact import redact_text
from remem.record.tree import copy_json

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from typing import Any


# Where each host puts a shell command's output, in the order they are joined.
OUTPUT_FIELDS = {
    "claude-code": (("tool_response", "stdout"), ("tool_response", "stderr"), ("error",)),
    "codex": (("tool_response",), ("tool_response", "output"), ("tool_response", "stdout")),
    "cursor": (("output",), ("tool_output",), ("error_message",), ("error",)),
    "generic": (("output",), ("error",)),
}


def output_text(host: str, payload: dict[str, Any]) -> str | None:
    """A command's output as the host reported it (stdout and stderr joined), else None."""
    parts = []
    for path in OUTPUT_FIELDS.get(host, ()):
        value: Any = payload
        for name in path:
            value = value.get(name) if isinstance(value, dict) else None
        if isinstance(value, str) and value:
            parts.append(value)
    return "\n".join(parts) or None


def mask_output(host: str, payload: dict[str, Any]) -> None:
    """Mask each output field of a (redacted) payload whole, in place: the output of a command
    that prints a secret (remem.record.redact.prints_secrets)."""
    for path in OUTPUT_FIELDS.get(host, ()):
        parent: Any = payload
        for name in path[:-1]:
            parent = parent.get(name) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and isinstance(parent.get(path[-1]), str) and parent[path[-1]]:
            parent[path[-1]] = MASK


def redacted_excerpt(text: str | None, already_cut: int = 0) -> str | None:
    """output_excerpt of an output not redacted yet: each end redacted on its own (with a
    margin, remem.record.bounded), never the whole of a long output."""
    if not text or len(text) <= OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS + 2 * REDACTION_MARGIN_CHARS:
        return output_excerpt(redact_text(text) if text else None, already_cut)
    head, tail = redacted_head(text, OUTPUT_HEAD_CHARS), redacted_tail(text, OUTPUT_TAIL_CHARS)
    cut = len(text) - OUTPUT_HEAD_CHARS - OUTPUT_TAIL_CHARS + already_cut
    return f"{head}\n…[{cut} characters cut]…\n{tail}"


def output_excerpt(text: str | None, already_cut: int = 0) -> str | None:
    """The head and the tail of an already redacted output, within a fixed size; already_cut
    counts what an oversized payload lost before (see cut_output)."""
    if not text:
        return None
    if len(text) <= OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS:
        return text
    cut = len(text) - OUTPUT_HEAD_CHARS - OUTPUT_TAIL_CHARS + already_cut
    head, tail = text[:OUTPUT_HEAD_CHARS], text[-OUTPUT_TAIL_CHARS:]
    return f"{head}\n…[{cut} characters cut]…\n{tail}"


def _utf8(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


def without_lone_surrogates(value: Any) -> Any:
    """Lone surrogates are valid JSON but not UTF-8: they could be stored nowhere."""
    if isinstance(value, str):
        return _utf8(value)
    return copy_json(value, _utf8, _utf8)
