"""Advice quotes the failure's own error, and a fix is what changed state (DESIGN.md §6), as real
processes: Claude Code and Codex payloads through `remem-hook`, a `remem worker --burst`, then
a failure answered by the hook, the digest and `remem recall`.

Advice is given when a line of the failure has the key of a known error, and quotes that line
as this failure printed it: never the line recorded of another run (the key masks paths), and,
where the failure shows several known errors, the one nearest its end. A fix names the check's
own fix alone (`bun run lint:fix` for `bun run lint`), else the commands that changed
something, then the edits: the files the error names first, the others counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_advice import (
    LAZY,
    NOT_FOUND,
    SECRET,
    Claude,
    context_of,
    learn_pytest_substitute,
)
from tests.acceptance.test_context import make_project
from tests.acceptance.test_truthful_digest import Codex
from tests.acceptance.test_wrappers import BIOME, BIOME_LINE, NO_PYTEST
from tests.conftest import Home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def pathspec(path: str) -> str:
    return f"Exit code 128\nfatal: pathspec '{path}' did not match any files"


def known(home: Home, words: str) -> dict[str, Any]:
    errors: list[dict[str, Any]] = home.json("procedures", "errors", "--json")
    (found,) = [error for error in errors if words in error["error"]]
    return found


def known_fix(digest: str, words: str) -> str:
    """What the digest's known error holding `words` says fixed it."""
    (line,) = [line for line in digest.splitlines() if line.startswith('- "') and words in line]
    return line.rpartition('": ')[2]


def test_a_path_s_error_is_quoted_with_this_failure_s_own_path(
    home: Home, project: Path, tmp_path: Path
) -> None:
    """A Codex session learns `fatal: pathspec '…' did not match any files` on one path; two
    later Claude Code failures on other paths are each answered with their own line."""
    codex = Codex(home, project, tmp_path / "rollout-p1.jsonl", "codex-p1")
    learnt = ".planning/todos/pending/review.md"
    codex.ran(f"git add {learnt}", 128, pathspec(learnt).removeprefix("Exit code 128\n"))
    codex.ran("git add -A", 0, "")
    home.remem("worker", "--burst")
    assert known(home, "did not match any files")["fix_commands"] == ["git add -A"]

    claude = Claude(home, project)
    for session, path in (("s2", "apps/api/src/shares/shares.service.ts"), ("s3", "web/a.tsx")):
        text = context_of(claude.failed(f"git add {path}", session, pathspec(path)))
        line = text.splitlines()[1]
        assert line.startswith(f"- \"fatal: pathspec '{path}' did not match any files\" ("), text
        assert "review.md" not in text


def test_of_several_known_errors_the_one_nearest_the_end_is_quoted(
    home: Home, project: Path
) -> None:
    """Two errors of `mix test`, each fixed in its own way; a failure that shows both is
    answered with the one it printed last, whichever that is."""
    agent = Claude(home, project)
    agent.failed("mix test", "learn", LAZY)
    agent.edited("mix.exs", "learn")
    agent.ran("mix deps.get", "learn")
    agent.failed("mix test", "learn", SECRET)
    agent.edited("config/test.exs", "learn")
    agent.ran("mix test", "learn")
    home.remem("worker", "--burst")

    lazy = LAZY.split("\n")[1]
    secret = SECRET.split("\n")[2].strip()
    both = f"Exit code 2\n{secret}\n{lazy}\n3 tests, 2 failures"
    last_lazy = context_of(agent.failed("mix test", "now-1", both)).splitlines()
    assert last_lazy[1].startswith(f"- {json.dumps(lazy)} (")
    assert last_lazy[1].endswith("fixed after running `mix deps.get` and editing mix.exs")
    both = f"Exit code 2\n{lazy}\n{secret}\n3 tests, 2 failures"
    last_secret = context_of(agent.failed("mix test", "now-2", both)).splitlines()
    assert last_secret[1].startswith(f"- {json.dumps(secret)} (")
    assert last_secret[1].endswith("fixed after editing config/test.exs")


CHECKS = (
    "Exit code 1\nE2E Tests\tfail\t3m18s\thttps://github.com/acme/box/actions/runs/22/job/7\t\n"
    "Build\tpass\t40s\thttps://github.com/acme/box/actions/runs/22/job/8\t\n"
    "Lint\tpass\t26s\thttps://github.com/acme/box/actions/runs/22/job/9\t"
)


def test_a_line_with_tabs_is_quoted_with_its_tabs(home: Home, project: Path) -> None:
    """`gh pr checks` separates its columns with tabs: the quote keeps them as printed, so
    it reads as the line the agent has in front of it."""
    agent = Claude(home, project)
    agent.failed("gh pr checks 17", "learn", CHECKS)
    agent.edited("e2e/share.spec.ts", "learn")
    agent.ran("gh pr checks 17", "learn")
    home.remem("worker", "--burst")

    now = CHECKS.replace("3m18s", "3m58s").replace("runs/22", "runs/23")
    text = context_of(agent.failed("gh pr checks 18", "now", now))
    own = now.split("\n")[1].strip()
    assert "\t" in own and f'- "{own}" (' in text
    assert "\\t" not in text and "\\u0009" not in text
    assert text.splitlines()[1].endswith("fixed after editing e2e/share.spec.ts")


def test_the_check_s_own_fix_is_named_alone(home: Home, project: Path, tmp_path: Path) -> None:
    """`bun run lint` fails on biome's formatter; the session edits two files, reads and keeps
    its books through `rtk`, runs `bun run lint:fix`, and passes. The fix is `bun run
    lint:fix`, named alone, in the digest, the advice and `remem recall`. A Codex session's
    `cargo fmt --check` is fixed by `cargo fmt` alike."""
    claude = Claude(home, project)
    claude.failed("bun run lint", "s1", BIOME)
    claude.edited(".github/workflows/ci.yml", "s1")
    claude.edited("entitlements.plist", "s1")
    for command in ("rtk git status", "rtk git diff", "rtk git log --oneline -5"):
        claude.ran(command, "s1")
    claude.ran("bun run lint:fix", "s1")
    claude.ran("rtk git add src/pages/workflows/[id]/page.tsx", "s1")
    claude.ran("bun run lint", "s1")
    codex = Codex(home, project, tmp_path / "rollout-f1.jsonl", "codex-f1")
    codex.ran("cargo fmt --check", 1, "Diff in /w/shop/src/main.rs at line 3:\n-fn main(){}\n")
    codex.ran("cargo fmt", 0, "")
    codex.ran("cargo fmt --check", 0, "")
    home.remem("worker", "--burst")

    lint = known(home, "Formatter would have printed")
    assert (lint["fix_files"], lint["fix_commands"]) == ([], ["bun run lint:fix"])
    digest = home.remem("context", "--cwd", str(project)).stdout
    assert known_fix(digest, BIOME_LINE) == "fixed by running `bun run lint:fix`"
    assert known_fix(digest, "Diff in") == "fixed by running `cargo fmt`"
    advice = context_of(claude.failed("rtk bun run lint", "later", BIOME))
    assert advice.splitlines()[1].endswith(": fixed by running `bun run lint:fix`")
    recalled = home.remem("recall", "Formatter would", "--cwd", str(project)).stdout
    assert "  fixed by running `bun run lint:fix`" in recalled.splitlines()


def test_an_install_is_the_fix_and_unnamed_edits_are_counted(home: Home, project: Path) -> None:
    """`No module named pytest`, then three edits the error names none of and
    `.venv/bin/pip install pytest`, then a pass: the install is named, the edits counted."""
    agent = Claude(home, project)
    agent.failed(".venv/bin/python -m pytest -q", "s1", NO_PYTEST)
    for name in ("README.md", "src/shop/cart.py", "docs/setup.md"):
        agent.edited(name, "s1")
    agent.ran(".venv/bin/pip install pytest", "s1")
    agent.ran(".venv/bin/python -m pytest -q", "s1")
    home.remem("worker", "--burst")

    fix = "fixed after running `.venv/bin/pip install pytest` and editing 3 files"
    digest = home.remem("context", "--cwd", str(project)).stdout
    assert known_fix(digest, "No module named pytest") == fix
    advice = context_of(agent.failed(".venv/bin/python -m pytest -q", "later", NO_PYTEST))
    assert advice.splitlines()[1].endswith(f": {fix}")


def test_the_file_the_error_names_comes_first(home: Home, project: Path) -> None:
    agent = Claude(home, project)
    error = (
        "Exit code 2\nsrc/cart.ts(3,5): error TS2322: Type 'string' is not assignable to "
        "type 'number'."
    )
    agent.failed("bunx tsc --noEmit", "s1", error)
    for name in ("a/notes.md", "src/api.ts", "src/cart.ts", "z/plan.md"):
        agent.edited(name, "s1")
    agent.ran("bunx tsc --noEmit", "s1")
    home.remem("worker", "--burst")

    digest = home.remem("context", "--cwd", str(project)).stdout
    assert known_fix(digest, "TS2322") == "fixed after editing src/cart.ts and 3 other files"


def test_what_works_instead_is_told_only_of_a_failure_showing_its_error(
    home: Home, project: Path
) -> None:
    """`pytest` is not found here and `.venv/bin/python -m pytest` works instead; a `pytest`
    that ran and went red shows another error, and is told nothing of it."""
    agent = Claude(home, project)
    learn_pytest_substitute(agent)
    red = "Exit code 1\nE       AssertionError: assert 9 == 10\n1 failed in 0.02s"
    assert agent.failed("pytest", "red", red) == b""
    text = context_of(agent.failed("pytest", "again", NOT_FOUND))
    assert '"/bin/bash: line 1: pytest: command not found"' in text
