"""Substitutions as real processes: Claude Code and Codex payloads through `remem-hook`, a
`remem worker --burst`, then what the next session is told. A command that fails here and
another for the same purpose that passes right after it, with no edit between, is told as
"instead of A, B worked", counted across sessions; an edit between, or another purpose, is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.shell.recognisers import error_key
from tests.acceptance.test_context import context, make_project
from tests.acceptance.test_truthful_digest import Agent, Codex
from tests.conftest import Home, load_fixture

NOT_FOUND = "Exit code 127\n/bin/bash: line 1: {program}: command not found"
NO_MODULE = "Exit code 1\n/usr/bin/python3: No module named pytest"
VENV = ".venv/bin/python -m pytest"
GO = "go test ./..."
GO_SANDBOXED = "GOCACHE=$(pwd)/.cache/go-build GOMODCACHE=$(pwd)/.cache/go-mod go test ./..."
GO_CACHE_ERROR = (
    "go: could not create module cache: mkdir /home/dev/go/pkg/mod: read-only file system"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def session_start(home: Home, project: Path, session: str) -> str:
    """What the SessionStart hook prints to the next session."""
    payload = load_fixture("claude-code/session_start.json")
    payload.update(session_id=session, cwd=str(project))
    result = home.hook(payload)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


def substitution_lines(digest: str) -> list[str]:
    lines = digest.splitlines()
    heading = "Commands that fail here, and what passed instead (recorded output):"
    if heading not in lines:
        return []
    block = lines[lines.index(heading) + 1 :]
    return [line for line in block[: len(block)] if line.startswith("- ")]


def test_a_chain_of_failing_pytest_commands_learns_the_one_that_works(
    home: Home, project: Path
) -> None:
    agent = Agent(home, project)
    # The first session tries four ways; each failing one gets the one that passed.
    agent.failed("pytest", "chain", NOT_FOUND.format(program="pytest"))
    agent.failed("python -m pytest", "chain", NOT_FOUND.format(program="python"))
    agent.failed("python3 -m pytest", "chain", NO_MODULE)
    agent.ran(VENV, "chain")
    agent.ran(VENV, "chain")
    for session in ("later-1", "later-2"):
        agent.failed("pytest", session, NOT_FOUND.format(program="pytest"))
        agent.ran(VENV, session)
        agent.ran(VENV, session)
    home.remem("worker", "--burst")

    digest = session_start(home, project, "next")
    # Said once, with what works instead: not again as an error not yet fixed.
    assert "not yet fixed" not in digest and digest.count("pytest: command not found") == 1
    lines = substitution_lines(digest)
    assert lines[0] == (
        '- `pytest`: "/bin/bash: line 1: pytest: command not found" (3 sessions) — use '
        f"`{VENV}` (verified, 6 runs)"
    )
    assert sorted(lines[1:]) == [
        '- `python -m pytest`: "/bin/bash: line 1: python: command not found" (1 session) — '
        f"use `{VENV}` (verified, 6 runs)",
        '- `python3 -m pytest`: "/usr/bin/python3: No module named pytest" (1 session) — '
        f"use `{VENV}` (verified, 6 runs)",
    ]

    found = json.loads(home.remem("procedures", "errors", "--json").stdout)
    instead = {item["workflow"]: item for item in found if item.get("kind") == "substitution"}
    assert set(instead) == {"pytest", "python -m pytest", "python3 -m pytest"}
    pytest_item = instead["pytest"]
    assert (pytest_item["instead"], pytest_item["sessions"], pytest_item["failures"]) == (
        VENV,
        3,
        3,
    )
    assert pytest_item["instead_verified_runs"] == 6
    assert pytest_item["error_key"] == error_key("/bin/bash: line 1: pytest: command not found")

    # The procedure that worked instead says what it replaced.
    shown = home.json("procedures", "show", str(pytest_item["instead_procedure_id"]), "--json")
    assert {item["workflow"] for item in shown["substitutions"]} == set(instead)
    text = home.remem("procedures", "show", str(pytest_item["instead_procedure_id"])).stdout
    assert f'Instead of "pytest" (3 failed in 3 sessions), "{VENV}" passed' in text


def test_go_module_cache_under_a_sandbox_learns_the_environment_variant(
    home: Home, project: Path, tmp_path: Path
) -> None:
    agent = Codex(home, project, tmp_path / "rollout.jsonl")
    agent.ran(GO, 1, GO_CACHE_ERROR)
    agent.ran(GO_SANDBOXED, 0, "ok  \texample.com/shop\t0.412s")
    agent.ran(GO_SANDBOXED, 0, "ok  \texample.com/shop\t0.398s")
    home.remem("worker", "--burst")

    (line,) = substitution_lines(context(home, project).stdout)
    assert line == (
        f'- `{GO}`: "{GO_CACHE_ERROR}" (1 session) — use `{GO_SANDBOXED}` (verified, 2 runs)'
    )


def test_an_edit_between_the_failure_and_the_pass_is_a_fix_not_a_substitution(
    home: Home, project: Path
) -> None:
    agent = Agent(home, project)
    agent.failed("pytest", "s1", NOT_FOUND.format(program="pytest"))
    agent.edited("pyproject.toml", "s1", "[tool.pytest.ini_options]")
    agent.ran(VENV, "s1")
    agent.ran(VENV, "s1")
    home.remem("worker", "--burst")

    assert substitution_lines(context(home, project).stdout) == []
    assert json.loads(context(home, project, "--json").stdout)["substitutions"] == []


def test_another_purpose_is_not_a_substitution(home: Home, project: Path) -> None:
    agent = Agent(home, project)
    agent.failed("npm test", "s1", "Exit code 1\nTests: 1 failed, 12 passed, 13 total")
    agent.ran("git status", "s1")
    agent.ran("npm run build", "s1")
    agent.failed("pytest tests/test_cart.py", "s1", "Exit code 1\n1 failed in 0.20s")
    agent.ran("pytest tests/test_user.py", "s1")
    # The tool ran and found a failing test: other options passing is no way to run it here.
    agent.failed(
        "pytest -x", "s1", "Exit code 1\nFAILED tests/test_cart.py::test_total\n1 failed in 0.20s"
    )
    agent.ran("pytest -q", "s1")
    home.remem("worker", "--burst")

    assert json.loads(context(home, project, "--json").stdout)["substitutions"] == []
    errors = json.loads(home.remem("procedures", "errors", "--json").stdout)
    assert [item for item in errors if item.get("kind") == "substitution"] == []


def test_a_script_run_from_the_wrong_directory_learns_where_it_runs(
    home: Home, project: Path
) -> None:
    """The build script resolves its paths from its own directory: run from the root it fails
    (the tool ran), run from assets/ it passes. The next session is told where to run it."""
    agent = Agent(home, project)
    error = 'Exit code 1\n✘ [ERROR] Could not resolve "js/app.js"'
    for session in ("first", "second"):
        agent.failed("node assets/build.js 2>&1", session, error)
        agent.ran(f"cd {project}/assets && node build.js 2>&1", session)
    home.remem("worker", "--burst")

    (line,) = substitution_lines(session_start(home, project, "next"))
    assert line == (
        '- `node assets/build.js`: "✘ [ERROR] Could not resolve \\"js/app.js\\"" (2 sessions)'
        " — use `node build.js 2>&1` in assets/ (verified, 2 runs)"
    )
    found = json.loads(home.remem("procedures", "errors", "--json").stdout)
    (item,) = [item for item in found if item.get("kind") == "substitution"]
    assert (item["directory"], item["instead_workflow"], item["instead_directory"]) == (
        ".",
        "node build.js",
        "assets",
    )
    text = home.remem("procedures", "show", str(item["instead_procedure_id"])).stdout
    assert '"node build.js 2>&1" in assets/ passed' in text
