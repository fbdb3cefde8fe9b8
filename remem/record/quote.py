"""Recorded text as remem shows it: quoted, capped and inert, so that nothing recorded (an error
line, a command, a file name) can speak as remem or as an instruction. Every output that shows
recorded text (the digest, recall, tables, exported drafts) quotes it here.

Stdlib only: the hook imports it.
"""

from __future__ import annotations

import json

from remem.record.redact import MASK

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Sequence

FILES_NAMED = 5
QUOTED_CHARS = 160
# What redaction leaves in place of a secret: MASK, and the private key block's own marker,
# open alike. A command holding one cannot run as it was stored.
REDACTION_MARK = MASK[:-1]
NEEDS_CREDENTIALS = "needs your credentials: redacted in memory"
NO_OUTPUT = "no output recorded"
NO_EDIT = "passed again with no edit in between"


# What stands for the project files a family of runs named (remem/shell/arguments.py).
FILE_PLACEHOLDERS = ("<file>", "<test file>")


def names_a_family(text: str) -> bool:
    """Whether a workflow or command is a family's placeholder form (`gofmt -w <file>`)."""
    return any(mark in text for mark in FILE_PLACEHOLDERS)


def family_files(command: str, variants: Sequence[object]) -> int:
    """How many sets of files a family's placeholder form stands for (its variants are one
    per set); 0 for a command that is no family."""
    return len(variants) if len(variants) > 1 and names_a_family(command) else 0


def needs_credentials(command: str) -> bool:
    """Whether redaction took something out of the command: it runs only once the user puts
    their credentials back."""
    return REDACTION_MARK in command


def quote_excerpt(text: str | None) -> str:
    """A capped, escaped, double-quoted excerpt: whatever it says stays inside the quotes. No
    text (or only blanks) is said so, unquoted: `""` would read as an error that printed nothing
    visible."""
    if text is None or not text.strip():
        return f"({NO_OUTPUT})"
    capped = text if len(text) <= QUOTED_CHARS else text[: QUOTED_CHARS - 1] + "…"
    return json.dumps(capped, ensure_ascii=False)


def pitfall_text(
    failed_attempts: int,
    last_error: str | None,
    repeats: Sequence[Sequence[int]],
    fix_files: Sequence[str],
) -> str:
    """One line of what a streak of failures taught: how often it failed, its last error or
    that no output was recorded, repeated changes, and what came between the last failure and
    the pass (the edits, or none)."""
    times = "time" if failed_attempts == 1 else "times"
    failed = f"failed {failed_attempts} {times} before passing"
    if last_error and last_error.strip():
        parts = [failed, f"last error {quote_excerpt(last_error)}"]
    elif failed_attempts == 1:
        parts = [f"{failed} ({NO_OUTPUT})"]
    else:
        parts = [f"{failed} (the last with {NO_OUTPUT})"]
    repeated = "; ".join(f"attempt {n} repeated attempt {of}'s change" for n, of in repeats)
    if repeated:
        parts.append(repeated)
    parts.append(f"fixed after editing {name_files(fix_files)}" if fix_files else NO_EDIT)
    return "; ".join(parts)


_PATH_CHARS = frozenset("._/-+@=,~:")


def inert_command(command: str) -> str:
    """A command as inert text: a code span, or a JSON string when it holds a backtick or a line
    break, which could close the span and let recorded text speak as free text."""
    if "`" in command or "\n" in command or "\r" in command:
        return json.dumps(command, ensure_ascii=False)
    return f"`{command}`"


def inert_path(path: str) -> str:
    """A file name as is when it is plainly a path, else quoted like an excerpt."""
    if path and all(ch.isalnum() or ch in _PATH_CHARS for ch in path):
        return path
    return json.dumps(path, ensure_ascii=False)


def name_files(names: Sequence[str], more: int = 0) -> str:
    """At most FILES_NAMED file names, inert, then how many more there were."""
    named = ", ".join(inert_path(name) for name in names[:FILES_NAMED])
    more += max(len(names) - FILES_NAMED, 0)
    return f"{named} +{more} more" if more else named
