"""make_engine's transactions beyond BEGIN IMMEDIATE: AUTOCOMMIT connections for VACUUM, and
deletes that zero what they delete. The PRAGMAs themselves are read back in test_database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import IntegrityError, OperationalError

from remem.db.engine import (
    AUTOCOMMIT,
    Compacted,
    begin_secure_delete,
    compact,
    executor,
    held_alone,
    make_engine,
    row_lock,
)
from tests.conftest import Home


def driver(connection: Connection) -> Any:
    """The sqlite3 connection under an SQLAlchemy one."""
    return connection.connection.dbapi_connection


def write_lock_is_held(db: Path) -> bool:
    """Whether another process's writer would have to wait for the file."""
    other = make_engine(f"sqlite:///{db}", busy_timeout_s=0.1)
    try:
        with other.connect() as connection:
            connection.execute(text("SELECT 1"))
    except OperationalError as exc:
        assert "locked" in str(exc)
        return True
    finally:
        other.dispose()
    return False


def begins_immediate(engine: Engine, db: Path) -> bool:
    with engine.connect() as writer:
        writer.execute(text("SELECT 1"))  # no write yet: only BEGIN IMMEDIATE takes the lock
        held = write_lock_is_held(db)
        writer.rollback()
    return held


def test_vacuum_runs_through_an_autocommit_connection(home: Home) -> None:
    engine = make_engine(f"sqlite:///{home.db}", busy_timeout_s=0.1)
    with engine.connect().execution_options(isolation_level=AUTOCOMMIT) as connection:
        connection.execute(text("SELECT 1"))
        assert not write_lock_is_held(home.db)  # no transaction was begun
        connection.exec_driver_sql("VACUUM")
    engine.dispose()


def test_an_ordinary_connection_still_begins_immediate_after_an_autocommit_one(
    home: Home,
) -> None:
    engine = make_engine(f"sqlite:///{home.db}", busy_timeout_s=0.1)
    assert begins_immediate(engine, home.db)
    with engine.connect().execution_options(isolation_level=AUTOCOMMIT) as connection:
        connection.exec_driver_sql("VACUUM")
    with engine.connect() as connection:  # the same connection, back from the pool
        assert driver(connection).isolation_level is None
    assert begins_immediate(engine, home.db)
    engine.dispose()


def test_compact_empties_the_wal_and_the_free_pages(home: Home) -> None:
    engine = make_engine(f"sqlite:///{home.db}")
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE scratch (body TEXT)"))
        connection.execute(text("INSERT INTO scratch VALUES (:b)"), [{"b": "x" * 2000}] * 200)
        connection.execute(text("DROP TABLE scratch"))

    assert compact(engine) == Compacted(vacuumed=True, wal_truncated=True)

    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA freelist_count")).scalar() == 0
    engine.dispose()
    wal = Path(f"{home.db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_a_secure_delete_transaction_zeroes_what_it_deletes(home: Home) -> None:
    engine = make_engine(f"sqlite:///{home.db}")
    with begin_secure_delete(engine) as connection:
        assert connection.execute(text("PRAGMA secure_delete")).scalar() == 1
        assert driver(connection).in_transaction
    engine.dispose()


def test_executor_begins_as_sqlalchemy_would_and_commits_with_the_connection(home: Home) -> None:
    engine = make_engine(f"sqlite:///{home.db}", busy_timeout_s=0.1)
    try:
        with engine.connect() as connection:
            execute = executor(connection)
            execute("INSERT INTO projects (root, created_at) VALUES ('/a', 1)", {})
            assert connection.in_transaction()
            assert write_lock_is_held(home.db)  # one write transaction, not a statement's own
            connection.rollback()
            assert execute("SELECT count(*) FROM projects WHERE root = '/a'", {}) == [(0,)]
            execute("INSERT INTO projects (root, created_at) VALUES ('/b', 2)", {})
            connection.commit()
        with engine.connect() as connection:
            assert executor(connection)("SELECT root FROM projects", {}) == [("/b",)]
    finally:
        engine.dispose()


def test_executor_raises_what_sqlalchemy_raises(home: Home) -> None:
    engine = make_engine(f"sqlite:///{home.db}", busy_timeout_s=0.1)
    insert = "INSERT INTO projects (root, created_at) VALUES (:root, 1)"
    try:
        with engine.begin() as connection:
            execute = executor(connection)
            execute(insert, {"root": "/a"})
            with pytest.raises(IntegrityError):
                execute(insert, {"root": "/a"})
    finally:
        engine.dispose()


def test_a_row_lock_and_a_lock_held_alone_are_the_servers_and_no_op_on_sqlite(
    home: Home, pg_url: str
) -> None:
    local, server = make_engine(f"sqlite:///{home.db}"), make_engine(pg_url)
    try:
        assert (row_lock(local), row_lock(local, skip_locked=True)) == ("", "")
        assert row_lock(server) == "FOR UPDATE"
        assert row_lock(server, skip_locked=True) == "FOR UPDATE SKIP LOCKED"
        with (
            local.connect() as first,
            held_alone(first, 7) as alone,
            local.connect() as second,
            held_alone(second, 7) as also,
        ):
            assert alone and also  # SQLite's writers take turns on the file anyway
        with server.connect() as first, server.connect() as second:
            with held_alone(first, 7) as alone, held_alone(second, 7) as refused:
                assert alone and not refused
            with held_alone(second, 7) as after:
                assert after  # released when the first block ended
    finally:
        local.dispose()
        server.dispose()
