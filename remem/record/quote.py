"""Recorded text as remem shows it: quoted, capped and inert, so that nothing recorded (an error
line, a command, a file name, a directory, a project root, a branch) can speak as remem or as an
instruction. Every output that shows recorded text (the digest, advice, recall, MCP answers,
tables, `--json`, exported drafts) quotes it here: no line break or control character of it can
start a line of its own or reach a terminal as an escape sequence, and no backtick of it can
close a code span.

Stdlib only: the hook imports it.
"""

from __future__ import annotations

import json

from remem import json_contract
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


# Letters that print as nothing: the Hangul fillers (default-ignorable, yet letters) and the
# blank Braille pattern. Words joined by one read as words joined by a space.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# Marks that draw on the character before them (Mn, Me), and format characters (Cf).
_MARK_CATEGORIES = ("Mn", "Me", "Cf")


def has_unsafe(text: str) -> bool:
    """Whether the text holds what some reader takes for a line break (str.splitlines, an
    editor) or a terminal for a command (C0 and C1 controls: ESC, CSI, OSC), what reorders or
    hides text (bidi controls, zero-width marks), a lone surrogate (what str.isprintable
    refuses, ASCII space aside), or what a reader cannot see for what it is: a letter that
    prints blank, a combining mark, a default-ignorable character."""
    if text.isascii():
        return not text.isprintable()
    return any(map(_unsafe, text))


def _unsafe(char: str) -> bool:
    if not char.isprintable():
        return True
    if char < "\x80":
        return False
    if char in _BLANK_LETTERS:
        return True
    from unicodedata import category  # text beyond ASCII only

    return category(char) in _MARK_CATEGORIES


def _escaped(char: str) -> str:
    if not _unsafe(char):
        return char
    code = ord(char)
    if code > 0xFFFF:  # as JSON writes it: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def escape_unsafe(text: str, tabs: bool = False) -> str:
    """The text with each unsafe character (has_unsafe) as a \\uXXXX escape: for text JSON
    already quoted (it leaves C1 controls, U+2028 and bidi controls as they are), and for
    recorded text shown inside remem's own wording. `tabs`: a tab is kept (quote_line)."""
    if tabs and "\t" in text:
        return "\t".join(escape_unsafe(part) for part in text.split("\t"))
    if not has_unsafe(text):
        return text
    return "".join(map(_escaped, text))


def quote_text(text: str) -> str:
    """Recorded text as a JSON string that stays on its line and sends a terminal nothing."""
    return escape_unsafe(json.dumps(text, ensure_ascii=False))


def quote_line(line: str) -> str:
    """A line of recorded output quoted as quote_text quotes it, its tabs kept as they were
    printed (`gh pr checks` separates its columns with them): a tab neither ends a line nor
    speaks to a terminal, and the quote reads as the line the agent has in front of it."""
    if "\t" not in line:
        return quote_text(line)
    return '"' + "\t".join(quote_text(part)[1:-1] for part in line.split("\t")) + '"'


def json_text(data: object) -> str:
    """What a `--json` option prints (remem.json_contract), with nothing a terminal obeys: the
    escapes JSON reads back as the same text."""
    # A raw line break in JSON text is its own layout: JSON escapes those in strings.
    return "\n".join(map(escape_unsafe, json_contract.dumps(data).split("\n")))


def quote_excerpt(text: str | None) -> str:
    """A capped, escaped, double-quoted excerpt: whatever it says stays inside the quotes. No
    text (or only blanks) is said so, unquoted: `""` would read as an error that printed nothing
    visible."""
    if text is None or not text.strip():
        return f"({NO_OUTPUT})"
    capped = text if len(text) <= QUOTED_CHARS else text[: QUOTED_CHARS - 1] + "…"
    return quote_text(capped)


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
    parts.append(
        f"fixed after editing {edits_said(last_error, fix_files)}" if fix_files else NO_EDIT
    )
    return "; ".join(parts)


# Edits of files an error does not name, named up to this many; past it, counted: a fix's
# files are what the session edited before the pass, a feature's work as often as not.
OTHER_FILES_NAMED = 2


def edits_said(error: str | None, files: Sequence[str]) -> str:
    """The files edited before a pass: those the error line names first, then the others,
    named while they are few and counted once they would crowd the line."""
    named = [name for name in files if error and names_file(error, name)]
    others = [name for name in files if name not in named]
    if len(others) <= OTHER_FILES_NAMED:
        return name_files(named + others)
    counted = f"{len(others)} {'other ' if named else ''}files"
    return f"{name_files(named)} and {counted}" if named else counted


def names_file(line: str, name: str) -> bool:
    """Whether an error line names a project file: its path, or its path's end, as a word
    (`src/cart.py:12:5`, `./main.go:7:2:`, `app.ts(3,5):`, `'lib/cart.ex'`)."""
    base = name.rsplit("/", 1)[-1]
    if base not in line:
        return False
    for word in line.replace("(", " ").replace("'", " ").replace('"', " ").split():
        word = word.split(":", 1)[0].strip("`,;").removeprefix("./")
        if word and (word == name or word.endswith("/" + name) or name.endswith("/" + word)):
            return True
    return False


_PATH_CHARS = frozenset("._/-+@=,~:")


def inert_command(command: str) -> str:
    """A command as inert text: a code span, or a JSON string when it holds a backtick, a line
    break or a control character, which could close the span and let recorded text speak as
    free text."""
    if "`" in command or has_unsafe(command):
        return quote_text(command)
    return f"`{command}`"


def inert_path(path: str) -> str:
    """A file or directory name, a project root or a branch as is when it is plainly a path
    (ASCII letters, digits and the punctuation of paths), else quoted like an excerpt."""
    if path and path.isascii() and all(ch.isalnum() or ch in _PATH_CHARS for ch in path):
        return path
    return quote_text(path)


def elsewhere(directory: str, failed_in: str) -> str:
    """Where a command that passed instead ran, when not where the failed one did: " in
    assets/", " at the project root"; else nothing."""
    if directory == failed_in:
        return ""
    return " at the project root" if directory == "." else f" in {inert_path(directory)}/"


def name_files(names: Sequence[str], more: int = 0) -> str:
    """At most FILES_NAMED file names, inert, then how many more there were."""
    named = ", ".join(inert_path(name) for name in names[:FILES_NAMED])
    more += max(len(names) - FILES_NAMED, 0)
    return f"{named} +{more} more" if more else named
