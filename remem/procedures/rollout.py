"""Codex outcomes: the hook has no exit code, the rollout file at transcript_path does."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from remem.record.bounded import redacted_head
from remem.record.event import ERROR_EXCERPT_CHARS
from remem.record.lines import bounded_lines, open_regular
from remem.record.output import redacted_excerpt
from remem.record.tool_result import exec_output, exit_code_of, output_outcome

# The exit codes a database column holds on every backend (PostgreSQL's INTEGER is 32 bits):
# a record claiming one outside is skipped like any other unreadable record.
EXIT_CODE_RANGE = range(-(2**31), 2**31)


@dataclass(frozen=True)
class Resolution:
    exit_code: int
    excerpt: str | None
    output: str | None = None


def resolve_exit_codes(transcript_path: str, call_ids: set[str]) -> dict[str, Resolution]:
    """The outcomes of the given call ids: from their `exec_command_end` records, else from a
    `function_call_output` that states an exit code (rollouts without those events); unreadable
    files (and anything but a regular file) and lines are skipped (those events stay `unknown`
    and never count)."""
    ended: dict[str, Resolution] = {}
    stated: dict[str, Resolution] = {}
    try:
        # As import reads it: a regular file only (a FIFO named by a payload would block the
        # worker), to its size when opened, no line over MAX_LINE_BYTES.
        with open_regular(transcript_path) as handle:
            for line, _size in bounded_lines(handle):
                if line is None:
                    continue
                if b"exec_command_end" in line:
                    _collect(line, call_ids, ended, _ended)
                elif b"function_call_output" in line:
                    _collect(line, call_ids, stated, _stated)
    except OSError:
        pass
    return {**stated, **ended}


Outcome = tuple[int | None, str]  # (exit code, when stated; output)


def _collect(
    line: bytes,
    call_ids: set[str],
    found: dict[str, Resolution],
    read: Callable[[dict[str, Any]], Outcome | None],
) -> None:
    try:
        record = json.loads(line.decode("utf-8", "replace"))
    except ValueError:
        return
    # An envelope's payload; a rollout from before the envelope writes the item bare.
    payload = record.get("payload", record) if isinstance(record, dict) else None
    if not isinstance(payload, dict) or payload.get("call_id") not in call_ids:
        return
    outcome = read(payload)
    if outcome is None:
        return
    exit_code, output = outcome
    if exit_code is None or exit_code not in EXIT_CODE_RANGE:
        return
    # PostgreSQL text holds no NUL character, which an output may: shown as U+FFFD.
    output = output.replace("\x00", "\ufffd")
    excerpt = redacted_head(output, ERROR_EXCERPT_CHARS) if exit_code != 0 and output else None
    found[payload["call_id"]] = Resolution(exit_code, excerpt or None, redacted_excerpt(output))


def _ended(payload: dict[str, Any]) -> Outcome | None:
    if payload.get("type") != "exec_command_end":
        return None
    return exit_code_of(payload.get("exit_code")), exec_output(payload)


def _stated(payload: dict[str, Any]) -> Outcome | None:
    if payload.get("type") != "function_call_output":
        return None
    text, exit_code = output_outcome(payload.get("output"))
    return exit_code, text
