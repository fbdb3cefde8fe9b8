"""A burst over a backlog prepares windows ahead in a second process (workers/preparer.py)."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from remem.db.driver import Driver
from remem.procedures import promote, tallies
from remem.procedures import window as window_of
from remem.procedures.groups import Group
from remem.procedures.reads import read_window
from remem.procedures.tally import Tally
from tests.conftest import Home, wait_for
from tests.integration.conftest import World
from tests.integration.test_group_state import assert_full_derivation_agrees
from workers.handlers import REGISTRY, PromoteHandler, default_handlers
from workers.preparer import WATCHED, Preparer
from workers.runner import _next_task, _start_preparer, _stop_preparer

SESSIONS = 8
TEST_COMMAND = "make test"


def _sessions(world: World, count: int = SESSIONS) -> None:
    """Sessions of one project, one after another, on the same commands: each window moves
    the groups the one before moved, and some close a failure with a fix."""
    for index in range(count):
        at = world.now - 3_600 + index * 60
        session = f"s{index}"
        world.edit("src/app.py", session=session)
        world.post(
            "make test",
            0 if index % 3 else 2,
            session=session,
            at=at,
            output="FAILED tests/test_app.py::test_total - AssertionError",
        )
        world.edit("src/app.py", "src/total.py", session=session)
        world.post("make test", session=session, at=at + 10, output="12 passed in 0.4s")
        world.post("pytest -q", session=session, at=at + 20, output="3 passed in 0.1s")


LEARNED = {
    "procedures": "scope, branch, directory, workflow_hash, status, command, variants, "
    "confidence, verified_runs, distinct_sessions, branches, evidence_event_ids, files, "
    "files_more, body",
    "lessons": "branch, directory, workflow_hash, resolved_by_event_id, failed_attempts, "
    "first_error, last_error, error_key, fix_files, repeats, body, pitfall",
    "attempts": "event_id, step, attempt_number, duplicate_of, resolved_by_event_id, files, "
    "change_hash",
    "group_states": "scope, branch, directory, workflow_hash, tally, oldest_fresh_at",
    "procedure_evidence": "procedure_id, event_id, verified_at",
    "group_sessions": "group_id, session_id, last_verified_at",
}


def _learned(world: World) -> dict[str, list[tuple[Any, ...]]]:
    return {
        table: world.execute(f"SELECT {columns} FROM {table} ORDER BY {columns}")
        for table, columns in LEARNED.items()
    }


@pytest.fixture
def second_world(template_home: Path, tmp_path: Path, make_world: Callable[[Home], World]) -> World:
    shutil.copytree(template_home, tmp_path / "second")
    return make_world(Home(tmp_path / "second"))


def _count_rederived(monkeypatch: pytest.MonkeyPatch) -> list[Group]:
    """The groups whose tally a window derived from every run (spied, not replaced)."""
    rederived: list[Group] = []
    original = tallies.rederive_locked

    def spy(connection: Any, group: Group, *args: Any) -> Any:
        rederived.append(group)
        return original(connection, group, *args)

    monkeypatch.setattr(tallies, "rederive_locked", spy)
    return rederived


def _drain_ahead(world: World) -> dict[str, int]:
    """Drain the queue as a burst does once its preparer has started (waited for here, where a
    burst goes on preparing in its own process meanwhile)."""
    world.worker.prepare_ahead_from = 2
    preparer = _start_preparer(world.worker)
    assert preparer is not None
    try:
        wait_for(preparer.is_ready, timeout=30)
        while _next_task(world.worker, preparer):
            pass
    finally:
        assert preparer.close() == []
    return dict(world.worker.stats)


def test_windows_prepared_ahead_learn_what_windows_prepared_in_turn_do(
    world: World, second_world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    for each in (world, second_world):
        _sessions(each)
    rederived = _count_rederived(monkeypatch)
    ahead = _drain_ahead(world)
    first_tallies = len(rederived)
    second_world.worker.prepare_ahead_from = None
    serial = second_world.burst()

    assert ahead["tasks_done"] == serial["tasks_done"] == SESSIONS
    assert ahead["windows_prepared_ahead"] == SESSIONS
    # Windows prepared before the ones applied since are caught up before the lock is taken:
    # under it, with no other writer, nothing is read again.
    assert "groups_read_again" not in ahead
    learned = _learned(world)
    assert learned == _learned(second_world)
    assert learned["procedures"] and learned["lessons"]
    # Read again, not derived again: only a group's first tally comes from every run.
    assert first_tallies == len(rederived) - first_tallies == len(learned["group_states"])


def test_a_burst_whose_windows_keep_colliding_prepares_them_in_turn(
    world: World,
    second_world: World,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every window prepared ahead finds its groups moved when it is taken back (another
    writer moves them, here by their versions): the child is handed no more once more than
    half of the last WATCHED were read again."""
    count = WATCHED + 4
    for each in (world, second_world):
        _sessions(each, count)
    catch_up = promote.catch_up

    def moved_meanwhile(engine: Any, window: window_of.Window, *args: Any) -> window_of.Window:
        with engine.begin() as connection:
            connection.execute(text("UPDATE group_states SET version = version + 1"))
        return catch_up(engine, window, *args)

    monkeypatch.setattr(promote, "catch_up", moved_meanwhile)
    with caplog.at_level(logging.INFO, logger="remem.worker"):
        ahead = _drain_ahead(world)
    # The first window found no group stored; the one after the WATCHED-th was handed over
    # before the decision; the rest were prepared in turn.
    assert ahead["tasks_done"] == count
    assert ahead["windows_prepared_ahead"] == WATCHED + 1
    assert ahead["windows_caught_up"] == WATCHED
    assert any("were read again" in record.getMessage() for record in caplog.records)
    second_world.worker.prepare_ahead_from = None
    second_world.burst()
    assert _learned(world) == _learned(second_world)


def test_a_window_prepared_ahead_is_read_again_only_after_a_window_of_its_groups(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sessions of two projects, in turn: the window applied after a window was handed over is
    of the other project, and the version check before the lock is spared; under the lock,
    apply checks each window still."""
    for index in range(6):
        world.post(TEST_COMMAND, session=f"s{index}", project=f"/p/{'ab'[index % 2]}")
    checks: list[int] = []
    unchanged = tallies.unchanged

    def counted(connection: Any, stored: Any) -> bool:
        checks.append(len(stored))
        return unchanged(connection, stored)

    monkeypatch.setattr(tallies, "unchanged", counted)
    stats = _drain_ahead(world)
    assert stats["tasks_done"] == stats["windows_prepared_ahead"] == 6
    assert len(checks) == 6 and "windows_caught_up" not in stats

    # Not so when the window before was prepared here: what it wrote is not known.
    world.post(TEST_COMMAND, session="s1", project="/p/b")
    world.post(TEST_COMMAND, session="s2", project="/p/a")
    worker = world.worker
    first, second = worker.claim(), worker.claim()
    assert first is not None and second is not None
    prepared = PromoteHandler().prepare(world.engine, second, world.settings)
    checks.clear()
    worker.run_task(first)
    worker.run_task(second, prepared, [None])
    assert len(checks) == 3


def test_a_window_whose_groups_moved_after_prepare_reads_them_again(world: World) -> None:
    _sessions(world, 2)
    worker = world.worker
    first, second = worker.claim(), worker.claim()
    assert first is not None and second is not None
    prepared = PromoteHandler().prepare(world.engine, second, world.settings)
    worker.run_task(first)  # commits runs of the groups `second` read
    worker.stats.clear()
    worker.run_task(second, prepared)
    # Read again before the write lock, not under it.
    assert worker.stats["tasks_done"] == worker.stats["windows_caught_up"] == 1
    assert "groups_read_again" not in worker.stats

    # What the window left is what every stored run gives.
    rules = promote.rules_of(world.settings)
    with world.engine.connect() as sa_connection:
        connection = Driver(sa_connection)
        rows = connection.execute(
            text(
                "SELECT project_id, scope, branch, directory, workflow, workflow_hash, tally "
                "FROM group_states"
            )
        ).all()
        assert len(rows) == 4  # two workflows, on the branch and across the project
        for *key, encoded in rows:
            group, stored = Group(*key), Tally.from_json(encoded)
            now = stored.cutoff + rules.max_age_s
            derived, _lasts = tallies.rederive(connection, group, rules, now)
            assert derived == stored, group


def test_a_window_prepared_in_turn_reads_nothing_again(world: World) -> None:
    _sessions(world, 3)
    world.worker.prepare_ahead_from = None
    stats = world.burst()
    assert stats["tasks_done"] == 3
    assert "groups_read_again" not in stats and "windows_prepared_ahead" not in stats


@pytest.mark.sqlite_only("the crash is the child's, whatever the database")
def test_a_preparer_that_dies_leaves_its_windows_to_the_burst(
    world: World,
    second_world: World,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for each in (world, second_world):
        _sessions(each)
    # The child reads the variable as it starts; this process read it long before.
    monkeypatch.setenv("REMEM_TEST_CRASH_AT", "prepare_ahead:3")
    with caplog.at_level(logging.WARNING, logger="remem.worker"):
        stats = _drain_ahead(world)
    assert stats["tasks_done"] == SESSIONS
    assert stats["windows_prepared_ahead"] == 2  # the third killed it
    assert any("no longer used" in record.getMessage() for record in caplog.records)
    second_world.worker.prepare_ahead_from = None
    second_world.burst()
    assert _learned(world) == _learned(second_world)


def test_a_burst_prepares_ahead_only_over_a_backlog(world: World) -> None:
    _sessions(world, 3)
    world.worker.prepare_ahead_from = 4
    assert _start_preparer(world.worker) is None
    world.worker.prepare_ahead_from = 3
    preparer = _start_preparer(world.worker)
    assert isinstance(preparer, Preparer)
    assert preparer.close() == []
    stats = world.burst()  # a burst over the same backlog, start to end
    assert stats["tasks_done"] == 3 and stats["prepared_ahead_bursts"] == 1


def test_tasks_handed_over_and_not_processed_go_back_to_pending(world: World) -> None:
    _sessions(world, 3)
    world.worker.prepare_ahead_from = 2
    preparer = _start_preparer(world.worker)
    assert preparer is not None
    wait_for(preparer.is_ready, timeout=30)
    for _ in range(2):
        task = world.worker.claim()
        assert task is not None
        preparer.hand(task)
    assert sorted(row[1] for row in world.tasks()) == ["pending", "processing", "processing"]
    _stop_preparer(world.worker, preparer)
    assert [row[1] for row in world.tasks()] == ["pending"] * 3
    assert [row[2] for row in world.tasks()] == [0] * 3  # no attempt spent


@pytest.mark.sqlite_only("which module the child runs does not depend on the database")
def test_the_preparer_is_remems_whatever_the_current_directory_holds(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst run from a project that has a `workers` package of its own."""
    (tmp_path / "project" / "workers").mkdir(parents=True)
    (tmp_path / "project" / "workers" / "__init__.py").write_text("")
    (tmp_path / "project" / "workers" / "preparer.py").write_text("raise SystemExit(3)\n")
    monkeypatch.chdir(tmp_path / "project")
    _sessions(world, 3)
    assert _drain_ahead(world)["windows_prepared_ahead"] == 3


def _stored_events(world: World) -> list[window_of.WindowEvent]:
    with world.engine.connect() as sa_connection:
        params = {"session_id": 1, "cursor": 0, "watermark": 2**62}
        rows = Driver(sa_connection).execute(window_of.SELECT_WINDOW, params).all()
    return [window_of.event_of(row) for row in rows]


def _window_of(
    world: World, events: list[window_of.WindowEvent], late: tuple[window_of.WindowEvent, ...] = ()
) -> window_of.Window:
    """A window as prepare builds it, with `late` standing for Codex events resolved now."""
    steps = {}
    for found in (*events, *late):
        runs = window_of._classify(found, world.settings)
        if runs:
            steps[found.id] = runs
    return window_of.Window(tuple(events), {}, steps, late)


def _prepared(world: World, window: window_of.Window) -> window_of.Window:
    with world.engine.connect() as sa_connection:
        found = read_window(Driver(sa_connection), window, world.settings)
    return replace(window, reads=found)


def _apply(world: World, window: window_of.Window) -> Any:
    with world.engine.begin() as sa_connection:
        return promote.apply(sa_connection, window, world.settings, world.now)


@pytest.mark.sqlite_only("the windows are built by hand; the reads are the same on both")
@pytest.mark.parametrize("caught_up", [False, True], ids=["under the lock", "before it"])
def test_a_run_stored_by_another_window_meanwhile_counts_once(
    world: World, caught_up: bool
) -> None:
    """A late event of a prepared window is stored meanwhile by maintenance, which moves its
    groups: the window read again, as a window prepared ahead is caught up before the lock or
    as apply finds its groups moved under it, counts it no second time."""
    for at in (300, 200, 100):
        world.post(TEST_COMMAND, 0, at=world.now - at, output="ok")
    first, late, last = _stored_events(world)
    _apply(world, _window_of(world, [first]))
    window = _prepared(world, _window_of(world, [last], (late,)))
    _apply(world, _window_of(world, [], (late,)))  # resolve_late, in another process
    if caught_up:
        window_now = promote.catch_up(world.engine, window, world.settings, [None])
        assert window_now is not window
        assert "groups_read_again" not in _apply(world, window_now)
    else:
        assert _apply(world, window)["groups_read_again"] == 1
    assert_full_derivation_agrees(world)
    assert world.scalar("SELECT count(*) FROM verifications") == 3


@pytest.mark.sqlite_only("the windows are built by hand; the reads are the same on both")
def test_a_late_pass_takes_the_files_edited_before_it(world: World) -> None:
    """A pass whose outcome arrived late closes the failure before it; the window that resolves
    it holds a later failure of the session, which is no run before the pass."""
    world.post(TEST_COMMAND, 1, at=world.now - 300, output="FAILED tests/test_a.py::test_a")
    world.edit("src/x.py")
    world.post(TEST_COMMAND, 0, at=world.now - 200, output="ok")
    world.post(TEST_COMMAND, 1, at=world.now - 100, output="FAILED tests/test_b.py::test_b")
    failed, edit, late, again = _stored_events(world)
    _apply(world, _window_of(world, [failed, edit]))
    _apply(world, _prepared(world, _window_of(world, [again], (late,))))
    lessons = world.execute("SELECT resolved_by_event_id, fix_files FROM lessons")
    assert [(resolver, json.loads(files)) for resolver, files in lessons] == [
        (late.id, ["src/x.py"])
    ]
    assert_full_derivation_agrees(world)


def test_a_handler_replaced_in_the_registry_prepares_its_own_windows(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Replaced(PromoteHandler):
        pass

    monkeypatch.setitem(REGISTRY, "promote", Replaced())
    world.worker.handlers = default_handlers()
    _sessions(world, 3)
    stats = _drain_ahead(world)
    assert stats["tasks_done"] == 3 and "windows_prepared_ahead" not in stats
