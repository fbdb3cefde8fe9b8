"""Worker heartbeats: who is working on the queue, and whether they are alive.

A daemon beats every few seconds while it holds the lock beside its database. A heartbeat whose
daemon ran on this machine is judged at once from the process table and that lock (a daemon
killed with SIGKILL is dead the moment it is gone); one from another machine only by its age.
Reads take an `execute(sql, params)` callable, so `remem status` answers with the stdlib.
"""

from __future__ import annotations

import fcntl
import os
import socket
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from remem.db.snapshot import Execute


HEARTBEAT_INTERVAL_S = 5.0
STALE_AFTER_INTERVALS = 3
PRUNE_AFTER_S = 86400.0

BEAT = """
INSERT INTO worker_heartbeats (worker_id, pid, hostname, started_at, heartbeat_at,
    current_task_id)
VALUES (:worker_id, :pid, :hostname, :started_at, :heartbeat_at, :current_task_id)
ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at,
    current_task_id = excluded.current_task_id
"""
REMOVE = "DELETE FROM worker_heartbeats WHERE worker_id = :id"
LIST = (
    "SELECT worker_id, pid, hostname, started_at, heartbeat_at, current_task_id "
    "FROM worker_heartbeats ORDER BY heartbeat_at DESC"
)


def lock_path(sqlite_file: str | None, home: str) -> str:
    """The daemon's lock: beside the SQLite file, one daemon per database."""
    return (sqlite_file or os.path.join(home, "remem")) + ".lock"


def lock_is_free(path: str) -> bool | None:
    """Whether no daemon holds the lock (None: it cannot be told). Opens it read-only: looking
    creates nothing."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return True
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    finally:
        os.close(descriptor)  # closing releases a lock we took
    return True


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


@dataclass(frozen=True)
class Heartbeat:
    worker_id: str
    pid: int
    hostname: str
    started_at: float
    heartbeat_at: float
    current_task_id: int | None

    def health(self, now: float, lock_free: bool | None = None) -> str:
        """running, stale (silent for three beats, on a machine we cannot see) or dead (its
        process is gone or its lock is free, on this machine)."""
        if self.hostname == socket.gethostname() and (
            lock_free is True or not process_exists(self.pid)
        ):
            return "dead"
        fresh = now - self.heartbeat_at <= HEARTBEAT_INTERVAL_S * STALE_AFTER_INTERVALS
        return "running" if fresh else "stale"


def read(execute: Execute) -> list[Heartbeat]:
    return [Heartbeat(*row) for row in execute(LIST, {})]


def _write(engine: Engine, sql: str, params: dict[str, Any]) -> int:
    from sqlalchemy import text

    with engine.begin() as connection:
        return int(connection.execute(text(sql), params).rowcount or 0)


def beat(engine: Engine, heartbeat: Heartbeat) -> None:
    _write(engine, BEAT, asdict(heartbeat))


def remove(engine: Engine, worker_id: str) -> None:
    _write(engine, REMOVE, {"id": worker_id})


def clear_dead(engine: Engine, worker_id: str, hostname: str, lock_is_ours: bool) -> int:
    """At a daemon's start: forget the heartbeats of this machine's daemons that are gone. When
    the lock we hold is the database's own (SQLite), every other daemon of this machine on it is
    gone; otherwise those whose process no longer exists."""
    from sqlalchemy import text

    with engine.begin() as connection:
        rows = connection.execute(
            text("SELECT worker_id, pid FROM worker_heartbeats WHERE hostname = :host"),
            {"host": hostname},
        ).all()
        gone = [
            other
            for other, pid in rows
            if other != worker_id and (lock_is_ours or not process_exists(pid))
        ]
        for other in gone:
            connection.execute(text(REMOVE), {"id": other})
    return len(gone)


def prune(engine: Engine, now: float) -> int:
    return _write(
        engine,
        "DELETE FROM worker_heartbeats WHERE heartbeat_at < :cutoff",
        {"cutoff": now - PRUNE_AFTER_S},
    )


def list_heartbeats(engine: Engine) -> list[Heartbeat]:
    from remem.db.engine import READ_ONLY, executor

    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        return read(executor(connection))


def running_pids(engine: Engine, now: float) -> list[int]:
    """The pids of the daemons running now."""
    return [beat.pid for beat in list_heartbeats(engine) if beat.health(now) == "running"]
