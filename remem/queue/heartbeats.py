"""Worker heartbeats: who is working on the queue, and whether they are alive."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, text

from remem.db.engine import READ_ONLY

HEARTBEAT_INTERVAL_S = 5.0
STALE_AFTER_INTERVALS = 3
PRUNE_AFTER_S = 86400.0

BEAT = """
INSERT INTO worker_heartbeats (worker_id, pid, hostname, started_at, heartbeat_at,
    current_task_id)
VALUES (:worker_id, :pid, :hostname, :started_at, :now, :current_task_id)
ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at,
    current_task_id = excluded.current_task_id
"""


@dataclass(frozen=True)
class Heartbeat:
    worker_id: str
    pid: int
    hostname: str
    started_at: float
    heartbeat_at: float
    current_task_id: int | None

    def health(self, now: float) -> str:
        fresh = now - self.heartbeat_at <= HEARTBEAT_INTERVAL_S * STALE_AFTER_INTERVALS
        return "running" if fresh else "stale"


def beat(
    engine: Engine,
    worker_id: str,
    pid: int,
    hostname: str,
    started_at: float,
    now: float,
    current_task_id: int | None,
) -> None:
    params = {
        "worker_id": worker_id,
        "pid": pid,
        "hostname": hostname,
        "started_at": started_at,
        "now": now,
        "current_task_id": current_task_id,
    }
    with engine.begin() as connection:
        connection.execute(text(BEAT), params)


def remove(engine: Engine, worker_id: str) -> None:
    with engine.begin() as connection:
        connection.execute(
            text("DELETE FROM worker_heartbeats WHERE worker_id = :id"), {"id": worker_id}
        )


def prune(engine: Engine, now: float) -> int:
    with engine.begin() as connection:
        return int(
            connection.execute(
                text("DELETE FROM worker_heartbeats WHERE heartbeat_at < :cutoff"),
                {"cutoff": now - PRUNE_AFTER_S},
            ).rowcount
        )


def list_heartbeats(engine: Engine) -> list[Heartbeat]:
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        rows = connection.execute(
            text(
                "SELECT worker_id, pid, hostname, started_at, heartbeat_at, current_task_id "
                "FROM worker_heartbeats ORDER BY heartbeat_at DESC"
            )
        )
        return [Heartbeat(*row) for row in rows]
