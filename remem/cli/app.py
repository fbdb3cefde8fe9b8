"""The `remem` command: parse options, call one library function, format what it returns.

This module holds the group and what every command shares; the commands live beside it.
"""

from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING, Any

import click
from sqlalchemy.exc import DBAPIError

from remem.config import Settings, load_settings
from remem.errors import RememError

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


def current_settings() -> Settings:
    return load_settings()


def print_json(data: Any) -> None:
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


def open_home(require_current_schema: bool = True) -> tuple[Settings, Engine]:
    from remem.home import open_engine

    settings = current_settings()
    return settings, open_engine(settings, require_current_schema=require_current_schema)


def project_root(path: str | None) -> str | None:
    """The project a `--project` path names, as capture stores it: the repository's main work
    tree for any directory of any of its worktrees, symlinks resolved."""
    if path is None:
        return None
    import os

    from remem.capture.identity import locate

    return locate(os.path.realpath(os.path.expanduser(path)))[0]


def print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    Console(width=max(120, shutil.get_terminal_size().columns)).print(table)


def main() -> None:
    cli(prog_name="remem")


if __name__ == "__main__":
    main()
