"""Red is not broken (DESIGN.md §6), as real processes: Claude Code payloads through
`remem-hook` in real git worktrees, a burst, and what each worktree's SessionStart is told.
A tool that ran and reported failures says the code is red on its branch; only a command that
cannot run breaks its procedure."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from remem.shell.recognisers import RECOGNISERS
from tests.acceptance.test_real_sessions import (
    add_worktree,
    bash_payload,
    hook,
    make_repository,
    procedures,
    session_start,
)
from tests.acceptance.test_truthful_digest import block_of
from tests.conftest import Home

ROWS = {row.family: row for row in RECOGNISERS}
CREDO = "mix credo --strict"
CREDO_CLEAN = ROWS["credo"].example_success
CREDO_ISSUES = ROWS["credo"].example_failure  # `380 mods/funs, found 1 refactoring opportunity.`
CREDO_ISSUE = "┃ [F] ↗ Unless conditions should avoid having an `else` block."
TEST = "mix test"
TESTS_FAIL = ROWS["exunit"].example_failure  # `14 doctests, 127 tests, 12 failures`
TESTS_ERROR = "** (RuntimeError) no :secret_key_base configuration found in SpotterWeb.Endpoint."
LINT = "npm run lint"


def failed_with(cwd: Path, command: str, session: str, error: str) -> dict[str, Any]:
    payload = bash_payload(cwd, command, session, failed=True)
    return {**payload, "error": error}


def context_json(home: Home, cwd: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(home.remem("context", "--cwd", str(cwd), "--json").stdout)
    return found


def test_credo_red_on_one_branch_stays_verified_everywhere_and_says_so_there(
    home: Home, tmp_path: Path
) -> None:
    repository = make_repository(tmp_path / "app")
    branches = {name: add_worktree(repository, tmp_path / f"app-{name}", name) for name in "abc"}
    for name, worktree in branches.items():
        hook(home, bash_payload(worktree, CREDO, f"s-{name}", CREDO_CLEAN))
    home.remem("worker", "--burst")
    # Branch c's latest runs find issues in branch c's code, session after session.
    for session in ("s-c2", "s-c3", "s-c4"):
        hook(home, bash_payload(branches["c"], CREDO, session, CREDO_ISSUES, failed=True))
    home.remem("worker", "--burst")

    (credo,) = [p for p in procedures(home) if p["workflow"] == CREDO]
    assert (credo["scope"], credo["status"], credo["verified_runs"]) == ("project", "active", 3)

    fresh = add_worktree(repository, tmp_path / "app-d", "d")
    told = hook(home, session_start(fresh, "s-d"))
    (line,) = block_of(told, CREDO)
    assert "verified on 3 branches" in line

    on_c = hook(home, session_start(branches["c"], "s-c5"))
    lines = block_of(on_c, CREDO)
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    quoted = json.dumps(CREDO_ISSUE, ensure_ascii=False)
    assert lines[1] == f"  fails on this branch since {today} (3 failed runs): {quoted}"
    (entry,) = context_json(home, branches["c"])["procedures"]
    assert (entry["failing_runs"], entry["failing_error"]) == (3, CREDO_ISSUE)
    assert entry["failing_since_at"].startswith(today)
    # The other branches are told nothing of it.
    (elsewhere,) = context_json(home, branches["a"])["procedures"]
    assert (elsewhere["failing_runs"], elsewhere["failing_since_at"]) == (0, None)


def test_a_branch_whose_tests_fail_session_after_session_keeps_the_inherited_procedure(
    home: Home, tmp_path: Path
) -> None:
    repository = make_repository(tmp_path / "app")
    for session in ("m1", "m2"):
        hook(home, bash_payload(repository, TEST, session, ROWS["exunit"].example_success))
    red = add_worktree(repository, tmp_path / "app-red", "red")
    for session in ("r1", "r2", "r3"):
        hook(home, bash_payload(red, TEST, session, TESTS_FAIL, failed=True))
    home.remem("worker", "--burst")

    told = hook(home, session_start(red, "r4"))
    command_line, failing = block_of(told, TEST)[:2]
    assert "inherited from main" in command_line
    assert failing.startswith("  fails on this branch since ")
    assert failing.endswith(f"(3 failed runs): {json.dumps(TESTS_ERROR)}")
    on_main = hook(home, session_start(repository, "m3"))
    assert "fails on this branch" not in on_main
    statuses = {(p["branch"], p["workflow"]): p["status"] for p in procedures(home)}
    assert statuses == {("main", TEST): "active"}


def test_a_command_that_cannot_run_still_breaks_its_procedure(home: Home, tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "app")
    for session in ("m1", "m2"):
        hook(home, bash_payload(repository, LINT, session, "done"))
        hook(home, bash_payload(repository, TEST, session, ROWS["exunit"].example_success))
    home.remem("worker", "--burst")
    for session in ("m3", "m4"):
        not_found = "Exit code 127\n/bin/bash: line 1: npm: command not found"
        hook(home, failed_with(repository, LINT, session, not_found))
    home.remem("worker", "--burst")

    statuses = {p["workflow"]: p["status"] for p in procedures(home)}
    assert statuses == {LINT: "broken", TEST: "active"}
    told = hook(home, session_start(repository, "m5"))
    assert f"`{TEST}`" in told and LINT not in told
    attempts = home.query("SELECT workflow, exit_code, cannot_run FROM attempts")
    assert attempts == [(LINT, 127, 1), (LINT, 127, 1)]
