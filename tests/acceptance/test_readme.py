"""Every command the README shows is run, in the order it shows them, as a new user would run
them: the real `remem`, `remem-hook` and `make` of this checkout, in a temporary home (HOME and
REMEM_HOME under the test's folder, spelt /home/dev once the folder is taken off). The output
the README shows under a command is what it printed, dates aside; a line `…` stands for lines
left out.

A console block may be preceded by a comment that the page does not show:

    <!-- readme-test: before=NAME cwd=~/shop instead="make test => make -n test" -->

- `before=NAME`: what happened first (an agent's session, fed through `remem-hook`; a file
  written), one of the scenes below; each one does what a user or an agent would.
- `cwd=PATH`: where the block's commands run (default: a copy of this checkout's Makefile
  beside its virtualenv, so that `make` never rebuilds the real one).
- `instead="A => B"`: run B where the README shows A, for a command that would run for ever or
  run this suite inside itself.
- `exits="A => N"`: A is shown failing, with exit status N.
- `checked-by=TEST`: the block is run and compared by that test (named in this folder).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_papercuts import make_checkout
from tests.conftest import BIN, REMEM, REMEM_HOOK, REPO, load_fixture, wait_for

README = REPO / "README.md"
FENCE = re.compile(
    r"(?:<!-- readme-test: (?P<markup>.*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S
)
SHELL_FENCES = {"sh", "bash", "shell", "console", "zsh"}
CODEX_TRANSCRIPT = REPO / "tests" / "fixtures" / "transcripts" / "codex" / "01.jsonl"
CODEX_CWD = "/Users/brijeshagal/Projects/Brijesh/Projects/cusp/cusp-fi"
NOT_FOUND = "Exit code 127\n/bin/bash: line 1: pytest: command not found"
VENV_PYTEST = ".venv/bin/python -m pytest -q"


@dataclass
class Command:
    line: str
    shown: list[str]


@dataclass
class Block:
    commands: list[Command]
    markup: dict[str, list[str]] = field(default_factory=dict)

    def one(self, key: str) -> str | None:
        values = self.markup.get(key, [])
        assert len(values) <= 1, f"{key} given twice: {values}"
        return values[0] if values else None

    def pairs(self, key: str) -> dict[str, str]:
        found = {}
        for value in self.markup.get(key, []):
            shown, _, run = value.partition(" => ")
            assert run, f"{key}={value!r}: write it as 'A => B'"
            found[shown.strip()] = run.strip()
        return found


def blocks(text: str) -> list[Block]:
    """The README's console blocks, with their markup; any other shell fence is refused, so
    that no command escapes this test."""
    found = []
    for fence in FENCE.finditer(text):
        lang = fence.group("lang")
        assert lang not in SHELL_FENCES - {"console"}, (
            f"a ```{lang} block: write commands in ```console blocks, which this test runs"
        )
        if lang != "console":
            continue
        markup: dict[str, list[str]] = {}
        for word in shlex.split(fence.group("markup") or ""):
            key, _, value = word.partition("=")
            markup.setdefault(key, []).append(value)
        commands: list[Command] = []
        for line in fence.group("body").splitlines():
            if line.startswith("$ "):
                commands.append(Command(line[2:], []))
            else:
                assert commands, f"output before any command: {line!r}"
                commands[-1].shown.append(line)
        found.append(Block(commands, markup))
    return found


class Machine:
    """The new user's machine: a home folder under the test's, this checkout's commands on
    PATH, and the daemon `make run` leaves running."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path
        self.user = tmp_path / "home" / "dev"
        self.user.mkdir(parents=True)
        self.remem_home = self.user / ".remem"
        self.checkout = make_checkout(tmp_path)
        self.shop = self.user / "shop"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("REMEM_")},
            "HOME": str(self.user),
            "REMEM_HOME": str(self.remem_home),
            "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "COLUMNS": "100",
        }
        for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "VIRTUAL_ENV"):
            self.env.pop(name, None)
        self.daemon: subprocess.Popen[bytes] | None = None
        self.calls = 0

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, env=self.env, capture_output=True, text=True, timeout=300, check=True
        )

    def status(self) -> dict[str, Any]:
        return dict(json.loads(self.run(REMEM, "status", "--json").stdout))

    def hook(self, payload: dict[str, Any]) -> None:
        result = subprocess.run(
            [REMEM_HOOK, "--host", "claude-code"],
            input=json.dumps(payload).encode(),
            env=self.env,
            capture_output=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr

    def claude(self, fixture: str, session: str, **fields: Any) -> dict[str, Any]:
        self.calls += 1
        payload = load_fixture(f"claude-code/{fixture}.json")
        payload.update(session_id=session, cwd=str(self.shop), tool_use_id=f"toolu_{self.calls}")
        payload["transcript_path"] = str(self.user / ".claude" / "projects" / f"{session}.jsonl")
        payload.update(fields)
        return payload

    def passed(self, command: str, session: str) -> None:
        response = {"stdout": "4 passed in 0.41s", "stderr": "", "interrupted": False}
        self.hook(
            self.claude(
                "post_tool_use_bash_success",
                session,
                tool_input={"command": command},
                tool_response=response,
            )
        )

    def failed(self, command: str, session: str, error: str) -> None:
        fields = {"tool_input": {"command": command}, "error": error}
        self.hook(self.claude("post_tool_use_failure_bash_exit_code", session, **fields))

    def learnt(self) -> None:
        """The daemon has worked every task the hooks queued."""

        def idle() -> bool:
            tasks = self.status()["tasks"]
            return bool(tasks.get("pending", 0) == 0 and tasks.get("processing", 0) == 0)

        wait_for(idle, timeout=120, interval=0.2)

    def stop_daemon(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGINT)
            self.daemon.wait(timeout=60)
        self.daemon = None


# --- the scenes: what happened before a block, as it happens on a real machine -------------


def _agents_in_use(machine: Machine) -> None:
    """Claude Code and Codex are installed; Codex kept a session of months ago."""
    (machine.user / ".claude").mkdir()
    project = machine.user / "cusp-fi"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    rollout = machine.user / ".codex" / "sessions" / "2026" / "05" / "07" / "rollout-01.jsonl"
    rollout.parent.mkdir(parents=True)
    text = CODEX_TRANSCRIPT.read_text(encoding="utf-8")
    rollout.write_text(text.replace(CODEX_CWD, str(project)), encoding="utf-8")


def _daemon_running(machine: Machine) -> None:
    """`make run` was run once already in another terminal: its daemon is up."""
    machine.run(REMEM, "init", "--no-hooks")
    machine.daemon = subprocess.Popen(
        [REMEM, "worker"], env=machine.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for(lambda: machine.status()["worker"]["state"] == "running", timeout=60, interval=0.2)


def _passed_twice(machine: Machine) -> None:
    """Two Claude Code sessions in ~/shop: each ran `make test`, which passed; each ran
    `pytest`, which is not installed here, and then the virtualenv's pytest, which passed."""
    (machine.shop / ".git").mkdir(parents=True)
    (machine.shop / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (machine.shop / "Makefile").write_text("test:\n\t.venv/bin/python -m pytest -q\n")
    for session in ("monday", "tuesday"):
        machine.hook(machine.claude("session_start", session))
        machine.passed("make test", session)
        machine.failed("pytest", session, NOT_FOUND)
        machine.passed(VENV_PYTEST, session)
    machine.learnt()


def _failure_payload(machine: Machine) -> None:
    """What Claude Code sends the hook when `pytest` fails in a third session."""
    payload = machine.claude("post_tool_use_failure_bash_exit_code", "wednesday")
    payload.update(tool_input={"command": "pytest"}, error=NOT_FOUND)
    (machine.shop / "failed.json").write_text(json.dumps(payload, indent=2) + "\n")


def _session_start_payload(machine: Machine) -> None:
    payload = machine.claude("session_start", "thursday")
    (machine.shop / "session-start.json").write_text(json.dumps(payload, indent=2) + "\n")


def _broken_config(machine: Machine) -> None:
    """A setting written without its unit."""
    (machine.remem_home / "config.toml").write_text("[worker]\npoll_interval = 5\n")
    _session_start_payload(machine)


def _config_fixed(machine: Machine) -> None:
    (machine.remem_home / "config.toml").write_text('[worker]\npoll_interval = "5s"\n')


SCENES: dict[str, Callable[[Machine], None]] = {
    "agents-in-use": _agents_in_use,
    "daemon-running": _daemon_running,
    "passed-twice": _passed_twice,
    "failure-payload": _failure_payload,
    "broken-config": _broken_config,
    "config-fixed": _config_fixed,
    "daemon-stopped": Machine.stop_daemon,
}


# --- comparing what was printed with what the README shows ---------------------------------


def normalised(text: str, machine: Machine | None = None) -> list[str]:
    if machine is not None:
        text = text.replace(str(machine.root), "")
    text = re.sub(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "<time>", text)
    text = re.sub(r"\d{4}-\d{2}-\d{2}", "<date>", text)
    text = re.sub(r"--since \d+d", "--since <n>d", text)
    text = re.sub(r"\d{8}T\d{6}Z", "<stamp>", text)  # a backup's name
    text = re.sub(r"\b00\d\d\b", "<revision>", text)  # the schema's, which migrations move on
    return [line.rstrip() for line in text.splitlines()]


def matches(shown: list[str], printed: list[str]) -> bool:
    """Whether the printed lines are the shown ones, each `…` standing for any lines."""
    if not shown:
        return True
    pattern = []
    for line in shown:
        pattern.append(".*?" if line == "…" else re.escape(line) + "\n")
    return (
        re.fullmatch("".join(pattern), "".join(line + "\n" for line in printed), re.S) is not None
    )


def _where(block: Block, machine: Machine) -> Path:
    cwd = block.one("cwd")
    if cwd is None:
        return machine.checkout
    return Path(cwd.replace("~", str(machine.user), 1))


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[Machine]:
    machine = Machine(tmp_path)
    try:
        yield machine
    finally:
        machine.stop_daemon()


def test_the_readme_has_console_blocks_and_only_known_markup() -> None:
    found = blocks(README.read_text(encoding="utf-8"))
    assert len(found) >= 8
    known = {"before", "cwd", "instead", "exits", "checked-by"}
    for block in found:
        assert set(block.markup) <= known, block.markup
        for scene in block.markup.get("before", []):
            assert scene in SCENES, scene
        for shown in {**block.pairs("instead"), **block.pairs("exits")}:
            assert shown in [command.line for command in block.commands], shown
        checked_by = block.one("checked-by")
        if checked_by is not None:
            path, _, name = checked_by.partition("::")
            assert f"def {name}(" in (REPO / "tests" / "acceptance" / path).read_text()


def test_every_command_the_readme_shows_runs_and_prints_what_it_shows(machine: Machine) -> None:
    if shutil.which("make") is None:
        pytest.fail("make is not on PATH: the README's first commands need it")
    ran = []
    for block in blocks(README.read_text(encoding="utf-8")):
        if block.one("checked-by") is not None:
            continue
        for scene in block.markup.get("before", []):
            SCENES[scene](machine)
        instead, exits = block.pairs("instead"), block.pairs("exits")
        for command in block.commands:
            line = instead.get(command.line, command.line)
            result = subprocess.run(
                ["bash", "-c", line],
                cwd=_where(block, machine),
                env=machine.env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            said = f"$ {line}\n{result.stdout}{result.stderr}"
            assert result.returncode == int(exits.get(command.line, "0")), said
            printed = normalised(result.stdout + result.stderr, machine)
            assert matches(normalised("\n".join(command.shown)), printed), said
            ran.append(command.line)
    # The guide's steps, each run as shown: set up, connect, learn, check, remove.
    for step in ("make run", "make test", "remem hooks install all", "remem init", "remem context"):
        assert step in ran
    for step in ("remem status", "remem doctor", "remem hooks uninstall all", "rm -rf ~/.remem"):
        assert step in ran
