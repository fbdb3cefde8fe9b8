"""The table of states that are no errors (remem/shell/states.py), walked row by row with the
real excerpts it holds: the line a failure's output is read by is the state, and the state is
no error."""

from __future__ import annotations

import pytest

from remem.agent.advice import error_of
from remem.shell.recognisers import salient_line, telling_line
from remem.shell.states import NO_OP_STATES, NoOpState, is_no_op


@pytest.mark.parametrize("row", NO_OP_STATES, ids=[r.pattern for r in NO_OP_STATES])
def test_every_state_is_the_line_its_example_is_read_by_and_no_error(row: NoOpState) -> None:
    command = row.tool.split(",")[0]
    line = salient_line(command, row.example) or telling_line(row.example)
    assert is_no_op(line), (row.example, line)
    assert error_of(command, row.example, row.example) is None


@pytest.mark.parametrize(
    "line",
    [
        "fatal: not a git repository (or any of the parent directories): .git",
        'no changes added to commit (use "git add" and/or "git commit -a")',
        "error: failed to push some refs to 'github.com:o/r.git'",
        "make: *** No rule to make target 'tests'.  Stop.",
        "E   AssertionError: nothing to commit",
        None,
    ],
)
def test_an_error_is_no_state(line: str | None) -> None:
    assert not is_no_op(line)
