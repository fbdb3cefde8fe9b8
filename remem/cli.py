"""The `remem` command: parse options, call one library function, format what it returns."""

from __future__ import annotations

import json
from typing import Any

import click

from remem.config import Settings, load_settings
from remem.errors import RememError


class _Group(click.Group):
    """Turns RememError into one line on stderr and its exit code; anything else is a bug and
    keeps its traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RememError as exc:
            click.echo(f"remem: {exc}", err=True)
            ctx.exit(exc.exit_code)


def _settings() -> Settings:
    return load_settings()


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="remem")
def cli() -> None:
    """remem: procedural memory for coding agents, earned from the commands they verified.

    \b
    Example:
      remem init            # create ~/.remem and print the hook settings
      remem status          # what has been captured so far
    """


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

    settings = _settings()
    result = init_home(settings)
    if as_json:
        _print_json(
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

    settings = _settings()
    engine = open_engine(settings, require_current_schema=False)
    try:
        report = collect_status(settings, engine)
    finally:
        engine.dispose()
    if as_json:
        _print_json(report)
        return
    tasks = report["tasks"]
    lag = report["oldest_pending_age_s"]
    lines = [
        ("home", report["home"]),
        ("database", report["database"]),
        ("schema", f"{report['schema_revision']} (head {report['schema_head']})"),
        ("events", report["events"]),
        ("dropped payloads", report["dropped_payloads"]),
        ("tasks", ", ".join(f"{count} {name}" for name, count in tasks.items())),
        ("oldest pending", "-" if lag is None else f"{lag:.0f}s"),
        (
            "spool",
            f"{report['spool']['pending']} waiting, {report['spool']['dead_letters']} dead letters",
        ),
    ]
    for label, value in lines:
        click.echo(f"{label:>17}  {value}")


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
    from remem.home import open_engine

    engine = open_engine(_settings(), require_current_schema=False)
    try:
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

    engine = open_engine(_settings(), require_current_schema=False)
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

    settings = _settings()
    engine = open_engine(settings)
    try:
        report = ingest_spool(engine, settings.spool_dir).as_dict()
    finally:
        engine.dispose()
    if as_json:
        _print_json(report)
        return
    click.echo(
        f"Ingested {report['files']} spool file(s): {report['events_stored']} event(s) stored, "
        f"{report['events_already_stored']} already stored, {report['drops_stored']} drop(s)."
    )
    for reason, count in report["dead_lettered"].items():
        click.echo(f"Dead-lettered {count} line(s): {reason}")


def main() -> None:
    cli(prog_name="remem")


if __name__ == "__main__":
    main()
