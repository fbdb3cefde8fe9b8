"""OpenCode sessions, as `opencode export` writes them -> the payloads of remem's generic host.

An export is one JSON document, not JSONL: `{"info": {"id", "directory", ...}, "messages":
[{"info": {"role", "time"}, "parts": [...]}]}`. A part of type `tool` is one call: `tool`
names it, `callID` identifies it, `state` holds its `status`, `input`, `output` and, for
`bash`, `metadata.exit` (the exit code; null when the command was killed). OpenCode has no
hook remem reads, so its calls become generic payloads (command, exit code, output; or the
files an edit wrote), keyed by their call id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from remem.record.lines import MAX_LINE_BYTES, NotRegularFile, bounded_lines, open_regular
from remem.record.output import without_lone_surrogates
from remem.transcripts.common import (
    Blob,
    ReadStats,
    Transcript,
    TranscriptCall,
    transcript_name,
    without_none,
)

HOST = "generic"
COMMAND_TOOLS = frozenset({"bash"})
EDIT_TOOLS = frozenset({"edit", "write"})
# An export is parsed whole: one larger than this is skipped and counted, as a line over
# MAX_LINE_BYTES is in JSONL.
MAX_EXPORT_BYTES = 4 * MAX_LINE_BYTES


def read_opencode(path: Transcript, stats: ReadStats | None = None) -> Iterator[TranscriptCall]:
    """The shell and edit calls of one export that finished, in the order of its messages."""
    stats = stats if stats is not None else ReadStats()
    document = _document(path, stats)
    if document is None:
        return
    info = document.get("info")
    info = info if isinstance(info, dict) else {}
    session_id = _string(info.get("id"))
    directory = _string(info.get("directory"))
    name = transcript_name(path)
    for message in document["messages"]:
        parts = message.get("parts") if isinstance(message, dict) else None
        if not isinstance(parts, list):
            stats.unknown_records += 1
            continue
        for part in parts:
            if isinstance(part, dict) and part.get("type") == "tool":
                call = _call(part, session_id, directory, name, stats)
                if call is not None:
                    yield call


def _document(path: Transcript, stats: ReadStats) -> dict[str, Any] | None:
    """The export parsed, or None (counted) when it is not one."""
    data = _read_whole(path, stats)
    if data is None:
        return None
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        stats.malformed += 1
        return None
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        stats.malformed += 1
        return None
    if b"\\ud" in data or b"\\uD" in data:
        document = without_lone_surrogates(document)
    return dict(document)


def _read_whole(path: Transcript, stats: ReadStats) -> bytes | None:
    if isinstance(path, Blob):
        return _joined(path.lines, stats)
    try:
        handle = open_regular(path)
    except NotRegularFile as exc:
        stats.refused = exc.kind
        return None
    except OSError as exc:
        stats.refused = exc.strerror or type(exc).__name__
        return None
    with handle:
        return _joined(bounded_lines(handle), stats)


def _joined(lines: Iterator[tuple[bytes | None, int]], stats: ReadStats) -> bytes | None:
    chunks, total = [], 0
    for line, size in lines:
        stats.lines += 1
        stats.bytes_read += size
        total += size
        if line is None or total > MAX_EXPORT_BYTES:
            stats.too_long += 1
            for _line, rest in lines:  # the rest is read (a blob's stream goes on), not kept
                stats.bytes_read += rest
            return None
        chunks.append(line)
    return b"".join(chunks)


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _call(
    part: dict[str, Any],
    session_id: str | None,
    directory: str | None,
    name: str,
    stats: ReadStats,
) -> TranscriptCall | None:
    tool, state = part.get("tool"), part.get("state")
    if tool not in COMMAND_TOOLS and tool not in EDIT_TOOLS:
        return None
    if not isinstance(state, dict) or state.get("status") not in ("completed", "error"):
        stats.unpaired += 1  # still pending or running when the export was taken
        return None
    tool_input = state.get("input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    times = state.get("time")
    ended = times.get("end") if isinstance(times, dict) else None
    at = float(ended) / 1000 if isinstance(ended, int | float) and ended is not True else None
    workdir = _string(tool_input.get("workdir"))
    cwd = os.path.join(directory, workdir) if directory and workdir else workdir or directory
    payload: dict[str, Any] = {
        "session_id": session_id,
        "cwd": cwd or ".",
        "event_id": _string(part.get("callID")) or _string(part.get("id")),
        "transcript_path": name,
    }
    if tool in EDIT_TOOLS:
        file_path = _string(tool_input.get("filePath"))
        if state.get("status") != "completed" or file_path is None:
            return None
        stats.edits += 1
        payload["files"] = [file_path]
        return TranscriptCall(without_none(payload), HOST, at, None, None, directory)
    metadata = state.get("metadata")
    exit_code = _whole(metadata.get("exit")) if isinstance(metadata, dict) else None
    output = state.get("output") if state.get("status") == "completed" else state.get("error")
    payload.update(command=tool_input.get("command"), exit_code=exit_code, output=output)
    stats.commands += 1
    return TranscriptCall(without_none(payload), HOST, at, None, exit_code, directory)
