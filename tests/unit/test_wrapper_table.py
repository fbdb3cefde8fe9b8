"""The one table of wrappers and launchers (remem/shell/wrappers.py), walked row by row: each
example is read past its wrapper or launcher the same way from its words (the analysis) and
from its text (the recognisers, the hook)."""

from __future__ import annotations

import pytest

from remem.shell.plain import plain_workflow
from remem.shell.wrappers import (
    LAUNCHERS,
    WRAPPERS,
    Launcher,
    Wrapper,
    command_starts,
    past_launchers,
    past_wrappers,
    program_starts,
    through_wrapper,
    unwrapped,
)


def _tool(example: str, index: int) -> str:
    return example.split()[index]


@pytest.mark.parametrize("row", WRAPPERS, ids=[row.example for row in WRAPPERS])
def test_every_wrapper_s_example_runs_the_command_after_it(row: Wrapper) -> None:
    words = row.example.split()
    program = past_wrappers(words)
    assert 0 < program < len(words) and words[0] == row.name
    at = len(" ".join(words[:program])) + 1
    assert at in command_starts(row.example)
    # Stacked under another wrapper and an assignment, the same program.
    stacked = f"CI=1 rtk {row.example}".split()
    assert stacked[past_wrappers(stacked[1:]) + 1] == words[program]
    kept = [words[i] for i in unwrapped(words)]
    assert kept[-len(words) + program :] == words[program:]
    assert (row.name in kept) is not row.variant


@pytest.mark.parametrize("row", LAUNCHERS, ids=[row.example for row in LAUNCHERS])
def test_every_launcher_s_example_runs_the_tool_after_it(row: Launcher) -> None:
    words = row.example.split()
    tool = words[past_launchers(words)] if not row.scripts else None
    assert tool is None or tool not in row.words
    named = tool or words[len(row.words)]
    at = row.example.index(f" {named}") + 1
    assert at in program_starts(row.example), row.example
    assert at + len("rtk timeout 60 ") in program_starts("rtk timeout 60 " + row.example)


# (command, the index of its program past wrappers; past launchers too)
POSITIONS = [
    ("timeout -k 5 120 bun test", 4, 4),
    ("timeout --signal KILL 60 go test ./...", 4, 4),
    ("env -u HOME NODE_ENV=test bun run test", 4, 4),
    ("nice -n 10 cargo build", 3, 3),
    ("sudo -u postgres -E psql", 4, 4),
    ("rtk timeout 60 nohup time -p make test", 6, 6),
    (".venv/bin/python -m pytest -q", 0, 2),
    ("uv run --with pytest-cov pytest", 0, 4),
    ("npx -y vitest run", 0, 2),
    ("rtk uv run rtk pytest", 1, 4),
    ("command -v bun", 0, 0),
    ("env", 0, 0),
    ("time", 0, 0),
    ("bun run test", 0, 0),  # a package script is the project's: no tool of its own
]


@pytest.mark.parametrize(("command", "wrapped", "launched"), POSITIONS)
def test_a_program_s_position(command: str, wrapped: int, launched: int) -> None:
    words = command.split()
    assert (past_wrappers(words), past_launchers(words)) == (wrapped, launched)


# (command as typed, its workflow as the hook reads it without the grammar)
PLAIN = [
    ("rtk bun run test", "bun run test"),
    ("timeout 60 go test ./...", "go test ./..."),
    ("GOFLAGS=-mod=mod env CGO_ENABLED=0 go build", "GOFLAGS=-mod=mod CGO_ENABLED=0 go build"),
    ("xargs -n 1 rm", "xargs -n 1 rm"),
    ("sudo apt-get install -y jq", "apt-get install -y jq"),
    ("command -v bun", "command -v bun"),
]


@pytest.mark.parametrize(("command", "workflow"), PLAIN)
def test_the_hook_s_plain_workflow_leaves_wrappers_out(command: str, workflow: str) -> None:
    assert plain_workflow(command) == workflow


# (command line, the names at a program's position in it)
STARTS = [
    ("pytest -q", ["pytest"]),
    ("cd api && rtk .venv/bin/python -m pytest", ["cd", "pytest"]),
    ("./run.sh && bin/x", ["./run.sh", "run.sh", "bin/x", "x"]),
    ("if make lint; then timeout 60 npx -y vitest run; fi", ["if", "make", "then", "vitest", "fi"]),
    ("pip install pytest | tail -3", ["pip", "tail"]),
    ("git commit -m pytest", ["git"]),
    # An operator inside quotes or in a redirection separates nothing.
    ('echo "make lint; pytest" && X=1 rtk uv run rtk pytest -q', ["echo", "pytest"]),
    ("bun run vitest 2>&1 | tail -5", ["vitest", "tail"]),
    ("npm test &> log && { make a; }", ["npm", "{", "make", "}"]),
    ("if ! make lint; then echo no; fi", ["if", "!", "make", "then", "echo", "fi"]),
]


@pytest.mark.parametrize(("command", "names"), STARTS)
def test_the_programs_of_a_command_line(command: str, names: list[str]) -> None:
    starts = program_starts(command)
    assert [command[start:].split()[0] for start in starts] == names


@pytest.mark.parametrize(
    ("command", "wrapped"),
    [
        ("rtk bun run test", True),
        ("CI=1 timeout 60 make test", True),
        ("bun run test", False),
        ("CI=1 make test", False),
        ("xargs -n 1 rm", False),  # what xargs runs reads its input: xargs is no variant
    ],
)
def test_a_command_run_through_a_wrapper(command: str, wrapped: bool) -> None:
    assert through_wrapper(command) is wrapped
