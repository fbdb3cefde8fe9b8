"""Substitutions derived window by window (remem/procedures/instead.py) are what the session's
events hold: the same whether its events come one window at a time or all at once, after a
window is applied again, and after a rebuild."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text

from remem.procedures import rebuild
from tests.conftest import end_codex_command
from tests.integration.conftest import World
from tests.integration.test_codex_late import codex_call

VENV = ".venv/bin/python -m pytest"
NOT_FOUND = "/bin/bash: line 1: pytest: command not found"


def substitutions(world: World) -> list[tuple[Any, ...]]:
    return sorted(
        world.execute(
            "SELECT s.session_key, x.failed_workflow, x.error, x.substitute_workflow, "
            "x.substitute_command, x.failed_event_id, x.substitute_event_id FROM substitutions x "
            "JOIN sessions s ON s.id = x.session_id"
        )
    )


def test_one_window_at_a_time_all_at_once_and_rebuilt_alike(world: World) -> None:
    def step(post: Any) -> None:
        post()
        world.burst()

    step(lambda: world.post("pytest", 127, output=NOT_FOUND))
    step(lambda: world.post(VENV, output="3 passed in 0.2s"))
    step(lambda: world.post("python -m pytest", 127, output="python: command not found"))
    # A later window of the same stretch derives it again: the pass before the failure, its
    # substitute found across windows, stays.
    step(lambda: world.post("make lint", output="ok"))
    step(lambda: world.edit("pyproject.toml"))
    step(lambda: world.post(VENV, output="3 passed in 0.2s"))
    # Another session, in one window: a failing run, then its variant with an environment.
    world.post("go test ./...", 1, session="s2", output="go: mkdir /go/pkg/mod: permission denied")
    world.post("GOFLAGS=-mod=mod go test ./...", session="s2", output="ok  \tshop\t0.1s")
    world.burst()

    found = substitutions(world)
    # `python -m pytest` could not run: the pass before it is what runs instead.
    assert [row[:4] for row in found] == [
        ("s1", "pytest", NOT_FOUND, VENV),
        ("s1", "python -m pytest", "python: command not found", VENV),
        ("s2", "go test ./...", "go: mkdir /go/pkg/mod: permission denied",
         "GOFLAGS=-mod=mod go test ./..."),
    ]  # fmt: skip

    with world.engine.begin() as connection:  # every window applied again
        connection.execute(
            text("UPDATE extraction_tasks SET status = 'pending', cursor_event_id = 0")
        )
    world.now += 60
    world.burst()
    assert substitutions(world) == found

    world.now += 60
    rebuild.rebuild(world.engine, world.now, world.settings.ignore_commands)
    assert substitutions(world) == []
    world.burst()
    assert substitutions(world) == found


def test_a_later_failure_of_the_substitute_s_own_workflow_changes_nothing_before_it(
    world: World,
) -> None:
    world.post("pytest", 127, output=NOT_FOUND)
    world.post("python3 -m pytest", 1, output="No module named pytest")
    world.post(VENV, output="3 passed in 0.2s")
    world.burst()
    world.post(VENV, 1, output="1 failed in 0.2s")
    world.post("pytest", 127, output=NOT_FOUND)
    world.burst()
    rows = [row[1:4] for row in substitutions(world)]
    # The second `pytest` takes the red run before it: a test failing is still running.
    assert rows == [
        ("pytest", NOT_FOUND, VENV),
        ("pytest", NOT_FOUND, VENV),
        ("python3 -m pytest", "No module named pytest", VENV),
    ]


def test_a_codex_failure_resolved_after_its_substitute_passed_still_gets_it(
    world: World, tmp_path: Path
) -> None:
    """The failing call's end reaches the rollout after the window holding the pass was
    applied: the late run lies before stored runs, and the stretch around it is derived again."""
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    codex_call(world, rollout, "call_go", "go test ./...")
    codex_call(world, rollout, "call_env", "GOFLAGS=-mod=mod go test ./...")
    end_codex_command(rollout, "call_env", 0, "ok  \tshop\t0.1s")
    world.burst()
    assert substitutions(world) == []

    end_codex_command(rollout, "call_go", 1, "go: mkdir /go/pkg/mod: permission denied")
    world.now += 600
    assert world.burst()["resolved_late"] == 1

    assert [row[1:4] for row in substitutions(world)] == [
        ("go test ./...", "go: mkdir /go/pkg/mod: permission denied",
         "GOFLAGS=-mod=mod go test ./..."),
    ]  # fmt: skip
