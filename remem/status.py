"""What `remem status` reports: a read-only look at the home, database, queue and spool.

Stdlib only on a SQLite home: the command answers in the time of an interpreter start."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from remem.capture import spool
from remem.capture.event import DROPS_BY_DESIGN
from remem.config import Settings
from remem.db import snapshot
from remem.db.snapshot import Execute
from remem.db.sqlite import SCHEMA_HEAD
from remem.db.vocabulary import PROCEDURE_STATUSES as PROCEDURE_STATUS_NAMES
from remem.db.vocabulary import TASK_STATUSES as TASK_STATUS_NAMES
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


def _worker_health(execute: Execute, settings: Settings, now: float) -> dict[str, Any]:
    beats = heartbeats.read(execute)
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
    lock_free = heartbeats.lock_is_free(heartbeats.lock_path(settings.sqlite_file, settings.home))
    return {
        "state": newest.health(now, lock_free),
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
TASK_STATUSES = "SELECT status, count(*) FROM extraction_tasks GROUP BY status"
OLDEST_PENDING = "SELECT min(updated_at) FROM extraction_tasks WHERE status = 'pending'"
PROCEDURE_STATUSES = "SELECT status, count(*) FROM procedures GROUP BY status"
DROP_REASONS = "SELECT reason, count(*) FROM dropped_payloads GROUP BY reason"


def collect_status(settings: Settings, now: float | None = None) -> dict[str, Any]:
    """Read in one snapshot with the stdlib (see remem.db.snapshot); an old schema is
    reported, not refused."""
    now = time.time() if now is None else now
    with snapshot.read_snapshot(settings, require_current_schema=False) as execute:

        def scalar(sql: str, params: dict[str, Any] | None = None) -> Any:
            return execute(sql, params or {})[0][0]

        revision = snapshot.revision(execute)
        events = scalar("SELECT count(*) FROM captured_events")
        drops = {str(reason): int(count) for reason, count in execute(DROP_REASONS, {})}
        tasks = {status: int(count) for status, count in execute(TASK_STATUSES, {})}
        unresolved = scalar(UNRESOLVED_CODEX, {"before": now - 86_400})
        oldest_pending = scalar(OLDEST_PENDING)
        procedures = {status: int(count) for status, count in execute(PROCEDURE_STATUSES, {})}
        worker = _worker_health(execute, settings, now)
    return {
        "home": settings.home,
        "database": snapshot.database_label(settings),
        "schema_revision": revision,
        "schema_head": SCHEMA_HEAD,
        "events": events,
        # Drops that lost something the memory needs; kept events with a cut output apart.
        "dropped_payloads": sum(n for reason, n in drops.items() if reason not in DROPS_BY_DESIGN),
        "outputs_cut": drops.get("output_cut", 0),
        "unresolved_codex_events": unresolved,
        "tasks": {status: tasks.get(status, 0) for status in TASK_STATUS_NAMES},
        "oldest_pending_age_s": None if oldest_pending is None else round(now - oldest_pending, 1),
        "procedures": {status: procedures.get(status, 0) for status in PROCEDURE_STATUS_NAMES},
        "worker": worker,
        "spool": _spool_backlog(settings.spool_dir),
        "database_access": _database_access(settings),
    }


def render(report: dict[str, Any]) -> str:
    """The report as `remem status` prints it: one labelled line per figure."""
    tasks = report["tasks"]
    lag = report["oldest_pending_age_s"]
    lines = [
        ("home", report["home"]),
        ("database", report["database"]),
        ("schema", f"{report['schema_revision']} (head {report['schema_head']})"),
        ("events", report["events"]),
        ("dropped payloads", _drops_line(report["dropped_payloads"], report["outputs_cut"])),
        ("codex outcomes never resolved", report["unresolved_codex_events"]),
        ("tasks", ", ".join(f"{count} {name}" for name, count in tasks.items())),
        ("oldest pending", "-" if lag is None else f"{lag:.0f}s"),
        ("procedures", ", ".join(f"{n} {name}" for name, n in report["procedures"].items())),
        ("worker", _worker_line(report["worker"])),
        ("spool", _spool_line(report["spool"])),
    ]
    if report["database_access"]["writable"] is False:
        lines.append(
            (
                "problem",
                f"{report['database_access']['file']} is not writable: events "
                "are spooled and the worker cannot apply them; give your user "
                "write access to the file and its folder",
            )
        )
    return "".join(f"{label:>17}  {value}\n" for label, value in lines)


def _drops_line(count: int, cut: int) -> str:
    text = f"{count} (see `remem drops`)" if count else "0"
    return text + (f"; {cut} kept with their output cut" if cut else "")


def _spool_line(spool: dict[str, Any]) -> str:
    text = f"{spool['pending']} waiting, {spool['dead_letters']} dead letters"
    if spool["pending"] and spool["last_reason"]:
        text += f" (last spooled because: {spool['last_reason']})"
    if spool["overflow_dropped"]:
        text += f"; {spool['overflow_dropped']} dropped: {spool['overflow_reason']}"
    return text


def _worker_line(worker: dict[str, Any]) -> str:
    state = worker["state"]
    if state == "not running":
        return "not running: start it with `remem worker` (or `remem service install`)"
    if state == "dead":
        return (
            f"dead: pid {worker['pid']} is gone (last heartbeat {worker['heartbeat_age_s']:.0f}s "
            "ago); start it with `remem worker`"
        )
    task = worker["current_task_id"]
    return (
        f"{state}, pid {worker['pid']}, up {worker['uptime_s']:.0f}s, "
        f"heartbeat {worker['heartbeat_age_s']:.0f}s ago"
        + (f", working on task {task}" if task else ", idle")
    )
