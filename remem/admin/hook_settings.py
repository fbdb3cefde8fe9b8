"""The hook settings remem installs into each agent (or prints), calling remem-hook by absolute
path. What the settings are lives here; merging them into an agent's file is
`remem.admin.agents_settings`."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable

from remem.paths import DEFAULT_HOME, installed_executable

CLAUDE_TOOLS = "Bash|Edit|Write|MultiEdit|NotebookEdit"
AGENTS = ("claude-code", "codex", "cursor")


def _command(executable: str, host: str, home: str) -> str:
    command = f"{shlex.quote(executable)} --host {host}"
    if os.path.abspath(os.path.expanduser(DEFAULT_HOME)) != home:
        command = f"REMEM_HOME={shlex.quote(home)} {command}"
    return command


def claude_code(executable: str, home: str, advice_before: bool = False) -> dict[str, object]:
    def entry(matcher: str | None) -> dict[str, object]:
        hook = {"type": "command", "command": _command(executable, "claude-code", home)}
        return {"matcher": matcher, "hooks": [hook]} if matcher else {"hooks": [hook]}

    # PostToolUseFailure both records a failed command and answers it with what is known of it.
    hooks = {
        "PostToolUse": [entry(CLAUDE_TOOLS)],
        "PostToolUseFailure": [entry("Bash")],
        "SessionStart": [entry(None)],
    }
    if advice_before:  # one more process before every command: opt-in (README: Advice)
        hooks["PreToolUse"] = [entry("Bash")]
    return {"hooks": hooks}


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


SETTINGS: dict[str, Callable[[str, str], dict[str, object]]] = {
    "claude-code": claude_code,
    "codex": codex,
    "cursor": cursor,
}

_WHERE = {
    "claude-code": "Claude Code: `remem hooks install claude-code` merges this into "
    "~/.claude/settings.json (or paste it into .claude/settings.json):",
    "codex": "Codex CLI: `remem hooks install codex` merges this into ~/.codex/hooks.json and "
    "sets `[features]` `codex_hooks = true` in ~/.codex/config.toml:",
    "cursor": "Cursor: `remem hooks install cursor` merges this into ~/.cursor/hooks.json "
    "(or paste it into .cursor/hooks.json):",
}


def settings_for(
    agent: str, home: str, executable: str | None = None, advice_before: bool = False
) -> dict[str, object]:
    """What `remem hooks install AGENT` merges into the agent's file; `advice_before` adds
    Claude Code's `PreToolUse` hook, which warns before a command known to fail here (the
    other agents' hooks get nothing more)."""
    executable = executable or installed_executable("remem-hook")
    if agent == "claude-code":
        return claude_code(executable, home, advice_before)
    return SETTINGS[agent](executable, home)


def render_instructions(
    home: str, executable: str | None = None, agents: tuple[str, ...] = AGENTS
) -> str:
    blocks = [
        f"{_WHERE[agent]}\n{json.dumps(settings_for(agent, home, executable), indent=2)}"
        for agent in agents
    ]
    return "\n\n".join(blocks)
