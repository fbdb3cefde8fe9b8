"""The front door of `remem`: the plain forms of `remem --help`, `remem context`, `remem status`
and `remem procedures list|show` answered with the stdlib, as the hook answers an agent; every
other command line goes to click.

Importing click and the command modules costs as much as starting the interpreter, and these
are what people and agents run most. A command line this module does not fully understand
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

    # Options taking a value, flags, and the command's arguments, each with its conversion.
    Options = tuple[
        dict[str, Callable[[str], Any]],
        dict[str, str],
        tuple[tuple[str, Callable[[str], Any]], ...],
    ]


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
    for words in (tuple(args[:2]), tuple(args[:1])):
        if words in ANSWERS:
            options = _parse(args[len(words) :], *OPTIONS[words])
            return None if options is None else ANSWERS[words](**options)
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
    args: list[str],
    values: dict[str, Callable[[str], Any]],
    flags: dict[str, str],
    arguments: tuple[tuple[str, Callable[[str], Any]], ...] = (),
) -> dict[str, Any] | None:
    """`--name VALUE`, `--name=VALUE`, flags and the command's arguments, each given once; None
    for anything else, which click handles."""
    options: dict[str, Any] = {name.lstrip("-").replace("-", "_"): None for name in values} | {
        target: False for target in flags.values()
    }
    waiting = list(arguments)
    position = 0
    while position < len(args):
        word = args[position]
        name, has_value, value = word.partition("=")
        if waiting and not word.startswith("-"):
            argument, convert = waiting.pop(0)
            try:
                options[argument] = convert(word)
            except ValueError:
                return None
        elif name in values:
            if not has_value:
                position += 1
                if position == len(args):
                    return None
                value = args[position]
            try:
                options[name.lstrip("-").replace("-", "_")] = values[name](value)
            except ValueError:
                return None
        elif word in flags:
            options[flags[word]] = True
        else:
            return None
        position += 1
    return None if waiting else options


# Called with the options parsed by name (`json` for --json).
def _context_text(cwd: str | None, page: int | None, json: bool) -> str:
    from remem.agent.context import context_text

    return context_text(cwd, page, json)


def _status_text(json: bool) -> str:
    from remem.admin.status import status_text

    return status_text(json)


def _list_text(
    project: str | None, branch: str | None, status: str | None, show_all: bool, json: bool
) -> str:
    from remem.agent.listing import procedures_list_text
    from remem.record.identity import locate_given

    root = locate_given(project)[0] if project is not None else None
    return procedures_list_text(root, branch, status, show_all, json)


def _show_text(procedure_id: int, evidence_page: int | None, json: bool) -> str:
    from remem.agent.listing import procedure_text

    return procedure_text(procedure_id, evidence_page or 1, json)


def _page_number(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError("pages count from 1")
    return number


def _row_id(value: str) -> int:
    from remem.db.vocabulary import LARGEST_ID

    number = int(value)
    if not 1 <= number <= LARGEST_ID:
        raise ValueError("not a row id")
    return number


def _status(value: str) -> str:
    from remem.db.vocabulary import PROCEDURE_STATUSES

    if value not in PROCEDURE_STATUSES:
        raise ValueError("not a status")
    return value


ANSWERS: dict[tuple[str, ...], Callable[..., str]] = {
    ("context",): _context_text,
    ("status",): _status_text,
    ("procedures", "list"): _list_text,
    ("procedures", "show"): _show_text,
}
OPTIONS: dict[tuple[str, ...], Options] = {
    ("context",): ({"--cwd": str, "--page": _page_number}, {"--json": "json"}, ()),
    ("status",): ({}, {"--json": "json"}, ()),
    ("procedures", "list"): (
        {"--project": str, "--branch": str, "--status": _status},
        {"--all": "show_all", "--json": "json"},
        (),
    ),
    ("procedures", "show"): (
        {"--evidence-page": _page_number},
        {"--json": "json"},
        (("procedure_id", _row_id),),
    ),
}
