"""Queue semantics (DESIGN.md §4): windows, leases, retries, revival."""

from __future__ import annotations

import json
import math
import subprocess
from collections import Counter
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, event, text

from remem.config import Settings
from remem.db.driver import Driver
from remem.queue import store as queue
from tests.conftest import REMEM
from tests.integration.conftest import World
from workers.handlers import PromoteHandler
from workers.loop import Loop

TEST = "make test"


def test_runs_accumulate_across_windows_of_one_session(world: World) -> None:
    world.post(TEST)
    world.burst()
    assert world.tasks()[0][1:5] == ("done", 0, 1, 1)
    assert world.procedures() == []
    world.post(TEST)
    assert world.tasks()[0][1] == "pending"
    assert world.burst()["promoted"] == 1
    assert world.tasks()[0][1:5] == ("done", 0, 2, 2)


class _ArrivesDuringProcessing(PromoteHandler):
    def __init__(self, world: World) -> None:
        self.world = world

    def prepare(self, engine: Engine, task: queue.ClaimedTask, settings: Settings) -> Any:
        self.world.post(TEST)  # a hook fires while the worker is busy
        return super().prepare(engine, task, settings)


def test_event_arriving_during_processing_leaves_the_task_pending(world: World) -> None:
    world.post(TEST)
    world.worker.handlers["promote"] = _ArrivesDuringProcessing(world)
    assert world.worker.run_once()
    status, attempts, cursor, watermark, owner = world.tasks()[0][1:6]
    assert (status, attempts, cursor, watermark, owner) == ("pending", 0, 1, 2, None)
    world.worker.handlers["promote"] = PromoteHandler()
    assert world.burst()["promoted"] == 1
    assert world.tasks()[0][1:5] == ("done", 0, 2, 2)


def test_two_workers_never_hold_the_same_task(world: World) -> None:
    world.post(TEST, session="a")
    first = queue.claim_next(world.engine, "w1", world.now, 60)
    second = queue.claim_next(world.engine, "w2", world.now, 60)
    assert first is not None and second is None
    world.post(TEST, session="b")
    third = queue.claim_next(world.engine, "w2", world.now, 60)
    assert third is not None and third.id != first.id


def test_expired_lease_returns_to_pending_without_consuming_an_attempt(world: World) -> None:
    world.post(TEST)
    task = queue.claim_next(world.engine, "crashed-worker", world.now, 60)
    assert task is not None
    budget = world.settings.max_attempts
    assert queue.reap_expired_leases(world.engine, world.now + 59, budget) == []
    assert queue.reap_expired_leases(world.engine, world.now + 60, budget) == [task.id]
    status, attempts, *_rest, last_error, _run_after = world.tasks()[0][1:]
    assert (status, attempts) == ("pending", 0)
    assert "crashed-worker" in last_error and "expired" in last_error


def test_completing_after_losing_the_lease_rolls_the_window_back(world: World) -> None:
    world.post(TEST)
    world.post(TEST)
    task = queue.claim_next(world.engine, "slow", world.now, 60)
    assert task is not None
    queue.reap_expired_leases(world.engine, world.now + 61, world.settings.max_attempts)
    handler = PromoteHandler()
    prepared = handler.prepare(world.engine, task, world.settings)
    with pytest.raises(queue.LeaseLost), world.engine.begin() as connection:
        handler.apply(connection, task, prepared, world.settings, world.now)
        queue.complete(connection, task, world.now)
    assert world.procedures() == []
    with world.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM verifications")).scalar() == 0


class _Broken(PromoteHandler):
    def apply(
        self,
        connection: Connection,
        task: queue.ClaimedTask,
        prepared: Any,
        settings: Settings,
        now: float,
    ) -> Counter[str]:
        connection.execute(text("INSERT INTO projects (root, created_at) VALUES ('half', 0)"))
        raise RuntimeError("extractor exploded")


def test_raising_handler_is_retried_with_backoff_then_fails_visibly(world: World) -> None:
    world.post(TEST)
    world.worker.handlers["promote"] = _Broken()
    delays = []
    for _attempt in range(5):
        assert world.worker.run_once()
        status, attempts, *_rest, last_error, run_after = world.tasks()[0][1:]
        delays.append(run_after - world.now)
        world.now = max(world.now, run_after)
    assert delays[:4] == [5.0, 15.0, 45.0, 120.0]
    assert (status, attempts) == ("failed", 5)
    assert last_error == "RuntimeError: extractor exploded"
    assert world.worker.run_once() is False  # failed tasks are not claimed
    with world.engine.connect() as connection:  # nothing half-applied survived
        assert (
            connection.execute(text("SELECT count(*) FROM projects WHERE root = 'half'")).scalar()
            == 0
        )

    listed = subprocess.run(
        [REMEM, "tasks", "--json"], env=world.home.env, capture_output=True, text=True, check=True
    ).stdout
    (task,) = json.loads(listed)
    assert (task["status"], task["attempts"], task["last_error"]) == (
        "failed",
        5,
        "RuntimeError: extractor exploded",
    )

    world.post(TEST)  # a new event revives it with a fresh budget
    assert world.tasks()[0][1:3] == ("pending", 0)


def test_permanent_error_fails_at_once(world: World) -> None:
    world.post(TEST)
    with world.engine.begin() as connection:
        connection.execute(text("UPDATE extraction_tasks SET kind = 'mystery'"))
    assert world.worker.run_once()
    assert world.tasks()[0][1:3] == ("failed", 1)
    assert "no handler" in world.tasks()[0][6]


def test_tasks_retry_revives_a_failed_task(world: World) -> None:
    world.post(TEST)
    with world.engine.begin() as connection:
        connection.execute(text("UPDATE extraction_tasks SET status = 'failed', attempts = 5"))
    subprocess.run(
        [REMEM, "tasks", "retry", "1"], env=world.home.env, check=True, capture_output=True
    )
    assert world.tasks()[0][1:3] == ("pending", 0)
    missing = subprocess.run(
        [REMEM, "tasks", "retry", "99"], env=world.home.env, capture_output=True, text=True
    )
    assert missing.returncode == 1 and "No failed or pending task 99" in missing.stderr


def test_claim_skips_tasks_whose_retry_time_is_not_due(world: World) -> None:
    world.post(TEST)
    with world.engine.begin() as connection:
        connection.execute(text("UPDATE extraction_tasks SET run_after = :t"), {"t": world.now + 5})
    assert queue.claim_next(world.engine, "w", world.now, 60) is None
    assert queue.claim_next(world.engine, "w", world.now + 5, 60) is not None


@pytest.mark.sqlite_only("reads SQLite's query plan (EXPLAIN QUERY PLAN)")
def test_claim_uses_the_pending_index(world: World) -> None:
    with world.engine.connect() as connection:
        plan = connection.execute(
            text(
                "EXPLAIN QUERY PLAN SELECT id FROM extraction_tasks WHERE status = 'pending' "
                "AND run_after <= 0 ORDER BY priority, id LIMIT 1"
            )
        ).all()
    assert any("ix_extraction_tasks_claim" in str(row) for row in plan)


def test_every_queue_operation_logs_its_stable_action(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    from remem.capture import spool
    from tests.integration.test_spool import _event_record

    caplog.set_level("DEBUG", logger="remem")
    world.post(TEST)
    world.worker.handlers["promote"] = _Broken()
    for _ in range(5):
        world.worker.run_once()
        world.now += 400
    world.post(TEST)  # revives the failed task
    world.worker.handlers["promote"] = PromoteHandler()
    world.post(TEST, session="other")
    world.burst()
    world.post(TEST, session="third")
    assert queue.claim_next(world.engine, "doomed", world.now, 1) is not None
    assert queue.reap_expired_leases(world.engine, world.now + 2, world.settings.max_attempts)
    spool.append(world.settings.spool_dir, _event_record("spooled"))
    world.worker.ingest()
    actions = {getattr(record, "action", None) for record in caplog.records}
    assert {
        "claim_next",
        "complete",
        "retry",
        "fail",
        "reap_expired_leases",
        "promote_procedure",
        "ingest_spool",
    } <= actions


def _lease_state(world: World) -> tuple[Any, ...]:
    with world.engine.connect() as connection:
        row = connection.execute(
            text("SELECT status, attempts, lease_expiries, last_error FROM extraction_tasks")
        ).one()
    return tuple(row)


def _claim_and_die(world: World, budget: int) -> list[int]:
    """A worker claims the task and dies holding it; a minute later its lease is reaped."""
    assert queue.claim_next(world.engine, "doomed", world.now, 60) is not None
    world.now += 60
    return queue.reap_expired_leases(world.engine, world.now, budget)


def test_a_task_whose_workers_keep_dying_fails_once_its_budget_is_spent(world: World) -> None:
    world.post(TEST)
    assert _claim_and_die(world, 3) == [1]
    assert _lease_state(world)[:3] == ("pending", 0, 1)  # the first death is forgiven
    assert _claim_and_die(world, 3) == [1]
    assert _claim_and_die(world, 3) == [1]
    assert _lease_state(world)[:3] == ("pending", 2, 3)
    assert _claim_and_die(world, 3) == [1]
    assert _lease_state(world) == (
        "failed",
        3,
        4,
        "worker died while processing (lease expired 4 times)",
    )
    assert queue.claim_next(world.engine, "next", world.now, 60) is None


def test_a_dead_worker_after_a_handler_error_spends_the_same_budget(world: World) -> None:
    world.post(TEST)
    with world.engine.begin() as connection:
        connection.execute(text("UPDATE extraction_tasks SET attempts = 2, lease_expiries = 1"))
    assert _claim_and_die(world, 3) == [1]
    assert _lease_state(world)[:3] == ("failed", 3, 2)


def test_a_revived_task_starts_with_no_lease_expiries(world: World) -> None:
    world.post(TEST)
    for _ in range(3):
        _claim_and_die(world, 2)
    assert _lease_state(world)[:3] == ("failed", 2, 3)
    world.post(TEST)  # a new event revives it with a fresh budget
    assert _lease_state(world) == ("pending", 0, 0, None)

    for _ in range(3):
        _claim_and_die(world, 2)
    assert _lease_state(world)[:3] == ("failed", 2, 3)
    subprocess.run(
        [REMEM, "tasks", "retry", "1"], env=world.home.env, check=True, capture_output=True
    )
    assert _lease_state(world) == ("pending", 0, 0, None)


def test_a_renewed_lease_is_not_reaped(world: World) -> None:
    world.post(TEST)
    task = queue.claim_next(world.engine, "alive", world.now, 60)
    assert task is not None
    assert queue.renew_lease(world.engine, task, world.now + 50, 60)
    assert queue.reap_expired_leases(world.engine, world.now + 61, 1) == []
    assert _lease_state(world)[:3] == ("processing", 0, 0)


def test_the_failed_reaped_task_shows_in_tasks_and_doctor(world: World) -> None:
    world.post(TEST)
    for _ in range(2):
        _claim_and_die(world, 1)
    listed = subprocess.run(
        [REMEM, "tasks", "--status", "failed", "--json"],
        env=world.home.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (task,) = json.loads(listed)
    reason = "worker died while processing (lease expired 2 times)"
    assert (task["status"], task["lease_expiries"], task["last_error"]) == ("failed", 2, reason)
    doctor = subprocess.run(
        [REMEM, "doctor", "--json"], env=world.home.env, capture_output=True, text=True
    )
    checks = {check["name"]: check for check in json.loads(doctor.stdout)}
    assert checks["tasks"]["status"] == "fail"
    assert reason in checks["tasks"]["detail"] and "task 1" in checks["tasks"]["detail"]


def test_an_idle_worker_looks_before_it_locks_and_a_draining_one_goes_straight_on(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polling an empty queue never takes the write lock; while tasks keep coming, the look
    before each claim is skipped, and the claim that finds the queue empty ends the draining."""
    statements: list[str] = []

    def seen(statement: str) -> None:
        if statement.lstrip().startswith("SELECT 1 FROM extraction_tasks"):
            statements.append("look")
        elif "RETURNING id, session_id, kind" in statement:
            statements.append("claim")

    # The queue's statements run on the driver, beneath SQLAlchemy's events: each is seen as
    # the driver is handed it.
    execute = Driver.execute

    def traced(self: Driver, statement: Any, params: Any = None) -> Any:
        seen(str(statement))
        return execute(self, statement, params)

    monkeypatch.setattr(Driver, "execute", traced)
    assert world.worker.run_once() is False
    assert statements == ["look"]
    world.post(TEST, session="s1")
    world.post(TEST, session="s2")
    del statements[:]
    claimed = [world.worker.run_once() for _ in range(4)]
    assert claimed == [True, True, False, False]
    assert statements == ["look", "claim", "claim", "claim", "look"]


def test_a_draining_loop_commits_once_per_task(world: World) -> None:
    """Each task's completing transaction claims the next, and the last one finds the queue
    empty: one claim of its own before the first task, then one commit per task; on SQLite,
    the task after a checkpoint has a claim of its own (the loop's clock stands still: one
    checkpoint, after the first task)."""
    for session in ("s1", "s2", "s3"):
        world.post(TEST, session=session)
    commits: list[None] = []

    def committed(_connection: Any) -> None:
        commits.append(None)

    event.listen(world.engine, "commit", committed)
    try:
        assert Loop(world.worker, burst=True, clock=lambda: 0.0).drain() == 3
    finally:
        event.remove(world.engine, "commit", committed)
    assert len(commits) == 1 + 3 + world.worker.checkpoints
    assert [task[1:3] for task in world.tasks()] == [("done", 0)] * 3
    assert world.worker.run_once() is False


def test_a_drain_out_of_time_releases_the_task_it_claimed_ahead(world: World) -> None:
    for session in ("s1", "s2"):
        world.post(TEST, session=session)
    now = [0.0]
    loop = Loop(world.worker, burst=True, clock=lambda: now[0])
    loop.due_at["checkpoint"] = math.inf  # none between the tasks: the first claims ahead

    def out_of_time() -> None:
        now[0] += 10.0

    assert loop.drain(max_seconds=5.0, on_task=out_of_time) == 1
    first, second = world.tasks()
    assert first[1] == "done"
    # Claimed ahead in the first task's transaction, then put back as it was.
    assert (second[1], second[2], second[5]) == ("pending", 0, None)
    assert world.burst()["tasks_done"] == 1
