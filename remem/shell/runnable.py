"""Whether a failed run says "the code is red" or "the command cannot run here".

Red: the tool ran and reported failures (`12 tests, 1 failure`, `Found 3 errors`, `--- FAIL`):
the command works, the code does not yet. Cannot run: the shell found no such program (exit
127) or could not execute it (126), the tool is not installed (`No module named pytest`, a mix
task or npm script that does not exist), the run timed out, or the tool refused its own
configuration (an unknown option, a missing configuration file). Only the second says the
procedure itself no longer holds (remem/procedures/tally.py counts them).

One row per reason, each with a real excerpt; a test walks the table. Pure: stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from remem.shell import recognisers

NOT_FOUND, NOT_EXECUTABLE, NOT_INSTALLED, TIMED_OUT, MISCONFIGURED = (
    "not found",
    "not executable",
    "not installed",
    "timed out",
    "misconfigured",
)
# What the shell and `timeout` exit with when the command itself could not run to its end.
EXIT_REASONS = {127: NOT_FOUND, 126: NOT_EXECUTABLE, 124: TIMED_OUT}


@dataclass(frozen=True)
class CannotRun:
    """One way a tool's output says it could not run. A pattern with a `name` group counts only
    when that name is the step's program or a word of its workflow: `No module named 'app'`
    under `pytest` is the code's own import failing (red), `No module named pytest` under
    `python -m pytest` is the tool missing."""

    reason: str
    pattern: re.Pattern[str]
    example: str
    # Words every match holds, as printed: an output without them is not searched (most
    # failures are red, and the table is read for each).
    clue: str | None


def _row(reason: str, pattern: str, example: str, clue: str | None = None) -> CannotRun:
    return CannotRun(reason, re.compile(pattern, re.MULTILINE), example, clue)


CANNOT_RUN: tuple[CannotRun, ...] = (
    _row(
        NOT_FOUND,
        # Only a whole word is a name: from inside a long one the search would start again
        # at each of its letters.
        r"(?<![^\s:])(?P<name>[^\s:]+): command not found$",
        "bash: line 1: pytest: command not found",
        ": command not found",
    ),
    _row(
        NOT_FOUND,
        r"command not found: (?P<name>\S+)$",
        "zsh: command not found: pytest",
        "command not found: ",
    ),
    _row(
        NOT_FOUND,
        r"^(?:/bin/)?sh: \d+: (?P<name>[^\s:]+): not found$",
        "sh: 1: vitest: not found",
        ": not found",
    ),
    _row(
        NOT_FOUND,
        r"^\S*(?:bash|sh): (?:line \d+: )?(?P<name>[^\s:]+): No such file or directory$",
        "bash: .venv/bin/python: No such file or directory",
        ": No such file or directory",
    ),
    _row(
        NOT_FOUND,
        r"^error: Failed to spawn: `(?P<name>[^`]+)`",
        "error: Failed to spawn: `pytest`",
        "error: Failed to spawn: `",
    ),
    _row(
        NOT_FOUND,
        r"^error: no such command: `(?P<name>[^`]+)`",
        "error: no such command: `nextest`",
        "error: no such command: `",
    ),
    _row(
        NOT_EXECUTABLE,
        r"(?<![^\s:])(?P<name>[^\s:]+): Permission denied$",
        "bash: ./scripts/test.sh: Permission denied",
        ": Permission denied",
    ),
    _row(
        NOT_INSTALLED,
        r"No module named '?(?P<name>[\w-]+)",
        "/usr/bin/python3: No module named pytest",
        "No module named ",
    ),
    _row(
        NOT_INSTALLED,
        r'^\*\* \(Mix\) The task "(?P<name>[^"]+)" could not be found',
        '** (Mix) The task "credo" could not be found. Did you mean "compile"?',
        '** (Mix) The task "',
    ),
    _row(
        NOT_INSTALLED,
        r"(?i)^npm (?:err!|error) missing script: \"?(?P<name>[^\"\s]+)",
        'npm error Missing script: "lint"',
    ),
    _row(
        NOT_INSTALLED,
        r"^make(?:\[\d+\])?: \*\*\* No rule to make target '(?P<name>[^']+)'",
        "make: *** No rule to make target 'check'.  Stop.",
        ": *** No rule to make target '",
    ),
    _row(
        NOT_INSTALLED,
        r"^error: Justfile does not contain recipe `(?P<name>[^`]+)`",
        "error: Justfile does not contain recipe `lint`.",
        "error: Justfile does not contain recipe `",
    ),
    # make ran, but a command of its recipe was not found: `make test` cannot run here either.
    _row(
        NOT_FOUND,
        r"^make(?:\[\d+\])?: \*\*\* \[.*\] Error 127$",
        "make: *** [Makefile:4: test] Error 127",
        "] Error 127",
    ),
    _row(
        TIMED_OUT,
        r"^Command timed out after \d",
        "Command timed out after 2m 0.0s",
        "Command timed out after ",
    ),
    # A command-line parser (clap) refusing the word after its program: `rtk bun` where rtk
    # does not proxy bun. The name is the step's program, run through the wrong wrapper.
    _row(
        MISCONFIGURED,
        r"^error: unrecognized subcommand '(?P<name>[^']+)'",
        "error: unrecognized subcommand 'bun'",
        "error: unrecognized subcommand '",
    ),
    _row(
        MISCONFIGURED,
        r"(?i)\b(?:unrecognized arguments?|unknown (?:option|flag|argument)|no such option"
        r"|unexpected argument '\S+' found|flag provided but not defined)\b",
        "pytest: error: unrecognized arguments: --cov",
    ),
    _row(
        MISCONFIGURED,
        r"(?i)\bcould(?: not|n't) find (?:a |the )?config(?:uration)?(?: file)?\b"
        r"|\bconfig(?:uration)? file\b.*\b(?:not found|does not exist|is missing)\b",
        "ESLint couldn't find a configuration file.",
    ),
    _row(
        MISCONFIGURED,
        r"^ERROR: file or directory not found: \S",
        "ERROR: file or directory not found: tests/unit",
        "ERROR: file or directory not found: ",
    ),
)


def cannot_run(
    workflow: str, program: str, exit_code: int | None, output: str | None
) -> str | None:
    """Why a failed run of a workflow step could not run (a reason above), or None when it ran
    and the code is red, or nothing tells. `program` is the step's program (`mix`, `pytest`,
    `.venv/bin/python`). The shell's own exit statuses decide first; then a failure summary of
    the tool's family means it ran; then the table."""
    if exit_code in EXIT_REASONS:
        return EXIT_REASONS[exit_code]
    if not output:
        return None
    reason = _told(workflow, program, output)
    # The summary is read second, as it costs more, and only when the table found a reason.
    if reason is None or recognisers.judge(workflow, output) == "failure":
        return None
    return reason


def _told(workflow: str, program: str, output: str) -> str | None:
    for row in CANNOT_RUN:
        if row.clue is not None and row.clue not in output:
            continue
        for found in row.pattern.finditer(output):
            name = found.groupdict().get("name")
            if name is None or _names_the_step(name, workflow, program):
                return row.reason
    return None


def _names_the_step(name: str, workflow: str, program: str) -> bool:
    if name in (program, program.rsplit("/", 1)[-1]):
        return True
    word = re.compile(rf"(?<![\w./-]){re.escape(name)}(?![\w-])")
    return bool(word.search(workflow))
