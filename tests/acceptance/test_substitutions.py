"""Substitutions as real processes: Claude Code and Codex payloads through `remem-hook`, a
`remem worker --burst`, then what the next session is told. A command that fails here and
another for the same purpose that passes right after it, with no edit between, is told as
"instead of A, B worked", counted across sessions; an edit between, or another purpose, is not."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from remem.agent.substitutions import RAN_RED
from remem.shell.recognisers import error_key
from tests.acceptance.test_advice import Claude, context_of
from tests.acceptance.test_context import context, make_project
from tests.acceptance.test_truthful_digest import Agent, Codex
from tests.conftest import Home, load_fixture

NOT_FOUND = "Exit code 127\n/bin/bash: line 1: {program}: command not found"
NO_MODULE = "Exit code 1\n/usr/bin/python3: No module named pytest"
RED = "Exit code 1\nFAILED tests/test_cart.py::test_total - assert 2 == 3\n1 failed in 0.20s"
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


def test_an_edit_between_a_red_run_and_the_pass_is_a_fix_not_a_substitution(
    home: Home, project: Path, tmp_path: Path
) -> None:
    """A test failing is the code, not the command: whatever passes after the edit, in this
    session or another, is never what to run instead."""
    agent = Agent(home, project)
    agent.failed("python -m pytest", "s1", RED)
    agent.edited("src/cart.py", "s1", "return total")
    agent.ran(VENV, "s1")
    agent.ran(VENV, "s1")
    codex = Codex(home, project, tmp_path / "rollout-red.jsonl", "codex-red")
    codex.ran("pytest -q", 1, RED.removeprefix("Exit code 1\n"))
    codex.ran(VENV, 0, "3 passed in 0.2s")
    home.remem("worker", "--burst")

    assert substitution_lines(context(home, project).stdout) == []
    assert json.loads(context(home, project, "--json").stdout)["substitutions"] == []


def test_a_command_that_cannot_run_learns_what_passes_after_edits(
    home: Home, project: Path, tmp_path: Path
) -> None:
    """`pytest` is not found and `python3 -m pytest` has no pytest; the agent fixes a real
    bug, then `.venv/bin/python -m pytest` passes: no edit makes a missing program run, so
    it is what runs instead, in Claude Code and in Codex."""
    agent = Agent(home, project)
    agent.failed("pytest", "s1", NOT_FOUND.format(program="pytest"))
    agent.edited("src/cart.py", "s1", "return total")
    agent.edited("tests/test_cart.py", "s1", "assert total == 3")
    agent.ran(VENV, "s1")
    codex = Codex(home, project, tmp_path / "rollout-edits.jsonl", "codex-edits")
    codex.ran("python3 -m pytest", 1, NO_MODULE.removeprefix("Exit code 1\n"))
    codex.ran("apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF", 0, "Done!")
    codex.ran(VENV, 0, "3 passed in 0.2s")
    home.remem("worker", "--burst")

    lines = substitution_lines(context(home, project).stdout)
    assert sorted(lines) == [
        '- `pytest`: "/bin/bash: line 1: pytest: command not found" (1 session) — use '
        f"`{VENV}` (verified, 2 runs)",
        '- `python3 -m pytest`: "/usr/bin/python3: No module named pytest" (1 session) — '
        f"use `{VENV}` (verified, 2 runs)",
    ]


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


# `rtk` proxies some tools, not bun: its command-line parser refuses the word after it.
RTK_REFUSES = (
    "error: unrecognized subcommand 'bun'\n\nUsage: rtk [OPTIONS] <COMMAND>\n\n"
    "For more information, try '--help'."
)
# bun's test runner finding a failing test: the command ran, the code is red.
BUN_RED = (
    "src/cart.test.ts:\n(fail) cart > totals [0.31ms]\n\n 11 pass\n 1 fail\n"
    'Ran 12 tests across 3 files. [120.00ms]\nerror: script "test" exited with code 1'
)
RTK_LINE = "error: unrecognized subcommand 'bun'"


def test_a_wrapper_that_cannot_run_learns_the_sibling_from_another_session(
    home: Home, project: Path, tmp_path: Path
) -> None:
    """`rtk bun run test` cannot run (session 1, Claude Code); `bun run test` runs in a Codex
    session and finds a failing test, after an edit. In session 3 the failure of `rtk bun
    run test` is told to use `bun run test`, and the digest names it."""
    claude = Claude(home, project)
    claude.failed("rtk bun run test", "s1", f"Exit code 2\n{RTK_REFUSES}")
    home.remem("worker", "--burst")
    codex = Codex(home, project, tmp_path / "rollout-s2.jsonl", "codex-s2")
    codex.ran("apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF", 0, "Done!")
    codex.ran("bun run test", 1, BUN_RED)
    home.remem("worker", "--burst")

    (line,) = substitution_lines(context(home, project).stdout)
    assert line == (
        f'- `rtk bun run test`: "{RTK_LINE}" (1 session) — use `bun run test` ({RAN_RED})'
    )
    advice = context_of(claude.failed("rtk bun run test", "s3", f"Exit code 2\n{RTK_REFUSES}"))
    assert advice.splitlines()[1].startswith(f'- `rtk bun run test`: "{RTK_LINE}" (1 session')
    assert advice.endswith(f"— use `bun run test` ({RAN_RED})"), advice
    # A red run is never itself a command that cannot run here.
    errors = home.json("procedures", "errors", "--json")
    instead = [item for item in errors if item.get("kind") == "substitution"]
    assert [(item["workflow"], item["instead"]) for item in instead] == [
        ("rtk bun run test", "bun run test")
    ]


def test_the_warning_before_a_wrapper_that_cannot_run_names_the_verified_sibling(
    home: Home, project: Path, tmp_path: Path
) -> None:
    """`rtk bun run test` failed in two sessions and never ran; `bun run test` passes in a
    third and a fourth (Codex): before the next `rtk bun run test` the opt-in PreToolUse
    warning names it, from the same record the digest reads."""
    claude = Claude(home, project)
    for session in ("s1", "s2"):
        claude.failed("rtk bun run test", session, f"Exit code 2\n{RTK_REFUSES}")
        claude.edited("src/cart.ts", session)
    for session in ("codex-3", "codex-4"):
        codex = Codex(home, project, tmp_path / f"rollout-{session}.jsonl", session)
        codex.ran("bun run test", 0, " 12 pass\n 0 fail\nRan 12 tests across 3 files.")
    home.remem("worker", "--burst")

    (line,) = substitution_lines(context(home, project).stdout)
    assert line == (
        f'- `rtk bun run test`: "{RTK_LINE}" (2 sessions) — use `bun run test` (verified, 2 runs)'
    )
    warned = context_of_before(claude.before("rtk bun run test", "s5"))
    assert warned.splitlines()[1] == (
        "- `rtk bun run test` failed in 2 sessions here and never passed — use "
        "`bun run test` (verified, 2 runs)"
    )
    # The sibling itself, and another command, are not warned of.
    for command in ("bun run test", "rtk git status"):
        quiet = claude.before(command, "s5")
        assert (quiet.returncode, quiet.stdout) == (0, b"")


def context_of_before(result: subprocess.CompletedProcess[bytes]) -> str:
    output = json.loads(result.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    text: str = output["hookSpecificOutput"]["additionalContext"]
    return text


def test_a_wrapper_that_cannot_run_never_breaks_the_workflow_it_wraps(
    home: Home, project: Path
) -> None:
    """`bun run test` is verified; `rtk bun run test` then fails twice because rtk refuses
    `bun`: the procedure `bun run test` stays verified, and the wrapper is told to use it.
    `bun run test` itself failing so twice would break it."""
    claude = Claude(home, project)
    for session in ("s1", "s2"):
        claude.ran("bun run test", session)
    for session in ("s3", "s4"):
        claude.failed("rtk bun run test", session, f"Exit code 2\n{RTK_REFUSES}")
    home.remem("worker", "--burst")

    (procedure,) = [p for p in home.json("procedures", "list", "--json") if p["command"]]
    assert (procedure["command"], procedure["status"]) == ("bun run test", "active")
    (line,) = substitution_lines(context(home, project).stdout)
    assert line.startswith(f'- `rtk bun run test`: "{RTK_LINE}" (2 sessions) — use `bun run test`')

    for session in ("s5", "s6"):
        claude.failed("bun run test", session, "Exit code 127\nbun: command not found")
    home.remem("worker", "--burst")
    (procedure,) = home.json("procedures", "list", "--json", "--status", "broken")
    assert procedure["command"] == "bun run test"
