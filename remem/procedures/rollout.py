"""Codex outcomes: the hook has no exit code, the rollout file at transcript_path does."""

from __future__ import annotations

import json
from dataclasses import dataclass

from remem.record.event import ERROR_EXCERPT_CHARS
from remem.record.lines import bounded_lines, open_regular
from remem.record.output import output_excerpt
from remem.record.redact import redact_text

# The exit codes a database column holds on every backend (PostgreSQL's INTEGER is 32 bits):
# a record claiming one outside is skipped like any other unreadable record.
EXIT_CODE_RANGE = range(-(2**31), 2**31)


@dataclass(frozen=True)
class Resolution:
    exit_code: int
    excerpt: str | None
    output: str | None = None


def resolve_exit_codes(transcript_path: str, call_ids: set[str]) -> dict[str, Resolution]:
    """exit codes of `exec_command_end` records for the given call ids; unreadable files (and
    anything but a regular file) and lines are skipped (those events stay `unknown` and never
    count)."""
    found: dict[str, Resolution] = {}
    try:
        # As import reads it: a regular file only (a FIFO named by a payload would block the
        # worker), to its size when opened, no line over MAX_LINE_BYTES.
        with open_regular(transcript_path) as handle:
            for line, _size in bounded_lines(handle):
                if line is not None and b"exec_command_end" in line:
                    _collect(line.decode("utf-8", "replace"), call_ids, found)
    except OSError:
        pass
    return found


def _collect(line: str, call_ids: set[str], found: dict[str, Resolution]) -> None:
    try:
        payload = json.loads(line).get("payload")
    except (ValueError, AttributeError):
        return
    if not isinstance(payload, dict) or payload.get("call_id") not in call_ids:
        return
    exit_code = payload.get("exit_code")
    if not isinstance(exit_code, int) or isinstance(exit_code, bool):
        return
    if exit_code not in EXIT_CODE_RANGE:
        return
    output = payload.get("aggregated_output")
    if isinstance(output, str):
        # PostgreSQL text holds no NUL character, which an output may: shown as U+FFFD.
        output = output.replace("\x00", "\ufffd")
    redacted = redact_text(output) if isinstance(output, str) and output else None
    excerpt = redacted[:ERROR_EXCERPT_CHARS] if exit_code != 0 and redacted else None
    found[payload["call_id"]] = Resolution(exit_code, excerpt, output_excerpt(redacted))
