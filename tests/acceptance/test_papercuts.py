"""The small things a new user trips over in the first hour, each through the real `remem`,
`remem-hook` and `make`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.acceptance.test_advice import VENV, Claude, context_of, learn_substitute
from tests.acceptance.test_context import make_project
from tests.conftest import BIN, REMEM, REPO, Home, wait_for

NOT_FOUND = "Exit code 127\n/bin/bash: line 1: pytest: command not found"


def test_an_unknown_command_that_a_group_holds_is_named_with_its_group(home: Home) -> None:
    result = home.remem("export", check=False)
    assert result.returncode == 2
    assert "No such command 'export': did you mean `remem procedures export`?" in result.stderr


def test_context_of_a_folder_that_does_not_exist_is_an_error(home: Home) -> None:
    result = home.remem("context", "--cwd", "/does/not/exist", check=False)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "remem: --cwd /does/not/exist is not a folder: name one inside the project.\n"
    )


def _user_home(home: Home) -> Path:
    return Path(home.env["HOME"])


def test_init_on_an_existing_home_is_short_and_knows_connected_agents(tmp_path: Path) -> None:
    home = Home(tmp_path / "fresh")
    (_user_home(home) / ".claude").mkdir(parents=True)
    first = home.remem("init", "--no-hooks").stdout
    assert first.startswith(f"Created remem home at {home.path}\n")
    assert "hooks install all" in first and "claude mcp add" in first

    again = home.remem("init").stdout.splitlines()
    assert again[0].startswith(f"Found remem home at {home.path}, its database at revision ")
    assert "claude mcp add" not in "\n".join(again)  # said once, when the home was made
    assert len(again) <= 5, again
    assert any("hooks install all" in line for line in again)  # not connected yet

    home.remem("hooks", "install", "claude-code")
    connected = home.remem("init").stdout
    assert "Hooks connected: claude-code" in connected
    assert "hooks install all" not in connected and "Connect your agents" not in connected


def test_hooks_uninstall_names_only_files_that_exist(home: Home) -> None:
    user = _user_home(home)
    (user / ".claude").mkdir(parents=True)
    home.remem("hooks", "install", "claude-code")
    said = home.remem("hooks", "uninstall", "all").stdout.splitlines()
    assert said[0].startswith(f"claude-code: removed from {user / '.claude' / 'settings.json'}")
    assert said[1:] == [
        "codex: no settings file, so no remem hook",
        "cursor: no settings file, so no remem hook",
    ]
    assert not (user / ".codex").exists() and not (user / ".cursor").exists()
    for line in home.remem("hooks", "uninstall", "all").stdout.splitlines():
        assert line.endswith(": no settings file, so no remem hook"), line


def test_a_task_done_at_its_first_try_shows_no_failure(home: Home, tmp_path: Path) -> None:
    agent = Claude(home, make_project(tmp_path))
    agent.ran("make test", "s1")
    home.remem("worker", "--burst")
    header, row = (
        line for line in home.remem("tasks").stdout.splitlines() if "done" in line or "id" in line
    )
    assert "failures" in header and "attempts" not in header
    cells = [cell.strip() for cell in row.strip("│┃ ").split("│")]
    assert cells[2:4] == ["done", "0"]


def test_a_digest_read_below_the_root_says_where_its_commands_run(
    home: Home, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    agent = Claude(home, project)
    agent.ran("make test", "s1")
    agent.ran("make test", "s2")
    home.remem("worker", "--burst")
    (project / "web" / "src").mkdir(parents=True)
    at_root = home.remem("context", "--cwd", str(project)).stdout
    below = home.remem("context", "--cwd", str(project / "web" / "src")).stdout
    first, second, *rest = below.splitlines()
    assert first == at_root.splitlines()[0]
    assert second == (
        f"This session is in web/src/: run each command from {project}, "
        "or from the folder its line names."
    )
    assert rest == at_root.splitlines()[1:]
    assert "This session is in" not in at_root


def test_a_substitution_counts_its_sessions_alike_everywhere(home: Home, tmp_path: Path) -> None:
    """`pytest` failed in 3 sessions; what passed instead ran after it in one of them. The
    digest, the advice at the failure and the warning before the command all say 3."""
    project = make_project(tmp_path)
    agent = Claude(home, project)
    learn_substitute(agent, "pytest", NOT_FOUND, VENV, sessions=1, passes=2)
    for session in ("two", "three"):
        agent.failed("pytest", session, NOT_FOUND)
    home.remem("worker", "--burst")

    digest = home.remem("context", "--cwd", str(project)).stdout
    line = next(line for line in digest.splitlines() if line.startswith("- `pytest`:"))
    assert "(3 sessions)" in line, digest
    advice = context_of(agent.failed("pytest", "now"))
    assert "(3 sessions, last " in advice, advice
    before = agent.before("pytest", "later").stdout.decode()
    assert "failed in 3 sessions here and never passed" in before, before


def make_checkout(tmp_path: Path) -> Path:
    """A copy of the Makefile whose .venv is this checkout's, already built."""
    work = tmp_path / "checkout"
    (work / ".venv").mkdir(parents=True)
    shutil.copy(REPO / "Makefile", work / "Makefile")
    (work / "pyproject.toml").write_text("")
    (work / ".venv" / "bin").symlink_to(BIN)
    earlier = (work / "pyproject.toml").stat().st_mtime - 100
    os.utime(work / "pyproject.toml", (earlier, earlier))  # the virtualenv is up to date
    (work / ".venv" / ".installed").touch()
    return work


def test_make_run_beside_a_running_daemon_says_so_and_succeeds(home: Home, tmp_path: Path) -> None:
    make = shutil.which("make")
    if make is None:
        pytest.fail("make is not on PATH")
    work = make_checkout(tmp_path)
    daemon = subprocess.Popen(
        [REMEM, "worker"], env=home.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: home.status()["worker"]["pid"] == daemon.pid, timeout=60)
        result = subprocess.run(
            [make, "run"], cwd=work, env=home.env, capture_output=True, text=True, timeout=120
        )
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
    assert result.returncode == 0, result.stderr
    assert f"Found remem home at {home.path}" in result.stdout
    assert "claude mcp add" not in result.stdout
    assert result.stderr.strip() == (
        f"remem: remem worker already running (pid {daemon.pid}): nothing to start; "
        "`remem status` shows it"
    )
