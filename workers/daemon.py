"""`remem worker`: the daemon, the loop of workers/loop.py on a timer.

APScheduler is the timer: one job, the loop's tick, every poll interval, on an executor of ONE
thread, so the duties and the drain never run side by side and what the loop keeps is its own.
Beside it the heartbeat beats on a thread of its own, from what the worker publishes whole
(`Worker.in_hand`, a frozen record): a long task keeps its lease and `remem status` sees the
daemon alive. The main thread waits for the stop flag, which the signal handlers only set;
then the task in hand is finished within the shutdown timeout, or interrupted and released.
A database file deleted, moved or replaced under the daemon stops it too, before it writes
again: it logs `database_vanished`, leaves the spool to the next daemon, and exits 1.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime
from types import FrameType

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import Engine

from remem.errors import DatabaseVanished, RememError
from remem.queue import heartbeats
from remem.queue import store as queue
from workers.loop import Loop, stop_on
from workers.runner import InHand

log = logging.getLogger("remem.worker")

STOP_CHECK_INTERVAL_S = 0.2
INTERRUPT_GRACE_S = 2.0
HEARTBEAT_JOIN_S = 5.0


class WorkerAlreadyRunning(RememError):
    """Its own exit code, so that `make run` tells it from a failure."""

    exit_code = 3

    def __init__(self, pid: str) -> None:
        super().__init__(
            f"remem worker already running (pid {pid or 'unknown'}): nothing to start; "
            "`remem status` shows it"
        )


class StopFlag:
    """Set by SIGTERM/SIGINT. A second SIGINT means "now": the process exits at once, and the
    lease it held expires and is reaped by the next worker."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT and self.event.is_set():
            os._exit(130)
        self.event.set()

    def is_set(self) -> bool:
        return self.event.is_set()

    def set(self) -> None:
        self.event.set()


def acquire_lock(path: str) -> int:
    """One daemon per database: an flock on a file beside it, holding our pid."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(descriptor, 32).decode(errors="replace").strip()
        os.close(descriptor)
        raise WorkerAlreadyRunning(holder) from None
    os.ftruncate(descriptor, 0)
    os.write(descriptor, str(os.getpid()).encode())
    return descriptor


class Heartbeat:
    """The daemon's heartbeat row, and the lease of the task in hand renewed, every interval on
    a thread of its own. It reads nothing but `in_hand()`, a frozen record, and constants."""

    def __init__(
        self,
        engine: Engine,
        worker_id: str,
        lease_s: float,
        in_hand: Callable[[], InHand | None],
        may_write: Callable[[], bool] = lambda: True,
    ) -> None:
        self.engine = engine
        self.worker_id = worker_id
        self.lease_s = lease_s
        self.in_hand = in_hand
        self.may_write = may_write
        self.started_at = time.time()
        # Often enough that a short lease is renewed well before it runs out.
        self.interval_s = min(heartbeats.HEARTBEAT_INTERVAL_S, lease_s / 3)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="remem-heartbeat", daemon=True)

    def start(self) -> None:
        self.beat()
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(HEARTBEAT_JOIN_S)

    def beat(self) -> None:
        if not self.may_write():
            return
        in_hand = self.in_hand()
        task = in_hand.task if in_hand is not None else None
        now = time.time()
        heartbeats.beat(
            self.engine,
            heartbeats.Heartbeat(
                self.worker_id,
                os.getpid(),
                socket.gethostname(),
                self.started_at,
                now,
                task.id if task else None,
            ),
        )
        if task is not None:
            queue.renew_lease(self.engine, task, now, self.lease_s)

    def _run(self) -> None:
        while not self._stopped.wait(self.interval_s):
            try:
                self.beat()
            except Exception:  # the next beat tries again; `remem status` shows the age
                log.exception("heartbeat failed", extra={"action": "heartbeat"})


class Daemon:
    def __init__(self, loop: Loop, stop: StopFlag) -> None:
        self.loop = loop
        self.worker = worker = loop.worker
        self.stop = stop
        # What became of the database file, once the worker saw it was no longer at its path.
        self.vanished: str | None = None
        stop_on(self._stopping, worker, loop.team)
        settings = worker.settings
        self.lock_path = heartbeats.lock_path(settings.sqlite_file, settings.home)
        self.shutdown_timeout_s = settings.shutdown_timeout_s
        self.heartbeat = Heartbeat(
            worker.engine,
            worker.worker_id,
            settings.lease_s,
            lambda: worker.in_hand,
            lambda: self.vanished is None and worker.database_change() is None,
        )
        # Held by a tick while it runs: the main thread takes it to know the tick is over.
        self.ticking = threading.Lock()
        self.scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(1)},
            job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": None},
        )

    def tick(self) -> None:
        with self.ticking:
            if not self._stopping():
                self.loop.tick()

    def _stopping(self) -> bool:
        """Asked before every duty and task: the stop flag, or the database file gone from
        its path (deleted, moved or replaced), which stops the daemon before it writes again."""
        if self.stop.is_set():
            return True
        change = self.worker.database_change()
        if change is None:
            return False
        self.vanished = change
        log.error(
            "the database file %s was %s: stopping without writing to it",
            self.worker.settings.sqlite_file,
            change,
            extra={"action": "database_vanished"},
        )
        self.stop.set()
        return True

    def run(self, on_started: Callable[[], None] | None = None) -> int:
        descriptor = acquire_lock(self.lock_path)
        try:
            if on_started is not None:
                on_started()
            log.info(
                "worker %s started (pid %s)",
                self.worker.worker_id,
                os.getpid(),
                extra={"action": "worker_start"},
            )
            # We hold the lock now: a daemon of this machine that left a heartbeat behind
            # (killed, or its machine rebooted) is gone, and says so no longer.
            heartbeats.clear_dead(
                self.worker.engine,
                self.worker.worker_id,
                socket.gethostname(),
                lock_is_ours=self.worker.settings.sqlite_file is not None,
            )
            self.heartbeat.start()
            if not self.stop.is_set():
                # The first tick runs at once and recovers before the first claim: it reaps the
                # leases of a crashed worker, ingests the spool, re-derives what a migration
                # asked for.
                self.scheduler.add_job(
                    self.tick,
                    "interval",
                    seconds=self.worker.settings.poll_interval_s,
                    id="tick",
                    name="tick",
                    next_run_time=datetime.now().astimezone(),
                )
                self.scheduler.start()
                while not self.stop.is_set():
                    time.sleep(STOP_CHECK_INTERVAL_S)
                log.info(
                    "stopping: finishing the task in hand (a second Ctrl-C stops at once)",
                    extra={"action": "worker_stopping"},
                )
                self.scheduler.shutdown(wait=False)
            code = self._finish()
        finally:
            os.close(descriptor)
        if self.vanished is not None:
            raise DatabaseVanished(self.worker.settings.sqlite_file or "", self.vanished)
        return code

    def _best_effort(self, action: str, operation: Callable[[], object]) -> None:
        """A handler stuck in Python inside its transaction keeps the write lock: then the task
        stays leased until the lease expires and a reaper returns it, and we still exit."""
        try:
            operation()
        except Exception:
            log.exception("could not %s while stopping", action, extra={"action": action})

    def _finish(self) -> int:
        finished = self.ticking.acquire(timeout=self.shutdown_timeout_s)
        if not finished:
            # A statement outlasting the timeout is interrupted: its transaction rolls back and
            # the worker releases the task (see Worker._process).
            in_hand = self.worker.in_hand
            if in_hand is not None and in_hand.connection is not None:
                in_hand.connection.interrupt()
            finished = self.ticking.acquire(timeout=INTERRUPT_GRACE_S)
        # Stopped before the task is released: a beat after it would renew its lease.
        self.heartbeat.stop()
        in_hand = self.worker.in_hand
        # A database file gone from its path is written no more: its lease expires, and its
        # heartbeat row went with it.
        writes = self.vanished is None
        if writes and not finished and in_hand is not None:
            task = in_hand.task
            self._best_effort(
                "release", lambda: queue.release(self.worker.engine, task, time.time())
            )
        if writes:
            self._best_effort(
                "heartbeat", lambda: heartbeats.remove(self.worker.engine, self.worker.worker_id)
            )
        if self.loop.team is not None:
            self._best_effort("close the team link", self.loop.team.close)
        log.info(
            "worker %s stopped (%s)",
            self.worker.worker_id,
            "task finished" if finished else "task abandoned to its lease",
            extra={"action": "worker_stop"},
        )
        if not finished:
            logging.shutdown()
            # The tick's thread cannot be joined; ending the process rolls its transaction back.
            os._exit(0 if writes else DatabaseVanished.exit_code)
        # A tick the timer queued before it stopped finds the flag set and returns.
        self.ticking.release()
        return 0
