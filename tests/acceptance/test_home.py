"""`remem init` and the refusal of a missing home."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from tests.conftest import REMEM, REMEM_HOOK, load_fixture


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env["HOME"] = str(tmp_path / "user")
    env.update(extra)
    return env


def _run(
    args: list[str], env: dict[str, str], stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(args, env=env, input=stdin, capture_output=True, timeout=120)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_init_twice_in_a_fresh_home(tmp_path: Path) -> None:
    env = _env(tmp_path)
    (tmp_path / "user").mkdir()
    first = _run([REMEM, "init"], env)
    assert first.returncode == 0, first.stderr
    home = tmp_path / "user" / ".remem"
    assert f"Created remem home at {home}" in first.stdout.decode()
    assert _mode(home) == 0o700
    assert _mode(home / "remem.db") == 0o600
    assert _mode(home / "config.toml") == 0o600
    assert "remem hooks install all" in first.stdout.decode()
    assert "claude mcp add" in first.stdout.decode()
    assert "[mcp_servers.remem]" in first.stdout.decode()
    hook_path = str(Path(REMEM_HOOK))
    out = _run([REMEM, "hooks", "show"], env).stdout.decode()
    for marker in (
        '"PostToolUse"',
        '"PostToolUseFailure"',
        '"SessionStart"',
        '"sessionStart"',
        '"postToolUseFailure"',
        "codex_hooks = true",
        f"{hook_path} --host claude-code",
        f"{hook_path} --host codex",
        f"{hook_path} --host cursor",
    ):
        assert marker in out

    second = _run([REMEM, "init"], env)
    assert second.returncode == 0, second.stderr
    assert f"Found remem home at {home}" in second.stdout.decode()
    status = json.loads(_run([REMEM, "status", "--json"], env).stdout)
    assert (status["home"], status["schema_revision"]) == (str(home), status["schema_head"])


def test_printed_hook_settings_are_valid_json_for_each_host(tmp_path: Path) -> None:
    env = _env(tmp_path, REMEM_HOME=str(tmp_path / "h"))
    assert _run([REMEM, "init"], env).returncode == 0
    out = _run([REMEM, "hooks", "show"], env).stdout.decode()
    blocks, depth, current = [], 0, []
    for line in out.splitlines():
        if line.startswith("{") and depth == 0:
            current = []
        if depth or line.startswith("{"):
            current.append(line)
            depth += line.count("{") - line.count("}")
            if depth == 0:
                blocks.append(json.loads("\n".join(current)))
    assert len(blocks) == 3
    claude, codex, cursor = blocks
    command = claude["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    assert command.startswith(f"REMEM_HOME={tmp_path / 'h'} ")
    assert "Bash" in claude["hooks"]["PostToolUse"][0]["matcher"]
    assert codex["hooks"]["PostToolUse"][0]["hooks"][0]["type"] == "command"
    assert cursor["version"] == 1


def test_missing_home_is_refused_and_never_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / ".remem"
    env = _env(tmp_path, REMEM_HOME=str(missing))
    for args in (["status"], ["db", "current"], ["db", "upgrade"], ["spool", "ingest"]):
        result = _run([REMEM, *args], env)
        assert result.returncode == 1
        lines = result.stderr.decode().strip().splitlines()
        assert len(lines) == 1 and "remem init" in lines[0], lines
    payload = json.dumps(load_fixture("claude-code/post_tool_use_bash_success.json")).encode()
    hook = _run([REMEM_HOOK], env, payload)
    assert hook.returncode == 1
    lines = hook.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "remem init" in lines[0]
    assert not (tmp_path / "typo").exists()


def test_bad_config_value_is_one_line_naming_key_and_file(tmp_path: Path) -> None:
    home = tmp_path / "h"
    env = _env(tmp_path, REMEM_HOME=str(home))
    assert _run([REMEM, "init"], env).returncode == 0
    (home / "config.toml").write_text('[worker]\npoll_interval = "soon"\n')
    result = _run([REMEM, "status"], env)
    assert result.returncode == 1
    message = result.stderr.decode().strip()
    assert len(message.splitlines()) == 1
    assert "worker.poll_interval" in message and str(home / "config.toml") in message


def test_every_command_has_help_with_an_example(tmp_path: Path) -> None:
    env = _env(tmp_path)
    from remem.cli.commands import cli

    def walk(group: object, prefix: list[str]) -> list[list[str]]:
        found = [prefix]
        for name, command in getattr(group, "commands", {}).items():
            found += walk(command, [*prefix, name])
        return found

    commands = walk(cli, [])
    assert len(commands) >= 6
    for args in commands:
        result = _run([REMEM, *args, "--help"], env)
        assert result.returncode == 0, args
        assert "Example" in result.stdout.decode(), args
    hook_help = _run([REMEM_HOOK, "--help"], env)
    assert hook_help.returncode == 0 and b"Example" in hook_help.stdout
