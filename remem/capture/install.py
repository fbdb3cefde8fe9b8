"""The hook settings `remem init` prints for each host, calling remem-hook by absolute path."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys

from remem.paths import DEFAULT_HOME

CLAUDE_TOOLS = "Bash|Edit|Write|MultiEdit|NotebookEdit"


def hook_executable() -> str:
    """remem-hook beside the running interpreter (the venv's bin/), else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "remem-hook")
    if os.path.exists(beside):
        return beside
    return shutil.which("remem-hook") or beside


def _command(executable: str, host: str, home: str) -> str:
    command = f"{shlex.quote(executable)} --host {host}"
    if os.path.abspath(os.path.expanduser(DEFAULT_HOME)) != home:
        command = f"REMEM_HOME={shlex.quote(home)} {command}"
    return command


def claude_code(executable: str, home: str) -> dict[str, object]:
    def entry(matcher: str | None) -> dict[str, object]:
        hook = {"type": "command", "command": _command(executable, "claude-code", home)}
        return {"matcher": matcher, "hooks": [hook]} if matcher else {"hooks": [hook]}

    return {
        "hooks": {
            "PostToolUse": [entry(CLAUDE_TOOLS)],
            "PostToolUseFailure": [entry("Bash")],
            "SessionStart": [entry(None)],
        }
    }


def codex(executable: str, home: str) -> dict[str, object]:
    hook = {"type": "command", "command": _command(executable, "codex", home)}
    return {
        "hooks": {
            "PostToolUse": [{"matcher": "Bash|apply_patch", "hooks": [hook]}],
            "SessionStart": [{"hooks": [hook]}],
        }
    }


def cursor(executable: str, home: str) -> dict[str, object]:
    command = {"command": _command(executable, "cursor", home)}
    return {
        "version": 1,
        "hooks": {
            "postToolUse": [command],
            "postToolUseFailure": [command],
            "afterFileEdit": [command],
            "sessionStart": [command],
        },
    }


def render_instructions(home: str, executable: str | None = None) -> str:
    executable = executable or hook_executable()

    def block(data: dict[str, object]) -> str:
        return json.dumps(data, indent=2)

    return "\n".join(
        [
            "Claude Code: merge into ~/.claude/settings.json (or .claude/settings.json):",
            block(claude_code(executable, home)),
            "",
            "Codex CLI: merge into ~/.codex/hooks.json, and enable hooks in ~/.codex/config.toml",
            "with `[features]` `codex_hooks = true`:",
            block(codex(executable, home)),
            "",
            "Cursor: merge into ~/.cursor/hooks.json (or .cursor/hooks.json):",
            block(cursor(executable, home)),
        ]
    )
