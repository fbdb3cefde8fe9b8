"""`remem worker`: the long-running daemon, an APScheduler loop over Worker.run_once().

Jobs (in-memory job store, max_instances=1, coalesce=True): drain the queue every poll_interval
(a drain that finds work keeps going until the queue is empty), heartbeat and lease renewal,
reap expired leases, ingest the spool, maintenance; with a team database, ship, team promote
(where enabled) and pull (workers/team.py). Signal handlers only set a flag; a watcher
job turns it into a scheduler shutdown, and the task in hand is finished or its lease released.
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
from apscheduler.schedulers.blocking import BlockingScheduler

from remem.errors import RememError
from remem.queue import heartbeats
from remem.queue import store as queue
from workers.runner import Worker
from workers.team import TeamJobs

log = logging.getLogger("remem.worker")

REAP_INTERVAL_S = 30.0
INGEST_INTERVAL_S = 10.0
MAINTENANCE_INTERVAL_S = 600.0
STOP_CHECK_INTERVAL_S = 0.5
SHUTDOWN_TIMEOUT_S = 10.0
INTERRUPT_GRACE_S = 2.0


class WorkerAlreadyRunning(RememError):
    def __init__(self, pid: str) -> None:
        super().__init__(f"remem worker already running (pid {pid or 'unknown'})")


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


class Daemon:
    def __init__(
        self,
        worker: Worker,
        stop: StopFlag,
        lock_path: str,
        shutdown_timeout_s: float = SHUTDOWN_TIMEOUT_S,
        team: TeamJobs | None = None,
    ) -> None:
        self.worker = worker
        self.team = team
        self.stop = stop
        worker.stopping = stop.is_set
        self.lock_path = lock_path
        self.shutdown_timeout_s = shutdown_timeout_s
        self.idle = threading.Event()
        self.idle.set()
        self.started_at = time.time()
        self.scheduler = BlockingScheduler(
            executors={"default": ThreadPoolExecutor(7)},
            job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": None},
        )

    def drain(self) -> None:
        if self.stop.is_set():
            return
        self.idle.clear()
        try:
            while not self.stop.is_set() and self.worker.run_once():
                pass
        finally:
            self.idle.set()

    def heartbeat(self) -> None:
        task = self.worker.current_task
        now = time.time()
        heartbeats.beat(
            self.worker.engine,
            self.worker.worker_id,
            os.getpid(),
            socket.gethostname(),
            self.started_at,
            now,
            task.id if task else None,
        )
        if task is not None:
            queue.renew_lease(self.worker.engine, task, now, self.worker.settings.lease_s)

    def _guarded(self, name: str, job: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            try:
                job()
            except Exception:  # a failing job is logged and retried at its next run
                log.exception("%s failed", name, extra={"action": name})

        return run

    def _watch_stop(self) -> None:
        if self.stop.is_set() and self.scheduler.running:
            log.info(
                "stopping: finishing the task in hand (a second Ctrl-C stops at once)",
                extra={"action": "worker_stopping"},
            )
            self.scheduler.shutdown(wait=False)

    def _schedule(self) -> None:
        poll = self.worker.settings.poll_interval_s
        jobs: list[tuple[str, Callable[[], object], float]] = [
            ("drain", self.drain, poll),
            # Often enough that a short lease is renewed well before it runs out.
            (
                "heartbeat",
                self.heartbeat,
                min(heartbeats.HEARTBEAT_INTERVAL_S, self.worker.settings.lease_s / 3),
            ),
            ("reap_expired_leases", self.worker.reap, REAP_INTERVAL_S),
            ("ingest_spool", self.worker.ingest, INGEST_INTERVAL_S),
            ("maintenance", self.worker.maintain, MAINTENANCE_INTERVAL_S),
        ]
        if self.team is not None:
            sync = self.worker.settings.team_sync_interval_s
            jobs.append(("team_ship", self.team.ship, sync))
            if self.worker.settings.team_promote:
                jobs.append(("team_promote", self.team.promote, poll))
            jobs.append(("team_pull", self.team.pull, sync))
        for name, job, seconds in jobs:
            # Maintenance waits one interval; the others run at once, then on their schedule.
            first = {} if name == "maintenance" else {"next_run_time": datetime.now().astimezone()}
            self.scheduler.add_job(
                self._guarded(name, job), "interval", seconds=seconds, id=name, name=name, **first
            )
        self.scheduler.add_job(
            self._watch_stop, "interval", seconds=STOP_CHECK_INTERVAL_S, id="watch_stop"
        )

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
            self.heartbeat()
            # Recover before the first claim: leases of a crashed worker, events spooled while
            # the database was unavailable, memory a migration asked to re-derive.
            self.worker.reap()
            self.worker.ingest()
            self.worker.run_pending_jobs()
            if not self.stop.is_set():
                self._schedule()
                self.scheduler.start()  # blocks until _watch_stop shuts it down
            return self._finish()
        finally:
            os.close(descriptor)

    def _best_effort(self, action: str, operation: Callable[[], object]) -> None:
        """A handler stuck in Python inside its transaction keeps the write lock: then the task
        stays leased until the lease expires and a reaper returns it, and we still exit."""
        try:
            operation()
        except Exception:
            log.exception("could not %s while stopping", action, extra={"action": action})

    def _finish(self) -> int:
        finished = self.idle.wait(self.shutdown_timeout_s)
        if not finished:
            # A statement outlasting the timeout is interrupted: its transaction rolls back and
            # the runner releases the task (see Worker._process).
            connection = self.worker.current_connection
            if connection is not None:
                connection.interrupt()
            finished = self.idle.wait(INTERRUPT_GRACE_S)
        task = self.worker.current_task
        if not finished and task is not None:
            self._best_effort(
                "release", lambda: queue.release(self.worker.engine, task, time.time())
            )
        self._best_effort(
            "heartbeat", lambda: heartbeats.remove(self.worker.engine, self.worker.worker_id)
        )
        if self.team is not None:
            self._best_effort("close the team link", self.team.close)
        log.info(
            "worker %s stopped (%s)",
            self.worker.worker_id,
            "task finished" if finished else "task abandoned to its lease",
            extra={"action": "worker_stop"},
        )
        logging.shutdown()
        if not finished:
            # The handler thread cannot be joined; ending the process rolls its transaction back.
            os._exit(0)
        return 0
