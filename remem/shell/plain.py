"""A command line that is one plain command, read without the grammar: the hook names the
workflow of what just failed, or is about to run, without loading tree-sitter.

Plain means words of letters, digits and the characters paths, options and assignments use,
on one line: no quote, expansion, redirection, pipe, list or comment, and no reserved word.
Such a line is one step, and its workflow (remem/shell/analysis.py) is its words but its
wrappers (remem/shell/wrappers.py) joined by one space; for anything else this says nothing
(None) and the grammar decides. Pure, stdlib only.
"""

from __future__ import annotations

from remem.shell.wrappers import is_assignment, unwrapped, wrapped_form

_PLAIN_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t_-./=:,+@%"
)
# Words bash reads as grammar when they come first.
_RESERVED = frozenset(
    {
        "if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done", "case",
        "esac", "in", "function", "select", "time", "coproc",
    }
)  # fmt: skip


def plain_workflow(command: str | None) -> str | None:
    """The workflow of a plain command line; None when the line is not plain."""
    if not command or not set(command) <= _PLAIN_CHARS:
        return None
    words = command.split()
    if not words or words[0] in _RESERVED:
        return None
    assigned = next((i for i, word in enumerate(words) if not is_assignment(word)), len(words))
    command_words = words[assigned:]
    return " ".join(words[:assigned] + [command_words[i] for i in unwrapped(command_words)])


def plain_form(command: str | None) -> str | None:
    """The workflow of a plain command line as its wrappers ran it (`rtk bun run test`), as
    the worker keys what cannot run here; None when the line is not plain."""
    workflow = plain_workflow(command)
    if workflow is None or command is None:
        return None
    words = command.split()
    assigned = next((i for i, word in enumerate(words) if not is_assignment(word)), len(words))
    return wrapped_form(words[assigned:], workflow)
