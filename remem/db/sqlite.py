"""The SQLite connection settings, in one place, for both SQLAlchemy and the stdlib hook path.

Stdlib only: `remem-hook` opens its connection here without importing SQLAlchemy. `make_engine`
applies the same PRAGMAs through a connect event.
"""

from __future__ import annotations

import os
import sqlite3

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from remem.db.snapshot import Execute

# A process that opens the database while no other connection has it open rebuilds the WAL's
# index by reading every frame in it, and forgets which of them were already copied into the
# file, so the WAL never starts over. Hooks run with no worker alive would each read a WAL grown
# by every hook before them: past this size the hook closes its connection, and the last
# connection to close empties the WAL into the file (while a worker has the database open, the
# close leaves the WAL to the worker's checkpoints). Every connection cuts the WAL back to this
# size when it starts it over (journal_size_limit), so that hooks rarely find it past it.
WAL_BOUND_BYTES = 1 << 20

# journal_mode=WAL is persistent in the file; it is set again on every connection because a
# database copied or restored without its -wal file may come back in rollback mode.
PRAGMAS = (
    ("journal_mode", "WAL"),
    ("synchronous", "NORMAL"),
    ("foreign_keys", "ON"),
    ("journal_size_limit", str(WAL_BOUND_BYTES)),
)
DEFAULT_BUSY_TIMEOUT_S = 5.0


def migrations_dir() -> str:
    """The Alembic environment: a wheel carries it as remem/_alembic; a checkout has it at
    alembic/."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    for candidate in (os.path.join(package, "_alembic"), os.path.join(package, "..", "alembic")):
        if os.path.isfile(os.path.join(candidate, "env.py")):
            return os.path.normpath(candidate)
    raise FileNotFoundError(f"no Alembic environment found beside {package}")


_head: list[str] = []


def schema_head() -> str:
    """The revision this remem's schema is at, read without loading Alembic (the hook compares
    it with alembic_version): the newest migration's, named by its file, NNNN_what.py holding
    revision "NNNN" (tests/unit/test_schema_head.py holds every migration to that, and this to
    Alembic's own head)."""
    if not _head:
        versions = os.path.join(migrations_dir(), "versions")
        numbered = [name[:4] for name in os.listdir(versions) if _is_migration(name)]
        if not numbered:
            raise FileNotFoundError(f"{versions} holds no migration")
        _head.append(max(numbered))
    return _head[0]


def _is_migration(name: str) -> bool:
    return name.endswith(".py") and name[:4].isdigit() and name[4:5] == "_"


def apply_pragmas(
    connection: sqlite3.Connection, busy_timeout_s: float, hot_path: bool = False
) -> None:
    """Set every PRAGMA. The hook (hot_path) skips journal_mode: it is persistent in the file,
    and re-asserting it costs the hook most of a millisecond."""
    connection.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
    for name, value in PRAGMAS:
        if not (hot_path and name == "journal_mode"):
            connection.execute(f"PRAGMA {name} = {value}")


def connect(
    path: str, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S, hot_path: bool = False
) -> sqlite3.Connection:
    """An autocommit connection to an existing database file; never creates one."""
    connection = sqlite3.connect(
        f"file:{path}?mode=rw", uri=True, timeout=busy_timeout_s, isolation_level=None
    )
    try:
        apply_pragmas(connection, busy_timeout_s, hot_path)
    except sqlite3.Error:
        connection.close()
        raise
    return connection


def wal_past_bound(path: str) -> bool:
    """Whether the WAL has grown past WAL_BOUND_BYTES."""
    try:
        return os.stat(f"{path}-wal").st_size > WAL_BOUND_BYTES
    except OSError:
        return False


def connect_read_only(
    path: str, busy_timeout_s: float, immutable: bool = False
) -> sqlite3.Connection:
    """A read-only connection to an existing database file, inside one transaction: every
    statement sees the same state (the SessionStart digest, remem.db.snapshot). Immutable, it
    reads the main file alone, without locks or the WAL: what a full disk still allows."""
    query = "mode=ro&immutable=1" if immutable else "mode=ro"
    connection = sqlite3.connect(
        f"file:{path}?{query}", uri=True, timeout=busy_timeout_s, isolation_level=None
    )
    try:
        connection.execute("BEGIN")
    except sqlite3.Error:
        connection.close()
        raise
    return connection


def executor(connection: sqlite3.Connection) -> Execute:
    """`execute(sql, params) -> rows` over a stdlib connection."""

    def execute(sql: str, params: dict[str, object]) -> list[tuple[object, ...]]:
        return connection.execute(sql, params).fetchall()

    return execute
