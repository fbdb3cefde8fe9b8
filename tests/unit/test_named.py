"""Which program an output line speaks for (remem/shell/named.py), on real output."""

from __future__ import annotations

import pytest

from remem.shell.named import NOTES, OTHER_PREFIXES, named_line

CASES = [
    (
        "cat",
        "cat: missing.txt: No such file or directory",
        "cat: missing.txt: No such file or directory",
    ),
    (
        "ls",
        "total 0\nls: cannot access 'build': No such file or directory",
        "ls: cannot access 'build': No such file or directory",
    ),
    (
        "sed",
        "sed: can't read src/cart.py: No such file or directory",
        "sed: can't read src/cart.py: No such file or directory",
    ),
    (
        "make",
        "make: *** No rule to make target 'test'.  Stop.",
        "make: *** No rule to make target 'test'.  Stop.",
    ),
    ("make", "make[1]: *** [Makefile:9: test] Error 2", "make[1]: *** [Makefile:9: test] Error 2"),
    (
        "pytets",
        "bash: line 1: pytets: command not found",
        "bash: line 1: pytets: command not found",
    ),
    ("pytets", "/bin/sh: 1: pytets: not found", "/bin/sh: 1: pytets: not found"),
    (
        "./scripts/smoke.sh",
        "bash: ./scripts/smoke.sh: Permission denied",
        "bash: ./scripts/smoke.sh: Permission denied",
    ),
    (
        "git",
        "fatal: not a git repository (or any of the parent directories): .git",
        "fatal: not a git repository (or any of the parent directories): .git",
    ),
    (
        "git",
        "git: 'psuh' is not a git command. See 'git --help'.",
        "git: 'psuh' is not a git command. See 'git --help'.",
    ),
    ("grep", "\x1b[31mgrep: src: Is a directory\x1b[0m", "grep: src: Is a directory"),
    # Another program's line, or a program's progress notes, speak for no failure of it.
    ("cat", "concatenate: nothing", None),
    ("make", "cat: missing.txt: No such file or directory", None),
    ("make", "make: Entering directory '/home/dev/shop/api'", None),
    ("make", "make[2]: Leaving directory '/home/dev/shop/api'", None),
    ("make", "make: Nothing to be done for 'all'.", None),
    ("make", "make: 'build/app' is up to date.", None),
    ("pytest", "fatal: not a git repository", None),
    ("", "cat: x: No such file", None),
    ("cat", None, None),
]


@pytest.mark.parametrize(("program", "output", "expected"), CASES)
def test_named_line(program: str, output: str | None, expected: str | None) -> None:
    assert named_line(program, output) == expected


def test_every_row_of_the_tables_has_a_case() -> None:
    programs = {program for program, _output, _expected in CASES}
    assert set(NOTES) | set(OTHER_PREFIXES) <= programs
