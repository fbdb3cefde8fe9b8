"""The click group with every command registered: importing a command module registers it.

`remem --help` itself is answered from remem/cli/help_text.py without importing any of this (see
remem.cli.fast); `top_help` renders what click would print, and a test keeps the two equal.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from remem.cli import (  # noqa: F401
    agent,
    drops,
    forget,
    home,
    hooks,
    importer,
    memory,
    report,
    team,
    ui,
    work,
)
from remem.cli.app import cli

__all__ = ["cli", "top_help", "write_help_text"]

HELP_TEXT_FILE = Path(__file__).with_name("help_text.py")


def top_help() -> str:
    """`remem --help` as click prints it on a terminal of 80 columns or more."""
    with click.Context(
        cli, info_name="remem", terminal_width=78, **cli.context_settings
    ) as context:
        return cli.get_help(context) + "\n"


def write_help_text() -> None:
    """Rewrite help_text.py from the commands (`make help-text`)."""
    lines = "".join(f"    {json.dumps(line)}\n" for line in top_help().splitlines(keepends=True))
    HELP_TEXT_FILE.write_text(
        '"""`remem --help`, rendered by remem.cli.commands.write_help_text: `make help-text`."""\n'
        f"\nTOP_HELP = (\n{lines})\n",
        encoding="utf-8",
    )
