"""Reading one field of a hook payload: exit codes written every way hosts write them, commands
sent as text or argv, an edit's files and change, timestamps, and the hashes that make an event's
identity. Stdlib only: the hook imports it.
"""

from __future__ import annotations

import json
import os
import re

from remem.record.bounded import redacted_head
from remem.record.event import ERROR_EXCERPT_CHARS, Dropped
from remem.record.sha import sha256_hex

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from typing import Any

STORED_STRING_CHARS = 2000
# Compiled on first use, not at import: most payloads never need them.
_EXIT_CODE = r"(?:exit code|status code|exit status)\s*:?\s*(-?\d+)"
# An exit code written as text: an integer, or an integral decimal ("3.0"), in ASCII digits.
_EXIT_CODE_TEXT = r"[+-]?[0-9]{1,18}(?:\.0*)?"


def field(
    payload: dict[str, Any], name: str, kind: type | tuple[type, ...], required: bool, host: str
) -> Any:
    value = payload.get(name)
    if value is None:
        if required:
            raise Dropped("missing_field", name, host, payload.get("hook_event_name"))
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise Dropped(
            "invalid_field", f"{name} has the wrong type", host, payload.get("hook_event_name")
        )
    return value


def exit_code_in(text: str | None) -> int | None:
    if not text:
        return None
    match = re.search(_EXIT_CODE, text, re.IGNORECASE)
    return int(match.group(1)) if match else None


def exit_code_value(value: Any) -> int | None:
    """An exit code as a payload may carry it: an integer, an integral number or numeric text
    (" 2 ", "-1", "3.0"); None for anything else, booleans included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(_EXIT_CODE_TEXT, text, re.ASCII):
            return int(text.split(".", 1)[0])
    return None


def excerpt(text: Any) -> str | None:
    if not isinstance(text, str) or not text:
        return None
    # Redacted with a margin past the cut: a cut could leave a token too short to recognise.
    return redacted_head(text, ERROR_EXCERPT_CHARS)


def command_text(value: Any) -> str | None:
    """A command as the agent ran it; Codex may send argv, unwrapped from `bash -lc`."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        argv: list[str] = value
        shell_wrapped = os.path.basename(argv[0]) in ("bash", "sh", "zsh")
        if len(argv) == 3 and shell_wrapped and argv[1] in ("-c", "-lc"):
            return argv[2]
        import shlex  # only for argv-shaped commands

        return shlex.join(argv)
    return None


def normalise_ws(text: Any) -> str:
    return "".join(str(text).split()) if text is not None else ""


def edit_change(tool_name: str, tool_input: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(files, normalised change parts) of an edit tool's input."""
    path = tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
    files = [path] if isinstance(path, str) else []
    parts: list[str] = []
    if tool_name == "apply_patch":
        patch = tool_input.get("input") or tool_input.get("patch") or tool_input.get("command")
        patch_text = patch if isinstance(patch, str) else json.dumps(patch, sort_keys=True)
        from remem.record.writes import patch_files  # patches only, not SessionStart

        files = patch_files(patch_text)
        parts.append(normalise_ws(patch_text))
    elif isinstance(tool_input.get("edits"), list):
        for edit in tool_input["edits"]:
            if isinstance(edit, dict):
                parts.append(normalise_ws(edit.get("old_string")))
                parts.append(normalise_ws(edit.get("new_string")))
    else:
        for key in ("old_string", "new_string", "content", "new_source", "cell_id", "edit_mode"):
            if key in tool_input:
                parts.append(normalise_ws(tool_input[key]))
    return [f.strip() for f in files if isinstance(f, str) and f.strip()], parts


def key_hash(text: str) -> str:
    """What names an error in the records of what remem told a session (advice given, the
    digest shown): a hash, so the record holds no recorded text."""
    return sha256_hex(text.encode("utf-8", "surrogatepass"))[:32]


def change_hash(files: list[str], parts: list[str]) -> str:
    return sha256_hex("\0".join([*files, "\0", *parts]).encode("utf-8", "surrogatepass"))[:32]


# json.dumps(payload, ensure_ascii=False, sort_keys=True), without building its encoder again
# for each payload.
_PAYLOAD_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


def stored_payload(payload: dict[str, Any]) -> str:
    """The redacted payload as stored: its strings already cut (STORED_STRING_CHARS, by
    remem.record.bounded.redacted_cut), so that one output cannot bloat the row."""
    return _PAYLOAD_ENCODER.encode(payload)


def payload_hash(payload: dict[str, Any]) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256_hex(canonical.encode("utf-8", "surrogatepass"))


def parse_timestamp(value: Any, host: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an integer beyond any float: no moment at all
            return float("inf")
    if isinstance(value, str):
        from datetime import UTC, datetime  # only when a payload carries its own time

        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            return moment.timestamp()
    raise Dropped("invalid_field", "timestamp is not ISO-8601 or epoch seconds", host)
