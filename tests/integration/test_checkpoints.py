"""The worker's commits never checkpoint the WAL themselves; a thread of its own does, and a
burst leaves its work in the database file."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.conftest import wait_for
from tests.integration.conftest import World
from workers.checkpoints import Checkpointer

TEST = "make test"
WHY = "WAL checkpoints are SQLite's"


def _database_alone(world: World, tmp_path: Path) -> sqlite3.Connection:
    """The database file copied without its -wal: what a checkpoint has moved into it."""
    assert world.settings.sqlite_file is not None
    copy = tmp_path / "alone.db"
    shutil.copyfile(world.settings.sqlite_file, copy)
    return sqlite3.connect(copy)


@pytest.mark.sqlite_only(WHY)
def test_the_workers_connections_leave_checkpoints_to_its_thread(world: World) -> None:
    assert world.worker.checkpointer is not None
    with world.engine.connect() as connection:
        assert connection.execute(text("PRAGMA wal_autocheckpoint")).scalar() == 0


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
def test_the_thread_checkpoints_after_a_commit_while_the_worker_goes_on(
    world: World, tmp_path: Path
) -> None:
    checkpointer = world.worker.checkpointer
    assert checkpointer is not None
    before = checkpointer.checkpoints
    with world.engine.begin() as connection:
        connection.execute(
            text("INSERT INTO projects (root, created_at) VALUES ('/work/checkpointed', 0)")
        )
    wait_for(lambda: checkpointer.checkpoints > before)
    alone = _database_alone(world, tmp_path)
    try:
        found = alone.execute("SELECT root FROM projects WHERE root = '/work/checkpointed'")
        assert found.fetchall() == [("/work/checkpointed",)]
    finally:
        alone.close()


def test_a_checkpoint_that_fails_is_logged_and_the_worker_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    checkpointer = Checkpointer(str(tmp_path / "gone" / "remem.db"))
    with caplog.at_level(logging.WARNING, logger="remem.worker"):
        checkpointer.flush()
    assert "could not checkpoint the WAL" in caplog.text
    assert checkpointer.checkpoints == 0


def test_another_database_has_no_checkpointer(world: World) -> None:
    expected = world.backend == "sqlite"
    assert (world.worker.checkpointer is not None) is expected
