"""The front door of `remem`: the plain forms of `remem --help`, `remem context` and
`remem status` answered with the stdlib, as the hook answers an agent; every other command line
goes to click.

Importing click and the command modules costs as much as starting the interpreter, and these
three are what people and agents run most. A command line this module does not fully understand
(an option it does not know, a command's own --help, anything that fails) is handed to click,
which parses it again and gives the same answer, or the proper message, a little later. The
click commands call the same functions below, so there is one implementation of each answer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

TYPE_CHECKING = False  # `typing` costs the answer a tenth of an interpreter start
if TYPE_CHECKING:
    from typing import Any


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        answer = _answer(args)
    except Exception:  # click runs the same command again and reports what went wrong
        answer = None
    if answer is None:
        from remem.cli.commands import cli

        cli.main(args=args, prog_name="remem")
        return
    sys.stdout.write(answer)
    sys.stdout.flush()


def _answer(args: list[str]) -> str | None:
    if args in (["--help"], ["-h"]):
        return _top_help()
    if args and args[0] in ANSWERS:
        options = _parse(args[1:], *OPTIONS[args[0]])
        return None if options is None else ANSWERS[args[0]](**options)
    return None


def _top_help() -> str | None:
    """`remem --help` as click renders it at its widest (80 columns and more); a narrower
    terminal gets click's own, wrapped to fit."""
    import shutil

    if shutil.get_terminal_size().columns < 80:
        return None
    from remem.cli.help_text import TOP_HELP

    return TOP_HELP


def _parse(
    args: list[str], values: dict[str, Callable[[str], Any]], flags: dict[str, str]
) -> dict[str, Any] | None:
    """`--name VALUE`, `--name=VALUE` and flags; None for anything else, which click handles."""
    options: dict[str, Any] = {name.lstrip("-"): None for name in values} | {
        target: False for target in flags.values()
    }
    position = 0
    while position < len(args):
        word = args[position]
        name, has_value, value = word.partition("=")
        if name in values:
            if not has_value:
                position += 1
                if position == len(args):
                    return None
                value = args[position]
            try:
                options[name.lstrip("-")] = values[name](value)
            except ValueError:
                return None
        elif word in flags:
            options[flags[word]] = True
        else:
            return None
        position += 1
    return options


# Called with the options parsed by name (`json` for --json).
def _context_text(cwd: str | None, page: int | None, json: bool) -> str:
    from remem.agent.context import context_text

    return context_text(cwd, page, json)


def _status_text(json: bool) -> str:
    from remem.admin.status import status_text

    return status_text(json)


def _page_number(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError("pages count from 1")
    return number


ANSWERS: dict[str, Callable[..., str]] = {"context": _context_text, "status": _status_text}
OPTIONS: dict[str, tuple[dict[str, Callable[[str], Any]], dict[str, str]]] = {
    "context": ({"--cwd": str, "--page": _page_number}, {"--json": "json"}),
    "status": ({}, {"--json": "json"}),
}
