"""Commands that set up and look after a remem home: init, status, db, spool, doctor, service."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from remem.cli.app import cli, current_settings, json_option, open_home, print_json

if TYPE_CHECKING:
    from remem.transcripts.importer import Found


@cli.command()
@click.option(
    "--hooks/--no-hooks",
    "with_hooks",
    default=None,
    help="Install remem's hooks into the agents found (~/.claude, ~/.codex, ~/.cursor), or "
    "not, without asking.",
)
@json_option("the result")
def init(with_hooks: bool | None, as_json: bool) -> None:
    """Create the remem home, its config and database, and connect your agents.

    On a terminal it asks whether to install remem's hooks into the agents whose folders exist
    (~/.claude, ~/.codex, ~/.cursor); otherwise it installs them only with --hooks, and prints
    the command that does. Safe to run again: an existing home is kept and its database
    migrated, and it says so in a few lines.

    \b
    Example:
      remem init
      REMEM_HOME=~/.remem remem init --no-hooks
    """
    from pathlib import Path

    from remem.admin.agents_settings import connected_agents, install, present_agents
    from remem.admin.home import init_home
    from remem.cli.hooks import echo_init_hooks
    from remem.paths import installed_executable
    from remem.record.quote import escape_unsafe

    result = init_home(current_settings())
    if not as_json and result.created_home:
        click.echo(f"Created remem home at {result.home}")
        click.echo(f"Database {result.database_url} at revision {result.revision}")
    elif not as_json:
        click.echo(f"Found remem home at {result.home}, its database at revision {result.revision}")
    user_home = Path.home()
    found = present_agents(user_home)
    connected = connected_agents(found, user_home, result.home)
    asked = with_hooks is None and set(found) > set(connected) and not as_json
    if asked and sys.stdin.isatty() and sys.stdout.isatty():
        with_hooks = click.confirm(
            f"Install remem's hooks for {', '.join(found)} (a backup of each changed file is "
            "kept)?",
            default=True,
        )
    changes = install(found, user_home, result.home) if with_hooks else []
    from remem.transcripts.importer import find_sessions

    sessions = find_sessions(str(user_home))
    command = _import_command(sessions, current_settings().max_age_s)
    checkpoints = _entire_offer()
    if as_json:
        print_json(
            {
                "home": result.home,
                "created": result.created_home,
                "database": result.database_url,
                "revision": result.revision,
                "hook": installed_executable("remem-hook"),
                "hooks": [change.as_json() for change in changes],
                "sessions_to_import": {host: f.sessions for host, f in sessions.items()},
                "oldest_session_at": _oldest(sessions),
                "import_command": command,
                "entire_import_command": checkpoints and checkpoints[0],
            }
        )
        return
    echo_init_hooks(changes, with_hooks, found, connected, user_home)
    if result.created_home:  # printed once: an existing home was set up before
        from remem.agent.mcp import mcp_instructions

        click.echo("")
        click.echo(mcp_instructions(result.home))
    if command is not None:
        click.echo("")
        click.echo(_import_offer(sessions, command))
    if checkpoints is not None:
        click.echo("")
        click.echo(escape_unsafe(checkpoints[1]))


def _entire_offer() -> tuple[str, str] | None:
    """When the current directory's repository keeps Entire checkpoints: the command that
    imports them, and the line that says so."""
    import os

    from remem.transcripts import entire

    storage = entire.has_checkpoints(os.getcwd())
    if storage is None:
        return None
    return entire.IMPORT_COMMAND, (
        f"{storage.work_tree} keeps its agents' sessions on {entire.said(storage)}: "
        f"run `{entire.IMPORT_COMMAND}` to learn from them."
    )


def _oldest(sessions: dict[str, Found]) -> float | None:
    return min((f.oldest_at for f in sessions.values() if f.oldest_at is not None), default=None)


def _import_command(sessions: dict[str, Found], max_age_s: float) -> str | None:
    """The import that reads every session found: `remem import all`, with a `--since` that
    reaches the oldest when the default window (twice promotion.max_age) would leave it out."""
    import time

    from remem.transcripts.importer import default_since_s, since_covering

    if not any(f.sessions for f in sessions.values()):
        return None
    oldest, now = _oldest(sessions), time.time()
    if oldest is None or oldest >= now - default_since_s(max_age_s):
        return "remem import all"
    return f"remem import all --since {since_covering(oldest, now)}"


def _import_offer(sessions: dict[str, Found], command: str) -> str:
    """The closing line: the sessions the agents already wrote, since when, and the command
    that learns from them."""
    from remem.json_contract import date

    names = {"claude-code": "Claude Code", "codex": "Codex"}
    found = [
        f"{f.sessions:,} {names.get(host, host)} session{'' if f.sessions == 1 else 's'}"
        for host, f in sessions.items()
        if f.sessions
    ]
    oldest = _oldest(sessions)
    since = f", the oldest from {date(oldest)}" if oldest is not None else ""
    return f"Found {' and '.join(found)}{since}: run `{command}` to learn from them."


@cli.command()
@json_option("the status")
def status(as_json: bool) -> None:
    """Show the home, database, captured events, queue and spool backlog, and the team link
    as the daemon last saw it (status never connects to the team database).

    \b
    Example:
      remem status --json
    """
    from remem.admin.status import status_text

    click.echo(status_text(as_json), nl=False)


@cli.group()
def db() -> None:
    """Database schema commands.

    \b
    Example:
      remem db current
    """


@db.command("upgrade")
@click.option(
    "--team",
    is_flag=True,
    help="Migrate the team's PostgreSQL database (team.database_url) instead of this home's.",
)
def db_upgrade(team: bool) -> None:
    """Migrate the database to the schema this remem needs.

    With --team, the team's database: the same migrations, run by any one machine of the
    team (concurrent upgrades wait for each other).

    \b
    Example:
      remem db upgrade
      remem db upgrade --team
    """
    import contextlib

    from remem.admin.home import migration_lock, open_engine
    from remem.db import migrate
    from remem.db.engine import make_engine
    from remem.errors import RememError

    settings = current_settings()
    if team and not settings.team_database_url:
        raise RememError(
            "No team database: set `database_url` under [team] in "
            f"{settings.config_file} (or REMEM_TEAM_DATABASE_URL), then run it again."
        )
    engine = (
        make_engine(settings.team_database_url)
        if team
        else open_engine(settings, require_current_schema=False)
    )
    try:
        with contextlib.nullcontext() if team else migration_lock(settings):
            before = migrate.current_revision(engine)
            migrate.upgrade(engine)
            after = migrate.current_revision(engine)
    finally:
        engine.dispose()
    label = "Team schema" if team else "Schema"
    click.echo(
        f"{label} {before or 'empty'} -> {after}" if before != after else f"{label} at {after}"
    )


@db.command("current")
def db_current() -> None:
    """Print the database's schema revision and the one this remem needs.

    \b
    Example:
      remem db current
    """
    from remem.db import migrate
    from remem.db.sqlite import schema_head

    with open_home(require_current_schema=False) as (_settings, engine):
        current = migrate.current_revision(engine)
    head = schema_head()
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
@json_option("the report")
def spool_ingest(as_json: bool) -> None:
    """Store every spooled event in the database, once; unreadable lines go to dead-letter.jsonl.

    \b
    Example:
      remem spool ingest --json
    """
    from remem.capture.ingest import ingest_spool

    with open_home() as (settings, engine):
        report = ingest_spool(engine, settings.spool_dir).as_dict()
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
@json_option("the checks")
def doctor(as_json: bool) -> None:
    """Check the home, config, database, schema, queue, worker, spool, agent hooks, clock and
    team database; print a fix for each problem. Exit 0 when healthy, 1 otherwise.

    \b
    Example:
      remem doctor --json
    """
    from remem.admin.checks import FAIL
    from remem.admin.doctor import run_checks
    from remem.record.quote import escape_unsafe  # a detail may name a draft, an error

    checks = run_checks()
    if as_json:
        print_json([check.as_json() for check in checks])
    else:
        for check in checks:
            click.echo(escape_unsafe(f"{check.status:>4}  {check.name:<18} {check.detail}"))
            if check.fix and check.status != "ok":
                click.echo(escape_unsafe(f"{'':>4}  {'':<18} fix: {check.fix}"))
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

    from remem.admin import service as definitions
    from remem.db.snapshot import require_home

    settings = current_settings()
    require_home(settings.home)
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
    from remem.admin.service import cron_line
    from remem.db.snapshot import require_home

    settings = current_settings()
    require_home(settings.home)
    click.echo(cron_line(settings.home))
