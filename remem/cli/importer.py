"""`remem import`: learn from the sessions the agents already kept on disk."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from remem.cli.app import cli, json_option, open_home, options, print_json
from remem.errors import NotFound

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from remem.config import Settings
    from remem.transcripts.importer import ImportSummary

SHOWN_PROCEDURES = 10
Summary = TypeVar("Summary")


@cli.group("import")
def import_group() -> None:
    """Learn from past sessions: Claude Code transcripts and Codex rollouts already on disk.

    Each shell command and edit of a transcript is stored as the live hook would have stored
    it (same redaction, same identity, same key: importing twice, or a session the hooks also
    captured, stores each run once); then one burst turns them into procedures.

    \b
    Example:
      remem import all                       # ~/.claude/projects and ~/.codex/sessions
      remem import claude-code --since 60d --project ~/src/shop
      remem import codex ~/.codex/sessions/2026/11 --dry-run
      remem import entire --fetch            # the sessions this repository keeps in git
    """


_since_option = click.option(
    "--since",
    default=None,
    metavar="DURATION",
    help="Only calls this recent, e.g. 30d (default: promotion.max_age doubled).",
)
_run_options = options(
    click.option("--dry-run", is_flag=True, help="Count what would be stored; store nothing."),
    click.option("--no-promote", is_flag=True, help="Store the events; run no burst after."),
    json_option("the summary"),
)
_options = options(
    _since_option,
    click.option(
        "--project",
        type=click.Path(),
        default=None,
        help="Only sessions whose cwd is inside this folder (or in its repository).",
    ),
    _run_options,
)

# One command an agent, differing in their help only: what is read, where by default, one file
# of it, and an example PATH with options.
HOST_COMMANDS = (
    (
        "claude-code",
        "Claude Code transcripts",
        "every session under ~/.claude/projects",
        "a transcript",
        "~/.claude/projects/-home-me-src-shop --json",
    ),
    (
        "codex",
        "Codex rollouts",
        "every rollout under ~/.codex/sessions",
        "a rollout",
        "~/.codex/sessions/2026/11 --since 14d",
    ),
)


def _host_command(host: str, what: str, default: str, one: str, example: str) -> None:
    @import_group.command(
        host,
        help=f"""Import {what} (default: {default}).

        A PATH is {one} (.jsonl) or a folder searched for them.

        \b
        Example:
          remem import {host}
          remem import {host} {example}
        """,
    )
    @click.argument("paths", nargs=-1, type=click.Path())
    @_options
    def import_host(paths: tuple[str, ...], **options: Any) -> None:
        _import((host,), paths, **options)


for row in HOST_COMMANDS:
    _host_command(*row)


@import_group.command("all")
@_options
def import_all(**options: Any) -> None:
    """Import every Claude Code and Codex session in the agents' own folders.

    \b
    Example:
      remem import all --dry-run
    """
    _import(("claude-code", "codex"), (), **options)


def _import(
    hosts: tuple[str, ...],
    paths: tuple[str, ...],
    since: str | None,
    project: str | None,
    dry_run: bool,
    no_promote: bool,
    as_json: bool,
) -> None:
    from remem.transcripts import importer

    with open_home() as (settings, engine):
        since_s = _since_s(since, settings)
        now = time.time()
        user_home = os.path.expanduser("~")
        sources = [s for host in hosts for s in importer.discover(host, paths, user_home)]
        options = importer.ImportOptions(now - since_s, project, dry_run)
        summary = _with_progress(
            lambda advance: importer.import_transcripts(engine, sources, options, now, advance),
            sum(s.size for s in sources),
            len(sources),
        )
        words = ["remem", "import", hosts[0] if len(hosts) == 1 else "all", *paths]
        if project is not None:
            words += ["--project", project]
        report = _report(summary, since, since_s, words, now)
        if not dry_run and not no_promote:
            report.update(_promote(engine, settings))
    _print(report, as_json)


@import_group.command("entire")
@click.argument("repository", required=False, type=click.Path())
@click.option("--fetch", is_flag=True, help="Run `git fetch origin entire/checkpoints/v1` first.")
@_since_option
@_run_options
def import_entire(
    repository: str | None,
    fetch: bool,
    since: str | None,
    dry_run: bool,
    no_promote: bool,
    as_json: bool,
) -> None:
    """Import the sessions a repository keeps on its Entire checkpoint branch.

    Reads `entire/checkpoints/v1` (origin's when there is no local one) and the refs of one
    checkpoint each (refs/entire/checkpoints/...) from git's object store, never checking
    anything out: Claude Code sessions, Codex rollouts and OpenCode exports, recorded on any
    machine, become sessions of this checkout (the same folder relative to the repository, the
    branch they recorded). Other agents' sessions are counted and skipped. REPOSITORY is a
    folder of the repository (default: the current directory).

    \b
    Example:
      remem import entire
      remem import entire ~/src/shop --fetch --since 90d --json
    """
    from remem.record.identity import locate_given
    from remem.transcripts import entire, entire_current, gitstore
    from remem.transcripts.importer import ImportOptions

    with open_home() as (settings, engine):
        since_s = _since_s(since, settings)
        now = time.time()
        if repository is not None and not os.path.isdir(os.path.expanduser(repository)):
            raise NotFound(f"No folder at {repository}: give a folder of a git repository.")
        root, _branch, work_tree, _directory = locate_given(repository)
        if fetch:
            gitstore.fetch(work_tree, entire.REMOTE, entire.BRANCH)
        storage = entire.find_storage(work_tree)
        if not storage.found:
            raise NotFound(
                f"{work_tree} keeps no Entire checkpoints: no {entire.BRANCH} branch (nor "
                f"{entire.REMOTE}'s) and no {entire.CHECKPOINT_REFS}...; "
                "`remem import entire --fetch` fetches origin's."
            )
        found = entire.sessions(storage)
        options = ImportOptions(now - since_s, None, dry_run)
        summary = _with_progress(
            lambda advance: entire.import_checkpoints(
                engine, storage, found, options, now, advance
            ),
            sum(session.transcript.size for session in found),
            len(found),
        )
        if not dry_run:
            entire_current.write_state(settings.home, root, storage)
        words = ["remem", "import", "entire", *([repository] if repository else [])]
        report = _report(summary, since, since_s, words, now)
        if not dry_run and not no_promote:
            report.update(_promote(engine, settings))
    _print(report, as_json)


def _since_s(since: str | None, settings: Settings) -> float:
    from remem.config import parse_duration
    from remem.transcripts.importer import default_since_s

    try:
        return parse_duration(since) if since else default_since_s(settings.max_age_s)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None


def _report(
    summary: ImportSummary, since: str | None, since_s: float, words: list[str], now: float
) -> dict[str, Any]:
    return {
        **summary.as_json(),
        "since_s": since_s,
        "since_default": since is None,
        "older_calls_command": _older_calls_command(words, summary, now),
    }


def _print(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(report)
    else:
        _print_summary(report)


def _older_calls_command(words: list[str], summary: ImportSummary, now: float) -> str | None:
    """The same import (`words`) with a `--since` that reaches the oldest call it left out as
    too old; None when it left none out."""
    import shlex

    from remem.transcripts.importer import since_covering

    if summary.oldest_too_old_at is None:
        return None
    return shlex.join([*words, "--since", since_covering(summary.oldest_too_old_at, now)])


def _with_progress(
    run: Callable[[Callable[[int, int], None] | None], Summary], total_bytes: int, total_files: int
) -> Summary:
    """`run(on_progress)`, with a progress bar of the bytes and files read on a terminal."""
    if not sys.stderr.isatty():
        return run(None)
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        bar = progress.add_task(f"files 0/{total_files}", total=total_bytes)

        def advance(done_bytes: int, done_files: int) -> None:
            description = f"files {done_files}/{total_files}"
            progress.update(bar, completed=done_bytes, description=description)

        return run(advance)


def _promote(engine: Engine, settings: Settings) -> dict[str, Any]:
    """One burst, as `remem worker --burst` runs it, the procedures it made active, and how
    many it learnt stale: their sessions are older than `promotion.max_age`."""
    from remem.agent.counts import read_stale
    from remem.agent.read import Procedure, read_procedures
    from remem.db.snapshot import engine_reader
    from remem.db.vocabulary import ACTIVE
    from workers.logs import configure
    from workers.runner import Worker
    from workers.work import run_burst

    def every() -> list[Procedure]:
        with engine_reader(engine) as execute:
            return read_procedures(execute, statuses=None)

    configure(settings)
    before = {p.id for p in every()}
    stats = run_burst(Worker(engine, settings))
    learnt = [p for p in every() if p.id not in before]
    with engine_reader(engine) as execute:
        stale = read_stale(execute, ids=[p.id for p in learnt])
    return {
        "promoted": int(stats.get("promoted", 0)),
        "tasks_failed": int(stats.get("tasks_failed", 0)),
        "procedures": [
            {"id": p.id, "command": p.command, "project": p.project, "branch": p.branch}
            for p in learnt
            if p.status == ACTIVE
        ],
        "stale": stale.count,
        "stale_last_verified_at": stale.last_verified_at,
        "max_age_s": settings.max_age_s,
    }


def _print_summary(report: dict[str, Any]) -> None:
    from remem.record.lines import MAX_LINE_BYTES
    from remem.record.quote import escape_unsafe  # recorded commands, roots and branches

    verb = "Would import" if report["dry_run"] else "Imported"
    if "session_copies" in report:
        where = [f"{report['ref']} at {report['commit'][:12]}"] if report["ref"] else []
        if report["checkpoint_refs"]:
            where.append(f"{report['checkpoint_refs']} checkpoint ref(s)")
        click.echo(f"Read {report['session_copies']} session copies from {' and '.join(where)}.")
    click.echo(
        f"{verb} {report['files']} file(s), {report['sessions']} session(s): "
        f"{report['commands']} command(s), {report['edits']} edit(s); "
        f"{report['events_new']} new event(s), {report['events_known']} already known."
    )
    click.echo(_window(report))
    skipped = {
        "malformed line(s)": report["skipped_lines"],
        f"line(s) over {MAX_LINE_BYTES // 2**20} MiB": report["lines_too_long"],
        "file(s) not regular or unreadable": report["files_refused"],
        "call(s) older than --since": report["calls_too_old"],
        "file(s) older than --since": report["files_too_old"],
        "call(s) outside --project": report["calls_outside_project"],
        "call(s) without a result": report["unpaired_calls"],
        **{f"dropped ({reason})": n for reason, n in report["dropped"].items()},
        "session copies without valid metadata": report.get("invalid_metadata", 0),
        "call(s) repeated in later checkpoints": report.get("calls_repeated", 0),
        "copies repeated unchanged": report.get("copies_repeated", 0),
        **{f"{agent} session(s)": n for agent, n in report.get("agents_skipped", {}).items()},
    }
    shown = [f"{n} {what}" for what, n in skipped.items() if n]
    if shown:
        click.echo(f"Skipped: {', '.join(shown)}.")
    if report["older_calls_command"]:
        click.echo(escape_unsafe(f"To read those older ones too: {report['older_calls_command']}"))
    if "procedures" not in report:
        if not report["dry_run"]:
            click.echo("No burst ran: run `remem worker --burst` to promote them.")
        return
    procedures = report["procedures"]
    click.echo(f"Promoted {len(procedures)} procedure(s).")
    if report["stale"]:
        from remem.agent.counts import Stale

        stale = Stale(report["stale"], report["stale_last_verified_at"])
        click.echo(
            f"Learnt {stale.count} procedure(s), stale: {stale.said(report['max_age_s'])}. "
            "`remem procedures list` shows them with their runs and dates; the digest lists "
            "them as verified earlier where nothing was verified lately."
        )
    for procedure in procedures[:SHOWN_PROCEDURES]:
        where = procedure["project"] + (f" ({procedure['branch']})" if procedure["branch"] else "")
        click.echo(escape_unsafe(f"  {procedure['command']}  in {where}"))
    if len(procedures) > SHOWN_PROCEDURES:
        click.echo(f"  … and {len(procedures) - SHOWN_PROCEDURES} more: `remem procedures list`.")


def _window(report: dict[str, Any]) -> str:
    """`Read calls from the last 28 days (--since; by default twice promotion.max_age).`"""
    from remem.config import duration_text

    since_s = report["since_s"]
    days = since_s / 86_400
    window = f"{days:g} day{'' if days == 1 else 's'}" if days == int(days) else None
    said = window or duration_text(since_s)
    how = "; by default twice promotion.max_age" if report["since_default"] else ""
    verb = "Would read" if report["dry_run"] else "Read"
    return f"{verb} calls from the last {said} (--since{how})."
