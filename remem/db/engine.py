"""make_engine(): the only place an SQLAlchemy engine is created."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text

from remem.db import sqlite as sqlite_settings
from remem.paths import sqlite_path

READ_ONLY = "remem_read_only"


def make_engine(url: str, busy_timeout_s: float = sqlite_settings.DEFAULT_BUSY_TIMEOUT_S) -> Engine:
    """An engine whose SQLite connections use WAL, busy_timeout, foreign keys, synchronous=NORMAL
    and begin every transaction with BEGIN IMMEDIATE, so that writers queue instead of failing
    on a lock upgrade."""
    if sqlite_path(url) is None and not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True)
    engine = create_engine(url, connect_args={"timeout": busy_timeout_s})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control from the driver so BEGIN is ours to issue.
        dbapi_connection.isolation_level = None
        sqlite_settings.apply_pragmas(dbapi_connection, busy_timeout_s)

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # Readers say so and take no write lock; everything else is a writer from its first
        # statement, which turns contention into a wait instead of SQLITE_BUSY on upgrade.
        if connection.get_execution_options().get(READ_ONLY):
            connection.exec_driver_sql("BEGIN")
        else:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def integrity_check(engine: Engine) -> str:
    """SQLite's own verdict on the file ("ok" when sound); other databases answer "ok"."""
    if not is_sqlite(engine):
        return "ok"
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        return str(connection.exec_driver_sql("PRAGMA integrity_check").scalar())


def executor(connection: Connection) -> Callable[[str, dict[str, Any]], Sequence[Sequence[Any]]]:
    """`execute(sql, params) -> rows` over an SQLAlchemy connection: the shape the stdlib-only
    modules (capture store, digest) take, so both sides run the same statements."""

    def execute(sql: str, params: dict[str, Any]) -> Sequence[Sequence[Any]]:
        result = connection.execute(text(sql), params)
        return result.all() if result.returns_rows else []

    return execute
