"""States that are no errors: `nothing to commit, working tree clean`, `Already up to date.`,
`Everything up-to-date`. A tool that finds nothing to do may exit non-zero, yet nothing is
wrong and nothing fixes it: such a failure teaches no known error, no lesson and no advice
(DESIGN.md §6). Its command's step is neither verified nor failed.

One row per state, each with a real excerpt that holds its line; a test walks the table. Pure,
stdlib only: the worker reads each failed step's output through it.
"""

from __future__ import annotations

import re

from remem.record.frozen import Record


class NoOpState(Record):
    tool: str
    pattern: str  # matched at the start of one line, stripped and colours removed
    example: str  # a real output holding the line


NO_OP_STATES: tuple[NoOpState, ...] = (
    NoOpState(
        "git commit",
        r"nothing to commit\b",
        "On branch main\nYour branch is up to date with 'origin/main'.\n\n"
        "nothing to commit, working tree clean",
    ),
    NoOpState(
        "git commit",
        r"nothing added to commit\b",
        "On branch main\nUntracked files:\n"
        '  (use "git add <file>..." to include in what will be committed)\n\tnotes.md\n\n'
        'nothing added to commit but untracked files present (use "git add" to track)',
    ),
    NoOpState("git pull, git merge", r"Already up[ -]to[ -]date\.?$", "Already up to date."),
    NoOpState("git push", r"Everything up-to-date$", "Everything up-to-date"),
    NoOpState(
        "git rebase",
        r"Current branch \S+ is up to date\.$",
        "Current branch main is up to date.",
    ),
    NoOpState("git stash", r"No local changes to save$", "No local changes to save"),
    NoOpState(
        "make",
        r"make(?:\[\d+\])?: Nothing to be done for ",
        "make: Nothing to be done for 'all'.",
    ),
)
_PATTERN: list[re.Pattern[str]] = []


def is_no_op(line: str | None) -> bool:
    """Whether a failure's line says only that there was nothing to do."""
    if not line:
        return False
    if not _PATTERN:  # compiled on first use
        _PATTERN.append(re.compile("|".join(f"(?:{row.pattern})" for row in NO_OP_STATES)))
    return bool(_PATTERN[0].match(line.strip()))
