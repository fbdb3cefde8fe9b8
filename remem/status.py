"""What `remem status` reports: a read-only look at the home, database, queue and spool."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from sqlalchemy import Engine, func, select, text

from remem.capture import spool
from remem.config import Settings
from remem.db import migrate
from remem.db.engine import READ_ONLY
from remem.db.schema import captured_events, dropped_payloads, extraction_tasks
from remem.procedures.store import count_by_status
from remem.queue import heartbeats


def _spool_backlog(spool_dir: str) -> dict[str, Any]:
    pending_lines = dead_letters = 0
    last_reason = None
    if os.path.isdir(spool_dir):
        for name in sorted(os.listdir(spool_dir)):
            path = os.path.join(spool_dir, name)
            if name == spool.ACTIVE_FILE or name.startswith(spool.INGESTING_PREFIX):
                with open(path, "rb") as handle:
                    lines = handle.read().splitlines()
                pending_lines += len(lines)
                last_reason = _spool_reason(lines[-1]) if lines else last_reason
            elif name == spool.DEAD_LETTER_FILE:
                with open(path, "rb") as handle:
                    dead_letters += handle.read().count(b"\n")
    overflow = spool.read_overflow(spool_dir)
    return {
        "pending": pending_lines,
        "dead_letters": dead_letters,
        "last_reason": last_reason,
        "overflow_dropped": int(overflow.get("dropped", 0)),
        "overflow_reason": overflow.get("reason"),
    }


def _spool_reason(line: bytes) -> str | None:
    try:
        reason = json.loads(line).get("spool_reason")
    except (ValueError, AttributeError):
        return None
    return reason if isinstance(reason, str) else None


def _database_access(settings: Settings) -> dict[str, Any]:
    """Whether the hook and the worker can write the SQLite file (and its folder, for the
    -wal and -shm files beside it)."""
    path = settings.sqlite_file
    if path is None:
        return {"file": None, "writable": None}
    writable = os.access(path, os.W_OK) and os.access(os.path.dirname(path) or ".", os.W_OK)
    return {"file": path, "writable": writable}


def _worker_health(engine: Engine, now: float) -> dict[str, Any]:
    beats = heartbeats.list_heartbeats(engine)
    if not beats:
        return {
            "state": "not running",
            "pid": None,
            "uptime_s": None,
            "heartbeat_age_s": None,
            "current_task_id": None,
            "workers": 0,
        }
    newest = beats[0]
    return {
        "state": newest.health(now),
        "pid": newest.pid,
        "hostname": newest.hostname,
        "uptime_s": round(now - newest.started_at, 1),
        "heartbeat_age_s": round(now - newest.heartbeat_at, 1),
        "current_task_id": newest.current_task_id,
        "workers": len(beats),
    }


# Codex commands whose rollout never showed their end within a day: they never count.
UNRESOLVED_CODEX = (
    "SELECT count(*) FROM captured_events WHERE host = 'codex' AND kind = 'command' "
    "AND outcome = 'unknown' AND captured_at < :before"
)


def collect_status(settings: Settings, engine: Engine, now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        events = connection.execute(select(func.count()).select_from(captured_events)).scalar()
        drops = connection.execute(select(func.count()).select_from(dropped_payloads)).scalar()
        tasks: dict[str, int] = dict(
            connection.execute(
                select(extraction_tasks.c.status, func.count()).group_by(extraction_tasks.c.status)
            ).all()
        )
        unresolved = connection.execute(text(UNRESOLVED_CODEX), {"before": now - 86_400}).scalar()
        oldest_pending = connection.execute(
            select(func.min(extraction_tasks.c.updated_at)).where(
                extraction_tasks.c.status == "pending"
            )
        ).scalar()
    return {
        "home": settings.home,
        "database": engine.url.render_as_string(hide_password=True),
        "schema_revision": migrate.current_revision(engine),
        "schema_head": migrate.head_revision(),
        "events": events,
        "dropped_payloads": drops,
        "unresolved_codex_events": unresolved,
        "tasks": {
            status: int(tasks.get(status, 0))
            for status in ("pending", "processing", "done", "failed")
        },
        "oldest_pending_age_s": None if oldest_pending is None else round(now - oldest_pending, 1),
        "procedures": count_by_status(engine),
        "worker": _worker_health(engine, now),
        "spool": _spool_backlog(settings.spool_dir),
        "database_access": _database_access(settings),
    }
