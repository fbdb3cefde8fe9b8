"""The one worker loop (workers/loop.py): a burst runs every duty once, drains what is due and
returns when idle; the daemon runs the same tick, every duty on one thread; windows applied
one after another in one process read nothing twice."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import text

from remem.config import load_settings
from remem.db.driver import Driver
from remem.procedures import promote, tallies
from remem.procedures import window as window_of
from remem.procedures.groups import Group
from remem.procedures.reads import read_window
from remem.procedures.tally import Tally
from tests.conftest import wait_for
from tests.integration.conftest import World
from tests.integration.test_group_state import assert_full_derivation_agrees
from workers import loop as worker_loop
from workers.daemon import Daemon, StopFlag
from workers.handlers import PromoteHandler
from workers.loop import Loop
from workers.work import work

TEST_COMMAND = "make test"
DUTIES = ("reap", "ingest", "run_pending_jobs", "maintain")


def _sessions(world: World, count: int) -> None:
    """Sessions of one project, one after another, on the same commands: each window moves
    the groups the one before moved, and some close a failure with a fix."""
    for index in range(count):
        at = world.now - 3_600 + index * 60
        session = f"s{index}"
        world.edit("src/app.py", session=session)
        world.post(
            TEST_COMMAND,
            0 if index % 3 else 2,
            session=session,
            at=at,
            output="FAILED tests/test_app.py::test_total - AssertionError",
        )
        world.edit("src/app.py", "src/total.py", session=session)
        world.post(TEST_COMMAND, session=session, at=at + 10, output="12 passed in 0.4s")
        world.post("pytest -q", session=session, at=at + 20, output="3 passed in 0.1s")


def _record(world: World, calls: list[tuple[str, int]]) -> None:
    """Each duty of the world's worker, and each claim, notes its name and thread."""
    worker = world.worker
    for name in (*DUTIES, "run_once"):
        original = getattr(worker, name)

        def recorded(name: str = name, original: Callable[[], Any] = original) -> Any:
            calls.append((name, threading.get_ident()))
            return original()

        setattr(worker, name, recorded)


def test_a_burst_runs_every_duty_once_drains_and_returns_when_idle(world: World) -> None:
    _sessions(world, 3)
    calls: list[tuple[str, int]] = []
    _record(world, calls)
    stats = work(world.worker, burst=True)
    names = [name for name, _thread in calls]
    assert [name for name in names if name != "run_once"] == [
        "reap",
        "ingest",
        "run_pending_jobs",
        "maintain",
    ]
    # Three tasks, then the claim that found the queue idle.
    assert names.count("run_once") == 4 and stats["tasks_done"] == 3
    assert [row[1] for row in world.tasks()] == ["done"] * 3


def test_a_burst_does_not_wait_for_a_task_not_yet_due(world: World) -> None:
    world.post(TEST_COMMAND, session="a")
    world.post(TEST_COMMAND, session="b")
    with world.engine.begin() as connection:
        connection.execute(
            text("UPDATE extraction_tasks SET run_after = :later"), {"later": world.now + 60}
        )
    assert world.burst().get("tasks_done", 0) == 0
    assert [row[1] for row in world.tasks()] == ["pending", "pending"]
    world.now += 61
    assert world.burst()["tasks_done"] == 2


def test_a_burst_stops_draining_when_its_time_is_up_or_it_is_asked_to_stop(world: World) -> None:
    _sessions(world, 3)
    stats = work(world.worker, burst=True, max_seconds=0)
    assert stats.get("tasks_done", 0) == 0
    stop = StopFlag()
    seen: list[int] = []

    def stop_after_the_first() -> None:
        seen.append(1)
        stop.event.set()

    stats = work(world.worker, burst=True, stop=stop, on_task=stop_after_the_first)
    assert stats["tasks_done"] == 1 and seen == [1]


def test_a_failing_duty_stops_a_burst_but_not_the_daemon_s_loop(world: World) -> None:
    def broken() -> None:
        raise RuntimeError("the spool is unreadable")

    world.worker.ingest = broken  # type: ignore[method-assign]
    world.post(TEST_COMMAND)
    with pytest.raises(RuntimeError, match="unreadable"):
        Loop(world.worker, burst=True).tick()
    assert Loop(world.worker).tick() == 1


@pytest.mark.sqlite_only("the daemon's threads do not depend on the database")
def test_the_daemon_runs_its_duties_and_drains_on_one_thread(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("REAP_INTERVAL_S", "INGEST_INTERVAL_S", "MAINTENANCE_INTERVAL_S"):
        monkeypatch.setattr(worker_loop, name, 0.05)
    world.worker.settings = load_settings({**world.home.env, "REMEM_WORKER_POLL_INTERVAL": "50ms"})
    calls: list[tuple[str, int]] = []
    _record(world, calls)
    _sessions(world, 2)
    stop = StopFlag()
    daemon = Daemon(Loop(world.worker), stop)
    runner = threading.Thread(target=daemon.run)
    runner.start()
    try:

        def every_duty_twice() -> bool:
            names = [name for name, _thread in list(calls)]
            return all(names.count(name) >= 2 for name in ("reap", "ingest", "maintain"))

        wait_for(every_duty_twice, timeout=20)
        wait_for(lambda: [row[1] for row in world.tasks()] == ["done", "done"], timeout=20)
    finally:
        stop.event.set()
        runner.join(timeout=30)
    assert not runner.is_alive()
    threads = {thread for _name, thread in calls}
    assert len(threads) == 1, calls
    assert threads.isdisjoint({runner.ident, threading.get_ident()})
    # Re-deriving what a migration asked for is looked at once, at start.
    assert [name for name, _thread in calls].count("run_pending_jobs") == 1
    assert world.execute("SELECT count(*) FROM worker_heartbeats") == [(0,)]


def test_a_window_prepared_in_turn_reads_nothing_again(world: World) -> None:
    _sessions(world, 3)
    stats = world.burst()
    assert stats["tasks_done"] == 3
    assert "groups_read_again" not in stats


def test_a_window_whose_groups_moved_after_prepare_reads_them_again(world: World) -> None:
    """Prepare reads outside the write transaction, on both backends, and apply reads again
    what moved since."""
    _sessions(world, 2)
    worker = world.worker
    first, second = worker.claim(), worker.claim()
    assert first is not None and second is not None
    prepared = PromoteHandler().prepare(world.engine, second, world.settings)
    assert prepared.reads is not None
    worker.run_task(first)  # commits runs of the groups `second` read
    with world.engine.begin() as connection:
        stats = promote.apply(connection, prepared, world.settings, world.now)
    assert stats["groups_read_again"] == 1

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
def test_a_run_stored_by_another_window_meanwhile_counts_once(world: World) -> None:
    """A late event of a prepared window is stored meanwhile by maintenance, which moves its
    groups: the window, read again as apply finds its groups moved, counts it no second time."""
    for at in (300, 200, 100):
        world.post(TEST_COMMAND, 0, at=world.now - at, output="ok")
    first, late, last = _stored_events(world)
    _apply(world, _window_of(world, [first]))
    window = _prepared(world, _window_of(world, [last], (late,)))
    _apply(world, _window_of(world, [], (late,)))  # resolve_late, in another process
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


@pytest.mark.sqlite_only("the stop flag's wiring does not depend on the database")
def test_a_stop_reaches_the_team_workers_as_it_reaches_the_local_one(world: World) -> None:
    from workers.team import TeamJobs

    settings = load_settings({**world.home.env, "REMEM_TEAM_DATABASE_URL": "postgresql://x/y"})
    stop = StopFlag()
    team = TeamJobs(world.engine, settings)
    assert not team.stopping()
    Daemon(Loop(world.worker, team), stop)
    stop.event.set()
    assert world.worker.stopping() and team.stopping()

    burst_stop, burst_team = StopFlag(), TeamJobs(world.engine, settings)
    burst_stop.event.set()  # set before the burst: it runs no task, and neither would the team
    work(world.worker, burst_team, burst=True, stop=burst_stop)
    assert burst_team.stopping()
