"""Which program an output line speaks for: command-line tools prefix what they report with
their own name (`cat: missing.txt: No such file or directory`, `ls: cannot access 'x'`,
`make: *** No rule to make target 'test'.  Stop.`), and the shell names the program it could
not run (`bash: line 1: pytets: command not found`). A compound command's output that names
one of its steps says that step ran, and the steps after a failing one never did.

Knowledge as data: what a program prints under another prefix, and the notes it prints under
its own name while all goes well. Pure, stdlib only.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

from remem.shell.recognisers import SALIENT_MAX_CHARS, without_colours

# Prefixes a program's own diagnostics carry besides its name: git says `fatal: ...`.
OTHER_PREFIXES: dict[str, tuple[str, ...]] = {"git": ("fatal",)}
# Lines a program prints under its name when nothing failed: progress, not a diagnostic.
NOTES: dict[str, tuple[str, ...]] = {
    "make": (
        r"(?:Entering|Leaving) directory\b",
        r"Nothing to be done for\b",
        r".* is up to date\.",
    ),
}
# How a shell reports a program it ran (`bash: line 1: NAME: ...`, `/bin/sh: 1: NAME: ...`).
_SHELL = r"(?:\S*/)?(?:ba|da|k|z)?sh: (?:line \d+: |\d+: )?"


@lru_cache(maxsize=256)
def _speaks_for(program: str) -> re.Pattern[str] | None:
    name = posixpath.basename(program)
    if not name:
        return None
    names = {re.escape(program), re.escape(name), *OTHER_PREFIXES.get(name, ())}
    spoken = "|".join(sorted(names, key=lambda n: (-len(n), n)))
    notes = "|".join(NOTES.get(name, ()))
    unless = f"(?!\\s*(?:{notes}))" if notes else ""
    return re.compile(rf"^\s*(?:{_SHELL})?(?:{spoken})(?:\[\d+\])?: {unless}\S")


def named_line(program: str, output: str | None) -> str | None:
    """The first line of the output that the program (a step's first command) reported under
    its own name, stripped and capped; None when no line speaks for it."""
    if not program or not output:
        return None
    pattern = _speaks_for(program)
    if pattern is None:
        return None
    for line in without_colours(output).splitlines():
        if pattern.match(line):
            return line.strip()[:SALIENT_MAX_CHARS]
    return None
