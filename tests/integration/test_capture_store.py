"""Storing events and coalescing their session's task (DESIGN.md §4 revive rules)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from remem.capture.hosts import build_event
from remem.capture.store import Batch, store_event
from remem.db.engine import sqlite_inserter
from remem.db.sqlite import connect
from remem.record import forgotten
from remem.record.event import CapturedEvent
from tests.conftest import Home, load_fixture

if TYPE_CHECKING:
    from remem.db.snapshot import Execute


@pytest.fixture
def db(home: Home) -> Iterator[sqlite3.Connection]:
    connection = connect(str(home.db))
    yield connection
    connection.close()


def _store(db: sqlite3.Connection, tool_use_id: str, now: float = 1000.0) -> int | None:
    payload = load_fixture("claude-code/post_tool_use_bash_success.json")
    payload["tool_use_id"] = tool_use_id
    event = build_event(payload, "claude-code", now, lambda cwd: (cwd, "main", cwd, "."))

    def execute(sql: str, params: dict[str, Any]) -> Sequence[Sequence[Any]]:
        return db.execute(sql, params).fetchall()

    db.execute("BEGIN IMMEDIATE")
    event_id = store_event(execute, event)
    db.execute("COMMIT")
    return event_id


def _task(db: sqlite3.Connection) -> tuple[Any, ...]:
    return db.execute(
        "SELECT status, high_watermark_event_id, attempts, run_after, last_error, lease_owner "
        "FROM extraction_tasks"
    ).fetchone()


def _set_task(db: sqlite3.Connection, **values: Any) -> None:
    assignments = ", ".join(f"{name} = :{name}" for name in values)
    db.execute(f"UPDATE extraction_tasks SET {assignments}", values)


def test_redelivery_returns_none_and_changes_nothing(db: sqlite3.Connection) -> None:
    assert _store(db, "t1") == 1
    before = _task(db)
    assert _store(db, "t1", now=2000.0) is None
    assert _task(db) == before


@pytest.mark.parametrize("status", ["done", "failed"])
def test_finished_task_is_revived_with_a_fresh_budget(db: sqlite3.Connection, status: str) -> None:
    _store(db, "t1")
    _set_task(db, status=status, attempts=5, run_after=9999.0, last_error="boom")
    _store(db, "t2", now=3000.0)
    assert _task(db) == ("pending", 2, 0, 3000.0, None, None)


def test_processing_task_only_gets_the_higher_watermark(db: sqlite3.Connection) -> None:
    _store(db, "t1")
    _set_task(db, status="processing", attempts=2, lease_owner="w1", run_after=1000.0)
    _store(db, "t2", now=3000.0)
    assert _task(db) == ("processing", 2, 2, 1000.0, None, "w1")


def test_pending_task_in_backoff_keeps_its_retry_time(db: sqlite3.Connection) -> None:
    _store(db, "t1")
    _set_task(db, attempts=2, run_after=5000.0, last_error="boom")
    _store(db, "t2", now=3000.0)
    assert _task(db) == ("pending", 2, 2, 5000.0, "boom", None)


def test_watermark_never_goes_down(db: sqlite3.Connection) -> None:
    _store(db, "t1")
    _store(db, "t2")
    _set_task(db, high_watermark_event_id=99)
    _store(db, "t3")
    assert _task(db)[1] == 99


def test_files_are_stored_as_a_json_list(db: sqlite3.Connection) -> None:
    payload = load_fixture("claude-code/post_tool_use_edit.json")
    event = build_event(
        payload, "claude-code", 1.0, lambda cwd: ("/home/dev/shop", None, "/home/dev/shop", ".")
    )

    def execute(sql: str, params: dict[str, Any]) -> Sequence[Sequence[Any]]:
        return db.execute(sql, params).fetchall()

    db.execute("BEGIN IMMEDIATE")
    store_event(execute, event)
    db.execute("COMMIT")
    files = db.execute("SELECT files FROM captured_events").fetchone()[0]
    assert json.loads(files) == ["src/cart.py"]


FORGOTTEN = "zq8Kp2Vx7Lm4Rt9Wb3Nc6Yh1"


def _events() -> list[CapturedEvent]:
    """Two sessions of two projects: a start, runs, a repeated run, a write through the shell
    (an edit of its own), an edit, a forgotten word, a later capture time; and a run of another
    host delivered twice."""

    def event(name: str, tool_use_id: str, now: float, **changes: Any) -> CapturedEvent:
        payload = {**load_fixture(f"claude-code/{name}.json"), **changes}
        payload["tool_use_id"] = tool_use_id
        return build_event(payload, "claude-code", now, lambda cwd: (cwd, "main", cwd, "."))

    def generic(event_id: str) -> CapturedEvent:
        payload = {"host": "generic", "session_id": "g", "cwd": "/srv/api", "command": "make"}
        payload.update(event_id=event_id, exit_code=0)
        return build_event(payload, "generic", 1000.0, lambda cwd: (cwd, None, cwd, "."))

    written = {"command": "cat > src/new.py <<'EOF'\nprint(1)\nEOF"}
    forgotten = {"command": f"deploy --label {FORGOTTEN}"}
    return [
        event("session_start", "s", 1000.0),
        event("post_tool_use_bash_success", "t1", 1000.0),
        event("post_tool_use_bash_success", "t2", 1000.0, tool_input=written),
        event("post_tool_use_bash_success", "t1", 1000.0),
        event("post_tool_use_edit", "t3", 1000.0),
        event("post_tool_use_bash_success", "t4", 1000.0, session_id="other", cwd="/srv/api"),
        event("post_tool_use_bash_success", "t5", 1000.0, tool_input=forgotten),
        event("post_tool_use_bash_success", "t6", 2000.0),
        event("post_tool_use_bash_success", "t7", 2000.0, session_id="other", cwd="/srv/api"),
        generic("e1"),
        generic("e1"),  # no tool call to find it by: its key meets its conflict
    ]


def _rows(db: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables = ("projects", "sessions", "captured_events", "extraction_tasks")
    return {table: db.execute(f"SELECT * FROM {table} ORDER BY id").fetchall() for table in tables}


@pytest.mark.parametrize("returning", [True, False], ids=["returning", "driver-id"])
def test_a_batch_stores_the_rows_that_storing_each_event_stores(
    home: Home, tmp_path: Path, returning: bool
) -> None:
    """Batch (the import's writer) against store_event (the hook's), on databases that already
    hold a session whose task is done and a forgotten word; the new events' ids read through
    RETURNING, or from the driver."""
    databases = []
    for name in ("each", "batch"):
        path = tmp_path / f"{name}.db"
        shutil.copyfile(home.db, path)
        connection = connect(str(path))
        connection.execute(
            "INSERT INTO forgotten_texts (bucket, salt, digest, forgotten_at) VALUES (?, ?, ?, 1)",
            forgotten.record(FORGOTTEN),
        )
        databases.append(connection)
    each, batched = databases
    for db in databases:
        _store(db, "t0")
        _set_task(db, status="done", attempts=3)

    def execute_on(db: sqlite3.Connection) -> Execute:
        return lambda sql, params: db.execute(sql, params).fetchall()

    each.execute("BEGIN IMMEDIATE")
    answers = [store_event(execute_on(each), event) for event in _events()]
    each.execute("COMMIT")
    batched.execute("BEGIN IMMEDIATE")
    batch = Batch(execute_on(batched), None if returning else sqlite_inserter(batched))
    assert [batch.store(event) for event in _events()] == answers
    batch.finish()
    batched.execute("COMMIT")

    assert answers.count(None) == 2
    assert _rows(batched) == _rows(each)
    assert FORGOTTEN not in json.dumps(_rows(each))
    for db in databases:
        db.close()
