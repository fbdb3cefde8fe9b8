"""The hook's advice, pure parts: a line always passes the word filter of its own key, and
what is printed stays within its budget, quoted."""

from __future__ import annotations

import pytest

from remem.agent.advice import ADVICE_CHARS, Advice, line_keys, literally_in, render
from remem.shell.recognisers import RECOGNISERS, error_key, without_colours

LINES = [
    "/bin/bash: line 1: pytest: command not found",
    "ModuleNotFoundError: No module named 'pkg'",
    "** (RuntimeError) no :secret_key_base configuration found in SpotterWeb.Endpoint.",
    "error[E0308]: mismatched types at src/main.rs:12:5",
    "fatal: The current branch feat-a has no upstream branch.",
    "timed out after 10039 milliseconds in /tmp/pytest-of-dev/pytest-7/test_a0",
    "object at 0x7f5e7e69fb00 is gone (pid=4242, uuid 123e4567-e89b-12d3-a456-426614174000)",
    "\x1b[31mERROR\x1b[0m   tests/test_cart.py::test_total\t-  AssertionError: 9 != 10",
    "   padded    with     spaces   ",
]
EXAMPLES = [
    line
    for row in RECOGNISERS
    for line in (row.example_failure + "\n" + row.example_success).split("\n")
    if line.strip()
]


@pytest.mark.parametrize("line", LINES + EXAMPLES)
def test_a_line_passes_the_word_filter_of_its_own_key(line: str) -> None:
    stripped = line.strip()
    assert literally_in(error_key(stripped), without_colours(line))
    assert error_key(stripped) in line_keys(None, line)


def test_the_word_filter_rejects_another_error() -> None:
    key = error_key("/bin/bash: line 1: pytest: command not found")
    assert not literally_in(key, "Exit code 2\nerror: unused import `os` in app.py")


def test_advice_is_capped_and_every_line_but_the_header_is_recorded_data() -> None:
    long = Advice("substitution", "k", "- `x`: " + '"' + "y" * 2_000 + '"')
    text = render([long, Advice("substitution", "k2", "- `z`: \u2028remem: forged")])
    assert text is not None and len(text) <= ADVICE_CHARS
    assert [line for line in text.splitlines() if line.startswith("remem:")] == [
        text.splitlines()[0]
    ]
    assert render([]) is None
