"""The one worker loop: a tick of duties, then a drain (workers/work.py runs it).

A tick runs the duties that are due, then drains the queue: first those that feed it (reap
expired leases, ingest the spool, a re-derivation a migration asked for), then the drain, then
those that read what it made (maintenance, and with a team database ship, team promote, pull).
Between two tasks, and last in a tick, the WAL is checkpointed when due: the worker's commits
never do it (see `checkpoint_apart` in remem/db/engine.py), so no window holds the write lock
while the WAL is copied. (Commits that checkpointed put the write lock's p99 with hooks firing at
21.6 ms in bench/scale.py, over its 20 ms target.)
While it drains, each task's completing transaction also claims the next task (one commit per
task instead of two), unless a checkpoint comes first; a task so claimed that the drain stops
before running is released.
A burst is one tick with every duty due: it drains what is due and returns when the queue is
idle. The daemon (workers/daemon.py) runs the same tick on one thread, at every poll interval.
Everything the loop changes (the worker's stats, when each duty last ran) is its own: no other
thread writes it.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from remem.db.engine import CHECKPOINT_INTERVAL_S

if TYPE_CHECKING:
    from workers.runner import Worker
    from workers.team import TeamJobs

log = logging.getLogger("remem.worker")

REAP_INTERVAL_S = 30.0
INGEST_INTERVAL_S = 10.0
MAINTENANCE_INTERVAL_S = 600.0


@dataclass(frozen=True)
class Duty:
    name: str  # also the log action of its failure
    every_s: float  # math.inf: at start only
    run: Callable[[], object]
    # Waits one interval before its first run in the daemon (a burst runs every duty).
    deferred: bool = False


def duties(worker: Worker, team: TeamJobs | None) -> tuple[list[Duty], list[Duty]]:
    """The duties run before the drain and those run after it, in order."""
    before = [
        Duty("reap_expired_leases", REAP_INTERVAL_S, worker.reap),
        Duty("ingest_spool", INGEST_INTERVAL_S, worker.ingest),
        Duty("rebuild_procedures", math.inf, worker.run_pending_jobs),
    ]
    if worker.settings.import_entire:
        before.append(
            Duty("import_entire", worker.settings.import_entire_interval_s, worker.import_entire)
        )
    after = [Duty("maintenance", MAINTENANCE_INTERVAL_S, worker.maintain, deferred=True)]
    if team is not None:
        settings = worker.settings
        after.append(Duty("team_ship", settings.team_sync_interval_s, team.ship))
        if settings.team_promote:
            after.append(Duty("team_promote", settings.poll_interval_s, team.promote))
        after.append(Duty("team_pull", settings.team_sync_interval_s, team.pull))
    return before, after


class Loop:
    """Ticks over one worker (and its team jobs); `burst` runs every duty at each tick and
    lets a failing duty's error through, the daemon's loop logs it and goes on."""

    def __init__(
        self,
        worker: Worker,
        team: TeamJobs | None = None,
        burst: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.worker = worker
        self.team = team
        self.burst = burst
        self.clock = clock
        self.before, self.after = duties(worker, team)
        self.between = [Duty("checkpoint", CHECKPOINT_INTERVAL_S, worker.checkpoint)]
        started = clock()
        self.due_at = {
            duty.name: started + duty.every_s if duty.deferred and not burst else started
            for duty in (*self.before, *self.after, *self.between)
        }

    def tick(
        self, max_seconds: float | None = None, on_task: Callable[[], None] | None = None
    ) -> int:
        """Run the duties that are due and drain the queue; the tasks processed."""
        self._run_due(self.before)
        done = self.drain(max_seconds, on_task)
        self._run_due(self.after)
        self._run_due(self.between)
        return done

    def drain(
        self, max_seconds: float | None = None, on_task: Callable[[], None] | None = None
    ) -> int:
        """Process due tasks until there are none, the loop is stopping or time is up."""
        deadline = None if max_seconds is None else self.clock() + max_seconds
        done = 0
        with self.worker.claiming_ahead(self._no_checkpoint_next):
            while not self.worker.stopping() and (deadline is None or self.clock() < deadline):
                if not self.worker.run_once():
                    break
                done += 1
                if on_task is not None:
                    on_task()
                self._run_due(self.between)
        return done

    def _no_checkpoint_next(self) -> bool:
        """Whether no checkpoint runs before the next task. The first write after one starts the
        WAL over and cuts the file back to its bound (remem/db/sqlite.py), in its write lock:
        a claim of its own takes that, not the next window's write lock."""
        return not self.worker.checkpoints or self.clock() < self.due_at["checkpoint"]

    def _run_due(self, due: list[Duty]) -> None:
        for duty in due:
            now = self.clock()
            if self.worker.stopping() or now < self.due_at[duty.name]:
                continue
            self.due_at[duty.name] = now + duty.every_s
            if self.burst:
                duty.run()
                continue
            try:
                duty.run()
            except Exception:  # a failing duty is logged and runs again when next due
                log.exception("%s failed", duty.name, extra={"action": duty.name})

    def stats(self) -> Counter[str]:
        total = Counter(self.worker.stats)
        if self.team is not None:
            total.update(self.team.stats)
        return total


def stop_on(stopping: Callable[[], bool], worker: Worker, team: TeamJobs | None) -> None:
    """Make the worker and the team's workers finish the task in hand and stop when asked."""
    worker.stopping = stopping
    if team is not None:
        team.stopping = stopping
