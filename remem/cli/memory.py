"""Commands that read what was learnt: procedures, the context digest, and the demo."""

from __future__ import annotations

import json
import os
import shutil
import time

import click

from remem.cli.app import (
    CWD_OPTION,
    ROW_ID,
    cli,
    current_settings,
    json_option,
    open_home,
    page_option,
    print_table,
    project_option,
)
from remem.db.snapshot import read_snapshot
from remem.db.vocabulary import PROCEDURE_STATUSES
from remem.errors import RememError


@cli.group()
def procedures() -> None:
    """Procedures: commands proven to work, with their evidence.

    \b
    Example:
      remem procedures list --project ~/src/shop --branch main
    """


@procedures.command("list")
@project_option("A directory of the project (default: every project).")
@click.option("--branch", default=None, help="Branch name ('' for none).")
@click.option(
    "--status",
    "status_filter",
    type=click.Choice(PROCEDURE_STATUSES),
    default=None,
    help="Only this status (default: active).",
)
@click.option("--all", "show_all", is_flag=True, help="Every status, archived included.")
@json_option("the procedures")
def procedures_list(
    root: str | None,
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
    from remem.agent.listing import procedures_list_text

    click.echo(procedures_list_text(root, branch, status_filter, show_all, as_json), nl=False)


@procedures.command("show")
@click.argument("procedure_id", type=ROW_ID)
@json_option("the procedure")
@click.option(
    "--evidence-page",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Which page of evidence runs to show, newest first (50 a page).",
)
def procedures_show(procedure_id: int, as_json: bool, evidence_page: int) -> None:
    """Show one procedure: its variants, evidence runs, files and lessons, and where else the
    errors of its lessons were met in the project.

    \b
    Example:
      remem procedures show 3 --json
      remem procedures show 3 --evidence-page 2
    """
    from remem.agent.listing import procedure_text

    click.echo(procedure_text(procedure_id, evidence_page, as_json), nl=False)


def _say(line: str) -> None:
    """One line of remem's, whatever recorded text it quotes: no control character of it
    reaches the terminal, no line break of it starts a line."""
    from remem.record.quote import escape_unsafe

    click.echo(escape_unsafe(line))


@procedures.command("errors")
@project_option("A directory of the project (default: every project).")
@json_option("the errors")
def procedures_errors(root: str | None, as_json: bool) -> None:
    """List the errors the project met and what fixed them (or how often they were seen
    unfixed), on every branch and command, newest first: the "Known errors" of the digest, in
    full; then the commands that failed here and what passed instead of them.

    \b
    Example:
      remem procedures errors --project ~/src/shop
    """
    from remem.agent.digest import fix_text
    from remem.agent.known import read_known_errors
    from remem.agent.listing import substitution_line
    from remem.agent.substitutions import read_substitutions
    from remem.json_contract import date
    from remem.record.quote import NO_OUTPUT

    with read_snapshot(current_settings()) as execute:
        found = read_known_errors(execute, root)
        substitutions = read_substitutions(execute, root)
    print_table(
        "Known errors",
        ["error", "workflow", "branch", "seen", "fixed by", "when"],
        [
            [
                s.error if s.error and s.error.strip() else f"({NO_OUTPUT})",
                s.workflow or "",
                s.branch or "-",
                str(s.times_seen),
                fix_text(s),
                date(s.resolved_at if s.resolved_at is not None else s.last_seen_at or 0),
            ]
            for s in found
        ],
        empty="No known errors yet: each error a failed run shows is recorded here.",
        json=[item.as_json() for item in [*found, *substitutions]] if as_json else None,
    )
    for substitution in [] if as_json else substitutions:
        click.echo(substitution_line(substitution))


@procedures.command("rebuild")
@click.option("--no-drain", is_flag=True, help="Only queue the work; the worker does it.")
def procedures_rebuild(no_drain: bool) -> None:
    """Re-derive every procedure and lesson from the captured events under the current rules.
    Archived procedures stay archived. The worker runs this once by itself after an upgrade
    that asks for it; running it again changes nothing.

    \b
    Example:
      remem procedures rebuild
    """

    from remem.procedures.rebuild import rebuild
    from workers.work import rederive

    with open_home() as (settings, engine):
        report = rebuild(engine, time.time(), settings.ignore_commands)
        click.echo(
            f"Cleared {report.procedures_cleared} procedure(s), kept {report.archived_kept} "
            f"archived, merged {report.projects_merged} worktree project(s); "
            f"{report.tasks_rewound} session(s) queued."
            + (
                f" {report.patches_read} patch(es) stored as commands are now edits."
                if report.patches_read
                else ""
            )
        )
        if not no_drain:
            stats = rederive(engine, settings)
            click.echo(
                f"Re-derived: {stats['promoted']} procedure(s) promoted from "
                f"{stats['events']} event(s)."
            )


@procedures.command("archive")
@click.argument("procedure_id", type=ROW_ID)
def procedures_archive(procedure_id: int) -> None:
    """Archive a procedure: it is no longer shown, and new runs never revive it.

    \b
    Example:
      remem procedures archive 3
    """
    from remem.agent.read import read_procedure
    from remem.db.snapshot import engine_reader
    from remem.procedures.promote import archive

    with open_home() as (_settings, engine):
        archive(engine, procedure_id, time.time())
        with engine_reader(engine) as execute:
            archived = read_procedure(execute, procedure_id)
    click.echo(f"Archived procedure {archived.id}: {archived.command}")


@procedures.command("unarchive")
@click.argument("procedure_id", type=ROW_ID)
def procedures_unarchive(procedure_id: int) -> None:
    """Take back an archive: the procedure is decided again from its runs (active, stale or
    broken) and reaches the digest again when active.

    \b
    Example:
      remem procedures unarchive 3
    """
    from remem.procedures.promote import unarchive

    with open_home() as (_settings, engine):
        status = unarchive(engine, procedure_id, time.time())
    click.echo(f"Procedure {procedure_id} is {status}.")


@cli.command()
@CWD_OPTION
@page_option("the digest")
@json_option("every procedure of the digest")
def context(cwd: str | None, page: int, as_json: bool) -> None:
    """Print the digest the agent gets at session start: the procedures proven in this project
    and branch (and inherited from the default branch), with their pitfalls. Prints nothing when
    there are none.

    \b
    Example:
      remem context --cwd ~/src/shop --page 2
    """
    from remem.agent.context import context_text

    click.echo(context_text(cwd, page, as_json), nl=False)


@cli.command()
@click.option("--keep", is_flag=True, help="Keep the temporary home and print where it is.")
def demo(keep: bool) -> None:
    """Feed a realistic Claude Code session through remem-hook in a temporary home, run a burst,
    and print the procedure it promoted. Touches nothing outside that temporary home.

    \b
    Example:
      remem demo
    """
    import subprocess
    import tempfile

    from remem.admin.demo import demo_payloads
    from remem.paths import installed_executable

    workdir = tempfile.mkdtemp(prefix="remem-demo-")
    project = os.path.join(workdir, "shop")
    os.makedirs(os.path.join(project, ".git"))
    with open(os.path.join(project, ".git", "HEAD"), "w") as head:
        head.write("ref: refs/heads/main\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env["REMEM_HOME"] = os.path.join(workdir, "home")
    hook = installed_executable("remem-hook")
    remem = os.path.join(os.path.dirname(hook), "remem")
    try:

        def run(args: list[str], stdin: str | None = None) -> str:
            result = subprocess.run(args, input=stdin, env=env, capture_output=True, text=True)
            if result.returncode != 0:
                raise RememError(f"demo step {' '.join(args)} failed: {result.stderr.strip()}")
            return result.stdout

        run([remem, "init"])
        click.echo(f"$ remem init  (REMEM_HOME={env['REMEM_HOME']})")
        for label, payload in demo_payloads(project):
            run([hook, "--host", "claude-code"], json.dumps(payload))
            click.echo(f"$ remem-hook --host claude-code   # {label}")
        for step in ("worker --burst", "procedures list", "procedures show 1"):
            click.echo(f"$ remem {step}")
            click.echo(run([remem, *step.split()]).rstrip())
    finally:
        if keep:
            click.echo(f"Demo home kept at {env['REMEM_HOME']}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
