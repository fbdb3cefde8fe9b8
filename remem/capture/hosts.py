"""Host adapters: one hook payload -> one CapturedEvent, or Dropped with a reason.

Pure apart from `locate` (project root, branch, directory), which the caller passes in. Success
provenance follows DESIGN.md §3: no host puts an exit code in its post-tool hook, so each outcome
says where it came from (exit_code_source).
"""

from __future__ import annotations

import json
import os
import re

from remem.capture.fields import (
    STORED_STRING_CHARS,
    change_hash,
    command_text,
    edit_change,
    excerpt,
    exit_code_in,
    exit_code_value,
    field,
    normalise_ws,
    parse_timestamp,
    payload_hash,
    stored_payload,
)
from remem.record.bounded import redact_field, redacted_cut
from remem.record.event import (
    DROP_EXCERPT_CHARS,
    CapturedEvent,
    Dropped,
)
from remem.record.identity import spelt_root
from remem.record.output import (
    OUTPUT_FIELDS,
    mask_output,
    output_excerpt,
    output_text,
    redacted_excerpt,
)
from remem.record.redact import MASK, prints_secrets, redact_json, redact_text

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Locate = Callable[[str], tuple[str, str | None, str, str]]

COMMAND_TOOLS = frozenset({"Bash", "Shell", "shell", "exec_command", "local_shell"})
EDIT_TOOLS = frozenset(
    {"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "StrReplace", "Delete"}
)
# `remem forget` names what it forgets, so it is never recorded: a command that runs it, alone,
# by a path, after `;`, `&&`, `|`, `(` or inside quotes (`bash -c "remem forget ..."`). A
# regular expression rather than the shell parser, on the hook's hot path; a command it takes
# for one by mistake (`echo remem forget`) is a lost event, not a leak.
_OWN_COMMAND = r"(?<![^\s;&|()/\"'`])remem\s+forget\b"


def detect_host(payload: dict[str, Any]) -> str | None:
    if payload.get("host") == "generic" or (
        "hook_event_name" not in payload and "command" in payload and "session_id" in payload
    ):
        return "generic"
    if "conversation_id" in payload or "workspace_roots" in payload or "cursor_version" in payload:
        return "cursor"
    if "hook_event_name" not in payload:
        return None
    transcript = payload.get("transcript_path")
    tool_use_id = payload.get("tool_use_id")
    if (
        "turn_id" in payload
        or (isinstance(transcript, str) and "/.codex/" in transcript)
        or (isinstance(tool_use_id, str) and tool_use_id.startswith("call_"))
    ):
        return "codex"
    return "claude-code"


class _Draft:
    """What a host adapter fills in; `build_event` finishes it into a CapturedEvent."""

    def __init__(self, host: str, hook_event: str, session_key: str, cwd: str) -> None:
        self.host = host
        self.hook_event = hook_event
        self.session_key = session_key
        self.cwd = cwd
        self.kind = "command"
        self.tool_name: str | None = None
        self.tool_use_id: str | None = None
        self.command: str | None = None
        self.outcome: str | None = None
        self.exit_code: int | None = None
        self.exit_code_source: str | None = None
        self.error_excerpt: str | None = None
        self.branch: str | None = None
        self.files: list[str] = []
        self.change_hash: str | None = None
        self.transcript_path: str | None = None
        self.event_at: float | None = None
        self.event_id: str | None = None


def _patch_draft(draft: _Draft, command: Any) -> bool:
    """A patch applied through the shell is an edit, not a command: whether it was one."""
    from remem.record.writes import applied_patch  # commands only, not SessionStart

    patch = applied_patch(command)
    if patch is None:
        return False
    draft.kind = "edit"
    draft.files, parts = edit_change("apply_patch", {"input": patch})
    draft.change_hash = change_hash(draft.files, parts)
    return True


def _tool_draft(draft: _Draft, payload: dict[str, Any], ignored: str) -> dict[str, Any]:
    """Fill tool name, id and kind; returns tool_input. Drops tools that are neither shell nor
    edit."""
    host = draft.host
    draft.tool_name = field(payload, "tool_name", str, True, host)
    draft.tool_use_id = field(payload, "tool_use_id", str, False, host)
    tool_input = field(payload, "tool_input", dict, False, host) or {}
    if draft.tool_name in COMMAND_TOOLS:
        if _patch_draft(draft, tool_input.get("command")):
            return tool_input
        draft.command = command_text(tool_input.get("command"))
        if draft.command is None:
            raise Dropped("missing_field", "tool_input.command", host, draft.hook_event)
    elif draft.tool_name in EDIT_TOOLS:
        draft.kind = "edit"
        files, parts = edit_change(draft.tool_name, tool_input)
        draft.files = files
        draft.change_hash = change_hash(files, parts)
    else:
        raise Dropped(ignored, f"tool {draft.tool_name}", host, draft.hook_event)
    return tool_input


def _claude_code(payload: dict[str, Any], draft: _Draft) -> None:
    event = draft.hook_event
    if event not in ("PostToolUse", "PostToolUseFailure"):
        raise Dropped("ignored_event", event, draft.host, event)
    tool_input = _tool_draft(draft, payload, "ignored_tool")
    if draft.kind != "command":
        return
    if event == "PostToolUseFailure":
        error = payload.get("error")
        draft.error_excerpt = excerpt(error)
        # `<tool_use_error>` is the harness speaking: the command never ran (a sibling call
        # failed first, a permission was refused), so it neither failed nor passed.
        never_ran = isinstance(error, str) and error.lstrip().startswith("<tool_use_error>")
        if payload.get("is_interrupt") is True or never_ran:
            draft.outcome = "interrupted"
        else:
            draft.outcome = "failure"
            draft.exit_code = exit_code_in(error if isinstance(error, str) else None)
            draft.exit_code_source = "error_text" if draft.exit_code is not None else None
        return
    response = payload.get("tool_response")
    response = response if isinstance(response, dict) else {}
    if response.get("interrupted") is True:
        draft.outcome = "interrupted"
    elif response.get("backgroundTaskId") or tool_input.get("run_in_background") is True:
        draft.outcome = "backgrounded"
    else:
        draft.outcome, draft.exit_code, draft.exit_code_source = "success", 0, "hook_event"


def _codex(payload: dict[str, Any], draft: _Draft) -> None:
    event = draft.hook_event
    if event != "PostToolUse":
        raise Dropped("ignored_event", event, draft.host, event)
    _tool_draft(draft, payload, "ignored_tool")
    if draft.kind == "command":
        # Codex's hook carries no exit code; the worker reads it from the rollout file.
        draft.outcome = "unknown"


def _cursor(payload: dict[str, Any], draft: _Draft) -> None:
    event = draft.hook_event
    if event == "afterShellExecution":
        draft.command = field(payload, "command", str, True, draft.host)
        exit_code = exit_code_value(payload.get("exit_code", payload.get("exitCode")))
        if exit_code is not None:
            draft.outcome = "success" if exit_code == 0 else "failure"
            draft.exit_code, draft.exit_code_source = exit_code, "payload"
        else:
            draft.outcome = "unknown"
    elif event == "afterFileEdit":
        draft.kind, draft.tool_name = "edit", "afterFileEdit"
        draft.files, parts = edit_change("Edit", payload)
        draft.change_hash = change_hash(draft.files, parts)
    elif event in ("postToolUse", "postToolUseFailure"):
        _tool_draft(draft, payload, "ignored_tool")
        if draft.kind != "command":
            return
        if event == "postToolUse":
            draft.outcome, draft.exit_code, draft.exit_code_source = "success", 0, "hook_event"
        elif payload.get("is_interrupt") is True:
            draft.outcome = "interrupted"
        else:
            error = payload.get("error_message") or payload.get("error")
            draft.outcome, draft.error_excerpt = "failure", excerpt(error)
            draft.exit_code = exit_code_in(error if isinstance(error, str) else None)
            draft.exit_code_source = "error_text" if draft.exit_code is not None else None
    else:
        raise Dropped("ignored_event", event, draft.host, event)


def _generic(payload: dict[str, Any], draft: _Draft) -> None:
    host = draft.host
    command = field(payload, "command", str, False, host)
    if _patch_draft(draft, command):
        return
    draft.command = command
    files = field(payload, "files", list, False, host) or []
    if not all(isinstance(f, str) for f in files):
        raise Dropped("invalid_field", "files must be a list of strings", host)
    draft.files = list(files)
    draft.branch = field(payload, "branch", str, False, host)
    draft.event_id = field(payload, "event_id", (str, int), False, host)
    if payload.get("timestamp") is not None:
        draft.event_at = parse_timestamp(payload["timestamp"], host)
    if draft.command is None:
        if not draft.files:
            raise Dropped("missing_field", "command", host)
        draft.kind = "edit"
        draft.change_hash = change_hash(draft.files, [])
        return
    exit_code = exit_code_value(payload.get("exit_code"))
    if exit_code is None and payload.get("exit_code") is not None:
        raise Dropped("invalid_field", "exit_code is not an integer", host)
    if exit_code is None:
        draft.outcome = "unknown"
    else:
        draft.outcome = "success" if exit_code == 0 else "failure"
        draft.exit_code, draft.exit_code_source = exit_code, "payload"
        if exit_code != 0:
            draft.error_excerpt = excerpt(payload.get("error") or payload.get("output"))


_ADAPTERS = {"claude-code": _claude_code, "codex": _codex, "cursor": _cursor, "generic": _generic}
# The hook event each host sends when a session starts (the generic host has none).
_SESSION_START = {"claude-code": "SessionStart", "codex": "SessionStart", "cursor": "sessionStart"}


def _start_draft(payload: dict[str, Any], host: str) -> _Draft:
    if host == "generic":
        hook_event = "command"
    else:
        hook_event = field(payload, "hook_event_name", str, True, host)
    session_field = "conversation_id" if host == "cursor" else "session_id"
    session_key = payload.get(session_field) or payload.get("session_id")
    if not isinstance(session_key, str | int) or isinstance(session_key, bool) or session_key == "":
        raise Dropped("missing_session", session_field, host, hook_event)
    cwd = payload.get("cwd")
    if not cwd and host == "cursor":
        roots = payload.get("workspace_roots")
        cwd = roots[0] if isinstance(roots, list) and roots else None
    if not isinstance(cwd, str) or not cwd:
        raise Dropped("missing_field", "cwd", host, hook_event)
    draft = _Draft(host, hook_event, str(session_key), cwd)
    transcript = payload.get("transcript_path")
    draft.transcript_path = transcript if isinstance(transcript, str) else None
    return draft


def _relative(path: str, roots: tuple[tuple[str, str], ...]) -> str:
    """A file relative to its work tree, whether it was named through the real path or the
    symlinked one the agent used; a file outside stays absolute. Each root comes with the
    directory it stands for inside the work tree."""
    if not os.path.isabs(path):
        return path
    for root, inside in roots:
        if not root:
            continue
        relative = os.path.relpath(path, root)
        if relative != ".." and not relative.startswith("../"):
            return os.path.normpath(os.path.join(inside, relative))
    return path


# An oversized payload keeps this much of each end of each output field. Far wider than the
# stored excerpt: redaction runs after the cut, and must still see whole any secret that reaches
# the part stored.
CUT_OUTPUT_KEEP_CHARS = 64 * 1024


def cut_output(payload: dict[str, Any], host: str) -> int:
    """Cut each long output field of an oversized payload to its head and tail, in place;
    returns how much shorter the output is."""
    cut, keep = 0, CUT_OUTPUT_KEEP_CHARS
    for path in OUTPUT_FIELDS.get(host, ()):
        parent: Any = payload
        for name in path[:-1]:
            parent = parent.get(name) if isinstance(parent, dict) else None
        value = parent.get(path[-1]) if isinstance(parent, dict) else None
        if isinstance(value, str) and len(value) > 2 * keep:
            removed = len(value) - 2 * keep
            kept = f"{value[:keep]}\n…[{removed} characters cut]…\n{value[-keep:]}"
            parent[path[-1]] = kept
            cut += len(value) - len(kept)
    return cut


def payload_excerpt(raw: bytes) -> str | None:
    """The start of a payload as text for the drop ledger: redacted before it is cut, since a
    cut could leave a token too short to recognise, and without control characters, which
    could drive the terminal that shows it."""
    text = redact_text(raw[: DROP_EXCERPT_CHARS * 64].decode("utf-8", "replace"))
    controls = {code: "\ufffd" for code in (*range(32), 127) if code not in (9, 10)}
    return text[:DROP_EXCERPT_CHARS].translate(controls) or None


FUTURE_SLACK_S = 300.0


def _clamped_time(claimed: float | None, raw: Any, now: float) -> tuple[float, str | None]:
    """The event's time: the payload's own when it is a usable past moment, else the capture
    time, with what the payload said kept. A time in the future, or not a number at all, would
    keep a procedure fresh for ever."""
    if claimed is None:
        return now, None
    if 0.0 <= claimed <= now + FUTURE_SLACK_S:  # False for NaN too
        return claimed, None
    return now, json.dumps(raw)[:100]


def _runs_remem_forget(command: str | None) -> bool:
    return (
        command is not None and "forget" in command and re.search(_OWN_COMMAND, command) is not None
    )


def _stored_string(text: str) -> str:
    return redacted_cut(text, STORED_STRING_CHARS)


def build_event(
    payload: dict[str, Any], host: str, now: float, locate: Locate, output_cut: int = 0
) -> CapturedEvent:
    """Normalise and redact one payload; raises Dropped when it is not to be stored.
    output_cut: the characters of output cut_output took from it."""
    draft = _start_draft(payload, host)
    if draft.hook_event == _SESSION_START.get(host):
        draft.kind = "session_start"
    else:
        _ADAPTERS[host](payload, draft)
    if draft.kind == "command" and _runs_remem_forget(draft.command):
        raise Dropped("own_command", "remem forget is never recorded", host, draft.hook_event)
    root, branch, work_tree, directory = locate(draft.cwd)
    # Each string cut to what is stored of it before it is redacted: a tool's output may be
    # megabytes, and the agent waits for the hook.
    redacted = redact_json(payload, _stored_string)
    printed = draft.command is not None and prints_secrets(draft.command)
    if printed:
        mask_output(host, redacted)
        draft.error_excerpt = MASK if draft.error_excerpt else None
    if draft.tool_use_id:
        key = f"{host}:{draft.session_key}:{draft.tool_use_id}"
    elif draft.event_id is not None:
        key = f"{host}:{draft.session_key}:event:{draft.event_id}"
    else:
        # Without an id of its own, the same payload twice is two runs (a command run again):
        # the capture time tells them apart, and a spooled copy keeps the key it was given.
        key = f"{host}:sha256:{payload_hash(payload)}:{now!r}"
    event_at, reported = _clamped_time(draft.event_at, payload.get("timestamp"), now)
    roots = (
        (work_tree, "."),
        (spelt_root(draft.cwd, directory), "."),
        (os.path.normpath(draft.cwd), directory),
    )
    files = sorted({redact_field(_relative(f, roots)) for f in draft.files})
    return CapturedEvent(
        idempotency_key=key,
        host=host,
        session_key=redact_field(draft.session_key),
        hook_event=draft.hook_event,
        kind=draft.kind,
        tool_name=draft.tool_name,
        tool_use_id=draft.tool_use_id,
        command=redact_field(draft.command) if draft.command is not None else None,
        outcome=draft.outcome,
        exit_code=draft.exit_code,
        exit_code_source=draft.exit_code_source,
        error_excerpt=draft.error_excerpt,
        output_excerpt=(
            output_excerpt(output_text(host, redacted), output_cut)
            if printed
            else redacted_excerpt(output_text(host, payload), output_cut)
        )
        if draft.kind == "command"
        else None,
        project_root=redact_field(root),
        branch=draft.branch or branch,
        cwd=redact_field(draft.cwd),
        directory=redact_field(directory),
        files=files or None,
        change_hash=draft.change_hash,
        transcript_path=draft.transcript_path,
        payload=stored_payload(redacted),
        event_at=event_at,
        event_at_reported=reported,
        captured_at=now,
    )


def before_event(
    payload: dict[str, Any], host: str, now: float, locate: Locate
) -> CapturedEvent | None:
    """A Claude Code `PreToolUse` of a shell command: the command about to run, read as its
    event will be, with no outcome. Never stored (its `PostToolUse` is): the hook only reads
    what to say before it runs. None for any other payload."""
    if host != "claude-code" or payload.get("hook_event_name") != "PreToolUse":
        return None
    if payload.get("tool_name") not in COMMAND_TOOLS:
        return None
    ran = {**payload, "hook_event_name": "PostToolUse", "tool_response": {}}
    event: CapturedEvent = build_event(ran, host, now, locate).but(
        hook_event="PreToolUse", outcome=None, exit_code=None, exit_code_source=None
    )
    return event


def _roots(cwd: str, directory: str) -> tuple[tuple[str, str], ...]:
    """The roots a stored event's files are relative to: its work tree, through the path the
    agent used, and its cwd, standing for its directory inside the work tree."""
    return (spelt_root(cwd, directory), "."), (os.path.normpath(cwd), directory)


def shell_patch(command: str, cwd: str, directory: str) -> tuple[list[str], str] | None:
    """The files and change hash of a patch a stored command applied through the shell (as
    capture reads it today), for a command stored before it was read so; None for any other."""
    from remem.record.writes import applied_patch  # commands only

    patch = applied_patch(command)
    if patch is None:
        return None
    files, parts = edit_change("apply_patch", {"input": patch})
    roots = _roots(cwd, directory)
    return sorted({_relative(name, roots) for name in files}), change_hash(files, parts)


def written_edit(event: CapturedEvent) -> CapturedEvent | None:
    """The edit a command makes when it writes files inside its work tree (`cat > src/app.py
    <<EOF`), stored beside the command event, whose own outcome still counts. None for any other
    command, and for one that failed or never finished (a Codex command's outcome, unknown when
    its hook fires, is not waited for). Read from the stored command, so what it names is
    redacted already."""
    if event.kind != "command" or not event.command or event.outcome in ("failure", "interrupted"):
        return None
    from remem.record.writes import written_files  # commands only, not SessionStart

    writes = written_files(event.command)
    if not writes:
        return None
    directory = event.directory or "."
    roots = _roots(event.cwd, directory)
    files: list[str] = []
    # Each content once, though a line writes many files (`echo x >a >b`): normalised and
    # hashed once, not once per file, which was quadratic in the redirections of a line.
    parts: dict[int, str] = {}
    for name, content in writes:
        if os.path.isabs(name):
            path = _relative(name, roots)
        else:
            path = os.path.normpath(os.path.join(directory, name))
        # A file outside the work tree (`cat > /tmp/message <<EOF`) is no edit of the project.
        if os.path.isabs(path) or path.startswith(("~", "../")) or path == "..":
            continue
        files.append(path)
        if id(content) not in parts:
            parts[id(content)] = normalise_ws(content)
    if not files:
        return None
    fields = event.fields()
    fields.update(
        idempotency_key=f"{event.idempotency_key}:edit",
        kind="edit",
        command=None,
        outcome=None,
        exit_code=None,
        exit_code_source=None,
        error_excerpt=None,
        output_excerpt=None,
        files=sorted(set(files)),
        change_hash=change_hash(files, list(parts.values())),
    )
    return CapturedEvent(**fields)
