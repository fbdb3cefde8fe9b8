"""Claude Code session transcripts (JSONL) -> the PostToolUse / PostToolUseFailure payloads its
hooks would have sent.

An assistant record's `tool_use` is paired by id with a later user record's `tool_result`. Only
shell and edit tools are kept while they wait, so memory holds the calls in flight, not the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from remem.record.tool_result import text_of
from remem.transcripts.common import (
    ReadStats,
    Transcript,
    TranscriptCall,
    parse_time,
    read_records,
    transcript_name,
    without_none,
)

HOST = "claude-code"
COMMAND_TOOL = "Bash"
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
# The keys of `toolUseResult` that a live Bash PostToolUse puts in `tool_response`.
RESPONSE_KEYS = ("stdout", "stderr", "interrupted", "isImage", "noOutputExpected")
# How a tool_result says the user stopped the call, e.g. "Exit code 137\n[Request interrupted
# by user for tool use]": the live hook reports that as `is_interrupt`, not as a failure.
INTERRUPT_MARKERS = ("[Request interrupted by user",)


@dataclass(frozen=True)
class _Pending:
    name: str
    tool_input: dict[str, Any]
    session_id: str | None
    cwd: str | None
    branch: str | None


def read_claude(path: Transcript, stats: ReadStats | None = None) -> Iterator[TranscriptCall]:
    """The shell and edit calls of one transcript, in the order their results were written."""
    stats = stats if stats is not None else ReadStats()
    transcript_path = transcript_name(path)
    pending: dict[str, _Pending] = {}
    session_cwd: str | None = None
    for record in read_records(path, stats):
        session_cwd = session_cwd or _string(record.get("cwd"))
        kind = record.get("type")
        if kind == "assistant":
            _note_tool_uses(record, pending)
        elif kind == "user":
            yield from _finish_tool_uses(record, pending, transcript_path, stats, session_cwd)
        else:
            stats.unknown_records += 1
    stats.unpaired += len(pending)


def _parts(record: dict[str, Any], part_type: str) -> list[dict[str, Any]]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [p for p in content if isinstance(p, dict) and p.get("type") == part_type]


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _branch(record: dict[str, Any]) -> str | None:
    branch = _string(record.get("gitBranch"))
    return None if branch == "HEAD" else branch  # Claude Code writes "HEAD" when detached


def _note_tool_uses(record: dict[str, Any], pending: dict[str, _Pending]) -> None:
    for use in _parts(record, "tool_use"):
        name, use_id, tool_input = use.get("name"), use.get("id"), use.get("input")
        if name != COMMAND_TOOL and name not in EDIT_TOOLS:
            continue
        if isinstance(use_id, str) and isinstance(name, str) and isinstance(tool_input, dict):
            pending[use_id] = _Pending(
                name,
                tool_input,
                _string(record.get("sessionId")),
                _string(record.get("cwd")),
                _branch(record),
            )


def _finish_tool_uses(
    record: dict[str, Any],
    pending: dict[str, _Pending],
    transcript_path: str,
    stats: ReadStats,
    session_cwd: str | None,
) -> Iterator[TranscriptCall]:
    results = _parts(record, "tool_result")
    # `toolUseResult` belongs to the record, so it describes a result only when it is alone.
    tool_use_result = record.get("toolUseResult") if len(results) == 1 else None
    for result in results:
        use_id = result.get("tool_use_id")
        call = pending.pop(use_id, None) if isinstance(use_id, str) else None
        if call is None:
            continue
        failed = result.get("is_error") is True
        if call.name in EDIT_TOOLS and failed:
            continue
        payload = without_none(
            {
                "session_id": call.session_id or _string(record.get("sessionId")),
                "transcript_path": transcript_path,
                "cwd": call.cwd or _string(record.get("cwd")),
                "tool_name": call.name,
                "tool_use_id": use_id,
                "tool_input": call.tool_input,
            }
        )
        if call.name in EDIT_TOOLS:
            payload.update(_edit_outcome(call, tool_use_result))
            stats.edits += 1
        else:
            payload.update(_command_outcome(result, tool_use_result, failed))
            stats.commands += 1
        at = parse_time(record.get("timestamp"))
        branch = call.branch or _branch(record)
        yield TranscriptCall(payload, HOST, at, branch, None, session_cwd or payload.get("cwd"))


def _edit_outcome(call: _Pending, tool_use_result: Any) -> dict[str, Any]:
    file_path = call.tool_input.get("file_path") or call.tool_input.get("notebook_path")
    if isinstance(tool_use_result, dict) and isinstance(tool_use_result.get("filePath"), str):
        file_path = tool_use_result["filePath"]
    response = {"filePath": file_path, "success": True} if file_path else {"success": True}
    return {"hook_event_name": "PostToolUse", "tool_response": response}


def _command_outcome(result: dict[str, Any], tool_use_result: Any, failed: bool) -> dict[str, Any]:
    text = text_of(result.get("content"))
    if failed:
        interrupted = any(marker in text for marker in INTERRUPT_MARKERS) or (
            isinstance(tool_use_result, dict) and tool_use_result.get("interrupted") is True
        )
        return {"hook_event_name": "PostToolUseFailure", "error": text, "is_interrupt": interrupted}
    if isinstance(tool_use_result, dict):
        response = {key: tool_use_result[key] for key in RESPONSE_KEYS if key in tool_use_result}
        if tool_use_result.get("backgroundTaskId"):
            response["backgroundTaskId"] = tool_use_result["backgroundTaskId"]
    else:
        response = {}
    response.setdefault("stdout", text)
    response.setdefault("stderr", "")
    response.setdefault("interrupted", False)
    return {"hook_event_name": "PostToolUse", "tool_response": response}
