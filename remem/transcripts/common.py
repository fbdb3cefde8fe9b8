"""What both transcript readers share: the records they yield, their counters, and a streaming
JSONL reader that never loads a file whole."""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from remem.capture.fields import parse_timestamp
from remem.record.event import Dropped
from remem.record.output import without_lone_surrogates


@dataclass(frozen=True)
class TranscriptCall:
    """One tool call of a transcript, as the payload the host's live hook would have sent."""

    payload: dict[str, Any]
    host: str
    at: float | None
    branch: str | None
    exit_code: int | None
    # Where the session started: the project root when its repository is gone (import).
    session_cwd: str | None = None


@dataclass
class ReadStats:
    lines: int = 0
    malformed: int = 0
    unknown_records: int = 0
    commands: int = 0
    edits: int = 0
    unpaired: int = 0
    bytes_read: int = 0


def read_records(path: str, stats: ReadStats) -> Iterator[dict[str, Any]]:
    """Each JSON object of a JSONL file, line by line; anything else is counted and skipped.

    A regular file is read up to the size it had when opened: what a live session appends
    meanwhile is the next reading's (a pipe is read to its end). A partial last line fails to
    parse like any other broken line, so it needs no case of its own.
    """
    with open(path, "rb") as lines:
        status = os.fstat(lines.fileno())
        remaining = status.st_size if stat.S_ISREG(status.st_mode) else math.inf
        for line in lines:
            if remaining <= 0:
                break
            remaining -= len(line)
            stats.lines += 1
            stats.bytes_read += len(line)
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):  # ValueError covers bad UTF-8 too
                stats.malformed += 1
                continue
            if not isinstance(record, dict):
                stats.malformed += 1
                continue
            if b"\\ud" in line or b"\\uD" in line:  # only an escape can carry a lone surrogate
                record = without_lone_surrogates(record)
            yield record


def parse_time(value: Any) -> float | None:
    """Epoch seconds of an ISO-8601 timestamp, read as the hook reads one (a naive one is
    UTC); None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value, "")
    except Dropped:
        return None


def text_of(content: Any) -> str:
    """A tool result's text: a plain string, or the text parts of a content list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, dict)]
        return "\n".join(part for part in parts if isinstance(part, str))
    return ""


def without_none(payload: dict[str, Any]) -> dict[str, Any]:
    """A live hook omits what it does not know; so does a replayed payload."""
    return {key: value for key, value in payload.items() if value is not None}
