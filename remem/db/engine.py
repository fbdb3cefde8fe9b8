"""make_engine(): the only place an SQLAlchemy engine is created, and where its connections
are told how to behave (PRAGMAs, transactions, compaction)."""

from __future__ import annotations

import contextlib
import functools
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Connection, Dialect, Engine, create_engine, event, make_url, text
from sqlalchemy.exc import DBAPIError, InvalidatePoolError

from remem.db import sqlite as sqlite_settings
from remem.paths import sqlite_path

log = logging.getLogger("remem.worker")

READ_ONLY = "remem_read_only"
AUTOCOMMIT = "AUTOCOMMIT"  # SQLAlchemy's isolation level: no transaction at all
# Marks, in a pooled connection's info, a connection told not to checkpoint as it commits.
AUTOCHECKPOINT_OFF = "remem_autocheckpoint_off"


def make_engine(url: str, busy_timeout_s: float = sqlite_settings.DEFAULT_BUSY_TIMEOUT_S) -> Engine:
    """An engine whose SQLite connections use WAL, busy_timeout, foreign keys, synchronous=NORMAL
    and begin every transaction with BEGIN IMMEDIATE, so that writers queue instead of failing
    on a lock upgrade; a connection asked for AUTOCOMMIT (as `compact` does) begins none."""
    if sqlite_path(url) is None and not url.startswith("sqlite"):
        return _server_engine(url)
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
        # An AUTOCOMMIT connection gets no transaction: VACUUM refuses to run inside one.
        options = connection.get_execution_options()
        if options.get("isolation_level") == AUTOCOMMIT:
            return
        connection.exec_driver_sql("BEGIN" if options.get(READ_ONLY) else "BEGIN IMMEDIATE")

    @event.listens_for(engine, "checkin")
    def _on_checkin(dbapi_connection: Any, _record: Any) -> None:
        # Leaving AUTOCOMMIT, SQLAlchemy hands transaction control back to the driver: take it
        # again. Changing it mid-transaction would commit, hence the check.
        if (
            dbapi_connection is not None
            and dbapi_connection.isolation_level is not None
            and not dbapi_connection.in_transaction
        ):
            dbapi_connection.isolation_level = None

    return engine


# A connection attempt to an unreachable server gives up after this, instead of the minutes
# the operating system would wait: the caller backs off and tries again later.
CONNECT_TIMEOUT_S = 10
# A pooled server connection idle for longer is pinged before use, and replaced (with every
# pooled connection older than it) if the server went away meanwhile. One back sooner goes
# straight to work: should the server have gone in that second, its first statement fails
# instead, and the pool replaces its connections as above.
PING_AFTER_IDLE_S = 1.0
# Where a pooled connection's info keeps when it last went back to the pool.
RETURNED_AT = "remem_returned_at"


def _server_engine(url: str) -> Engine:
    """PostgreSQL (or another server) through psycopg 3, the driver remem depends on: a URL
    naming no driver would otherwise ask SQLAlchemy for psycopg2."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            url = "postgresql+psycopg://" + url[len(prefix) :]
    connect_args: dict[str, Any] = {}
    if url.startswith("postgresql") and "connect_timeout" not in make_url(url).query:
        connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
    engine = create_engine(url, connect_args=connect_args)
    dialect = engine.dialect
    if engine.driver == "psycopg":

        @event.listens_for(engine, "do_connect")
        def _on_do_connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
            options = cparams.get("options", "")
            cparams["options"] = f"{options} -c plan_cache_mode=force_custom_plan".strip()
            return _psycopg_connection().connect(*cargs, **cparams)

        @event.listens_for(engine, "begin")
        def _on_begin(connection: Any) -> None:
            # Readers say so: the server refuses their writes, and they end by commit.
            read_only = True if connection.get_execution_options().get(READ_ONLY) else None
            dbapi_connection = connection.connection.dbapi_connection
            if dbapi_connection.read_only is not read_only:
                dbapi_connection.read_only = read_only

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[RETURNED_AT] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        # What pool_pre_ping does, for a connection idle long enough for the server to have
        # gone: a draining worker checks one out a few times a task, and would pay as many
        # round trips. A connection new from the server is not asked.
        returned_at = record.info.get(RETURNED_AT)
        if returned_at is None or time.monotonic() - returned_at < PING_AFTER_IDLE_S:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as error:
            if not dialect.is_disconnect(error, dbapi_connection, None):
                raise
            # The pool replaces every connection older than now, then this one.
            raise InvalidatePoolError() from error

    return engine


@functools.cache
def _psycopg_connection() -> Any:
    import psycopg  # the PostgreSQL driver, there only

    class ReadersCommit(psycopg.Connection[Any]):
        """psycopg prepares a statement the fifth time a connection runs it, and remem's
        connections run the same few hundred all day: the server then skips parsing them.
        But psycopg forgets what it prepared at every rollback, and a reader ends with one
        (a worker's every task): here a read-only transaction ends with COMMIT instead, all
        one to the server.

        Each execution is still planned for its values (plan_cache_mode, set as the
        connection opens): a plan made once for any values, from the statistics of the
        moment, stays bad in a database that grew since, by 10x and more on promotion's
        statements after a team's first import."""

        def rollback(self) -> None:
            in_transaction = self.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
            if self.read_only and in_transaction:
                self.commit()
            else:
                super().rollback()

    return ReadersCommit


class Bound(Protocol):
    """An engine, a connection, or remem.db.driver's Driver: what speaks one dialect."""

    @property
    def dialect(self) -> Dialect: ...


def is_sqlite(bind: Bound) -> bool:
    return bind.dialect.name == "sqlite"


def integrity_check(engine: Engine) -> str:
    """SQLite's own verdict on the file ("ok" when sound); other databases answer "ok"."""
    if not is_sqlite(engine):
        return "ok"
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        return str(connection.exec_driver_sql("PRAGMA integrity_check").scalar())


@contextlib.contextmanager
def begin_secure_delete(engine: Engine) -> Iterator[Connection]:
    """A write transaction, as engine.begin(), whose deletes overwrite what they delete with
    zeros instead of leaving it in free pages, where it would stay readable until a VACUUM.
    The setting stays on the pooled connection: later deletes there cost a little more."""
    with engine.begin() as connection:
        if is_sqlite(engine):
            connection.exec_driver_sql("PRAGMA secure_delete = ON")
        yield connection


@dataclass(frozen=True)
class Compacted:
    vacuumed: bool
    wal_truncated: bool

    def as_json(self) -> dict[str, bool]:
        return {"vacuumed": self.vacuumed, "wal_truncated": self.wal_truncated}


def compact(engine: Engine) -> Compacted:
    """Move the WAL into the file, rebuild the file without its free pages and empty the WAL:
    deleted rows otherwise stay readable in both. The WAL stays when another process is
    reading (wal_truncated is then False); other databases are left alone."""
    if not is_sqlite(engine):
        return Compacted(vacuumed=False, wal_truncated=False)
    with engine.connect().execution_options(isolation_level=AUTOCOMMIT) as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").all()
        connection.exec_driver_sql("VACUUM")
        busy = connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").scalar()
    return Compacted(vacuumed=True, wal_truncated=busy == 0)


def vacuum_full(engine: Engine, tables: list[str]) -> list[str]:
    """`VACUUM FULL` each table on PostgreSQL: the heap keeps a deleted row's bytes until the
    table is rewritten (the WAL keeps them until it is recycled). Returns the tables done;
    none on SQLite, which `compact` rebuilds whole."""
    if is_sqlite(engine):
        return []
    with engine.connect().execution_options(isolation_level=AUTOCOMMIT) as connection:
        for table in tables:
            connection.exec_driver_sql(f'VACUUM FULL "{table}"')
    return list(tables)


def _no_automatic_checkpoints(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    # Once per driver connection: the setting lasts as long as the connection, and the info
    # dictionary goes with it (a connection replaced after an error starts a new one).
    if AUTOCHECKPOINT_OFF not in record.info:
        dbapi_connection.execute("PRAGMA wal_autocheckpoint = 0")
        record.info[AUTOCHECKPOINT_OFF] = True


# Between two checkpoints of a writer that checkpoints apart the WAL gathers what it wrote
# meanwhile (some tens of MB in a burst: about 17 MB a second of 20,000 generated events).
CHECKPOINT_INTERVAL_S = 1.0


def checkpoint_apart(engine: Engine) -> bool:
    """Stop the engine's SQLite connections moving the WAL into the file as they commit (from
    their next checkout): that commit would do the copying and the syncs before it returns,
    its write lock held meanwhile. Its owner runs `checkpoint` between transactions instead.
    False for another database: there is no WAL to move."""
    if not is_sqlite(engine):
        return False
    if not event.contains(engine, "checkout", _no_automatic_checkpoints):
        event.listen(engine, "checkout", _no_automatic_checkpoints)
    return True


def checkpoint(engine: Engine) -> bool:
    """One PASSIVE checkpoint, which takes no lock a writer waits for; whether it moved every
    frame of the WAL (a reader on the newest frames keeps them there). One that cannot run is
    logged and False: the next one tries again, and the WAL is whole meanwhile."""
    # On the driver's connection, outside any transaction, as it comes from the pool: asking
    # SQLAlchemy for AUTOCOMMIT would set `PRAGMA read_uncommitted` when the connection goes
    # back, and that PRAGMA expires every statement the connection has prepared.
    try:
        connection = engine.raw_connection()
        try:
            cursor = connection.cursor()
            cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
            _busy, frames, moved = cursor.fetchone() or (0, 0, 0)
        finally:
            connection.close()
    # The driver's own error too: a checkpoint runs on the driver's connection.
    except (DBAPIError, sqlite3.Error) as error:
        log.warning("could not checkpoint the WAL: %s", error, extra={"action": "checkpoint"})
        return False
    return bool(moved >= frames)


def executor(connection: Connection) -> Callable[[str, dict[str, Any]], Sequence[Sequence[Any]]]:
    """`execute(sql, params) -> rows` inside the connection's transaction: the shape the
    stdlib-only modules (capture store, digest) take, so both sides run the same statements.
    On SQLite the statements go to the driver as they are (sqlite3 reads their :named
    parameters): compiling each through SQLAlchemy would cost many-row work most of its time."""
    if is_sqlite(connection):
        run = sqlite_settings.executor(connection.connection.driver_connection)  # type: ignore[arg-type]

        def execute_here(sql: str, params: dict[str, Any]) -> Sequence[Sequence[Any]]:
            if not connection.in_transaction():
                connection.begin()  # as SQLAlchemy begins before its own first statement
            try:
                return run(sql, params)
            except sqlite3.Error as exc:  # raised as SQLAlchemy raises it, for callers of both
                raise DBAPIError.instance(sql, params, exc, sqlite3.Error) from exc

        return execute_here

    def execute(sql: str, params: dict[str, Any]) -> Sequence[Sequence[Any]]:
        result = connection.execute(text(sql), params)
        return result.all() if result.returns_rows else []

    return execute


def inserter(connection: Connection) -> Callable[[str, dict[str, Any]], int | None] | None:
    """`insert(sql, params) -> the new row's id` on SQLite, None when the statement inserted no
    row (an INSERT ... ON CONFLICT DO NOTHING that met its conflict): RETURNING costs SQLite a
    temporary table for every statement. None on a server, whose statements say RETURNING."""
    if not is_sqlite(connection):
        return None
    return sqlite_inserter(connection.connection.driver_connection)  # type: ignore[arg-type]


def sqlite_inserter(connection: sqlite3.Connection) -> Callable[[str, dict[str, Any]], int | None]:
    """inserter() over a stdlib connection. Here, not in remem.db.sqlite: the hook imports that
    module, and inserts one event."""

    def insert(sql: str, params: dict[str, Any]) -> int | None:
        cursor = connection.execute(sql, params)
        return cursor.lastrowid if cursor.rowcount == 1 else None

    return insert


def row_lock(bind: Bound, skip_locked: bool = False) -> str:
    """The clause that holds the rows a SELECT reads until its transaction ends: a server's
    `FOR UPDATE` (with `skip_locked`, rows another transaction holds are passed over rather than
    waited for); nothing on SQLite, whose one write transaction shuts every other writer out."""
    if is_sqlite(bind):
        return ""
    return "FOR UPDATE SKIP LOCKED" if skip_locked else "FOR UPDATE"


@contextlib.contextmanager
def held_alone(connection: Connection, key: int) -> Iterator[bool]:
    """Whether this connection holds `key` alone for the block (a server's advisory lock,
    taken without waiting and released after; another holder makes it False). Always True on
    SQLite, whose writers take turns on the one file."""
    if is_sqlite(connection):
        yield True
        return
    got = connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": key}).scalar()
    connection.commit()
    try:
        yield bool(got)
    finally:
        if got:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
            connection.commit()


def sqlite_file(engine: Engine) -> str | None:
    """The path of the SQLite file the engine opens; None for a server or a memory database."""
    path = engine.url.database if is_sqlite(engine) else None
    return path if path and path != ":memory:" else None
