"""Workflows, not strings (DESIGN.md §5), as real processes: real sessions replayed through the
real `remem-hook`, real git worktrees, a burst, and what the agent is then told."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench.common import add_worktree, make_repository, relocated, session_start
from remem.transcripts import read_claude, read_codex
from tests.conftest import REPO, Home

TRANSCRIPTS = REPO / "tests" / "fixtures" / "transcripts"
# Written independently of the recognisers table: a summary that counts failures.
FAILURE_SUMMARY = re.compile(
    r"\b[1-9]\d* (?:failures?|failed|errors?)\b|\btest result: FAILED\b|^FAILED\b", re.M
)
_ids = itertools.count(1)


def bash_payload(
    cwd: Path | str, command: str, session: str, stdout: str = "", failed: bool = False
) -> dict[str, Any]:
    base = {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/x/{session}.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_use_id": f"toolu_{next(_ids):06d}",
        "tool_input": {"command": command},
    }
    if failed:
        return {**base, "hook_event_name": "PostToolUseFailure", "error": f"Exit code 1\n{stdout}"}
    return {
        **base,
        "hook_event_name": "PostToolUse",
        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False},
    }


def hook(home: Home, payload: dict[str, Any], host: str = "claude-code") -> str:
    result = home.hook(payload, "--host", host)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


def procedures(home: Home) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(
        home.remem("procedures", "list", "--all", "--json").stdout
    )
    return found


# --- real sessions --------------------------------------------------------------------------


def replay_claude(home: Home, transcript: Path, user_root: str, workspace: Path) -> int:
    """Every call of the session through the real hook, its paths moved into `workspace`."""
    count = 0
    for call in read_claude(str(transcript)):
        result = home.hook(relocated(call.payload, user_root, workspace), "--host", "claude-code")
        assert result.returncode == 0, result.stderr
        count += 1
    return count


def assert_truthful(home: Home) -> None:
    """No procedure's evidence holds a masked run whose output counts failures, and no two
    procedures share a group."""
    found = procedures(home)
    evidence = {p["id"]: set(p["evidence_event_ids"]) for p in found}
    # Whether a run was masked, and the output it printed, are shown by no command.
    rows = home.query(
        "SELECT p.id, v.event_id, v.masked, e.output_excerpt FROM procedures p "
        "JOIN verifications v ON v.project_id = p.project_id AND v.directory = p.directory "
        "AND v.workflow_hash = p.workflow_hash AND (p.scope = 'project' OR v.branch = p.branch) "
        "JOIN captured_events e ON e.id = v.event_id"
    )
    for procedure_id, event_id, masked, output in rows:
        if masked and event_id in evidence[procedure_id]:
            assert not FAILURE_SUMMARY.search(output or ""), (procedure_id, event_id, output)
    groups = Counter(
        (p["project"], p["scope"], p["branch"], p["directory"], p["workflow_hash"]) for p in found
    )
    assert [group for group, count in groups.items() if count > 1] == []


def test_a_real_elixir_session_in_a_worktree_learns_workflows_not_strings(
    home: Home, tmp_path: Path
) -> None:
    workspace = tmp_path / "projects"
    repository = make_repository(workspace / "spotter")
    (workspace / "spotter-worktrees").mkdir()
    worktree = workspace / "spotter-worktrees" / "spotter-fum"
    add_worktree(repository, worktree, "spotter-fum")
    (worktree / "assets").mkdir()

    calls = replay_claude(
        home, TRANSCRIPTS / "claude" / "spotter-fum.jsonl", "/home/USER/projects", workspace
    )
    home.remem("worker", "--burst")

    assert calls > 90
    assert_truthful(home)
    found = procedures(home)
    workflows = {(p["directory"], p["workflow"]) for p in found}
    assert all("| tail" not in w and "2>&1" not in w for _d, w in workflows), workflows
    # One project: the worktree belongs to the repository it was added from.
    assert {hit["project"] for hit in home.command_hits()} == {str(repository.resolve())}
    assert {p["project"] for p in found} == {str(repository.resolve())}
    # Every `mix test 2>&1 …` spelling of the session is one workflow, not one per string.
    mix_test = [p for p in found if p["workflow"] == "mix test"]
    assert len(mix_test) == 1, found
    assert mix_test[0]["branch"] == "spotter-fum"
    assert {v["command"] for v in mix_test[0]["variants"]} >= {"mix test 2>&1"}
    # Lessons quote the error that mattered, never an exit status line.
    known = home.json("procedures", "errors", "--project", str(repository))
    errors = [sighting["error"] for sighting in known if sighting["error"]]
    assert errors and not any(e.startswith("Exit code") for e in errors), errors
    assert any("secret_key_base" in e or "lazy_html" in e for e in errors), errors
    # What the agent reads: issue-tracker queries are no procedures, files outside the project
    # (the agent's own plan) are never named, and a call that never ran is no known error.
    assert not any(p["workflow"].startswith("bd ") for p in found), workflows
    assert all(not name.startswith("/") for p in found for name in p["files"])
    digest = home.remem("context", "--cwd", str(worktree)).stdout
    assert "`mix test`" in digest and "Known errors in this project" in digest
    assert "/home/" not in digest and "tool_use_error" not in digest, digest


@pytest.mark.parametrize("name", ["01.jsonl", "02.jsonl", "03.jsonl"])
def test_other_real_claude_sessions_stay_truthful(home: Home, tmp_path: Path, name: str) -> None:
    workspace = tmp_path / "tmp"
    workspace.mkdir()
    replay_claude(home, TRANSCRIPTS / "claude" / name, "/tmp", workspace)
    home.remem("worker", "--burst")

    assert_truthful(home)
    for procedure in procedures(home):
        assert "2>&1" not in procedure["workflow"]


def test_a_real_codex_rollout_resolves_outcomes_and_stays_truthful(home: Home) -> None:
    rollout = TRANSCRIPTS / "codex" / "01.jsonl"
    calls = list(read_codex(str(rollout)))
    for call in calls:
        hook(home, call.payload, "codex")
    home.remem("worker", "--burst")

    # Each command's runs, how many passed, and the outcome of its newest run, as resolved
    # from the rollout.
    expected: dict[str, dict[str, Any]] = {}
    for call in calls:
        if call.payload["tool_name"] == "Bash":
            outcome = "success" if call.exit_code == 0 else "failure"
            seen = expected.setdefault(
                call.payload["tool_input"]["command"], {"runs": 0, "evidence": 0}
            )
            seen["runs"] += 1
            seen["evidence"] += outcome == "success"
            seen["status"] = outcome
    found = {
        command: {"runs": hit["runs"], "evidence": hit["evidence"], "status": hit["status"]}
        for command, hit in home.commands().items()
    }
    assert found == expected
    assert_truthful(home)


# --- project-wide memory --------------------------------------------------------------------


def test_a_fresh_worktree_gets_the_workflows_verified_on_two_other_branches(
    home: Home, tmp_path: Path
) -> None:
    repository = make_repository(tmp_path / "shop")
    first = add_worktree(repository, tmp_path / "shop-a", "feature-a")
    second = add_worktree(repository, tmp_path / "shop-b", "feature-b")
    for worktree, session in ((first, "s-a"), (second, "s-b")):
        hook(home, bash_payload(worktree, "make test 2>&1", session, "ok"))
        hook(home, bash_payload(worktree, "cargo clippy -- -D warnings", session, "ok"))
    hook(home, bash_payload(first, "make docs", "s-a", "ok"))  # one branch, once: not shared
    home.remem("worker", "--burst")

    fresh = add_worktree(repository, tmp_path / "shop-c", "feature-c")
    digest = hook(home, session_start(fresh, "s-c"))

    assert "`make test`" in digest  # as it runs: `2>&1` was how one run spelt it
    assert "`cargo clippy -- -D warnings`" in digest
    assert "verified on 2 branches" in digest
    assert "make docs" not in digest
    assert f"{repository.resolve()} on branch feature-c" in digest


def test_cd_into_a_directory_and_running_there_are_one_procedure(
    home: Home, tmp_path: Path
) -> None:
    repository = make_repository(tmp_path / "shop")
    (repository / "frontend").mkdir()
    hook(home, bash_payload(repository, "cd frontend && npm test", "s1"))
    hook(home, bash_payload(repository / "frontend", "npm test", "s1"))
    hook(home, bash_payload(repository, "npm test", "s2"))
    hook(home, bash_payload(repository, "npm test", "s2"))
    home.remem("worker", "--burst")

    found = {(p["directory"], p["workflow"]): p for p in procedures(home)}

    assert set(found) == {("frontend", "npm test"), (".", "npm test")}
    assert found[("frontend", "npm test")]["verified_runs"] == 2
    assert found[(".", "npm test")]["verified_runs"] == 2
    digest = home.remem("context", "--cwd", str(repository)).stdout
    assert "(in frontend/; 2 runs" in digest


def test_a_promoted_heredoc_runs_as_it_was_run(home: Home, tmp_path: Path) -> None:
    """Input for a script is part of its workflow (code written inline is no workflow)."""
    repository = make_repository(tmp_path / "shop")
    (repository / "tools").mkdir()
    (repository / "tools" / "echo.py").write_text(
        "import sys\nsys.stdout.write(sys.stdin.read())\n"
    )
    command = "python3 tools/echo.py <<'EOF'\na  b\nEOF"
    hook(home, bash_payload(repository, command, "s1", "a  b"))
    hook(home, bash_payload(repository, command, "s2", "a  b"))
    home.remem("worker", "--burst")

    (procedure,) = procedures(home)
    shown = json.loads(home.remem("procedures", "show", str(procedure["id"]), "--json").stdout)
    ran = subprocess.run(
        ["bash", "-c", shown["command"]], cwd=repository, capture_output=True, text=True
    )

    assert shown["command"] == command
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "a  b\n"


def test_an_old_codex_session_learns_its_tests_not_its_reads(home: Home) -> None:
    """A whole Codex CLI 0.34 session: dozens of `sed -n` and `nl -ba` reads of files, commits
    with their messages (bookkeeping, no procedure), and `PYTHONPATH=. pytest -q` fifty times."""
    home.env["REMEM_PROMOTION_MAX_AGE"] = "3650d"  # the session is months old
    home.remem("import", "codex", str(TRANSCRIPTS / "codex" / "02.jsonl"))
    home.remem("worker", "--burst")

    found = procedures(home)
    workflows = sorted(p["workflow"] for p in found)
    assert workflows == ["PYTHONPATH=. pytest -q"], workflows  # commits keep books
    reads = [c for c in home.commands() if c.startswith(("sed -n", "nl -ba"))]
    assert len(reads) > 30  # they ran, and are remembered as commands
    assert_truthful(home)
