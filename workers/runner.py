"""The worker: run_once() is the unit of work (claim one task, process it); reap, ingest and
maintain are the duties around it. workers/loop.py is the one loop over them, for a burst and
for the daemon alike."""

from __future__ import annotations

import gc
import logging
import os
import socket
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine

from remem.capture.ingest import ingest_spool
from remem.config import Settings
from remem.db.engine import checkpoint, checkpoint_apart, sqlite_file
from remem.db.file_identity import DatabaseFile
from remem.errors import DatabaseVanished, PermanentTaskError
from remem.faults import crash_point
from remem.procedures import rebuild
from remem.procedures.promote import mark_stale, resolve_late
from remem.queue import heartbeats
from remem.queue import store as queue
from workers.handlers import Handler, default_handlers

log = logging.getLogger("remem.worker")
WRITE_LOCKS_KEPT = 10_000
# What a completing transaction's claim of the next task found when the queue had none due.
NOTHING_DUE = "nothing due"


@contextmanager
def collection_put_off() -> Iterator[None]:
    """Python's cycle collector waits while the write lock is held: a full collection of a
    worker's heap takes 15 ms or more, which every hook waiting for the lock would wait too.
    One due meanwhile runs at the first allocation after the commit."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Interruptible:
    """A DBAPI connection whose running statement can be stopped from another thread: sqlite3
    interrupts it, psycopg asks the server to cancel it. Either way the statement fails and
    its transaction rolls back."""

    def __init__(self, dbapi_connection: Any) -> None:
        self.dbapi_connection = dbapi_connection

    def interrupt(self) -> None:
        stop = getattr(self.dbapi_connection, "interrupt", None)
        if stop is None:
            stop = self.dbapi_connection.cancel_safe
        stop()


@dataclass(frozen=True)
class InHand:
    """The task being processed and, once its apply transaction has begun, that transaction's
    connection."""

    task: queue.ClaimedTask
    connection: Interruptible | None = None


@dataclass
class Worker:
    engine: Engine
    settings: Settings
    worker_id: str = field(default_factory=new_worker_id)
    handlers: dict[str, Handler] = field(default_factory=default_handlers)
    clock: Callable[[], float] = time.time
    stats: Counter[str] = field(default_factory=Counter)
    # What the worker holds, published whole for the daemon's other threads to read: the
    # heartbeat renews its lease, a stopping daemon interrupts its statement or releases it.
    in_hand: InHand | None = None
    stopping: Callable[[], bool] = lambda: False
    # Seconds each window's apply held the write lock, from BEGIN IMMEDIATE to COMMIT (the
    # newest ones; the benchmark reads them).
    write_lock_s: deque[float] = field(default_factory=lambda: deque(maxlen=WRITE_LOCKS_KEPT))
    # Which queue the log lines speak of: "" for this machine's, "team " for the team's.
    queue_name: str = ""
    # Claim only the tasks of this project's sessions (a team worker's project; None: any).
    project_id: int | None = None
    # Whether the last claim found a task: the next one goes straight for the write lock.
    draining: bool = False
    # Inside `claiming_ahead` (a loop's drain), each task's completing transaction claims the
    # next when this says so: what it claimed, or NOTHING_DUE when it found none (run_once then
    # returns False).
    claims_ahead: Callable[[], bool] | None = None
    claimed_ahead: queue.ClaimedTask | str | None = None
    # SQLite: the worker's commits never checkpoint; `checkpoint`, a duty of the loop, does.
    checkpoints: bool = field(init=False)
    # SQLite: the file the engine opened, which its path may stop naming.
    database: DatabaseFile | None = field(init=False)

    def __post_init__(self) -> None:
        self.checkpoints = checkpoint_apart(self.engine)
        path = sqlite_file(self.engine)
        self.database = DatabaseFile.opened(path) if path else None

    def database_change(self) -> str | None:
        """None while the database's path names the file opened at start; else what became
        of that file."""
        return None if self.database is None else self.database.change()

    def check_database(self) -> None:
        change = self.database_change()
        if self.database is not None and change is not None:
            raise DatabaseVanished(self.database.path, change)

    def checkpoint(self) -> None:
        """Move the WAL into the database file, outside any write transaction: the loop does
        it between tasks and after its other duties."""
        if self.checkpoints:
            checkpoint(self.engine)  # one that fails is logged; the next one tries again

    def run_once(self) -> bool:
        """Claim one due task and process it. False when there was nothing to do."""
        task = self.claim()
        if task is None:
            return False
        self.run_task(task)
        return True

    def claim(self) -> queue.ClaimedTask | None:
        ahead, self.claimed_ahead = self.claimed_ahead, None
        if ahead is not None:
            task = ahead if isinstance(ahead, queue.ClaimedTask) else None
            self.draining = task is not None
            return task
        task = queue.claim_next(
            self.engine,
            self.worker_id,
            self.clock(),
            self.settings.lease_s,
            self.project_id,
            look_first=not self.draining,
        )
        self.draining = task is not None
        return task

    @contextmanager
    def claiming_ahead(self, when: Callable[[], bool] = lambda: True) -> Iterator[None]:
        """For a loop that drains the queue: each task's completing transaction claims the next
        one too, `when` it says so (one commit per task instead of two). A task claimed ahead
        and not run when the loop ends is released; should the loop fail, it stays in hand, for
        the next run_once, or for whoever finds its lease run out."""
        self.claims_ahead = when
        try:
            yield
        finally:
            self.claims_ahead = None
        ahead, self.claimed_ahead = self.claimed_ahead, None
        if isinstance(ahead, queue.ClaimedTask):
            queue.release(self.engine, ahead, self.clock())
            self.draining = False

    def run_task(self, task: queue.ClaimedTask) -> None:
        self.in_hand = InHand(task)
        try:
            self._process(task)
        finally:
            self.in_hand = None

    def _process(self, task: queue.ClaimedTask) -> None:
        try:
            handler = self.handlers.get(task.kind)
            if handler is None:
                raise PermanentTaskError(f"no handler for task kind {task.kind!r}")
            crash_point("prepare")
            prepared = handler.prepare(self.engine, task, self.settings)
            with collection_put_off(), self.engine.begin() as connection:
                # BEGIN IMMEDIATE has returned: the write lock is held from here to COMMIT.
                locked_at = time.perf_counter()
                dbapi_connection = connection.connection.dbapi_connection
                self.in_hand = InHand(task, Interruptible(dbapi_connection))
                now = self.clock()
                result = handler.apply(connection, task, prepared, self.settings, now)
                crash_point("apply")
                queue.complete(connection, task, now)
                crash_point("complete")
                ahead = self._claim_ahead(connection, now)
            held_s = time.perf_counter() - locked_at
            self.write_lock_s.append(held_s)
            self.claimed_ahead = ahead
        except queue.LeaseLost:
            self.stats["leases_lost"] += 1
            log.warning(
                "lost the lease of %stask %s; its window was rolled back",
                self.queue_name,
                task.id,
                extra={"action": "complete", "task_id": task.id},
            )
        except Exception as exc:  # any handler error is the task's, never the worker's
            if self.stopping():
                # Interrupted by our own shutdown: not the task's failure, no attempt consumed.
                queue.release(self.engine, task, self.clock())
                self.stats["tasks_released"] += 1
                return
            permanent = isinstance(exc, PermanentTaskError)
            error = f"{type(exc).__name__}: {exc}"
            outcome = queue.retry_or_fail(
                self.engine, task, error, self.clock(), self.settings.max_attempts, permanent
            )
            self.stats[f"tasks_{outcome}"] += 1
        else:
            log.info(
                "completed %stask %s",
                self.queue_name,
                task.id,
                extra={"action": "complete", "task_id": task.id, "write_lock_ms": held_s * 1e3},
            )
            if isinstance(ahead, queue.ClaimedTask):
                queue.claimed(ahead)
            self.stats["tasks_done"] += 1
            self.stats.update(result)
            if result.get("promoted"):
                log.info(
                    "promoted %s procedure(s) from %stask %s",
                    result["promoted"],
                    self.queue_name,
                    task.id,
                    extra={"action": "promote_procedure", "task_id": task.id},
                )

    def _claim_ahead(self, connection: Connection, now: float) -> queue.ClaimedTask | str | None:
        """The next task, claimed in the transaction that completes this one, inside
        `claiming_ahead` unless the worker is stopping."""
        if self.claims_ahead is None or not self.claims_ahead() or self.stopping():
            return None
        task = queue.claim_in(
            connection, self.worker_id, now, self.settings.lease_s, self.project_id
        )
        return NOTHING_DUE if task is None else task

    def ingest(self) -> None:
        report = ingest_spool(self.engine, self.settings.spool_dir, self.check_database)
        self.stats["spooled_events_ingested"] += report.events_stored
        if report.files:
            log.info(
                "ingested %s spooled event(s)",
                report.events_stored,
                extra={"action": "ingest_spool", **report.as_dict()},
            )

    def import_entire(self) -> None:
        """The new Entire checkpoints of the known projects' repositories, imported."""
        from remem.agent.read import read_projects
        from remem.db.snapshot import engine_reader
        from remem.transcripts import entire_current
        from remem.transcripts.importer import ImportOptions, default_since_s

        with engine_reader(self.engine) as execute:
            roots = read_projects(execute)
        now = self.clock()
        options = ImportOptions(since_at=now - default_since_s(self.settings.max_age_s))
        done = entire_current.refresh(self.engine, self.settings.home, roots, options, now)
        self.stats["entire_events_imported"] += done.events_new
        for refused in done.refused:
            log.warning("%s", refused, extra={"action": "import_entire"})
        if done.repositories:
            log.info(
                "imported %s event(s) from the new checkpoints of %s repository(ies)",
                done.events_new,
                done.repositories,
                extra={"action": "import_entire", "session_copies": done.session_copies},
            )

    def run_pending_jobs(self) -> None:
        """Work owed to the database as a whole: after a migration, re-deriving procedures."""
        if not rebuild.pending(self.engine):
            return
        report = rebuild.rebuild(self.engine, self.clock(), self.settings.ignore_commands)
        self.stats["rebuilds"] += 1
        log.info(
            "rebuilding procedures: %s task(s) rewound",
            report.tasks_rewound,
            extra={"action": "rebuild_procedures", **report.as_dict()},
        )

    def reap(self) -> None:
        self.stats["leases_reaped"] += len(
            queue.reap_expired_leases(self.engine, self.clock(), self.settings.max_attempts)
        )

    def maintain(self) -> None:
        heartbeats.prune(self.engine, self.clock())
        late = resolve_late(self.engine, self.settings, self.clock())
        self.stats["resolved_late"] += late["resolved_late"]
        result = mark_stale(self.engine, self.settings, self.clock())
        self.stats["stale"] += result["stale"]
        self.stats["broken"] += result["broken"]
        self.stats["aged_groups"] += result["aged_groups"]
