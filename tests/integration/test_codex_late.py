"""Codex outcomes that reach the rollout file after their window was processed (DESIGN.md §3):
looked for again on the session's later windows and by maintenance, for a day."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from remem.status import collect_status
from tests.conftest import load_fixture
from tests.integration.conftest import DAY, World


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


def end(rollout: Path, call_id: str, exit_code: int, output: str = "ok") -> None:
    record = {
        "timestamp": "2026-11-20T09:13:09.502Z",
        "type": "event_msg",
        "payload": {
            "type": "exec_command_end",
            "call_id": call_id,
            "exit_code": exit_code,
            "aggregated_output": output,
        },
    }
    with rollout.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


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

    end(rollout, "call_a", 0)
    world.now += 60
    codex_call(world, rollout, "call_b", "cargo test")
    end(rollout, "call_b", 0)
    world.burst()

    assert outcomes(world) == {"call_a": "success", "call_b": "success"}
    assert world.one("verified_runs") == (2,)


def test_maintenance_resolves_a_call_whose_session_went_quiet(world: World, tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    codex_call(world, rollout, "call_a", "cargo test")
    codex_call(world, rollout, "call_b", "cargo test")
    world.burst()
    end(rollout, "call_a", 0)
    end(rollout, "call_b", 101, "error[E0308]: mismatched types")
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
    end(rollout, "call_a", 0)  # too late: a day has passed

    world.burst()

    assert outcomes(world) == {"call_a": "unknown"}
    status = collect_status(world.settings, world.now)
    assert status["unresolved_codex_events"] == 1
