"""`remem procedures team`: the team's procedures pulled into this machine's database."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

import click

from remem.agent.listing import command_cell, where
from remem.cli.app import (
    ROW_ID,
    current_settings,
    json_option,
    page_option,
    print_json,
    print_table,
    project_option,
)
from remem.cli.memory import _say, procedures
from remem.errors import NotFound, RememError
from remem.json_contract import date, rfc3339

if TYPE_CHECKING:
    from remem.agent.read import TeamProcedure

TEAM_PAGE = 50  # rows of `remem procedures team` a page
NO_TEAM = (
    "No team procedures here: they arrive when [team] share includes this project and the "
    "daemon pulls."
)


@procedures.command("team")
@click.argument("row_id", metavar="[ID]", type=ROW_ID, required=False)
@project_option("A directory of the project (default: the current one).", here=True)
@page_option(f"the list ({TEAM_PAGE} a page)")
@json_option("the list, or the one,")
def procedures_team(row_id: int | None, root: str, page: int, as_json: bool) -> None:
    """List the team's procedures pulled for this project, or show one whole (ID is the id
    this list shows). The digest shows one where this machine has no procedure of its own for
    the workflow, and none it found broken or archived.

    \b
    Example:
      remem procedures team --project ~/src/shop
      remem procedures team 4 --json
    """
    from remem.agent import read
    from remem.db.snapshot import read_snapshot

    if row_id is not None:
        with read_snapshot(current_settings()) as execute:
            found = read.read_team_procedure(execute, row_id)
        if found is None:
            raise NotFound(f"No team procedure {row_id}: see `remem procedures team`.")
        if as_json:
            print_json(found.as_json())
        else:
            _print_team_procedure(found)
        return
    with read_snapshot(current_settings()) as execute:
        everything = read.read_team_procedures(execute, root)
    pages = max(-(-len(everything) // TEAM_PAGE), 1)
    if page > pages:
        raise RememError(f"The list has {pages} page(s): ask for --page 1 to {pages}.")
    shown = everything[(page - 1) * TEAM_PAGE : page * TEAM_PAGE]
    if as_json:
        print_json(
            {
                "project": root,
                "page": page,
                "pages": pages,
                "total": len(everything),
                "procedures": [p.as_json() for p in shown],
            }
        )
        return
    print_table(
        "Team procedures",
        ["id", "command", "where", "runs", "machines", "conf.", "status", "pulled"],
        [
            [
                str(p.id),
                command_cell(p.command, p.needs_credentials),
                where(p.scope, p.branch, p.directory, len(p.branches)),
                str(p.verified_runs),
                str(p.machines),
                f"{p.confidence:.2f}",
                p.status,
                _minute(p.pulled_at),
            ]
            for p in shown
        ],
        empty=NO_TEAM,
    )
    if pages > 1:
        order = shlex.join(
            ["remem", "procedures", "team", "--project", root, "--page", str(page + 1)]
        )
        click.echo(f"Run: {order}" if page < pages else f"(page {page} of {pages}: the last page)")


def _minute(epoch_s: float) -> str:
    return (rfc3339(epoch_s) or "")[:16].replace("T", " ")


def _count(number: int, word: str) -> str:
    return f"{number} {word}" if number == 1 else f"{number} {word}s"


def _print_team_procedure(p: TeamProcedure) -> None:
    from remem.record.quote import inert_command, inert_path, name_files, quote_text

    _say(
        f"Team procedure {p.id} ({p.status}, confidence {p.confidence:.2f}; team procedure "
        f"{p.team_procedure_id}, pulled {_minute(p.pulled_at)} UTC)"
    )
    _say(f"Command: {command_cell(inert_command(p.command), p.needs_credentials)}")
    _say(f"Project: {inert_path(p.project)}")
    _say(f"Where: {where(p.scope, p.branch, p.directory, len(p.branches))}")
    _say(f"Branches: {', '.join(map(inert_path, p.branches)) or '(none)'}")
    _say(
        f"Verified by the team: {_count(p.verified_runs, 'run')} in "
        f"{_count(p.distinct_sessions, 'session')} on {_count(p.machines, 'machine')}, first on "
        f"{date(p.first_verified_at)}, last on {date(p.last_verified_at)}."
    )
    if p.files:
        _say(f"Files edited before it passed: {name_files(p.files, p.files_more)}")
    _say(f"Workflow: {quote_text(p.workflow)}")
    # Written by another machine: its lines are its own, so the body is quoted whole.
    _say(f"Body: {quote_text(p.body)}")
