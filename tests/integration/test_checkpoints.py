"""The worker's commits never checkpoint the WAL themselves; its loop does, between tasks and
after its other duties, and a burst leaves its work in the database file."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from remem.db.engine import checkpoint, make_engine
from remem.db.sqlite import WAL_BOUND_BYTES
from tests.integration.conftest import World
from workers.loop import CHECKPOINT_INTERVAL_S, Loop
from workers.runner import Worker

TEST = "make test"
WHY = "WAL checkpoints are SQLite's"


def _database_alone(world: World, tmp_path: Path) -> sqlite3.Connection:
    """The database file copied without its -wal: what a checkpoint has moved into it."""
    assert world.settings.sqlite_file is not None
    copy = tmp_path / "alone.db"
    shutil.copyfile(world.settings.sqlite_file, copy)
    return sqlite3.connect(copy)


@pytest.mark.sqlite_only(WHY)
def test_the_workers_connections_leave_checkpoints_to_its_loop(world: World) -> None:
    assert world.worker.checkpoints
    with world.engine.connect() as connection:
        assert connection.execute(text("PRAGMA wal_autocheckpoint")).scalar() == 0


@pytest.mark.sqlite_only(WHY)
def test_a_checkpoint_keeps_what_its_connection_prepared(world: World) -> None:
    """Between two windows the checkpoint runs on a pooled connection, as the windows do: one
    that sets a PRAGMA of the kind that expires prepared statements (SQLAlchemy's isolation
    level is `PRAGMA read_uncommitted`) would have every window parse its SQL again."""
    engine = make_engine(world.settings.database_url)
    try:
        pooled = engine.raw_connection()
        said: list[str] = []
        assert pooled.dbapi_connection is not None
        pooled.dbapi_connection.set_trace_callback(said.append)
        pooled.close()
        checkpoint(engine)
        checkpoint(engine)
        assert said and all("wal_checkpoint" in statement for statement in said), said
    finally:
        engine.dispose()


@pytest.mark.sqlite_only(WHY)
def test_a_burst_leaves_its_procedures_in_the_database_file(world: World, tmp_path: Path) -> None:
    for session in ("s1", "s2"):
        world.post(TEST, session=session)
    assert world.burst()["promoted"] == 1
    alone = _database_alone(world, tmp_path)
    try:
        assert alone.execute("SELECT command FROM procedures").fetchall() == [(TEST,)]
    finally:
        alone.close()


@pytest.mark.sqlite_only(WHY)
def test_the_loop_checkpoints_between_tasks(world: World, tmp_path: Path) -> None:
    for session in ("s1", "s2", "s3"):
        world.post(TEST, session=session)
    moments = iter(range(0, 1_000))
    loop = Loop(world.worker, burst=True, clock=lambda: next(moments) * CHECKPOINT_INTERVAL_S)
    in_the_file: list[int] = []

    def look() -> None:
        alone = _database_alone(world, tmp_path)
        try:
            in_the_file.append(alone.execute("SELECT count(*) FROM procedures").fetchone()[0])
        finally:
            alone.close()

    assert loop.tick(on_task=look) == 3
    # The second session's window promoted the procedure; before the third ran, the loop had
    # moved it into the file.
    assert in_the_file == [0, 0, 1]


@pytest.mark.sqlite_only(WHY)
def test_a_checkpoint_that_fails_is_logged_and_the_worker_goes_on(
    world: World, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gone = make_engine(f"sqlite:///{tmp_path / 'gone' / 'remem.db'}")
    try:
        with caplog.at_level(logging.WARNING, logger="remem.worker"):
            Worker(gone, world.settings).checkpoint()
    finally:
        gone.dispose()
    assert "could not checkpoint the WAL" in caplog.text


def test_another_database_leaves_checkpoints_alone(world: World) -> None:
    assert world.worker.checkpoints is (world.backend == "sqlite")


@pytest.mark.sqlite_only(WHY)
def test_a_wal_started_over_is_cut_back_to_the_bound(world: World) -> None:
    """While another process has the database open, the WAL starts over once it has all been
    copied into the file; the worker's connection then cuts the file back to the bound, so that
    the hooks leave it alone."""
    assert world.settings.sqlite_file is not None
    wal = Path(str(world.settings.sqlite_file) + "-wal")
    insert = text("INSERT INTO projects (root, created_at) VALUES (:root, 0)")
    other = sqlite3.connect(world.settings.sqlite_file)  # a hook's, or another worker's
    try:
        other.execute("SELECT count(*) FROM projects").fetchall()
        for index in range(3):
            with world.engine.begin() as connection:
                rows = [{"root": f"/work/{index}/{n}/" + "x" * 900} for n in range(1_000)]
                connection.execute(insert, rows)
        assert wal.stat().st_size > 2 * WAL_BOUND_BYTES
        assert checkpoint(world.engine)
        with world.engine.begin() as connection:
            connection.execute(insert, {"root": "/work/last"})
        assert 0 < wal.stat().st_size <= WAL_BOUND_BYTES
    finally:
        other.close()
