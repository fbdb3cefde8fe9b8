"""The team jobs of a machine's daemon (DESIGN.md §9): ship the shared projects' events, work
the team queue where `promote = true`, pull the team's memory back: duties of the worker loop
(workers/loop.py), each on its own interval, run in that order. None of them may stop
the daemon: a failure is recorded for `remem status`, logged, and the link backs off."""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from sqlalchemy import Connection, Engine, text

from remem.config import Settings
from remem.db.engine import held_alone
from remem.procedures.promote import mark_stale
from remem.queue import store as queue
from remem.team import state
from remem.team.link import TeamLink, error_line
from remem.team.pull import pull
from remem.team.ship import ship
from workers.runner import Worker

log = logging.getLogger("remem.worker")

TEAM_MAINTENANCE_INTERVAL_S = 600.0
# Keys of the PostgreSQL advisory locks: a project a team worker is draining, and the team's
# maintenance.
PROJECT_LOCK_SPACE = 0x7265
MAINTENANCE_LOCK_KEY = 0x72656D656D01
# Projects with due tasks looked at per round, oldest task first.
PROJECTS_LOOKED_AT = 32

TRY_LOCK = text("SELECT pg_try_advisory_lock(:space, :project_id)")
UNLOCK = text("SELECT pg_advisory_unlock(:space, :project_id)")


class TeamPromoter:
    """A team worker drains the queue one project at a time, holding that project's advisory
    lock while it does: windows of one project would otherwise wait for each other's group
    locks, then find what they prepared outdated and derive it again. Workers of several
    machines thus spread over the projects with due tasks; one project's windows run in
    order, as they do on one machine."""

    def __init__(self, team: Engine, worker: Worker) -> None:
        self.team = team
        self.worker = worker

    def drain(self, max_tasks: int | None = None) -> int:
        done = 0
        with self.team.connect().execution_options(isolation_level="AUTOCOMMIT") as locks:
            while not self.worker.stopping() and (max_tasks is None or done < max_tasks):
                project = self._lock_a_project(locks)
                if project is None:
                    break
                self.worker.project_id = project
                try:
                    with self.worker.claiming_ahead():
                        while max_tasks is None or done < max_tasks:
                            if self.worker.stopping() or not self.worker.run_once():
                                break
                            done += 1
                finally:
                    self.worker.project_id = None
                    locks.execute(UNLOCK, {"space": PROJECT_LOCK_SPACE, "project_id": project})
        return done

    def _lock_a_project(self, locks: Connection) -> int | None:
        """A project with due tasks that no other team worker holds, now locked; None when
        there is none."""
        for project in queue.due_projects(locks, self.worker.clock(), PROJECTS_LOOKED_AT):
            lock = {"space": PROJECT_LOCK_SPACE, "project_id": project}
            if locks.execute(TRY_LOCK, lock).scalar():
                return int(project)
        return None


class TeamJobs:
    def __init__(
        self,
        local: Engine,
        settings: Settings,
        clock: Callable[[], float] = time.time,
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        self.local = local
        self.settings = settings
        self.clock = clock
        self.stopping = stopping
        self.link = TeamLink(local, settings.team_database_url)
        self.worker_id = (
            f"{settings.team_machine}:team:{os.getpid()}:{uuid.uuid4().hex[:8]}"
            if settings.team_machine
            else f"{socket.gethostname()}:team:{os.getpid()}"
        )
        self.stats: Counter[str] = Counter()
        self.last_maintenance = 0.0

    def _attempt(self, name: str, job: Callable[[Engine], tuple[int, dict[str, Any]]]) -> bool:
        """Run one job against the team database unless the link is backing off; record
        success or failure locally. False when it did not run or failed."""
        if not self.link.backoff.ready():
            return False
        try:
            moved, details = job(self.link.team())
        except Exception as error:  # the server, the network or the schema: never the daemon
            delay = self.link.failed(error, self.clock())
            self.stats["team_errors"] += 1
            log.warning(
                "team %s failed, trying again in %.0f s: %s",
                name,
                delay,
                error_line(error),
                extra={"action": f"team_{name}", "retry_in_s": delay},
            )
            return False
        self.link.succeeded(name, moved, self.clock())
        if moved:
            log.info("team %s: %s", name, details, extra={"action": f"team_{name}", **details})
        return True

    def ship(self) -> bool:
        def job(team: Engine) -> tuple[int, dict[str, Any]]:
            report = ship(self.local, team, self.settings, self.clock())
            self.stats["shipped"] += report.events
            self.stats["shipped_again"] += report.already_there
            return report.events, asdict(report)

        return self._attempt(state.SHIP, job)

    def promote(self, max_tasks: int | None = None) -> bool:
        """Drain the team queue (where this machine promotes), and now and then maintain the
        team's procedures, one machine at a time."""
        if not self.settings.team_promote:
            return False

        def job(team: Engine) -> tuple[int, dict[str, Any]]:
            worker = Worker(
                team,
                self.settings,
                self.worker_id,
                clock=self.clock,
                stopping=self.stopping,
                queue_name="team ",
            )
            # A task this process held when the team database failed under it comes back now,
            # not when its lease runs out.
            queue.release_owned(team, self.worker_id, self.clock())
            worker.reap()
            done = TeamPromoter(team, worker).drain(max_tasks)
            now = self.clock()
            if now - self.last_maintenance >= TEAM_MAINTENANCE_INTERVAL_S:
                self._maintain(team, now)
                self.last_maintenance = now
            for key in ("tasks_done", "tasks_retried", "tasks_failed", "promoted"):
                self.stats[f"team_{key}"] += worker.stats.get(key, 0)
            return done, {"tasks": done, **{k: int(v) for k, v in worker.stats.items()}}

        return self._attempt("promote", job)

    def _maintain(self, team: Engine, now: float) -> None:
        with team.connect() as connection, held_alone(connection, MAINTENANCE_LOCK_KEY) as alone:
            if alone:
                mark_stale(team, self.settings, now)

    def pull(self) -> bool:
        def job(team: Engine) -> tuple[int, dict[str, Any]]:
            report = pull(self.local, team, self.clock(), self.settings)
            self.stats["pulled_procedures"] += report.procedures
            return report.procedures + report.lessons, asdict(report)

        return self._attempt(state.PULL, job)

    def close(self) -> None:
        self.link.close()
