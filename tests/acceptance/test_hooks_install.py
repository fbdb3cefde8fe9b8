"""`remem hooks install|uninstall|show`, `remem init` and `remem doctor` on real agent settings
files in a temporary user home, then a real capture through the command an agent would run."""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import shutil
import sqlite3
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REMEM, REMEM_HOOK, load_fixture

CODEX_CONFIG = """# my Codex settings
model = "gpt-5.5"  # the fast one

[projects."/home/dev/shop"]
trust_level = "trusted"
"""
CLAUDE_SETTINGS = {
    "model": "opus",
    "env": {"FOO": "bar"},
    "hooks": {
        "PostToolUse": [
            {"matcher": "Write", "hooks": [{"type": "command", "command": "prettier -w"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}
CURSOR_HOOKS = {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}
FILES = {
    "claude-code": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "cursor": ".cursor/hooks.json",
}
PAYLOADS = {
    "claude-code": ("claude-code/post_tool_use_bash_success.json", "PostToolUse"),
    "codex": ("codex/post_tool_use_bash.json", "PostToolUse"),
    "cursor": ("cursor/post_tool_use_shell.json", "postToolUse"),
}


class Machine:
    """A user home with the three agents' folders and a remem home beside it."""

    def __init__(self, tmp_path: Path) -> None:
        self.user = tmp_path / "user"
        self.home = tmp_path / "remem-home"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
        self.env.update(HOME=str(self.user), REMEM_HOME=str(self.home))
        for folder in (".claude", ".codex", ".cursor"):
            (self.user / folder).mkdir(parents=True)

    def remem(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [REMEM, *args], env=self.env, capture_output=True, text=True, timeout=120
        )

    def file(self, agent: str) -> Path:
        return self.user / FILES[agent]

    def write_existing_settings(self) -> None:
        self.file("claude-code").write_text(json.dumps(CLAUDE_SETTINGS, indent=2) + "\n")
        self.file("claude-code").chmod(0o600)
        self.file("cursor").write_text(json.dumps(CURSOR_HOOKS, indent=4) + "\n")
        (self.user / ".codex" / "config.toml").write_text(CODEX_CONFIG)

    def snapshot(self) -> dict[str, bytes]:
        return {
            str(path.relative_to(self.user)): path.read_bytes()
            for path in sorted(self.user.rglob("*"))
            if path.is_file()
        }

    def backups(self) -> list[Path]:
        return sorted(self.user.rglob("*.remem-backup-*"))


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    machine = Machine(tmp_path)
    init = machine.remem("init", "--no-hooks")
    assert init.returncode == 0, init.stderr
    return machine


def _remem_commands(document: Any) -> list[str]:
    if isinstance(document, dict):
        found = [v for k, v in document.items() if k == "command" and "remem-hook" in v]
        return found + [c for v in document.values() for c in _remem_commands(v)]
    if isinstance(document, list):
        return [c for item in document for c in _remem_commands(item)]
    return []


def test_install_all_merges_into_each_agent_and_keeps_the_rest(machine: Machine) -> None:
    machine.write_existing_settings()
    result = machine.remem("hooks", "install", "all")
    assert result.returncode == 0, result.stderr

    claude = json.loads(machine.file("claude-code").read_text())
    assert (claude["model"], claude["env"]) == ("opus", {"FOO": "bar"})
    assert claude["hooks"]["Stop"] == CLAUDE_SETTINGS["hooks"]["Stop"]
    assert claude["hooks"]["PostToolUse"][0]["matcher"] == "Write"
    assert {"PostToolUseFailure", "SessionStart"} <= set(claude["hooks"])
    assert stat.S_IMODE(machine.file("claude-code").stat().st_mode) == 0o600
    cursor = json.loads(machine.file("cursor").read_text())
    assert cursor["hooks"]["afterFileEdit"][0] == {"command": "./format.sh"}
    assert machine.file("cursor").read_text().startswith('{\n    "version": 1')  # its indent
    codex = json.loads(machine.file("codex").read_text())
    for document, agent in ((claude, "claude-code"), (codex, "codex"), (cursor, "cursor")):
        commands = _remem_commands(document)
        assert commands and all(f"{REMEM_HOOK} --host {agent}" in c for c in commands)
        assert all(c.startswith(f"REMEM_HOME={machine.home} ") for c in commands)
    config = (machine.user / ".codex" / "config.toml").read_text()
    assert config.startswith(CODEX_CONFIG)  # comments and layout kept
    assert config.endswith("[features]\ncodex_hooks = true\n")

    backups = {path.name.split(".remem-backup-")[0] for path in machine.backups()}
    assert backups == {"settings.json", "hooks.json", "config.toml"}  # codex's hooks.json is new
    assert len(machine.backups()) == 3
    claude_backup = next(machine.user.glob(".claude/settings.json.remem-backup-*"))
    assert json.loads(claude_backup.read_text()) == CLAUDE_SETTINGS
    assert stat.S_IMODE(claude_backup.stat().st_mode) == 0o600


def test_a_second_install_changes_nothing(machine: Machine) -> None:
    machine.write_existing_settings()
    assert machine.remem("hooks", "install", "all").returncode == 0
    before = machine.snapshot()
    again = machine.remem("hooks", "install", "all")
    assert again.returncode == 0, again.stderr
    assert machine.snapshot() == before  # bytes identical, no second backup
    assert again.stdout.count("already installed in") == 3


def test_advice_before_is_an_opt_in_pre_tool_use_hook_for_bash(machine: Machine) -> None:
    """`--advice-before` adds Claude Code's PreToolUse hook for Bash, once however often it is
    installed; an install without it takes it out again; the other agents get nothing more.
    Every install keeps the failure hook that answers a failure with its advice."""
    machine.write_existing_settings()
    assert machine.remem("hooks", "install", "all").returncode == 0
    plain = machine.snapshot()
    assert "PreToolUse" not in json.loads(machine.file("claude-code").read_text())["hooks"]
    for _ in range(2):
        result = machine.remem("hooks", "install", "all", "--advice-before")
        assert result.returncode == 0, result.stderr
        claude = json.loads(machine.file("claude-code").read_text())
        (entry,) = claude["hooks"]["PreToolUse"]
        assert entry["matcher"] == "Bash"
        assert _remem_commands(entry) == _remem_commands(claude["hooks"]["PostToolUseFailure"])
        assert [e["matcher"] for e in claude["hooks"]["PostToolUseFailure"]] == ["Bash"]
    for agent in ("codex", "cursor"):
        assert machine.file(agent).read_bytes() == plain[FILES[agent]]
    assert machine.remem("hooks", "install", "claude-code").returncode == 0
    assert "PreToolUse" not in json.loads(machine.file("claude-code").read_text())["hooks"]


def test_an_older_remem_entry_is_replaced_not_doubled(machine: Machine) -> None:
    old = {
        "hooks": {
            "PostToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": "/gone/bin/remem-hook --host x"}],
                }
            ]
        }
    }
    machine.file("claude-code").write_text(json.dumps(old))
    assert machine.remem("hooks", "install", "claude-code").returncode == 0
    document = json.loads(machine.file("claude-code").read_text())
    assert len(document["hooks"]["PostToolUse"]) == 1
    assert not any("/gone/" in c for c in _remem_commands(document))


def test_a_file_that_is_not_json_is_refused_in_one_line(machine: Machine) -> None:
    machine.write_existing_settings()
    machine.file("cursor").write_text('{"version": 1, "hooks": {')
    before = machine.snapshot()
    result = machine.remem("hooks", "install", "all")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(machine.file("cursor")) in lines[0], lines
    assert "not valid JSON" in lines[0]
    assert machine.snapshot() == before  # not even the valid files were touched


def test_dry_run_prints_a_diff_and_writes_nothing(machine: Machine) -> None:
    machine.write_existing_settings()
    before = machine.snapshot()
    result = machine.remem("hooks", "install", "all", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert machine.snapshot() == before
    out = result.stdout
    assert f"--- {machine.file('claude-code')}" in out
    assert f"+++ {machine.file('codex')}" in out and "--- /dev/null" in out
    assert "+codex_hooks = true" in out
    cursor_command = f'"command": "REMEM_HOME={machine.home} {REMEM_HOOK} --host cursor"'
    added = [line for line in out.splitlines() if line.startswith("+")]
    assert any(cursor_command in line for line in added)


def test_uninstall_takes_out_only_remem(machine: Machine) -> None:
    machine.write_existing_settings()
    assert machine.remem("hooks", "install", "all").returncode == 0
    result = machine.remem("hooks", "uninstall", "all")
    assert result.returncode == 0, result.stderr
    assert json.loads(machine.file("claude-code").read_text()) == CLAUDE_SETTINGS
    assert json.loads(machine.file("cursor").read_text()) == CURSOR_HOOKS
    assert not machine.file("codex").exists()  # install created it; nothing else was in it
    # The flag remem added goes: config.toml is back as it was, byte for byte.
    assert (machine.user / ".codex" / "config.toml").read_text() == CODEX_CONFIG
    assert "left in" not in result.stdout
    before = machine.snapshot()
    assert machine.remem("hooks", "uninstall", "all").returncode == 0
    assert machine.snapshot() == before
    # A round trip again: the same install, the same restore.
    assert machine.remem("hooks", "install", "codex").returncode == 0
    assert machine.remem("hooks", "uninstall", "codex").returncode == 0
    assert (machine.user / ".codex" / "config.toml").read_text() == CODEX_CONFIG


def test_uninstall_removes_a_codex_config_remem_created(machine: Machine) -> None:
    assert machine.remem("hooks", "install", "codex").returncode == 0
    config = machine.user / ".codex" / "config.toml"
    assert config.read_text() == "[features]\ncodex_hooks = true\n"
    result = machine.remem("hooks", "uninstall", "codex", "--json")
    (codex,) = json.loads(result.stdout)["agents"]
    assert codex["kept"] is None
    assert [f["removed"] for f in codex["files"]] == [True, True]
    assert not config.exists() and not machine.file("codex").exists()


def test_uninstall_says_why_it_leaves_the_codex_flag(machine: Machine) -> None:
    config = machine.user / ".codex" / "config.toml"
    flag = f"codex: `[features] codex_hooks = true` left in {config}:"
    theirs = "remem did not add it, or the file changed since remem did"
    # It was there before remem: the install changed nothing in config.toml.
    config.write_text(CODEX_CONFIG + "\n[features]\ncodex_hooks = true\n")
    assert machine.remem("hooks", "install", "codex").returncode == 0
    result = machine.remem("hooks", "uninstall", "codex")
    assert f"{flag} {theirs}" in result.stdout
    assert config.read_text() == CODEX_CONFIG + "\n[features]\ncodex_hooks = true\n"

    # Another hook of the user's still needs it.
    config.write_text(CODEX_CONFIG)
    mine = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./notify.sh"}]}]}}
    machine.file("codex").write_text(json.dumps(mine))
    assert machine.remem("hooks", "install", "codex").returncode == 0
    result = machine.remem("hooks", "uninstall", "codex", "--json")
    (codex,) = json.loads(result.stdout)["agents"]
    assert codex["kept"] == f"{flag[7:]} other hooks in {machine.file('codex')} need it"
    assert json.loads(machine.file("codex").read_text()) == mine
    assert "codex_hooks = true" in config.read_text()

    # The user edited the file since remem added the flag.
    machine.file("codex").unlink()
    config.write_text(CODEX_CONFIG)
    assert machine.remem("hooks", "install", "codex").returncode == 0
    config.write_text(config.read_text() + "# mine\n")
    result = machine.remem("hooks", "uninstall", "codex")
    assert f"{flag} {theirs}" in result.stdout
    assert config.read_text().endswith("codex_hooks = true\n# mine\n")


def test_all_installs_for_the_agents_found_and_a_name_creates_the_folder(
    tmp_path: Path,
) -> None:
    machine = Machine(tmp_path)
    for folder in (".codex", ".cursor"):
        (machine.user / folder).rmdir()
    assert machine.remem("init", "--no-hooks").returncode == 0
    result = machine.remem("hooks", "install", "all")
    assert result.returncode == 0, result.stderr
    assert machine.file("claude-code").exists() and not (machine.user / ".codex").exists()
    assert "remem hooks install codex" in result.stdout
    assert machine.remem("hooks", "install", "cursor").returncode == 0
    assert _remem_commands(json.loads(machine.file("cursor").read_text()))

    for path in sorted(machine.user.rglob("*"), reverse=True):  # an agent-free home
        if path.is_dir():
            path.rmdir()
        else:
            path.unlink()
    none = machine.remem("hooks", "install", "all")
    assert none.returncode == 1 and len(none.stderr.strip().splitlines()) == 1
    assert "remem hooks install claude-code" in none.stderr


def test_install_refuses_a_missing_remem_home(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    result = machine.remem("hooks", "install", "all")
    assert result.returncode == 1 and "remem init" in result.stderr
    assert machine.snapshot() == {}


def test_hooks_show_prints_each_agents_settings(machine: Machine) -> None:
    text = machine.remem("hooks", "show")
    assert text.returncode == 0, text.stderr
    for marker in (
        '"PostToolUseFailure"',
        '"sessionStart"',
        "codex_hooks = true",
        f"{REMEM_HOOK} --host claude-code",
        f"{REMEM_HOOK} --host codex",
        f"{REMEM_HOOK} --host cursor",
    ):
        assert marker in text.stdout
    shown = json.loads(machine.remem("hooks", "show", "--json").stdout)
    assert set(shown) == {"claude-code", "codex", "cursor"}
    assert shown["cursor"]["settings"]["version"] == 1
    assert shown["codex"]["config"] == {"features": {"codex_hooks": True}}
    assert shown["claude-code"]["file"] == str(machine.file("claude-code"))
    one = json.loads(machine.remem("hooks", "show", "codex", "--json").stdout)
    assert set(one) == {"codex"}


def test_init_without_a_terminal_asks_nothing_and_prints_the_command(machine: Machine) -> None:
    machine.write_existing_settings()
    before = machine.snapshot()
    result = machine.remem("init")
    assert result.returncode == 0, result.stderr
    assert machine.snapshot() == before
    assert "remem hooks install all" in result.stdout and "remem hooks show" in result.stdout
    # The hook settings are not pasted here (the MCP server's settings are, after them).
    assert "PostToolUse" not in result.stdout and "remem-hook" not in result.stdout

    installed = machine.remem("init", "--hooks", "--json")
    assert installed.returncode == 0, installed.stderr
    report = json.loads(installed.stdout)
    assert [(a["agent"], a["changed"]) for a in report["hooks"]] == [
        ("claude-code", True),
        ("codex", True),
        ("cursor", True),
    ]
    assert report["hook"] == REMEM_HOOK
    again = machine.remem("init", "--hooks")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("already installed in") == 3
    assert json.loads(machine.remem("init", "--json").stdout)["hooks"] == []


def test_init_on_a_terminal_asks_and_says_what_it_did(machine: Machine) -> None:
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [REMEM, "init"], stdin=secondary, stdout=secondary, stderr=secondary, env=machine.env
    )
    os.close(secondary)
    output, answered = b"", False
    try:
        while select.select([primary], [], [], 60)[0]:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the terminal closes when init exits
                break
            if not chunk:
                break
            output += chunk
            if not answered and b"[Y/n]" in output:
                os.write(primary, b"y\n")
                answered = True
        assert process.wait(timeout=60) == 0, output
    finally:
        os.close(primary)
    text = output.decode()
    assert "Install remem's hooks for claude-code, codex, cursor" in text
    assert text.count("installed in") == 3 and "Start a new agent session" in text
    for agent in FILES:
        assert _remem_commands(json.loads(machine.file(agent).read_text()))


def _doctor(machine: Machine) -> dict[str, dict[str, str]]:
    result = machine.remem("doctor", "--json")
    return {check["name"]: check for check in json.loads(result.stdout)}


def test_doctor_reports_installed_and_missing_hooks(machine: Machine) -> None:
    missing = _doctor(machine)
    for agent in FILES:
        assert missing[f"hooks:{agent}"]["status"] == "warn"
        assert f"remem hooks install {agent}" in missing[f"hooks:{agent}"]["fix"]
    assert missing["hooks"]["status"] == "fail"
    assert "remem hooks install all" in missing["hooks"]["fix"]

    assert machine.remem("hooks", "install", "all").returncode == 0
    installed = _doctor(machine)
    assert all(installed[f"hooks:{agent}"]["status"] == "ok" for agent in FILES), installed
    assert "hooks" not in installed
    assert "not all" not in installed["hooks:claude-code"]["detail"]
    assert machine.remem("hooks", "install", "claude-code", "--advice-before").returncode == 0
    assert "not all" not in _doctor(machine)["hooks:claude-code"]["detail"]

    (machine.user / ".codex" / "config.toml").write_text("# hooks off\n")
    codex = _doctor(machine)["hooks:codex"]
    assert codex["status"] == "warn" and "codex_hooks = true" in codex["detail"]
    assert codex["fix"] == "run `remem hooks install codex`"

    text = machine.file("claude-code").read_text()
    machine.file("claude-code").write_text(text.replace(REMEM_HOOK, "/gone/bin/remem-hook"))
    moved = _doctor(machine)["hooks:claude-code"]
    assert moved["status"] == "fail" and "/gone/bin/remem-hook" in moved["detail"]
    assert "remem hooks install claude-code" in moved["fix"]


def test_doctor_gives_no_advice_for_an_agent_the_machine_does_not_have(
    machine: Machine,
) -> None:
    shutil.rmtree(machine.user / ".cursor")
    before = _doctor(machine)
    cursor = before["hooks:cursor"]
    assert (cursor["status"], cursor["fix"]) == ("ok", "")
    assert cursor["detail"] == f"not in use here: no {machine.user / '.cursor'}"
    assert before["hooks"]["status"] == "fail"  # still nothing captured: the others have none
    assert "install cursor" not in machine.remem("doctor").stdout
    assert machine.remem("hooks", "install", "all").returncode == 0
    after = _doctor(machine)
    assert "hooks" not in after
    assert [after[f"hooks:{agent}"]["status"] for agent in ("claude-code", "codex")] == ["ok"] * 2
    assert after["hooks:cursor"]["fix"] == ""


def _installed_command(machine: Machine, agent: str, event: str) -> str:
    document = json.loads(machine.file(agent).read_text())
    (command,) = _remem_commands(document["hooks"][event])
    return command


@pytest.mark.parametrize("agent", list(FILES))
def test_the_installed_command_captures_an_event(machine: Machine, agent: str) -> None:
    assert machine.remem("hooks", "install", agent).returncode == 0
    fixture, event = PAYLOADS[agent]
    payload = load_fixture(fixture)
    words = shlex.split(_installed_command(machine, agent, event))
    assignments = {}
    while "=" in words[0] and not words[0].startswith("/"):
        name, value = words.pop(0).split("=", 1)
        assignments[name] = value
    # the agent's environment knows nothing of remem: the command alone must find the home
    env = {k: v for k, v in machine.env.items() if k != "REMEM_HOME"}
    hook = subprocess.run(
        words,
        input=json.dumps(payload).encode(),
        env={**env, **assignments},
        capture_output=True,
        timeout=60,
    )
    assert hook.returncode == 0, hook.stderr
    connection = sqlite3.connect(f"file:{machine.home / 'remem.db'}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT host, hook_event, command FROM captured_events"
        ).fetchall()
    finally:
        connection.close()
    assert rows == [(agent, event, payload["tool_input"]["command"])]


def test_install_keeps_numbers_as_they_were_written(machine: Machine) -> None:
    # A float would turn 1e400 into Infinity (no JSON at all) and shorten the others.
    numbers = '"huge": 1e400, "precise": 0.10000000000000000555, "places": 1.50'
    machine.file("claude-code").write_text("{" + numbers + ', "count": 12345678901234567890}\n')

    assert machine.remem("hooks", "install", "claude-code").returncode == 0
    installed = machine.file("claude-code").read_text()
    assert machine.remem("hooks", "uninstall", "claude-code").returncode == 0

    for text in (installed, machine.file("claude-code").read_text()):
        for literal in ("1e400", "0.10000000000000000555", "1.50", "12345678901234567890"):
            assert f": {literal}" in text, text
        assert "Infinity" not in text


def test_uninstall_keeps_a_settings_file_that_held_only_braces(machine: Machine) -> None:
    machine.file("claude-code").write_text("{}\n")

    assert machine.remem("hooks", "install", "claude-code").returncode == 0
    assert machine.remem("hooks", "uninstall", "claude-code").returncode == 0

    assert json.loads(machine.file("claude-code").read_text()) == {}
