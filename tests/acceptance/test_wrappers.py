"""A command is judged on the program it runs (DESIGN.md §5-6), as real processes: Claude Code
and Codex payloads through `remem-hook`, a `remem worker --burst`, then the digest, the known
errors and the advice at a failure. Wrappers (`rtk`, `timeout 60`, `env X=1`) are seen
through; reads and bookkeeping never become procedures; a tool is read at the program's
position, so installing it is a fix; a runner's exit notice is never the error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_advice import Claude, context_of
from tests.acceptance.test_context import make_project
from tests.acceptance.test_truthful_digest import Codex
from tests.conftest import Home

# An agent that runs every command through a token-saving proxy, and other wrappers.
READS_AND_BOOKS = [
    "rtk git status",
    "rtk git diff",
    "rtk git log --oneline -5",
    "rtk git add src/cart.ts",
    "timeout 30 git fetch origin",
    "git checkout feat-b",
    "env GH_PAGER=cat gh pr list",
    "rtk gh issue list --state open",
    'rtk git commit -m "cart: totals"',
    "rtk git push",
    "nice -n 5 rtk git stash list",
]
NOT_IN_THE_DIGEST = [
    "git status",
    "git diff",
    "git log",
    "git add",
    "git fetch",
    "git checkout",
    "gh pr",
    "gh issue",
    "git commit",
    "git push",
    "git stash",
]
# `bun run lint` failing on biome's formatter: biome's own lines, then bun's exit notice
# (desplega-ai+agent-swarm, ../shared/corpus, MIT).
BIOME = (
    "Exit code 1\n$ biome check .\n"
    "Checked 105 files in 68ms. No fixes applied.\nFound 1 error.\n"
    "src/pages/workflows/[id]/page.tsx format ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━\n\n"
    "  × Formatter would have printed the following content:\n\n"
    "    305     │ -\n    306 305 │           {/* Next */}\n\n"
    "check ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━\n\n"
    "  × Some errors were emitted while running checks.\n\n"
    'error: script "lint" exited with code 1'
)
BIOME_LINE = "× Formatter would have printed the following content:"
NO_PYTEST = "Exit code 1\n/home/dev/shop/.venv/bin/python: No module named pytest"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def digest(home: Home, project: Path) -> str:
    return home.remem("context", "--cwd", str(project)).stdout


def procedure_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- `")]


def known(home: Home, words: str) -> dict[str, Any]:
    errors: list[dict[str, Any]] = home.json("procedures", "errors", "--json")
    (found,) = [error for error in errors if words in error["error"]]
    return found


def test_reads_and_bookkeeping_behind_wrappers_never_reach_the_digest(
    home: Home, project: Path, tmp_path: Path
) -> None:
    """Two Claude Code sessions and a Codex one run reads and bookkeeping, each twice or more,
    through wrappers, and the project's tests through `rtk` and without it: the only procedure
    is `bun run test`, its `rtk` runs among its variants."""
    claude = Claude(home, project)
    for session in ("s1", "s2"):
        for command in READS_AND_BOOKS:
            claude.ran(command, session)
        claude.ran("rtk bun run test", session)
    codex = Codex(home, project, tmp_path / "rollout-c1.jsonl", "codex-c1")
    for command in ("rtk git status", "rtk git add -A", "rtk bun run test", "bun run test"):
        codex.ran(command, 0, "12 pass\n0 fail")
    home.remem("worker", "--burst")

    (procedure,) = home.procedures()
    assert (procedure["workflow"], procedure["verified_runs"]) == ("bun run test", 4)
    shown = home.json("procedures", "show", str(procedure["id"]))
    variants = {variant["command"] for variant in shown["variants"]}
    assert variants == {"rtk bun run test", "bun run test"}
    lines = procedure_lines(digest(home, project))
    assert lines and all("bun run test" in line for line in lines), lines
    for words in NOT_IN_THE_DIGEST:
        assert not any(words in line for line in lines), words


def test_installing_the_missing_tool_is_the_fix(home: Home, project: Path, tmp_path: Path) -> None:
    """`No module named pytest`, then `.venv/bin/pip install pytest`, then a pass: the install
    is the fix, never "passed again with no edit"; a later failure is answered with it. In a
    Codex session, `uv add --dev pytest` fixes `uv run pytest` the same way."""
    claude = Claude(home, project)
    claude.failed(".venv/bin/python -m pytest -q", "s1", NO_PYTEST)
    claude.ran(".venv/bin/pip install pytest", "s1")
    claude.ran(".venv/bin/python -m pytest -q", "s1")
    codex = Codex(home, project, tmp_path / "rollout-c2.jsonl", "codex-c2")
    codex.ran("uv run pytest", 2, "error: Failed to spawn: `pytest`\n  Caused by: No such file")
    codex.ran("uv add --dev pytest", 0, "Resolved 12 packages in 3ms\n + pytest==8.3.4")
    codex.ran("uv run pytest", 0, "3 passed in 0.12s")
    home.remem("worker", "--burst")

    missing = known(home, "No module named pytest")
    assert (missing["fix_files"], missing["fix_commands"]) == ([], [".venv/bin/pip install pytest"])
    spawn = known(home, "Failed to spawn")
    assert spawn["fix_commands"] == ["uv add --dev pytest"]
    text = digest(home, project)
    assert "fixed after running `.venv/bin/pip install pytest`" in text
    assert "passed again with no edit" not in text
    advice = context_of(claude.failed(".venv/bin/python -m pytest -q", "later", NO_PYTEST))
    assert "No module named pytest" in advice and ".venv/bin/pip install pytest" in advice


def test_a_tool_s_name_elsewhere_in_a_command_is_no_run_of_it(home: Home, project: Path) -> None:
    """`cat pytest.ini` and `echo pytest` between a pytest failure and its pass are reads,
    not runs of pytest that would end the fix: the edit after them fixed it."""
    claude = Claude(home, project)
    red = "Exit code 1\nE       fixture 'cart' not found\n1 error in 0.02s"
    claude.failed("python -m pytest -q", "s1", red)
    claude.ran("cat pytest.ini", "s1")
    claude.ran("echo pytest", "s1")
    claude.edited("tests/conftest.py", "s1")
    claude.ran("python -m pytest -q", "s1")
    home.remem("worker", "--burst")

    fixture = known(home, "fixture 'cart' not found")
    assert (fixture["fix_files"], fixture["fix_commands"]) == (["tests/conftest.py"], [])


def test_the_error_is_the_linter_s_not_bun_s(home: Home, project: Path, tmp_path: Path) -> None:
    """`bun run lint` fails with biome's formatter line under bun's exit notice; `bun run
    lint:fix` fixes it. The known error is biome's line and its fix the command; a later
    `rtk bun run lint` failing alike, in Claude Code or Codex, is answered with both."""
    claude = Claude(home, project)
    claude.failed("bun run lint", "s1", BIOME)
    claude.ran("rtk git status", "s1")
    claude.ran("bun run lint:fix", "s1")
    claude.ran("bun run lint", "s1")
    home.remem("worker", "--burst")

    error = known(home, "Formatter would have printed")
    assert error["error"] == BIOME_LINE
    assert (error["fix_files"], error["fix_commands"]) == ([], ["bun run lint:fix"])
    errors = home.json("procedures", "errors", "--json")
    assert not any("exited with code" in found["error"] for found in errors)
    advice = context_of(claude.failed("rtk bun run lint", "later", BIOME))
    assert BIOME_LINE in advice and "`bun run lint:fix`" in advice
    assert "exited with code" not in advice
    codex = Codex(home, project, tmp_path / "rollout-c3.jsonl", "codex-c3")
    codex.ran("timeout 120 bun run lint", 1, BIOME.removeprefix("Exit code 1\n"))
    home.remem("worker", "--burst")
    # The wrapped runs failed again after the fix: a new streak, of the same workflow.
    again = [e for e in home.json("procedures", "errors", "--json") if e["error"] == BIOME_LINE]
    assert sorted((e["workflow"], e["times_seen"]) for e in again) == [
        ("bun run lint", 1),
        ("bun run lint", 2),
    ]
