"""One read-only snapshot of a home's database, for whatever only reads (remem.agent.read).

A SQLite file is read with the stdlib, as the hook reads its digest, so that `remem context` and
`remem status` answer in the time of an interpreter start. Any other database goes through an
SQLAlchemy engine, imported only then; a command that already holds an engine reads through
`engine_reader`. Either way the caller gets `execute(sql, params) -> rows` (named parameters)
inside one transaction: every statement sees the same state.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence

from remem.db import sqlite
from remem.errors import (
    DatabaseUnavailable,
    HomeNotFound,
    HomeNotOwned,
    HomeUnusable,
    SchemaBehind,
)
from remem.paths import foreign_owner, home_problem

TYPE_CHECKING = False  # `typing` is not imported on the fast read path
if TYPE_CHECKING:
    from typing import Any

    from sqlalchemy import Engine

    from remem.config import Settings


# What every reader and writer that may run on the hook's side takes: one SQL text with named
# parameters in, its rows out. Declared here only.
Execute = Callable[[str, "dict[str, Any]"], "Sequence[Sequence[Any]]"]
BUSY_TIMEOUT_S = 2.0

REVISION = "SELECT version_num FROM alembic_version"


def require_home(home: str) -> None:
    problem = home_problem(home)
    if problem:
        raise HomeUnusable(home, problem)
    if not os.path.isdir(home):
        raise HomeNotFound(home)
    owner = foreign_owner(home)
    if owner is not None:
        raise HomeNotOwned(home, owner)


def revision(execute: Execute) -> str | None:
    """The schema revision stamped in the database; None before the first migration."""
    # Inside a savepoint: on PostgreSQL a failed statement would abort the whole snapshot.
    execute("SAVEPOINT remem_revision", {})
    try:
        rows = execute(REVISION, {})
    except Exception as exc:  # no alembic_version table yet: each driver names the table
        if "alembic_version" not in str(exc) and "no such table" not in str(exc):
            raise
        execute("ROLLBACK TO SAVEPOINT remem_revision", {})
        return None
    execute("RELEASE SAVEPOINT remem_revision", {})
    return str(rows[0][0]) if rows else None


@contextlib.contextmanager
def read_snapshot(settings: Settings, require_current_schema: bool = True) -> Iterator[Execute]:
    require_home(settings.home)
    path = settings.sqlite_file
    if path is None:
        with _engine_snapshot(settings, require_current_schema) as execute:
            yield execute
        return
    if not os.path.isfile(path):
        raise DatabaseUnavailable(path, "the file does not exist: run `remem init`")
    connection = sqlite.connect_read_only(path, BUSY_TIMEOUT_S)
    try:
        execute = sqlite.executor(connection)
        _check_schema(execute, require_current_schema)
        yield execute
    finally:
        connection.close()


@contextlib.contextmanager
def reading(settings: Settings) -> Iterator[Execute]:
    """A snapshot for an agent's question (recall, MCP, export): a database that cannot be read
    (locked past the wait, damaged) is one line for the user, not a traceback."""
    try:
        with read_snapshot(settings) as execute:
            yield execute
    except sqlite3.Error as exc:
        where = settings.sqlite_file or "the database"
        raise DatabaseUnavailable(where, f"{exc}: see `remem doctor`") from None


def _check_schema(execute: Execute, required: bool) -> None:
    if required:
        current = revision(execute)
        head = sqlite.schema_head()
        if current != head:
            raise SchemaBehind(current, head)


@contextlib.contextmanager
def engine_reader(engine: Engine) -> Iterator[Execute]:
    """`execute` over one read-only connection of an engine a command already holds."""
    from remem.db.engine import READ_ONLY, executor

    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        yield executor(connection)


@contextlib.contextmanager
def _engine_snapshot(settings: Settings, require_current_schema: bool) -> Iterator[Execute]:
    from remem.db.engine import make_engine

    engine = make_engine(settings.database_url)
    try:
        with engine_reader(engine) as execute:
            _check_schema(execute, require_current_schema)
            yield execute
    finally:
        engine.dispose()


_PASSWORD_PARAMETER = re.compile(r"([?&]password=)[^&]*", re.IGNORECASE)


def url_label(url: str) -> str:
    """A database URL with its password hidden, in the user part or as a query parameter."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if sep and at and ":" in credentials:
        user = credentials.split(":", 1)[0]
        url = f"{scheme}://{user}:***@{host}"
    return _PASSWORD_PARAMETER.sub(r"\1***", url)
