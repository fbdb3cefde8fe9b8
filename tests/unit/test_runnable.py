from __future__ import annotations

import pytest

from remem.shell.analysis import analyse
from remem.shell.recognisers import RECOGNISERS
from remem.shell.runnable import (
    CANNOT_RUN,
    MISCONFIGURED,
    NOT_FOUND,
    NOT_INSTALLED,
    TIMED_OUT,
    CannotRun,
    cannot_run,
)

# The command each row's example was printed by.
COMMANDS = {
    "bash: line 1: pytest: command not found": "pytest -q",
    "zsh: command not found: pytest": "pytest -q",
    "sh: 1: vitest: not found": "npx vitest run",
    "bash: .venv/bin/python: No such file or directory": ".venv/bin/python -m pytest",
    "error: Failed to spawn: `pytest`": "uv run pytest",
    "error: no such command: `nextest`": "cargo nextest run",
    "bash: ./scripts/test.sh: Permission denied": "./scripts/test.sh",
    "/usr/bin/python3: No module named pytest": "python3 -m pytest",
    '** (Mix) The task "credo" could not be found. Did you mean "compile"?': "mix credo --strict",
    'npm error Missing script: "lint"': "npm run lint",
    "make: *** No rule to make target 'check'.  Stop.": "make check",
    "error: Justfile does not contain recipe `lint`.": "just lint",
    "make: *** [Makefile:4: test] Error 127": "make test",
    "Command timed out after 2m 0.0s": "mix test",
    "error: unrecognized subcommand 'bun'": "rtk bun run test",
    "pytest: error: unrecognized arguments: --cov": "pytest --cov",
    "ESLint couldn't find a configuration file.": "npx eslint .",
    "ERROR: file or directory not found: tests/unit": "pytest tests/unit",
}


def _judged(command: str, exit_code: int | None, output: str | None) -> str | None:
    (step,) = analyse(command).steps
    return cannot_run(step.workflow, step.program, exit_code, output)


def test_every_row_has_a_command() -> None:
    assert sorted(COMMANDS) == sorted(row.example for row in CANNOT_RUN)


@pytest.mark.parametrize("row", CANNOT_RUN, ids=lambda row: row.example[:40])
def test_each_row_reads_its_own_example(row: object) -> None:
    assert isinstance(row, CannotRun)
    assert _judged(COMMANDS[row.example], 1, f"Exit code 1\n{row.example}\n") == row.reason


@pytest.mark.parametrize("row", CANNOT_RUN, ids=lambda row: row.example[:40])
def test_each_row_s_clue_is_printed_with_its_example(row: CannotRun) -> None:
    """An output without a row's clue is never searched by it: the clue is part of every
    match, its example's included."""
    found = row.pattern.search(row.example)
    assert found is not None
    assert row.clue is None or row.clue in found.group(0)


def test_a_name_is_read_whole_from_a_line_of_long_words() -> None:
    long_word = "x" * 5_000
    output = f"{long_word} {long_word}:pytest: command not found"
    assert _judged("pytest -q", 1, output) == NOT_FOUND
    assert _judged("mix test", 1, output) is None


@pytest.mark.parametrize("row", RECOGNISERS, ids=lambda row: row.family)
def test_a_tool_that_reported_failures_is_red(row: object) -> None:
    """Every tool family's real failure output: the tool ran, the code is red."""
    assert _judged("make check", 2, row.example_failure) is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("command", "exit_code", "output", "reason"),
    [
        # The shell's own statuses, whatever was printed.
        ("pytest -q", 127, None, NOT_FOUND),
        ("mix test", 124, "", TIMED_OUT),
        # The code's own import failing is red; the tool missing is not.
        ("pytest -q", 2, "E   ModuleNotFoundError: No module named 'opk'", None),
        ("python -m pytest", 1, "/usr/bin/python: No module named pytest", NOT_INSTALLED),
        # A word the program never said: a script the test ran, not the test runner.
        ("mix test", 2, "bash: line 6: from: command not found", None),
        # Credo found issues in the code: red, whatever else it printed.
        (
            "mix credo --strict",
            8,
            "Analysis took 0.3 seconds\n380 mods/funs, found 3 warnings, 1 refactoring "
            "opportunity.\nunknown option in comment: --no-such",
            None,
        ),
        ("pytest -q", 4, "pytest: error: unrecognized arguments: --cov", MISCONFIGURED),
        ("make deploy", 2, "Error: connection refused", None),
        ("make deploy", 1, None, None),
    ],
)
def test_red_or_cannot_run(command: str, exit_code: int, output: str | None, reason: str) -> None:
    assert _judged(command, exit_code, output) == reason
