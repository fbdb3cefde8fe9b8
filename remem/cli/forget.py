"""`remem forget`: the way out when a secret got through redaction anyway."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import click

from remem.cli.app import cli, open_home, print_json, project_root
from remem.errors import RememError

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from remem.config import Settings
    from remem.forget import Plan

SHOWN = 20  # items listed in text; --json lists them all


@cli.command("forget")
@click.option("--event", "event_ids", type=int, multiple=True, help="A captured event's id.")
@click.option(
    "--procedure",
    "procedure_ids",
    type=int,
    multiple=True,
    help="A procedure's id: it goes with its evidence and every run of its workflow.",
)
@click.option(
    "--match",
    "pattern",
    default=None,
    help="A Python regular expression: every event, procedure, lesson, spool and log line "
    "whose text it finds goes.",
)
@click.option(
    "--project",
    type=click.Path(),
    default=None,
    help="With --match: only this project's events, procedures and spooled events (its root "
    "directory); matching log lines and dead letters go whatever their project.",
)
@click.option("--dry-run", is_flag=True, help="List what would go; change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print what goes (or went) as JSON.")
def forget_command(
    event_ids: tuple[int, ...],
    procedure_ids: tuple[int, ...],
    pattern: str | None,
    project: str | None,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Delete captured events for good, with what was derived from them, and re-derive what
    remains. Matching spool, dead-letter and worker log lines are removed too, and the database
    is vacuumed so that the bytes leave the file. Archived procedures that match go as well.

    Run it in your own shell, not through an agent: an agent's command is captured, and this
    one names what it forgets.

    \b
    Examples:
      remem forget --match 'zq8Kp2[A-Za-z0-9]+' --dry-run
      remem forget --event 412 --event 413 --yes
      remem forget --procedure 7 --json
    """
    from remem import forget
    from remem.db.engine import compact

    if not (event_ids or procedure_ids or pattern is not None):
        raise click.UsageError("Say what to forget: --event ID, --procedure ID or --match REGEX.")
    if project is not None and pattern is None:
        raise click.UsageError("--project narrows --match: give a --match too.")
    if pattern is not None:
        forget.compile_pattern(pattern)  # a bad one is refused before the home is opened
    root = project_root(project)
    selection = forget.Selection(event_ids, procedure_ids, pattern, root)
    settings, engine = open_home()
    try:
        found = forget.plan(engine, settings, selection)
        if found.empty():
            _nothing(as_json, found)
            return
        if dry_run:
            _print_plan(found, as_json)
            return
        _confirm(found, yes)
        done = forget.forget(engine, settings, selection, time.time())
        summary: dict[str, Any] = {**done.as_json(), "dry_run": False}
        summary["rederived"] = _rederive(engine, settings) if done.rebuild else None
        compacted = compact(engine) if done.plan.touches_database() else None
        summary["compacted"] = compacted.as_json() if compacted else None
        summary["daemon_pids"] = _daemons(engine) if done.plan.log_lines else []
    finally:
        engine.dispose()
    if as_json:
        print_json(summary)
    else:
        _print_done(summary)


def _nothing(as_json: bool, found: Plan) -> None:
    if as_json:
        print_json({**found.as_json(), "dry_run": True})
    else:
        click.echo("Nothing to forget: no event, procedure, spool line or log line matches.")


def _confirm(found: Plan, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise RememError(
            "forget deletes for good and asks first: run it on a terminal or pass --yes "
            "(--dry-run shows what would go)."
        )
    _print_plan(found, as_json=False, verb="Will forget")
    click.confirm("Forget all of this for good?", abort=True)


def _rederive(engine: Engine, settings: Settings) -> dict[str, int]:
    from workers.runner import Worker, run_burst

    stats = run_burst(Worker(engine, settings))
    return {"promoted": int(stats.get("promoted", 0)), "events": int(stats.get("events", 0))}


def _daemons(engine: Engine) -> list[int]:
    from remem.queue.heartbeats import list_heartbeats

    now = time.time()
    return [beat.pid for beat in list_heartbeats(engine) if beat.health(now) == "running"]


def _print_plan(found: Plan, as_json: bool, verb: str = "Would forget (dry run)") -> None:
    if as_json:
        print_json({**found.as_json(), "dry_run": True})
        return
    click.echo(f"{verb}:")
    _list(
        f"{len(found.events)} event(s)",
        [f"event {e.id}  {e.label}  {e.command}" for e in found.events],
    )
    _list(
        f"{len(found.procedures)} procedure(s)",
        [f"procedure {p.id} ({p.label})  {p.command}" for p in found.procedures],
    )
    if found.rederived_procedure_ids:
        ids = ", ".join(map(str, found.rederived_procedure_ids))
        click.echo(f"  re-derived from what remains: procedure(s) {ids}")
    for label, counts in (("spool", found.spool_lines), ("logs", found.log_lines)):
        if counts:
            click.echo(f"  {label}: " + ", ".join(f"{n} line(s) in {f}" for f, n in counts.items()))
    if found.task_errors:
        click.echo(f"  the last error of {len(found.task_errors)} task(s)")


def _list(title: str, lines: list[str]) -> None:
    if not lines:
        return
    click.echo(f"  {title}:")
    for line in lines[:SHOWN]:
        click.echo(f"    {line}")
    if len(lines) > SHOWN:
        click.echo(f"    … and {len(lines) - SHOWN} more (--dry-run --json lists them all)")


def _print_done(summary: dict[str, Any]) -> None:
    derived = ", ".join(f"{n} {table}" for table, n in summary["derived_rows_deleted"].items() if n)
    click.echo(
        f"Forgot {summary['events_deleted']} event(s) and {summary['procedures_deleted']} "
        f"procedure(s)" + (f"; derived rows deleted: {derived}" if derived else "") + "."
    )
    if summary["sessions_deleted"] or summary["projects_deleted"]:
        click.echo(
            f"Removed {summary['sessions_deleted']} session(s) and "
            f"{summary['projects_deleted']} project(s) left without events."
        )
    for label, counts in (("spool", summary["spool_lines"]), ("logs", summary["log_lines"])):
        if counts:
            lines = ", ".join(f"{n} line(s) from {name}" for name, n in counts.items())
            click.echo(f"Removed from the {label}: {lines}.")
    if summary["rederived"]:
        click.echo(
            f"Re-derived: {summary['rederived']['promoted']} procedure(s) promoted from "
            f"{summary['rederived']['events']} event(s)."
        )
    compacted = summary["compacted"]
    if compacted and compacted["vacuumed"] and not compacted["wal_truncated"]:
        click.echo(
            "Vacuumed, but another process was reading the database and its WAL could not be "
            "emptied yet: SQLite empties it when the last process closes the database (stop "
            "the worker)."
        )
    elif compacted and compacted["vacuumed"]:
        click.echo("Vacuumed the database and emptied its WAL: the deleted bytes are gone.")
    elif compacted:
        click.echo("Not vacuumed (not SQLite): the database's own VACUUM FULL frees the space.")
    if summary["daemon_pids"]:
        pids = ", ".join(map(str, summary["daemon_pids"]))
        click.echo(
            f"Restart the running worker (pid {pids}): it still holds the old worker.log open."
        )
