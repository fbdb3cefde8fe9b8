"""The team database as one machine's daemon reaches it: opened only when its schema is this
remem's, and left alone for a while after it failed (DESIGN.md §9)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Engine

from remem.db import migrate
from remem.db.engine import executor, make_engine
from remem.db.sqlite import schema_head
from remem.errors import TeamSchemaMismatch
from remem.team import state

# After a failure the link waits this long, doubling up to the cap, before trying again.
FIRST_BACKOFF_S = 5.0
MAX_BACKOFF_S = 300.0
RECORD_EVERY_S = 60.0


def open_team(url: str) -> Engine:
    """The team database's engine, refused unless its schema is at this remem's head."""
    return migrate.require_head(make_engine(url), TeamSchemaMismatch)


def error_line(error: BaseException) -> str:
    """A failure as one redacted line, its kind first."""
    return state.one_line(f"{type(error).__name__}: {error}")


@dataclass
class Backoff:
    """When the team database may next be tried: at once while it answers, later and later
    while it does not."""

    clock: Callable[[], float] = time.monotonic
    delay_s: float = 0.0
    next_at: float = 0.0

    def ready(self) -> bool:
        return self.clock() >= self.next_at

    def failed(self) -> float:
        """Back off after a failed try; the seconds until the next. Jobs that were already
        under way when the link failed fail too: one outage doubles the wait once."""
        now = self.clock()
        if now < self.next_at:
            return self.next_at - now
        self.delay_s = min(max(self.delay_s * 2, FIRST_BACKOFF_S), MAX_BACKOFF_S)
        self.next_at = now + self.delay_s
        return self.delay_s

    def succeeded(self) -> None:
        self.delay_s = self.next_at = 0.0


@dataclass
class TeamLink:
    """The team engine, opened on first use and dropped after a failure, and what happened
    recorded in the local database's team_state for `remem status`."""

    local: Engine
    url: str
    backoff: Backoff = field(default_factory=Backoff)
    engine: Engine | None = None
    revision: str | None = None
    # When each job's success was last recorded, and whether a failure is on record.
    recorded: dict[str, float] = field(default_factory=dict)
    failing: bool = False
    # The daemon's ship, promote and pull jobs share the link from their own threads.
    lock: threading.Lock = field(default_factory=threading.Lock)

    def team(self) -> Engine:
        with self.lock:
            if self.engine is None:
                self.engine = open_team(self.url)
                self.revision = schema_head()
            return self.engine

    def succeeded(self, name: str, moved: int, now: float) -> None:
        """Record a job that went through: at once when it moved rows or ended a failure,
        otherwise once a minute (the promote job runs every poll interval, and each record
        takes the local write lock the hooks share)."""
        recovered = self.backoff.delay_s > 0 or self.failing
        self.backoff.succeeded()
        if not (moved or recovered or now - self.recorded.get(name, 0.0) >= RECORD_EVERY_S):
            return
        with self.local.begin() as connection:
            execute = executor(connection)
            state.put(execute, state.CONTACT, self.revision, now)
            state.put(execute, name, str(moved), now)
            state.clear(execute, state.ERROR)
        self.recorded[name] = now
        self.failing = False

    def failed(self, error: BaseException, now: float) -> float:
        """Record the failure and back off; the engine is opened afresh next time (the server
        may have restarted, or been upgraded)."""
        self.close()
        self.failing = True
        with self.lock:
            delay = self.backoff.failed()
        with self.local.begin() as connection:
            state.put(executor(connection), state.ERROR, error_line(error), now)
        return delay

    def close(self) -> None:
        with self.lock:
            if self.engine is not None:
                self.engine.dispose()
                self.engine = None
