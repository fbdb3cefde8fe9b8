"""Promotion rules (DESIGN.md §5) over real captured events in a real database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

from remem.procedures.promote import archive
from tests.conftest import load_fixture
from tests.integration.conftest import DAY, World

TEST = "make test"


def _scoped(world: World, scope: str) -> list[tuple[object, ...]]:
    """(branch, branches, verified runs, distinct sessions) of the procedures of one scope."""
    return [
        row[1:]
        for row in world.procedures(
            "scope", "branch", "branches", "verified_runs", "distinct_sessions"
        )
        if row[0] == scope
    ]


def test_one_run_never_promotes(world: World) -> None:
    world.post(TEST)
    assert world.burst()["tasks_done"] == 1
    assert world.procedures() == []


def test_two_runs_in_one_session_promote_with_their_evidence(world: World) -> None:
    world.post(TEST)
    world.post(TEST)
    stats = world.burst()
    assert stats["promoted"] == 1
    command, status, confidence, runs, evidence, sessions = world.one(
        "command",
        "status",
        "confidence",
        "verified_runs",
        "evidence_event_ids",
        "distinct_sessions",
    )
    assert (command, status, confidence, runs, sessions) == (TEST, "active", 0.86, 2, 1)
    assert json.loads(evidence) == [1, 2]


@pytest.mark.parametrize(("runs", "confidence"), [(3, 0.94), (4, 0.95), (7, 0.95)])
def test_confidence_grows_with_runs_up_to_its_cap(
    world: World, runs: int, confidence: float
) -> None:
    for _ in range(runs):
        world.post(TEST)
    world.burst()
    assert world.one("confidence", "verified_runs") == (confidence, runs)


def test_runs_from_two_sessions_and_hosts_of_one_branch_count_together(world: World) -> None:
    world.post(TEST, session="generic-session")
    claude = load_fixture("claude-code/post_tool_use_bash_success.json")
    claude["cwd"] = "/p/shop"
    claude["tool_input"] = {"command": TEST}
    world.post_payload(claude)  # /p/shop has no .git: its branch is none, so pass it explicitly
    world.burst()
    # The Claude run is on no branch, the generic one on main: neither has two runs, and a
    # checkout with no branch is no second branch, so nothing is project-wide either.
    assert _scoped(world, "branch") == []
    assert _scoped(world, "project") == []
    world.post(TEST, session="another", branch=None)
    world.burst()
    # The two runs on no branch, from two sessions and two hosts, count together.
    assert _scoped(world, "branch") == [("", "[]", 2, 2)]
    assert _scoped(world, "project") == []


def test_same_command_on_another_branch_or_project_does_not_combine(world: World) -> None:
    world.post(TEST, branch="main")
    world.post(TEST, branch="feature")
    world.post(TEST, project="/p/other")
    world.burst()
    # No branch has two runs; across the branches of /p/shop the workflow is project-wide
    # (DESIGN.md §5), and the run in /p/other is not part of it.
    assert _scoped(world, "branch") == []
    assert _scoped(world, "project") == [("", '["feature", "main"]', 2, 1)]
    assert json.loads(world.one("evidence_event_ids")[0]) == [1, 2]
    with world.engine.connect() as connection:
        roots = connection.execute(
            text("SELECT pr.root FROM procedures p JOIN projects pr ON pr.id = p.project_id")
        ).all()
    assert [r[0] for r in roots] == ["/p/shop"]


def test_runs_older_than_max_age_do_not_count(world: World) -> None:
    world.post(TEST, at=world.now - 15 * DAY)
    world.post(TEST)
    world.burst()
    assert world.procedures() == []


def test_procedure_whose_runs_all_aged_out_becomes_stale(world: World) -> None:
    world.post(TEST)
    world.post(TEST)
    world.burst()
    world.now += 15 * DAY
    stats = world.burst()
    assert stats["stale"] == 1
    assert world.one("status") == ("stale",)


@pytest.mark.parametrize(
    "fixture",
    [
        "claude-code/post_tool_use_bash_interrupted.json",
        "claude-code/post_tool_use_bash_backgrounded.json",
        "claude-code/post_tool_use_failure_bash_exit_code.json",
        "codex/post_tool_use_bash.json",
        "cursor/after_shell_execution.json",
    ],
)
def test_untrusted_outcomes_never_count(world: World, fixture: str) -> None:
    for index in range(3):
        payload = load_fixture(fixture)
        payload["tool_use_id"] = f"{'call' if 'codex' in fixture else 'toolu'}_{index}"
        payload["generation_id"] = f"g{index}"
        world.post_payload(payload)
    world.burst()
    with world.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM verifications")).scalar() == 0
    assert world.procedures() == []


def test_failures_after_promotion_lower_confidence_then_break_then_success_restores(
    world: World,
) -> None:
    """Failures that could not run (exit 127: command not found, ...) break a procedure."""
    world.post(TEST)
    world.post(TEST)
    world.burst()
    world.post(TEST, exit_code=127)
    world.burst()
    assert world.one("status", "confidence") == ("active", 0.76)
    world.post(TEST, exit_code=127)
    assert world.burst()["broken"] == 1
    assert world.one("status", "confidence") == ("broken", 0.66)
    world.post(TEST)
    world.burst()
    assert world.one("status", "confidence", "verified_runs") == ("active", 0.94, 3)


def test_archived_procedure_stays_archived_when_new_runs_arrive(world: World) -> None:
    world.post(TEST)
    world.post(TEST)
    world.burst()
    (procedure_id,) = world.one("id")
    archive(world.engine, procedure_id, world.now)
    world.post(TEST)
    world.post(TEST)
    world.burst()
    assert world.one("status", "verified_runs") == ("archived", 2)


def test_long_commands_sharing_a_prefix_give_two_procedures(world: World) -> None:
    prefix = ("python -m pytest " + "tests/integration/" * 11)[:200]
    first, second = prefix + "a" * 100, prefix + "b" * 100
    assert len(first) == 300 and first[:200] == second[:200]
    for command in (first, second, first, second):
        world.post(command)
    world.burst()
    topics = world.procedures("command", "topic_key", "workflow", "scope")
    assert [t[0] for t in topics] == [first, second]
    assert [t[2] for t in topics] == [first, second]  # the workflow is never cut
    assert [t[3] for t in topics] == ["branch", "branch"]
    assert topics[0][1] != topics[1][1]
    assert all(len(t[1]) <= 64 for t in topics)


def test_ignored_commands_never_become_procedures(world: World) -> None:
    for command in ("ls -la", "git status", "cd src && ls", "ls -la"):
        world.post(command)
    world.post("git status")
    world.burst()
    assert world.procedures() == []


def test_rerunning_the_burst_changes_nothing(world: World) -> None:
    for session in ("a", "b"):
        world.post(TEST, session=session)
        world.post("npm run lint", exit_code=1, session=session)
    world.burst()
    before = world.procedures("*")
    world.now += 60
    with world.engine.begin() as connection:
        connection.execute(
            text("UPDATE extraction_tasks SET status = 'pending', cursor_event_id = 0")
        )
    world.burst()
    world.burst()
    assert world.procedures("*") == before


def test_files_edited_before_the_verified_runs_are_kept(world: World) -> None:
    world.post(TEST, exit_code=1)
    world.post_payload(
        {
            "host": "generic",
            "session_id": "s1",
            "cwd": "/p/shop",
            "branch": "main",
            "files": ["/p/shop/src/cart.py"],
        }
    )
    world.post(TEST)
    world.post(TEST, session="s2")
    world.burst()
    assert json.loads(world.one("files")[0]) == ["src/cart.py"]
    body = world.one("body")[0]
    assert "src/cart.py" in body and "1800000000" not in body


def test_codex_unknown_outcome_is_resolved_from_the_rollout(world: World, tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    lines = []
    for index, exit_code in enumerate((0, 0, 101)):
        lines.append(
            json.dumps(
                {
                    "type": "event_msg",
                    "payload": {
                        "type": "exec_command_end",
                        "call_id": f"call_{index}",
                        "exit_code": exit_code,
                        "aggregated_output": "error[E0308]: mismatched types"
                        if exit_code
                        else "ok",
                    },
                }
            )
        )
    rollout.write_text("\n".join(lines) + "\n")
    for index in range(4):  # call_3 has no record: it stays unknown
        payload = load_fixture("codex/post_tool_use_bash.json")
        payload["tool_use_id"] = f"call_{index}"
        payload["transcript_path"] = str(rollout)
        world.post_payload(payload)
    world.burst()
    with world.engine.connect() as connection:
        outcomes = connection.execute(
            text(
                "SELECT tool_use_id, outcome, exit_code, exit_code_source FROM captured_events "
                "ORDER BY id"
            )
        ).all()
    assert [tuple(r) for r in outcomes] == [
        ("call_0", "success", 0, "rollout"),
        ("call_1", "success", 0, "rollout"),
        ("call_2", "failure", 101, "rollout"),
        ("call_3", "unknown", None, None),
    ]
    # A compile error is red code: the command ran, and its procedure keeps its confidence.
    assert world.one("command", "status", "confidence") == (
        "cargo test --workspace",
        "active",
        0.86,
    )
