"""Commands that set up and look after a remem home: init, status, db, spool, doctor, service."""

from __future__ import annotations

import sys
from typing import Any

import click

from remem.cli.app import cli, current_settings, print_json


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def init(as_json: bool) -> None:
    """Create the remem home, its config and database, and print the hook settings.

    Safe to run again: an existing home is kept and its database migrated.

    \b
    Example:
      REMEM_HOME=~/.remem remem init
    """
    from remem.capture.install import hook_executable, render_instructions
    from remem.home import init_home

    settings = current_settings()
    result = init_home(settings)
    if as_json:
        print_json(
            {
                "home": result.home,
                "created": result.created_home,
                "database": result.database_url,
                "revision": result.revision,
                "hook": hook_executable(),
            }
        )
        return
    verb = "Created" if result.created_home else "Found"
    click.echo(f"{verb} remem home at {result.home}")
    click.echo(f"Database {result.database_url} at revision {result.revision}")
    click.echo("")
    click.echo("Paste these hook settings into your agents:")
    click.echo("")
    click.echo(render_instructions(result.home))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status(as_json: bool) -> None:
    """Show the home, database, captured events, queue and spool backlog.

    \b
    Example:
      remem status --json
    """
    from remem.home import open_engine
    from remem.status import collect_status

    settings = current_settings()
    engine = open_engine(settings, require_current_schema=False)
    try:
        report = collect_status(settings, engine)
    finally:
        engine.dispose()
    if as_json:
        print_json(report)
        return
    tasks = report["tasks"]
    lag = report["oldest_pending_age_s"]
    lines = [
        ("home", report["home"]),
        ("database", report["database"]),
        ("schema", f"{report['schema_revision']} (head {report['schema_head']})"),
        ("events", report["events"]),
        ("dropped payloads", report["dropped_payloads"]),
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
    for label, value in lines:
        click.echo(f"{label:>17}  {value}")


def _spool_line(spool: dict[str, Any]) -> str:
    text = f"{spool['pending']} waiting, {spool['dead_letters']} dead letters"
    if spool["pending"] and spool["last_reason"]:
        text += f" (last spooled because: {spool['last_reason']})"
    if spool["overflow_dropped"]:
        text += f"; {spool['overflow_dropped']} dropped: {spool['overflow_reason']}"
    return text


def _worker_line(worker: dict[str, Any]) -> str:
    if worker["state"] == "not running":
        return "not running: start it with `remem worker` (or `remem service install`)"
    task = worker["current_task_id"]
    return (
        f"{worker['state']}, pid {worker['pid']}, up {worker['uptime_s']:.0f}s, "
        f"heartbeat {worker['heartbeat_age_s']:.0f}s ago"
        + (f", working on task {task}" if task else ", idle")
    )


@cli.group()
def db() -> None:
    """Database schema commands.

    \b
    Example:
      remem db current
    """


@db.command("upgrade")
def db_upgrade() -> None:
    """Migrate the database to the schema this remem needs.

    \b
    Example:
      remem db upgrade
    """
    from remem.db import migrate
    from remem.home import migration_lock, open_engine

    settings = current_settings()
    engine = open_engine(settings, require_current_schema=False)
    try:
        with migration_lock(settings):
            before = migrate.current_revision(engine)
            migrate.upgrade(engine)
            after = migrate.current_revision(engine)
    finally:
        engine.dispose()
    click.echo(
        f"Schema {before or 'empty'} -> {after}" if before != after else f"Schema at {after}"
    )


@db.command("current")
def db_current() -> None:
    """Print the database's schema revision and the one this remem needs.

    \b
    Example:
      remem db current
    """
    from remem.db import migrate
    from remem.home import open_engine

    engine = open_engine(current_settings(), require_current_schema=False)
    try:
        current = migrate.current_revision(engine)
    finally:
        engine.dispose()
    head = migrate.head_revision()
    state = "up to date" if current == head else "behind: run `remem db upgrade`"
    click.echo(f"{current or 'none'} (head {head}, {state})")


@cli.group()
def spool() -> None:
    """The spool holds events the hook could not write to the database.

    \b
    Example:
      remem spool ingest
    """


@spool.command("ingest")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def spool_ingest(as_json: bool) -> None:
    """Store every spooled event in the database, once; unreadable lines go to dead-letter.jsonl.

    \b
    Example:
      remem spool ingest --json
    """
    from remem.capture.ingest import ingest_spool
    from remem.home import open_engine

    settings = current_settings()
    engine = open_engine(settings)
    try:
        report = ingest_spool(engine, settings.spool_dir).as_dict()
    finally:
        engine.dispose()
    if as_json:
        print_json(report)
        return
    click.echo(
        f"Ingested {report['files']} spool file(s): {report['events_stored']} event(s) stored, "
        f"{report['events_already_stored']} already stored, {report['drops_stored']} drop(s)."
    )
    for reason, count in report["dead_lettered"].items():
        click.echo(f"Dead-lettered {count} line(s): {reason}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def doctor(as_json: bool) -> None:
    """Check the home, config, database, schema, queue, worker, spool, agent hooks and clock;
    print a fix for each problem. Exit 0 when healthy, 1 otherwise.

    \b
    Example:
      remem doctor --json
    """
    from remem.doctor import FAIL, run_checks

    checks = run_checks()
    if as_json:
        print_json([check.as_json() for check in checks])
    else:
        for check in checks:
            click.echo(f"{check.status:>4}  {check.name:<18} {check.detail}")
            if check.fix and check.status != "ok":
                click.echo(f"{'':>4}  {'':<18} fix: {check.fix}")
    if any(check.status == FAIL for check in checks):
        sys.exit(1)


@cli.group()
def service() -> None:
    """Run the daemon as a user service (systemd or launchd), or from cron.

    \b
    Example:
      remem service install
      remem service cron
    """


def _service_file(kind: str | None) -> Any:
    from pathlib import Path

    from remem import service as definitions
    from remem.home import require_home

    settings = current_settings()
    require_home(settings)
    chosen = kind or definitions.default_kind()
    build = definitions.systemd if chosen == "systemd" else definitions.launchd
    return build(settings.home, Path.home())


@service.command("install")
@click.option("--systemd", "kind", flag_value="systemd", help="A systemd user unit (Linux).")
@click.option("--launchd", "kind", flag_value="launchd", help="A launchd agent (macOS).")
def service_install(kind: str | None) -> None:
    """Write a user service that runs `remem worker` with this interpreter and home, and print
    the command that enables it. Nothing is enabled until you run that command.

    \b
    Example:
      remem service install --systemd
    """
    unit = _service_file(kind)
    unit.path.parent.mkdir(parents=True, exist_ok=True)
    unit.path.write_text(unit.content)
    click.echo(f"Wrote {unit.path}")
    click.echo(f"Enable it with: {unit.enable_command}")


@service.command("uninstall")
@click.option("--systemd", "kind", flag_value="systemd", help="The systemd user unit.")
@click.option("--launchd", "kind", flag_value="launchd", help="The launchd agent.")
def service_uninstall(kind: str | None) -> None:
    """Remove the user service file (disable it first with the printed command).

    \b
    Example:
      remem service uninstall
    """
    unit = _service_file(kind)
    if unit.path.exists():
        unit.path.unlink()
        click.echo(f"Removed {unit.path}")
    else:
        click.echo(f"No service file at {unit.path}")
    click.echo(f"If it was enabled, stop it with: {unit.disable_command}")


@service.command("cron")
def service_cron() -> None:
    """Print a crontab line that runs `remem worker --burst` every 10 minutes.

    \b
    Example:
      (crontab -l; remem service cron) | crontab -
    """
    from remem.home import require_home
    from remem.service import cron_line

    settings = current_settings()
    require_home(settings)
    click.echo(cron_line(settings.home))
