"""Commands that run the queue: the worker (daemon and burst) and tasks."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from remem.cli.app import ROW_ID, cli, json_option, open_home, print_json, print_table
from remem.db.vocabulary import TASK_STATUSES
from remem.errors import NotFound


@cli.command()
@click.option("--burst", is_flag=True, help="Drain the queue once and exit (for cron).")
@click.option("--max-seconds", type=float, default=None, help="Stop a burst after this long.")
@click.option("-v", "--verbose", is_flag=True, help="Log debug lines to the worker log.")
@json_option("the burst summary")
def worker(burst: bool, max_seconds: float | None, verbose: bool, as_json: bool) -> None:
    """Process captured events into procedures.

    Without --burst this is the daemon: it runs until SIGTERM or Ctrl-C (a second Ctrl-C stops
    it at once), one per database. With --burst it ingests the spool, reaps expired leases,
    drains the queue, marks stale procedures, prints a summary and exits (1 if a task failed for
    good in this run); it runs safely beside a daemon. With a team database ([team] in the
    config) both also ship the shared projects' events, work the team queue (where promote =
    true) and pull the team's procedures.

    \b
    Examples:
      remem worker                # the daemon, logging to ~/.remem/logs/worker.log
      */10 * * * * remem worker --burst >> ~/.remem/logs/cron.log 2>&1
    """
    from workers.daemon import StopFlag

    stop = StopFlag()
    stop.install()  # first, so that a stop arriving during start-up is not lost
    from workers.logs import configure
    from workers.runner import Worker

    with open_home() as (settings, engine):
        configure(settings, verbose)
        runner = Worker(engine, settings)
        team = None
        if settings.team_database_url:
            from workers.team import TeamJobs

            team = TeamJobs(engine, settings)
        try:
            if burst:
                _burst(runner, team, stop, max_seconds, as_json)
            else:
                from workers.work import work

                work(
                    runner,
                    team,
                    burst=False,
                    stop=stop,
                    on_started=lambda: click.echo(
                        f"remem worker running (pid {os.getpid()}); logs in {settings.log_dir}"
                    ),
                )
        finally:
            if team is not None:
                team.close()


def _burst(runner: Any, team: Any, stop: Any, max_seconds: float | None, as_json: bool) -> None:
    from remem.queue.heartbeats import running_pids
    from workers.work import work

    on_task: Callable[[], None] | None = None
    with contextlib.ExitStack() as stack:
        if sys.stdout.isatty() and not as_json:
            from rich.progress import Progress

            progress = stack.enter_context(Progress(transient=True))
            bar = progress.add_task("processing tasks", total=None)
            on_task = functools.partial(progress.advance, bar)
        stats = work(runner, team, burst=True, stop=stop, max_seconds=max_seconds, on_task=on_task)
    keys = (
        "tasks_done",
        "tasks_retried",
        "tasks_failed",
        "leases_lost",
        "leases_reaped",
        "spooled_events_ingested",
        "events",
        "promoted",
        "refreshed",
        "broken",
        "stale",
        "shipped",
        "team_tasks_done",
        "pulled_procedures",
        "team_errors",
    )
    summary: dict[str, Any] = {key: int(stats.get(key, 0)) for key in keys}
    daemons = running_pids(runner.engine, time.time())
    summary["daemon_pids"] = daemons
    if as_json:
        print_json(summary)
    else:
        click.echo(
            f"Tasks: {summary['tasks_done']} done, {summary['tasks_retried']} retried, "
            f"{summary['tasks_failed']} failed. Events processed: {summary['events']}. "
            f"Procedures: {summary['promoted']} promoted, {summary['refreshed']} refreshed, "
            f"{summary['broken']} broken, {summary['stale']} stale."
        )
        if team is not None:
            click.echo(
                f"Team: {summary['shipped']} event(s) shipped, "
                f"{summary['team_tasks_done']} team task(s) done, "
                f"{summary['pulled_procedures']} procedure(s) pulled"
                + (
                    f"; {summary['team_errors']} step(s) failed: see `remem status`."
                    if summary["team_errors"]
                    else "."
                )
            )
        if daemons:
            pids = ", ".join(map(str, daemons))
            click.echo(
                f"A daemon was running beside this burst (pid {pids}); "
                "tasks were shared through leases."
            )
    if summary["tasks_failed"]:
        sys.exit(1)


@cli.group(invoke_without_command=True)
@click.option(
    "--status",
    "status_filter",
    type=click.Choice(TASK_STATUSES),
    default=None,
    help="Only tasks in this state.",
)
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@json_option("the tasks")
@click.pass_context
def tasks(ctx: click.Context, status_filter: str | None, limit: int, as_json: bool) -> None:
    """List extraction tasks, newest first; failed ones show their last error. `failures`
    counts the tries that failed (or whose worker died): a task done at its first try has 0.

    \b
    Example:
      remem tasks --status failed --json
      remem tasks retry 12
    """
    if ctx.invoked_subcommand is not None:
        return
    from remem.json_contract import rfc3339
    from remem.queue.store import list_tasks

    with open_home() as (_settings, engine):
        rows = list_tasks(engine, status_filter, limit)
    print_table(
        "Tasks",
        ["id", "session", "status", "failures", "events", "last error"],
        [
            [
                str(r.id),
                str(r.session_id),
                r.status,
                str(r.attempts),
                f"{r.cursor_event_id}/{r.high_watermark_event_id}",
                r.last_error or "",
            ]
            for r in rows
        ],
        empty=(
            f"No {status_filter} tasks."
            if status_filter
            else "No tasks yet: the hook queues one per session when an agent runs a command."
        ),
        json=[{**r.__dict__, "run_after": rfc3339(r.run_after)} for r in rows] if as_json else None,
    )


@tasks.command("retry")
@click.argument("task_id", type=ROW_ID)
def tasks_retry(task_id: int) -> None:
    """Put a failed task back in the queue with a fresh retry budget.

    \b
    Example:
      remem tasks retry 12
    """
    import time

    from remem.queue.store import retry_task

    with open_home() as (_settings, engine):
        found = retry_task(engine, task_id, time.time())
    if not found:
        raise NotFound(f"No failed or pending task {task_id}: see `remem tasks`.")
    click.echo(f"Task {task_id} is pending again.")
