"""`work(burst=...)`: the one way a worker runs, as the daemon or as a burst (cron mode, and the
commands that queue work themselves: import, rebuild, forget)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from workers.loop import Loop, stop_on

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from remem.config import Settings
    from workers.daemon import StopFlag
    from workers.runner import Worker
    from workers.team import TeamJobs


def work(
    worker: Worker,
    team: TeamJobs | None = None,
    *,
    burst: bool,
    stop: StopFlag | None = None,
    max_seconds: float | None = None,
    on_task: Callable[[], None] | None = None,
    on_started: Callable[[], None] | None = None,
) -> Counter[str]:
    """Run the worker: with `burst`, every duty once and the queue drained (for at most
    `max_seconds`), then return; else as the daemon until `stop` is set. The stats of the run."""
    if burst:
        if stop is not None:  # the daemon wires its own flag (workers/daemon.py)
            stop_on(stop.is_set, worker, team)
        loop = Loop(worker, team, burst=True)
        loop.tick(max_seconds, on_task)
        worker.checkpoint()  # what the burst wrote is in the database file
        return loop.stats()
    # Imported here: a burst, which the commands that queue work run, needs no scheduler.
    from workers.daemon import Daemon, StopFlag

    daemon = Daemon(Loop(worker, team), stop or StopFlag())
    daemon.run(on_started)
    return daemon.loop.stats()


def run_burst(
    worker: Worker, max_seconds: float | None = None, on_task: Callable[[], None] | None = None
) -> Counter[str]:
    """`work(burst=True)` of workers/loop.py, without team duties: what the commands that queue
    work themselves (import, rebuild, forget) run before they report."""
    return work(worker, burst=True, max_seconds=max_seconds, on_task=on_task)


def rederive(engine: Engine, settings: Settings) -> dict[str, int]:
    """Re-derive what a rebuild or a forget cleared, with one burst: how many procedures it
    promoted from how many events (`remem procedures rebuild`, `remem forget`, `remem ui`)."""
    from workers.runner import Worker

    stats = run_burst(Worker(engine, settings))
    return {"promoted": int(stats.get("promoted", 0)), "events": int(stats.get("events", 0))}
