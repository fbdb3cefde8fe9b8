"""The `remem` command: parse options, call one library function, format what it returns.

This module holds the group and what every command shares; the commands live beside it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import click

from remem.config import Settings, load_settings
from remem.db.vocabulary import LARGEST_ID
from remem.errors import RememError

if TYPE_CHECKING:
    from sqlalchemy import Engine

F = TypeVar("F", bound=Callable[..., Any])

# Nothing here imports SQLAlchemy: `remem --help` and the commands that read with the stdlib
# answer in the time of an interpreter start. A command imports what it needs when it runs.


class _Group(click.Group):
    """Turns RememError into one line on stderr and its exit code; anything else is a bug and
    keeps its traceback."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command that is a subcommand of a group is named with its group:
        `remem export` answers `remem procedures export`."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError:
            name = args[0] if args else ""
            found = [
                f"`remem {group} {name}`"
                for group, command in sorted(self.commands.items())
                if isinstance(command, click.Group) and name in command.commands
            ]
            if not found:
                raise
            ctx.fail(f"No such command '{name}': did you mean {' or '.join(found)}?")

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RememError as exc:
            from remem.record.quote import escape_unsafe  # an error may name recorded text

            click.echo(f"remem: {escape_unsafe(str(exc))}", err=True)
            ctx.exit(exc.exit_code)
        except Exception as exc:
            cause = _database_error(exc)
            if cause is None:
                raise
            click.echo(f"remem: {_database_problem(cause)}", err=True)
            ctx.exit(1)


def _database_error(exc: Exception) -> BaseException | None:
    """The driver's error behind a failed read or write (stdlib sqlite3 directly, or wrapped by
    SQLAlchemy, whose module is only looked up if a command loaded it)."""
    if isinstance(exc, sqlite3.Error):
        return exc
    sqlalchemy_errors = sys.modules.get("sqlalchemy.exc")
    if sqlalchemy_errors is not None and isinstance(exc, sqlalchemy_errors.DBAPIError):
        cause: BaseException | None = exc.orig
        return cause if cause is not None else exc
    return None


def _database_problem(exc: BaseException) -> str:
    """One line naming the database and what to do; a damaged file is a user's problem, not a
    traceback."""
    try:
        where = load_settings().sqlite_file or "the database"
    except RememError:
        where = "the database"
    reason = str(exc).strip() or type(exc).__name__
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
    """Print data as the JSON contract has it (remem.json_contract, docs/json.md)."""
    from remem.record.quote import json_text

    click.echo(json_text(data), nl=False)


def options(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """The decorators of several commands as one, applied in the order written."""

    def decorate(command: F) -> F:
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return decorate


def json_option(what: str) -> Callable[[F], F]:
    """The one `--json` option, for every command that prints a table or a report: it passes
    `as_json` and says what is printed, e.g. json_option("the procedures")."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON.")


# A directory that names the project a command reads (its repository, branch and directory).
# A row's id as the database can hold it: a larger number is a usage error, not an overflow.
ROW_ID = click.IntRange(min=1, max=LARGEST_ID)

CWD_OPTION = click.option(
    "--cwd",
    type=click.Path(),
    default=None,
    help="A directory of the project (default: the current one).",
)


def page_option(of: str) -> Callable[[F], F]:
    """The one `--page` option of an answer read a page at a time: page_option("the digest")."""
    return click.option(
        "--page", type=click.IntRange(min=1), default=1, show_default=True, help=f"Page of {of}."
    )


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="remem")
def cli() -> None:
    """remem: procedural memory for coding agents, earned from the commands they verified.

    \b
    Example:
      remem init            # create ~/.remem and connect your agents
      remem status          # what has been captured so far
    """


@contextlib.contextmanager
def open_home(require_current_schema: bool = True) -> Iterator[tuple[Settings, Engine]]:
    """The settings and an engine on the home's database, disposed of when the command ends."""
    from remem.admin.home import open_engine

    settings = current_settings()
    engine = open_engine(settings, require_current_schema=require_current_schema)
    try:
        yield settings, engine
    finally:
        engine.dispose()


def project_option(help: str, here: bool = False) -> Callable[[F], F]:
    """The one `--project` option. It passes `root`: the project its directory belongs to as
    capture stores it (the repository's main work tree for any of its worktrees, symlinks
    resolved); when not given, None, or with `here` the current directory's."""

    def to_root(_context: click.Context, _option: click.Parameter, path: str | None) -> str | None:
        from remem.record.identity import locate_given

        return locate_given(path)[0] if path is not None or here else None

    return click.option(
        "--project", "root", type=click.Path(), default=None, help=help, callback=to_root
    )


def print_table(
    title: str,
    columns: list[str],
    rows: list[list[str]],
    empty: str | None = None,
    json: Any = None,
) -> None:
    """A table (remem.record.table); with no rows, the `empty` line instead, saying why and what
    comes next; given `json` (what --json asked for), that instead."""
    if json is not None:
        print_json(json)
        return
    if not rows and empty is not None:
        click.echo(empty)
        return
    from remem.record.table import terminal_table

    click.echo(terminal_table(title, columns, rows), nl=False)
