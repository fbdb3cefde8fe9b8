"""What the transcript readers share: the records they yield, their counters, and a streaming
JSONL reader that never loads a file whole, whether the transcript is a file or a blob of git's
object store (an Entire checkpoint)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from remem.capture.fields import parse_timestamp
from remem.record.event import Dropped
from remem.record.lines import NotRegularFile, bounded_lines, open_regular
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


@dataclass(frozen=True)
class Blob:
    """A transcript that is no file of its own (a blob of git's object store): the name its
    calls record as their transcript_path, and its lines as `bounded_lines` gives them."""

    name: str
    lines: Iterator[tuple[bytes | None, int]]


# What a reader reads: a path, or a blob.
Transcript = str | Blob


def transcript_name(source: Transcript) -> str:
    return source.name if isinstance(source, Blob) else os.path.abspath(source)


@dataclass
class ReadStats:
    lines: int = 0
    malformed: int = 0
    unknown_records: int = 0
    commands: int = 0
    edits: int = 0
    unpaired: int = 0
    bytes_read: int = 0
    too_long: int = 0  # lines over MAX_LINE_BYTES, skipped
    refused: str | None = None  # why the file was not read: "a FIFO", "a directory", ...


def read_records(source: Transcript, stats: ReadStats) -> Iterator[dict[str, Any]]:
    """Each JSON object of a JSONL file (or blob), line by line; anything else is counted and
    skipped.

    Only a regular file is read (anything else is refused, and says why in `stats.refused`),
    up to the size it had when opened: what a live session appends meanwhile is the next
    reading's. A line over MAX_LINE_BYTES is skipped and counted. A partial last line fails to
    parse like any other broken line, so it needs no case of its own.
    """
    if isinstance(source, Blob):
        yield from _records(source.lines, stats)
        return
    try:
        handle = open_regular(source)
    except NotRegularFile as exc:
        stats.refused = exc.kind
        return
    except OSError as exc:
        stats.refused = exc.strerror or type(exc).__name__
        return
    with handle:
        yield from _records(bounded_lines(handle), stats)


def _records(
    lines: Iterator[tuple[bytes | None, int]], stats: ReadStats
) -> Iterator[dict[str, Any]]:
    for line, size in lines:
        stats.lines += 1
        stats.bytes_read += size
        if line is None:
            stats.too_long += 1
            continue
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


def without_none(payload: dict[str, Any]) -> dict[str, Any]:
    """A live hook omits what it does not know; so does a replayed payload."""
    return {key: value for key, value in payload.items() if value is not None}
