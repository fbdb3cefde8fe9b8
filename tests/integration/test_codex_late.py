"""Codex outcomes that reach the rollout file after their window was processed (DESIGN.md §3):
looked for again on the session's later windows and by maintenance, for a day."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from remem.admin.status import collect_status
from remem.procedures.promote import resolve_late
from remem.queue import store as queue
from remem.record.lines import MAX_LINE_BYTES
from tests.conftest import end_codex_command, load_fixture
from tests.integration.conftest import DAY, World
from workers.handlers import PromoteHandler


def codex_call(world: World, rollout: Path, call_id: str, command: str) -> None:
    payload: dict[str, Any] = load_fixture("codex/post_tool_use_bash.json")
    payload.update(
        cwd="/p/shop",
        transcript_path=str(rollout),
        tool_use_id=call_id,
        tool_input={"command": command},
        tool_response="",
    )
    world.post_payload(payload, "codex")


def codex_patch(world: World, rollout: Path, call_id: str, path: str) -> None:
    payload: dict[str, Any] = load_fixture("codex/post_tool_use_bash.json")
    patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch\n"
    payload.update(
        cwd="/p/shop",
        transcript_path=str(rollout),
        tool_use_id=call_id,
        tool_name="apply_patch",
        tool_input={"input": patch},
        tool_response="Success",
    )
    world.post_payload(payload, "codex")


def outcomes(world: World) -> dict[str, str]:
    rows = world.execute("SELECT tool_use_id, outcome FROM captured_events", {})
    return {call_id: outcome for call_id, outcome in rows}


def test_a_later_window_of_the_session_resolves_an_earlier_call(
    world: World, tmp_path: Path
) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    codex_call(world, rollout, "call_a", "cargo test")
    world.burst()
    assert outcomes(world) == {"call_a": "unknown"}

    end_codex_command(rollout, "call_a", 0)
    world.now += 60
    codex_call(world, rollout, "call_b", "cargo test")
    end_codex_command(rollout, "call_b", 0)
    world.burst()

    assert outcomes(world) == {"call_a": "success", "call_b": "success"}
    assert world.one("verified_runs") == (2,)


def _state_output(rollout: Path, call_id: str, output: str, bare: bool = False) -> None:
    """A rollout without `exec_command_end` (older Codex): the call's end is its output."""
    item = {"type": "function_call_output", "call_id": call_id, "output": output}
    record = (
        item
        if bare
        else {"timestamp": "2025-10-31T19:03:10.000Z", "type": "response_item", "payload": item}
    )
    with rollout.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def test_calls_of_a_rollout_that_states_outcomes_in_their_output_are_resolved(
    world: World, tmp_path: Path
) -> None:
    """Each shape an older Codex wrote a call's end in: the `shell` tool's JSON, its text with
    an "Exit code" header, and a line from before the envelope."""
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    for call_id in ("call_json", "call_text", "call_bare", "call_silent"):
        codex_call(world, rollout, call_id, "cargo test")
    world.burst()
    metadata = {"exit_code": 0, "duration_seconds": 1.2}
    _state_output(
        rollout, "call_json", json.dumps({"output": "test result: ok", "metadata": metadata})
    )
    failed = "Exit code: 101\nWall time: 2.1 seconds\nOutput:\nerror[E0308]: mismatched types"
    _state_output(rollout, "call_text", failed)
    _state_output(
        rollout, "call_bare", json.dumps({"output": "ok", "metadata": metadata}), bare=True
    )
    _state_output(rollout, "call_silent", "still running")  # states no exit code
    world.now += 600

    assert world.burst()["resolved_late"] == 3

    assert outcomes(world) == {
        "call_json": "success",
        "call_text": "failure",
        "call_bare": "success",
        "call_silent": "unknown",
    }
    (salient,) = world.execute("SELECT salient_error FROM attempts", {})[0]
    assert salient == "error[E0308]: mismatched types"


def test_an_exec_command_end_wins_over_the_output_of_the_same_call(
    world: World, tmp_path: Path
) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    codex_call(world, rollout, "call_a", "cargo test")
    world.burst()
    end_codex_command(rollout, "call_a", 101, "error[E0308]: mismatched types")
    _state_output(rollout, "call_a", "Process exited with code 0\nOutput:\nok")
    world.now += 600

    world.burst()

    assert outcomes(world) == {"call_a": "failure"}


def test_a_read_that_passed_late_resolves_its_own_error_in_the_next_window(
    world: World, tmp_path: Path
) -> None:
    """`git add` is read-only: its pass is no run, yet the variant that passed, resolved from
    the rollout only in a later window, resolves the error its failure left open."""
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    ignored = "The following paths are ignored by one of your .gitignore files:\nnotes/plan.md"
    codex_call(world, rollout, "call_a", "git add notes/plan.md")
    end_codex_command(rollout, "call_a", 1, ignored)
    codex_call(world, rollout, "call_b", "git add -f notes/plan.md")
    world.burst()
    assert world.execute("SELECT resolved_at FROM known_errors", {}) == [(None,)]

    end_codex_command(rollout, "call_b", 0)
    world.now += 60
    codex_call(world, rollout, "call_c", "git status")
    end_codex_command(rollout, "call_c", 0)
    world.burst()

    assert outcomes(world)["call_b"] == "success"
    assert world.execute("SELECT workflow, fix_commands FROM known_errors", {}) == [
        ("git add notes/plan.md", '["git add -f notes/plan.md"]')
    ]
    assert world.execute("SELECT count(*) FROM procedures", {}) == [(0,)]


def test_maintenance_resolves_a_call_whose_session_went_quiet(world: World, tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    codex_call(world, rollout, "call_a", "cargo test")
    codex_call(world, rollout, "call_b", "cargo test")
    world.burst()
    end_codex_command(rollout, "call_a", 0)
    end_codex_command(rollout, "call_b", 101, "error[E0308]: mismatched types")
    world.now += 600

    stats = world.burst()  # no task is due: maintenance does it

    assert stats["resolved_late"] == 2
    assert outcomes(world) == {"call_a": "success", "call_b": "failure"}
    (salient,) = world.execute("SELECT salient_error FROM attempts", {})[0]
    assert salient == "error[E0308]: mismatched types"


def test_a_call_never_resolved_within_a_day_is_counted(world: World, tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    codex_call(world, rollout, "call_a", "cargo test")
    world.burst()
    world.now += DAY + 60
    end_codex_command(rollout, "call_a", 0)  # too late: a day has passed

    world.burst()

    assert outcomes(world) == {"call_a": "unknown"}
    status = collect_status(world.settings, world.now)
    assert status["unresolved_codex_events"] == 1


def _apply_while_lint_resolves(world: World, rollout: Path) -> int:
    """Prepare the next window, let maintenance resolve `make lint` (call_lint) before it is
    applied, then apply it; how many calls maintenance resolved."""
    task = world.worker.claim()
    assert task is not None
    prepared = PromoteHandler().prepare(world.engine, task, world.settings)
    end_codex_command(rollout, "call_lint", 0)
    resolved = resolve_late(world.engine, world.settings, world.now)["resolved_late"]
    with world.engine.begin() as connection:
        PromoteHandler().apply(connection, task, prepared, world.settings, world.now)
        queue.complete(connection, task, world.now)
    return resolved


def test_a_call_resolved_after_a_window_was_prepared_takes_its_edits_from_the_run_after_it(
    world: World, tmp_path: Path
) -> None:
    """The files edited before a procedure's evidence runs, which a window's prepare reads, are
    read again under the lock when a run may yet come before them: here `make lint`, resolved
    by maintenance after the window was prepared, takes the edit the pass after it had."""
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    codex_patch(world, rollout, "call_patch", "src/a.py")
    codex_call(world, rollout, "call_lint", "make lint")
    codex_call(world, rollout, "call_test", "make test")
    end_codex_command(rollout, "call_test", 0)
    world.edit("src/b.py", session="s2", branch=None)
    world.post("make test", session="s2", branch=None)
    world.burst()
    assert world.procedures("command", "files") == [("make test", '["src/a.py", "src/b.py"]')]

    world.now += 60
    world.edit("src/c.py", session="s3", branch=None)
    world.post("make test", session="s3", branch=None)
    assert _apply_while_lint_resolves(world, rollout) == 1

    assert world.procedures("command", "files") == [("make test", '["src/b.py", "src/c.py"]')]


def test_calls_of_a_window_resolved_after_its_prepare_count_once_without_its_files(
    world: World, tmp_path: Path
) -> None:
    """Within the window's session: maintenance, resolving a call after the window's prepare,
    resolves the window's own pass with it, so the window adds no run with the files its
    prepare found before the pass (`make lint` ran after that edit)."""
    for session in ("s1", "s2"):
        world.post("make test", session=session, branch=None)
    world.burst()
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    world.now += 60
    codex_patch(world, rollout, "call_patch", "src/a.py")
    codex_call(world, rollout, "call_lint", "make lint")
    codex_call(world, rollout, "call_test", "make test")
    end_codex_command(rollout, "call_test", 0)
    # Both calls: the pass, which the window resolved, is not stored yet.
    assert _apply_while_lint_resolves(world, rollout) == 2

    assert world.procedures("command", "files", "verified_runs") == [("make test", "[]", 3)]


def test_a_rollout_path_naming_a_fifo_or_a_device_leaves_the_call_unknown_at_once(
    world: World, tmp_path: Path
) -> None:
    """The worker reads the file a payload names: a FIFO no one writes to would block it for
    ever, and /dev/zero never ends."""
    fifo = tmp_path / "rollout.jsonl"
    os.mkfifo(fifo)
    codex_call(world, fifo, "call_a", "cargo test")
    codex_call(world, Path("/dev/zero"), "call_b", "cargo test")
    world.burst()
    assert outcomes(world) == {"call_a": "unknown", "call_b": "unknown"}


def test_a_rollout_line_over_the_cap_is_skipped_and_the_next_resolves(
    world: World, tmp_path: Path
) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    codex_call(world, rollout, "call_a", "cargo test")
    codex_call(world, rollout, "call_b", "cargo test")
    end_codex_command(rollout, "call_a", 0, "x" * MAX_LINE_BYTES)
    end_codex_command(rollout, "call_b", 0)
    world.burst()
    assert outcomes(world) == {"call_a": "unknown", "call_b": "success"}
