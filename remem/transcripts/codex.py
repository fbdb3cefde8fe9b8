"""Codex CLI rollout files (JSONL) -> the PostToolUse payloads its hooks would have sent.

A rollout line is `{"timestamp", "type", "payload"}`. A `response_item` `function_call` (or
`custom_tool_call`, `local_shell_call`) opens a call; the `event_msg` `exec_command_end` or
`patch_apply_end` with the same `call_id` closes it. Rollouts without those events (older
releases) close a call from its `function_call_output`, when that states an exit code. Rollouts
from before the envelope (2025) have a bare header line and bare response items; both are read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from remem.capture.fields import command_text
from remem.record.tool_result import exec_output, exit_code_of, output_outcome, text_of
from remem.record.writes import applied_patch
from remem.transcripts.common import (
    ReadStats,
    Transcript,
    TranscriptCall,
    parse_time,
    read_records,
    transcript_name,
    without_none,
)

HOST = "codex"
SHELL_TOOLS = frozenset({"exec_command", "shell", "shell_command", "local_shell", "container.exec"})
PATCH_TOOLS = frozenset({"apply_patch", "applypatch"})
# Response item types that a pre-envelope rollout writes as bare lines.
BARE_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)


@dataclass(frozen=True)
class _Call:
    tool_name: str  # "Bash" or "apply_patch", as the Codex hook names them
    text: str  # the command, or the patch
    cwd: str | None
    turn_id: str | None


def read_codex(path: Transcript, stats: ReadStats | None = None) -> Iterator[TranscriptCall]:
    """The shell and apply_patch calls of one rollout, in the order they finished."""
    stats = stats if stats is not None else ReadStats()
    rollout = _Rollout(transcript_name(path), stats)
    for record in read_records(path, stats):
        call = rollout.read(record)
        if call is not None:
            yield call
    stats.unpaired += len(rollout.pending)


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class _Rollout:
    """The session's state as the file goes by, and the calls still waiting for their end."""

    def __init__(self, transcript_path: str, stats: ReadStats) -> None:
        self.transcript_path = transcript_path
        self.stats = stats
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.session_cwd: str | None = None
        self.branch: str | None = None
        self.turn_id: str | None = None
        self.pending: dict[str, _Call] = {}

    def read(self, record: dict[str, Any]) -> TranscriptCall | None:
        kind, payload = record.get("type"), record.get("payload")
        at = parse_time(record.get("timestamp"))
        if "payload" not in record and kind in BARE_ITEM_TYPES:
            return self._item(record, at)
        if kind is None and record.get("record_type") == "state":
            return None  # pre-envelope bookkeeping, nothing to read
        if kind is None and "id" in record and "timestamp" in record:
            self._session_meta(record)  # the pre-envelope header line
        elif not isinstance(payload, dict):
            self.stats.unknown_records += 1
        elif kind == "session_meta":
            self._session_meta(payload)
        elif kind == "turn_context":
            self.cwd = _string(payload.get("cwd")) or self.cwd
            self.turn_id = _string(payload.get("turn_id")) or self.turn_id
        elif kind == "event_msg":
            return self._event(payload, at)
        elif kind == "response_item":
            return self._item(payload, at)
        else:
            self.stats.unknown_records += 1
        return None

    def _session_meta(self, meta: dict[str, Any]) -> None:
        # A forked rollout repeats its parent's session_meta after its own: the first one wins.
        if self.session_id is not None:
            return
        self.session_id = _string(meta.get("id"))
        self.cwd = _string(meta.get("cwd")) or self.cwd
        self.session_cwd = self.cwd
        git = meta.get("git")
        self.branch = _string(git.get("branch")) if isinstance(git, dict) else None

    def _event(self, event: dict[str, Any], at: float | None) -> TranscriptCall | None:
        kind = event.get("type")
        if kind == "task_started":
            self.turn_id = _string(event.get("turn_id")) or self.turn_id
            return None
        if kind not in ("exec_command_end", "patch_apply_end"):
            return None
        call_id = _string(event.get("call_id"))
        call = self.pending.pop(call_id, None) if call_id else None
        if call is None or call_id is None:
            return None
        turn_id = _string(event.get("turn_id"))
        if kind == "patch_apply_end":
            if event.get("success") is False:
                return None
            # A shell call that runs apply_patch is applied as a patch, and ends as one.
            patch = _Call("apply_patch", call.text, call.cwd, call.turn_id)
            output = "".join(text_of(event.get(key)) for key in ("stdout", "stderr"))
            return self._emit(call_id, patch, at, None, output, turn_id)
        exit_code = exit_code_of(event.get("exit_code"))
        if call.tool_name == "apply_patch" and exit_code != 0:
            return None
        return self._emit(call_id, call, at, exit_code, exec_output(event), turn_id)

    def _item(self, item: dict[str, Any], at: float | None) -> TranscriptCall | None:
        kind = item.get("type")
        call_id = _string(item.get("call_id"))
        if kind == "message":
            self._note_environment(item)
        elif call_id is None:
            return None
        elif kind == "function_call":
            self._open_function_call(call_id, item)
        elif kind == "custom_tool_call" and item.get("name") in PATCH_TOOLS:
            self._open(call_id, "apply_patch", item.get("input"), None)
        elif kind == "local_shell_call":
            action = item.get("action")
            action = action if isinstance(action, dict) else {}
            self._open_command(call_id, action.get("command"), action.get("working_directory"))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            return self._close_from_output(call_id, item.get("output"), at)
        return None

    def _open_function_call(self, call_id: str, item: dict[str, Any]) -> None:
        name, arguments = item.get("name"), item.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return
        if not isinstance(arguments, dict):
            return
        if name in PATCH_TOOLS:
            patch = arguments.get("input", arguments.get("patch"))
            self._open(call_id, "apply_patch", patch, arguments.get("workdir"))
        elif name in SHELL_TOOLS:
            command = arguments.get("cmd", arguments.get("command"))
            self._open_command(call_id, command, arguments.get("workdir"))

    def _open_command(self, call_id: str, command: Any, workdir: Any) -> None:
        patch = applied_patch(command)
        if patch is not None:  # `["apply_patch", patch]`, or `apply_patch <<'EOF'` in bash
            self._open(call_id, "apply_patch", patch, workdir)
        else:
            self._open(call_id, "Bash", command_text(command), workdir)

    def _open(self, call_id: str, tool_name: str, text: Any, workdir: Any) -> None:
        if not isinstance(text, str):
            return
        cwd = self.cwd
        if isinstance(workdir, str) and workdir:
            # A relative workdir is relative to the turn's cwd; join keeps an absolute one.
            cwd = os.path.join(self.cwd, workdir) if self.cwd else workdir
        self.pending[call_id] = _Call(tool_name, text, cwd, self.turn_id)

    def _close_from_output(
        self, call_id: str, output: Any, at: float | None
    ) -> TranscriptCall | None:
        call = self.pending.get(call_id)
        if call is None:
            return None
        text, exit_code = output_outcome(output)
        if call.tool_name == "Bash":
            if exit_code is None:
                return None  # still running, or silent about its status: wait for its end
            del self.pending[call_id]
            return self._emit(call_id, call, at, exit_code, text, None)
        if exit_code is None and not text.lstrip().startswith("Success"):
            return None
        del self.pending[call_id]
        if exit_code not in (None, 0):
            return None
        return self._emit(call_id, call, at, None, text, None)

    def _note_environment(self, item: dict[str, Any]) -> None:
        # Pre-envelope rollouts state the cwd only in an <environment_context> user message.
        if item.get("role") != "user":
            return
        text = text_of(item.get("content"))
        if not text.lstrip().startswith("<environment_context>"):
            return
        start, end = text.find("<cwd>"), text.find("</cwd>")
        if 0 <= start < end:
            self.cwd = text[start + len("<cwd>") : end].strip() or self.cwd

    def _emit(
        self,
        call_id: str,
        call: _Call,
        at: float | None,
        exit_code: int | None,
        output: str,
        turn_id: str | None,
    ) -> TranscriptCall:
        if call.tool_name == "Bash":
            tool_input = {"command": call.text}
            self.stats.commands += 1
        else:
            tool_input, exit_code = {"input": call.text}, None
            self.stats.edits += 1
        payload = without_none(
            {
                "hook_event_name": "PostToolUse",
                "session_id": self.session_id,
                "turn_id": turn_id or call.turn_id or call_id,
                "transcript_path": self.transcript_path,
                "cwd": call.cwd,
                "tool_name": call.tool_name,
                "tool_use_id": call_id,
                "tool_input": tool_input,
                "tool_response": output,
            }
        )
        session_cwd = self.session_cwd or self.cwd or call.cwd
        return TranscriptCall(payload, HOST, at, self.branch, exit_code, session_cwd)
