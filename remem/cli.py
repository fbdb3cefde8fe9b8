"""The `remem` command: parse options, call one library function, format what it returns."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from typing import TYPE_CHECKING, Any

import click
from sqlalchemy.exc import DBAPIError

from remem.config import Settings, load_settings
from remem.db.schema import PROCEDURE_STATUSES, TASK_STATUSES
from remem.errors import NotFound, RememError

if TYPE_CHECKING:
    from sqlalchemy import Engine


class _Group(click.Group):
    """Turns RememError into one line on stderr and its exit code; anything else is a bug and
    keeps its traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RememError as exc:
            click.echo(f"remem: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except DBAPIError as exc:
            click.echo(f"remem: {_database_problem(exc)}", err=True)
            ctx.exit(1)


def _database_problem(exc: DBAPIError) -> str:
    """One line naming the database and what to do; a damaged file is a user's problem, not a
    traceback."""
    try:
        where = load_settings().sqlite_file or "the database"
    except RememError:
        where = "the database"
    reason = str(exc.orig).strip() or type(exc.orig).__name__
    if "not a database" in reason or "malformed" in reason:
        advice = "it is damaged: move it aside and run `remem init`, or restore a backup"
    elif "readonly" in reason or "read-only" in reason:
        advice = "it is read-only: give your user write access to it and its folder"
    elif "locked" in reason:
        advice = "another process holds it locked: try again"
    else:
        advice = "see `remem doctor`"
    return f"cannot use {where} ({reason}): {advice}."


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

    settings = _settings()
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


def _open(require_current_schema: bool = True) -> tuple[Settings, Engine]:
    from remem.home import open_engine

    settings = _settings()
    return settings, open_engine(settings, require_current_schema=require_current_schema)


def _table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    Console(width=max(120, shutil.get_terminal_size().columns)).print(table)


@cli.command()
@click.option("--burst", is_flag=True, help="Drain the queue once and exit (for cron).")
@click.option("--max-seconds", type=float, default=None, help="Stop a burst after this long.")
@click.option("-v", "--verbose", is_flag=True, help="Log debug lines to the worker log.")
@click.option("--json", "as_json", is_flag=True, help="Print the burst summary as JSON.")
def worker(burst: bool, max_seconds: float | None, verbose: bool, as_json: bool) -> None:
    """Process captured events into procedures.

    Without --burst this is the daemon: it runs until SIGTERM or Ctrl-C (a second Ctrl-C stops
    it at once), one per database. With --burst it ingests the spool, reaps expired leases,
    drains the queue, marks stale procedures, prints a summary and exits (1 if a task failed for
    good in this run); it runs safely beside a daemon.

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

    settings, engine = _open()
    configure(settings, verbose)
    runner = Worker(engine, settings)
    try:
        if burst:
            _burst(runner, max_seconds, as_json)
        else:
            from workers.daemon import Daemon

            lock_path = (settings.sqlite_file or os.path.join(settings.home, "remem")) + ".lock"
            daemon = Daemon(runner, stop, lock_path, settings.shutdown_timeout_s)
            daemon.run(
                lambda: click.echo(
                    f"remem worker running (pid {os.getpid()}); logs in {settings.log_dir}"
                )
            )
    finally:
        engine.dispose()


def _burst(runner: Any, max_seconds: float | None, as_json: bool) -> None:
    from remem.queue.heartbeats import list_heartbeats
    from workers.runner import run_burst

    if sys.stdout.isatty() and not as_json:
        from rich.progress import Progress

        with Progress(transient=True) as progress:
            bar = progress.add_task("processing tasks", total=None)
            stats = run_burst(runner, max_seconds, lambda: progress.advance(bar))
    else:
        stats = run_burst(runner, max_seconds)
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
    )
    summary: dict[str, Any] = {key: int(stats.get(key, 0)) for key in keys}
    now = time.time()
    daemons = [b.pid for b in list_heartbeats(runner.engine) if b.health(now) == "running"]
    summary["daemon_pids"] = daemons
    if as_json:
        _print_json(summary)
    else:
        click.echo(
            f"Tasks: {summary['tasks_done']} done, {summary['tasks_retried']} retried, "
            f"{summary['tasks_failed']} failed. Events processed: {summary['events']}. "
            f"Procedures: {summary['promoted']} promoted, {summary['refreshed']} refreshed, "
            f"{summary['broken']} broken, {summary['stale']} stale."
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
@click.option("--limit", type=int, default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the tasks as JSON.")
@click.pass_context
def tasks(ctx: click.Context, status_filter: str | None, limit: int, as_json: bool) -> None:
    """List extraction tasks, newest first; failed ones show their last error.

    \b
    Example:
      remem tasks --status failed --json
      remem tasks retry 12
    """
    if ctx.invoked_subcommand is not None:
        return
    from remem.procedures.store import iso
    from remem.queue.store import list_tasks

    _settings_unused, engine = _open()
    try:
        rows = list_tasks(engine, status_filter, limit)
    finally:
        engine.dispose()
    if as_json:
        _print_json(
            [
                {
                    **row.__dict__,
                    "run_after": iso(row.run_after),
                    "lease_expires_at": iso(row.lease_expires_at),
                    "updated_at": iso(row.updated_at),
                }
                for row in rows
            ]
        )
        return
    _table(
        "Tasks",
        ["id", "session", "status", "attempts", "events", "last error"],
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
    )


@tasks.command("retry")
@click.argument("task_id", type=int)
def tasks_retry(task_id: int) -> None:
    """Put a failed task back in the queue with a fresh retry budget.

    \b
    Example:
      remem tasks retry 12
    """
    import time

    from remem.queue.store import retry_task

    _settings_unused, engine = _open()
    try:
        found = retry_task(engine, task_id, time.time())
    finally:
        engine.dispose()
    if not found:
        raise NotFound(f"No failed or pending task {task_id}: see `remem tasks`.")
    click.echo(f"Task {task_id} is pending again.")


@cli.group()
def procedures() -> None:
    """Procedures: commands proven to work, with their evidence.

    \b
    Example:
      remem procedures list --project ~/src/shop --branch main
    """


@procedures.command("list")
@click.option("--project", type=click.Path(), default=None, help="Project root directory.")
@click.option("--branch", default=None, help="Branch name ('' for none).")
@click.option(
    "--status",
    "status_filter",
    type=click.Choice(PROCEDURE_STATUSES),
    default=None,
    help="Only this status (default: active).",
)
@click.option("--all", "show_all", is_flag=True, help="Every status, archived included.")
@click.option("--json", "as_json", is_flag=True, help="Print the procedures as JSON.")
def procedures_list(
    project: str | None,
    branch: str | None,
    status_filter: str | None,
    show_all: bool,
    as_json: bool,
) -> None:
    """List procedures by confidence, then most recently verified.

    \b
    Example:
      remem procedures list --all --json
    """
    import os

    from remem.procedures.store import iso, list_procedures

    statuses = None if show_all else ((status_filter,) if status_filter else ("active",))
    root = os.path.abspath(os.path.expanduser(project)) if project else None
    _settings_unused, engine = _open()
    try:
        found = list_procedures(engine, root, branch, statuses)
    finally:
        engine.dispose()
    if as_json:
        _print_json([p.as_json() for p in found])
        return
    _table(
        "Procedures",
        [
            "id",
            "command",
            "project",
            "branch",
            "status",
            "conf.",
            "runs",
            "sessions",
            "last verified",
        ],
        [
            [
                str(p.id),
                p.command,
                p.project,
                p.branch or "-",
                p.status,
                f"{p.confidence:.2f}",
                str(p.verified_runs),
                str(p.distinct_sessions),
                (iso(p.last_verified_at) or "")[:10],
            ]
            for p in found
        ],
    )


@procedures.command("show")
@click.argument("procedure_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print the procedure as JSON.")
def procedures_show(procedure_id: int, as_json: bool) -> None:
    """Show one procedure, its evidence runs and files.

    \b
    Example:
      remem procedures show 3 --json
    """
    from remem.procedures.store import evidence_runs, get_procedure, iso, lessons_of

    _settings_unused, engine = _open()
    try:
        procedure = get_procedure(engine, procedure_id)
        runs = evidence_runs(engine, procedure)
        lessons = lessons_of(engine, procedure_id)
    finally:
        engine.dispose()
    if as_json:
        _print_json(
            {
                **procedure.as_json(),
                "evidence": [run.as_json() for run in runs],
                "lessons": [lesson.as_json() for lesson in lessons],
            }
        )
        return
    click.echo(
        f"Procedure {procedure.id} ({procedure.status}, confidence "
        f"{procedure.confidence:.2f}, topic {procedure.topic_key})"
    )
    click.echo(procedure.body)
    click.echo("Evidence:")
    for run in runs:
        click.echo(
            f"  event {run.event_id}  {iso(run.at)}  {run.host}  session "
            f"{run.session_key}  {run.outcome}"
        )
    for lesson in lessons:
        click.echo(f"Lesson (closed by event {lesson.resolved_by_event_id}):")
        for line in lesson.body.splitlines():
            click.echo(f"  {line}")
        for attempt in lesson.attempts:
            repeat = f", repeats attempt {attempt.duplicate_of}" if attempt.duplicate_of else ""
            edited = ", ".join(attempt.files) or "no edits"
            click.echo(
                f"  attempt {attempt.attempt_number}: event {attempt.event_id}, exit "
                f"{attempt.exit_code}, after {edited}{repeat}"
            )


@procedures.command("archive")
@click.argument("procedure_id", type=int)
def procedures_archive(procedure_id: int) -> None:
    """Archive a procedure: it is no longer shown, and new runs never revive it.

    \b
    Example:
      remem procedures archive 3
    """
    from remem.procedures.store import archive

    _settings_unused, engine = _open()
    try:
        archived = archive(engine, procedure_id)
    finally:
        engine.dispose()
    click.echo(f"Archived procedure {archived.id}: {archived.command}")


@cli.command()
@click.option(
    "--cwd",
    "cwd",
    type=click.Path(),
    default=None,
    help="A directory of the project (default: the current one).",
)
@click.option("--page", type=int, default=1, show_default=True, help="Page of the digest.")
@click.option("--json", "as_json", is_flag=True, help="Every procedure of the digest as JSON.")
def context(cwd: str | None, page: int, as_json: bool) -> None:
    """Print the digest the agent gets at session start: the procedures proven in this project
    and branch (and inherited from the default branch), with their pitfalls. Prints nothing when
    there are none.

    \b
    Example:
      remem context --cwd ~/src/shop --page 2
    """
    from remem.capture.identity import locate
    from remem.capture.ingest import executor
    from remem.db.engine import READ_ONLY
    from remem.procedures import digest

    settings, engine = _open()
    root, branch = locate(os.path.abspath(os.path.expanduser(cwd or os.getcwd())))
    try:
        with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
            entries = digest.read_entries(executor(connection), root, branch, settings.inherit_from)
    finally:
        engine.dispose()
    if as_json:
        _print_json(
            {
                "project": root,
                "branch": branch,
                "procedures": [entry.as_json() for entry in entries],
            }
        )
        return
    pages = digest.paginate(
        entries,
        digest.header_for(root, branch),
        settings.context_max_chars,
        settings.context_max_lines,
    )
    if not pages:
        return
    if not 1 <= page <= len(pages):
        raise RememError(f"The digest has {len(pages)} page(s): ask for --page 1 to {len(pages)}.")
    click.echo(pages[page - 1], nl=False)


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
        _print_json([check.as_json() for check in checks])
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

    settings = _settings()
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

    settings = _settings()
    require_home(settings)
    click.echo(cron_line(settings.home))


@cli.command()
@click.option("--keep", is_flag=True, help="Keep the temporary home and print where it is.")
def demo(keep: bool) -> None:
    """Feed a realistic Claude Code session through remem-hook in a temporary home, run a burst,
    and print the procedure it promoted. Touches nothing outside that temporary home.

    \b
    Example:
      remem demo
    """
    import os
    import subprocess
    import tempfile

    from remem.capture.install import hook_executable
    from remem.demo import demo_payloads

    workdir = tempfile.mkdtemp(prefix="remem-demo-")
    project = os.path.join(workdir, "shop")
    os.makedirs(os.path.join(project, ".git"))
    with open(os.path.join(project, ".git", "HEAD"), "w") as head:
        head.write("ref: refs/heads/main\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env["REMEM_HOME"] = os.path.join(workdir, "home")
    remem = os.path.join(os.path.dirname(hook_executable()), "remem")
    try:

        def run(args: list[str], stdin: str | None = None) -> str:
            result = subprocess.run(args, input=stdin, env=env, capture_output=True, text=True)
            if result.returncode != 0:
                raise RememError(f"demo step {' '.join(args)} failed: {result.stderr.strip()}")
            return result.stdout

        run([remem, "init"])
        click.echo(f"$ remem init  (REMEM_HOME={env['REMEM_HOME']})")
        for label, payload in demo_payloads(project):
            run([hook_executable(), "--host", "claude-code"], json.dumps(payload))
            click.echo(f"$ remem-hook --host claude-code   # {label}")
        click.echo("$ remem worker --burst")
        click.echo(run([remem, "worker", "--burst"]).rstrip())
        click.echo("$ remem procedures list")
        click.echo(run([remem, "procedures", "list"]).rstrip())
        click.echo("$ remem procedures show 1")
        click.echo(run([remem, "procedures", "show", "1"]).rstrip())
    finally:
        if keep:
            click.echo(f"Demo home kept at {env['REMEM_HOME']}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    cli(prog_name="remem")


if __name__ == "__main__":
    main()
