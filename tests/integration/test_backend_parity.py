"""What SQLite and PostgreSQL do differently, held to one behaviour: writers that run side by
side, rows that lie in any order, numbers cast to text, text that holds NUL, integers that
are 32 bits wide, statements stopped from another thread. Each test runs on both backends."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text

from remem.config import Settings
from remem.forgetting import erase
from remem.forgetting.selection import CHUNK, Selection
from remem.procedures import rebuild, tallies
from remem.procedures.groups import Group
from remem.procedures.promote import rules_of
from remem.procedures.tally import Tally
from remem.queue import store as queue
from tests.conftest import load_fixture, wait_for
from tests.integration.conftest import DAY, World
from workers.handlers import PromoteHandler

TEST = "make test"


def _waiting_on_a_lock(world: World) -> bool:
    """Whether another connection of the test's database waits for a lock. A SQLite writer
    waits in BEGIN IMMEDIATE, before it reads anything, so there it cannot matter when."""
    if world.backend == "sqlite":
        return True
    waiting = world.scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock'"
    )
    return bool(waiting)


def test_two_windows_promoting_one_new_group_side_by_side_both_apply(world: World) -> None:
    """The second window finds the group's first tally inserted by the first, still
    uncommitted: it waits, then derives the tally again, instead of failing its task."""
    world.post(TEST, session="s1")
    world.post(TEST, session="s2")
    handler = PromoteHandler()
    tasks = [queue.claim_next(world.engine, f"worker-{n}", world.now, 60) for n in range(2)]
    windows = [handler.prepare(world.engine, task, world.settings) for task in tasks if task]
    assert len(windows) == 2
    errors: list[BaseException] = []

    def apply(index: int) -> None:
        task = tasks[index]
        assert task is not None
        with world.engine.begin() as connection:
            handler.apply(connection, task, windows[index], world.settings, world.now)
            queue.complete(connection, task, world.now)

    def second() -> None:
        try:
            apply(1)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=second)
    with world.engine.begin() as connection:
        first = tasks[0]
        assert first is not None
        handler.apply(connection, first, windows[0], world.settings, world.now)
        queue.complete(connection, first, world.now)
        thread.start()
        wait_for(lambda: _waiting_on_a_lock(world))
    thread.join(timeout=60)

    assert not thread.is_alive() and errors == []
    assert world.one("status", "verified_runs", "distinct_sessions") == ("active", 2, 2)
    assert [task[1] for task in world.tasks()] == ["done", "done"]
    tally = world.execute("SELECT tally FROM group_states WHERE scope = 'branch'")
    assert [Tally.from_json(row[0]).fresh_runs for row in tally] == [2]


def _stored_and_derived(connection: Connection, settings: Settings) -> list[tuple[Tally, Tally]]:
    """Each group's stored tally, and the tally derived again from its stored runs."""
    rules = rules_of(settings)
    rows = connection.execute(
        text(
            "SELECT project_id, scope, branch, directory, workflow, workflow_hash, tally "
            "FROM group_states ORDER BY id"
        )
    ).all()
    found = []
    for *key, encoded in rows:
        stored = Tally.from_json(encoded)
        derived, _lasts = tallies.rederive(
            connection, Group(*key), rules, stored.cutoff + rules.max_age_s
        )
        found.append((stored, derived))
    return found


def test_a_tally_derived_again_counts_the_later_step_of_a_run_whatever_the_row_order(
    world: World,
) -> None:
    for _ in range(2):
        world.post("make test && make test 2>&1")  # two steps of one workflow in one run
    world.burst()
    (variants,) = world.one("variants")
    assert json.loads(variants) == [{"command": "make test 2>&1", "runs": 2, "verified": 2}]
    # Put back as a restore would: on PostgreSQL the first steps' rows now lie after the
    # second's, where SQLite keeps rows in the order of their ids.
    with world.engine.begin() as connection:
        first_steps = connection.execute(text("SELECT * FROM verifications WHERE step = 0"))
        rows = [dict(row) for row in first_steps.mappings()]
        connection.execute(text("DELETE FROM verifications WHERE step = 0"))
        names = list(rows[0])
        connection.execute(
            text(
                f"INSERT INTO verifications ({', '.join(names)}) "
                f"VALUES ({', '.join(':' + name for name in names)})"
            ),
            rows,
        )

    with world.engine.connect() as connection:
        pairs = _stored_and_derived(connection, world.settings)
    assert pairs and all(stored == derived for stored, derived in pairs), pairs


def test_a_rebuild_keeps_the_time_an_old_event_claimed_as_capture_keeps_it(
    world: World,
) -> None:
    claimed = world.now + 365 * DAY
    world.post("make test", at=claimed)  # clamped by capture
    world.post("make build")
    # Stored before times were clamped: the rebuild clamps it.
    with world.engine.begin() as connection:
        connection.execute(
            text("UPDATE captured_events SET event_at = :at WHERE command = 'make build'"),
            {"at": claimed},
        )

    rebuild.rebuild(world.engine, world.now)

    rows = world.execute(
        "SELECT command, event_at, event_at_reported FROM captured_events ORDER BY id"
    )
    assert rows == [
        ("make test", world.now, json.dumps(claimed)),
        ("make build", world.now, json.dumps(claimed)),
    ]


def _codex_call(world: World, rollout: Path, call_id: str, exit_code: int, output: str) -> None:
    payload: dict[str, Any] = load_fixture("codex/post_tool_use_bash.json")
    payload.update(
        cwd="/p/shop",
        transcript_path=str(rollout),
        tool_use_id=call_id,
        tool_input={"command": "cargo test"},
        tool_response="",
    )
    world.post_payload(payload, "codex")
    end = {"call_id": call_id, "exit_code": exit_code, "aggregated_output": output}
    record = {"type": "event_msg", "payload": {"type": "exec_command_end", **end}}
    with rollout.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def test_a_rollout_output_holding_a_nul_character_resolves_its_call(
    world: World, tmp_path: Path
) -> None:
    rollout = tmp_path / "rollout.jsonl"
    _codex_call(world, rollout, "call_a", 101, "error[E0308]: mismatched\x00 types")

    stats = world.burst()

    assert (stats["tasks_done"], stats.get("tasks_retried", 0)) == (1, 0)
    (row,) = world.execute("SELECT outcome, exit_code, output_excerpt FROM captured_events")
    assert row == ("failure", 101, "error[E0308]: mismatched\ufffd types")


def test_an_exit_code_no_integer_column_holds_leaves_its_call_unresolved(
    world: World, tmp_path: Path
) -> None:
    rollout = tmp_path / "rollout.jsonl"
    _codex_call(world, rollout, "call_a", 2**32 + 1, "killed")
    _codex_call(world, rollout, "call_b", 0, "ok")

    stats = world.burst()

    assert (stats["tasks_done"], stats.get("tasks_retried", 0)) == (1, 0)
    outcomes = world.execute("SELECT tool_use_id, outcome, exit_code FROM captured_events")
    assert sorted(outcomes) == [("call_a", "unknown", None), ("call_b", "success", 0)]


def test_forgetting_more_events_than_one_batch_of_ids(world: World) -> None:
    """test_forget_store's batch test without what only a SQLite file has (its compaction)."""
    secret = "zq8Kp2Vx7Lm4Rt9Wb3Nc6Yh1Jd5Fg0Qs8Ue2Ia7Ox"
    for number in range(CHUNK + 1):
        world.post(f"deploy --mode {secret} --run {number}", session=f"s{number % 3}")
    world.post("make build", session="keep")
    world.post("make build", session="keep")
    world.burst()

    done = erase.forget(world.engine, world.settings, Selection(pattern=r"zq8K\w+"), world.now)
    world.burst()

    assert done.events_deleted == CHUNK + 1 and done.sessions_deleted == 3
    assert world.scalar("SELECT count(*) FROM captured_events WHERE command LIKE '%zq8K%'") == 0
    assert world.procedures("command", "verified_runs") == [("make build", 2)]


# Runs for minutes unless stopped: a statement a stopping daemon must interrupt.
ENDLESS = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000000000) "
    "SELECT count(*) FROM n"
)


class _Endless(PromoteHandler):
    def apply(self, connection: Connection, *_args: Any) -> Any:
        connection.execute(text(ENDLESS))


def test_a_stopping_daemon_interrupts_the_statement_in_hand(world: World) -> None:
    world.post(TEST)
    world.worker.handlers["promote"] = _Endless()
    world.worker.stopping = lambda: True  # as the daemon's flag, once it is stopping
    thread = threading.Thread(target=world.worker.run_once)
    thread.start()
    connection = wait_for(lambda: world.worker.in_hand and world.worker.in_hand.connection)

    def interrupted() -> bool:
        # Again until it lands: an interrupt that comes before the statement is lost.
        connection.interrupt()
        return not thread.is_alive()

    wait_for(interrupted, timeout=30)
    assert world.worker.stats["tasks_released"] == 1
    status, attempts, *_rest, owner, last_error, _run_after = world.tasks()[0][1:]
    assert (status, attempts, owner, last_error) == ("pending", 0, None, None)


class _Raising(PromoteHandler):
    def apply(self, connection: Connection, *_args: Any) -> Any:
        raise RuntimeError("no such file: build/out\x00put")


def test_a_task_error_holding_a_nul_character_is_recorded(world: World) -> None:
    world.post(TEST)
    world.worker.handlers["promote"] = _Raising()

    assert world.worker.run_once()

    assert world.worker.stats["tasks_retried"] == 1
    status, attempts, *_rest, last_error, _run_after = world.tasks()[0][1:]
    assert (status, attempts) == ("pending", 1)
    assert last_error == "RuntimeError: no such file: build/out\ufffdput"
