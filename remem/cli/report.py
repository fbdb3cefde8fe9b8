"""`remem report`: whether the memory helped, per project and in total."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from remem.cli.app import (
    cli,
    current_settings,
    json_option,
    print_json,
    print_table,
    project_option,
)
from remem.errors import RememError

if TYPE_CHECKING:
    from remem.admin.report import Report


# What each column counts: printed under the table and in --help, from this one place.
LEGEND = (
    ("sessions", "sessions that started in the window"),
    ("shown in", "sessions shown a digest that then made a tool call (opened only: not counted)"),
    ("items shown", "procedures and known errors those digests showed, once per session"),
    ("used", "shown procedures whose workflow then ran in that session"),
    ("passed", "of those, the ones that passed there"),
    ("advice", "advice the hook gave after a failure or before a command"),
    ("followed", "advice whose command ran, or whose file was edited, within the next 5 calls"),
    ("repeats", "shown known errors met again in that session"),
)


def legend() -> str:
    width = max(len(name) for name, _ in LEGEND)
    return "\n".join(f"  {name.ljust(width)}  {meaning}" for name, meaning in LEGEND)


HELP = f"""Report whether the memory helped: sessions, the procedures and known errors their
digests showed, how many shown procedures were used and passed, advice given and followed,
known errors met again after they were shown, failing calls per session week by week, and
the procedures shown most often and never used.

\b
The columns:
{legend()}

\b
Example:
  remem report --since 30d
  remem report --project ~/src/shop --json
"""


@cli.command("report", help=HELP)
@project_option("A directory of the project (default: every project).")
@click.option(
    "--since", default="30d", show_default=True, help='The window reported on, e.g. "7d".'
)
@json_option("the report")
def report_command(root: str | None, since: str, as_json: bool) -> None:
    from remem.admin.report import read_report
    from remem.config import parse_duration
    from remem.db.snapshot import reading

    try:
        since_s = parse_duration(since)
    except ValueError as exc:
        raise RememError(f"--since {since}: {exc}.") from None
    with reading(current_settings()) as execute:
        report = read_report(execute, root, since_s, time.time())
    if as_json:
        print_json(report.as_json())
        return
    _print(report)


# The table's headers; --json keeps the full names.
_SHORT = {
    "sessions_shown": "shown in",
    "shown": "items shown",
    "passed_when_used": "passed",
    "advice_given": "advice",
    "advice_followed": "followed",
    "repeats_after_shown": "repeats",
}


def _print(report: Report) -> None:
    from remem.admin.report import COUNTS

    rows = [
        [figures.project or "total", *(str(figures.counts[name]) for name in COUNTS)]
        for figures in (*report.projects, report.total)
    ]
    print_table(
        "Did the memory help",
        ["project", *(_SHORT.get(name, name) for name in COUNTS)],
        rows if report.projects else [],
        empty="No session in this window yet: the report fills as agents work.",
    )
    if not report.projects:
        return
    click.echo(legend())
    click.echo("Failing calls per session, by week:")
    for week in report.total.weeks:
        per = week.as_json()["per_session"]
        click.echo(f"  {week.week}  {week.sessions} sessions  {week.failing_calls} failing  {per}")
    if report.total.never_used:
        click.echo("Shown most often and never used:")
    for item in report.total.never_used:
        click.echo(
            f"  procedure {item.procedure_id}  shown in {item.sessions_shown} sessions  "
            f"{item.command}  ({item.project})"
        )
