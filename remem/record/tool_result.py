"""What a recorded tool result says: its text and, for a Codex shell call, its exit code in
each shape Codex has written it: the `exec_command_end` event, and the `function_call_output` of
rollouts without that event (the `shell` tool's JSON with `metadata.exit_code`, and the text
opening "Exit code: N" or "Process exited with code N"). Import reads whole transcripts with it
and the worker looks up the outcomes the Codex hook leaves unknown, so both read the same shapes.
"""

from __future__ import annotations

import json
from typing import Any

# How a tool output states its exit status, newest first: "Process exited with code 1" (unified
# exec), "Exit code: 1" (shell_command).
EXIT_CODE_PREFIXES = ("Process exited with code ", "Exit code: ")
OUTPUT_MARKER = "\nOutput:\n"


def text_of(content: Any) -> str:
    """A tool result's text: a plain string, or the text parts of a content list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, dict)]
        return "\n".join(part for part in parts if isinstance(part, str))
    return ""


def exit_code_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def exec_output(event: dict[str, Any]) -> str:
    """The output of an `exec_command_end` event."""
    output = event.get("aggregated_output")
    if isinstance(output, str):
        return output
    return "".join(text_of(event.get(key)) for key in ("stdout", "stderr"))


def output_outcome(output: Any) -> tuple[str, int | None]:
    """(output text, exit code) of a function_call_output; the code is None when not stated."""
    if isinstance(output, dict):
        output = output.get("content")
    text = text_of(output)
    if text.startswith("{"):
        # The `shell` tool's output: {"output": "...", "metadata": {"exit_code": 0, ...}}
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
            metadata = decoded.get("metadata")
            code = metadata.get("exit_code") if isinstance(metadata, dict) else None
            return decoded["output"], exit_code_of(code)
    head, marker, body = text.partition(OUTPUT_MARKER)
    for line in head.splitlines()[:4]:  # a header, never the program's own output
        for prefix in EXIT_CODE_PREFIXES:
            if line.startswith(prefix) and line[len(prefix) :].strip().lstrip("-").isdigit():
                return (body if marker else text), int(line[len(prefix) :].strip())
    return text, None
