"""What a lesson says (DESIGN.md §6), pure: a streak's failed attempts and its fix told as
deterministic text. Stdlib only and without `dataclasses`: `remem procedures show`, answered at
once, tells each lesson again from its journal in the current wording.
"""

from __future__ import annotations

from functools import lru_cache

from remem.json_contract import date
from remem.record.frozen import Record
from remem.record.quote import NO_EDIT, edits_said, inert_path, pitfall_text
from remem.record.quote import quote_excerpt as quote
from remem.shell import recognisers
from remem.shell.recognisers import telling_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

FILES_NAMED = 5


class AttemptDetail(Record):
    attempt_number: int
    exit_code: int | None
    error_excerpt: str | None
    duplicate_of: int | None
    salient_error: str | None = None  # the line the recognisers table picked from its output

    def error(self) -> str | None:
        """The line that says what went wrong; None when no output was recorded."""
        return error_line(self.salient_error, self.error_excerpt)


class Lesson(Record):
    failed_attempts: int
    first_error: str | None
    last_error: str | None
    fix_files: tuple[str, ...]
    repeats: tuple[tuple[int, int], ...]
    body: str
    pitfall: str
    error_key: str | None = None


def distill(
    attempts: Sequence[AttemptDetail],
    fix_files: Sequence[str],
    resolved_at: float,
    branch: str | None = None,
) -> Lesson:
    first, last = attempts[0], attempts[-1]
    count = len(attempts)
    times = "time" if count == 1 else "times"
    repeats = tuple((a.attempt_number, a.duplicate_of) for a in attempts if a.duplicate_of)
    first_error, last_error = first.error(), last.error()
    body = [f"Failed {count} {times} before it passed on {date(resolved_at)}."]
    body.append(_error_line("First", first.exit_code, first_error))
    if count > 1:
        body.append(_error_line("Last", last.exit_code, last_error))
    if repeats:
        repeated = "; ".join(f"attempt {n} repeated attempt {of}'s change" for n, of in repeats)
        body.append(repeated[0].upper() + repeated[1:] + ".")
    files = tuple(fix_files)
    body.append(_fixed(files, last_error))
    return Lesson(
        count,
        first_error,
        last_error,
        files,
        repeats,
        "\n".join(body),
        _pitfall(count, last_error, repeats, files),
        error_key_of(last_error, branch),
    )


# A lesson is told again as its streak's runs are re-derived, and many end alike: what it
# says is remembered by what it is told from.
_pitfall = lru_cache(maxsize=1_024)(pitfall_text)


@lru_cache(maxsize=1_024)
def _fixed(files: tuple[str, ...], error: str | None) -> str:
    fix = f"fixed after editing {edits_said(error, files)}" if files else NO_EDIT
    return fix[0].upper() + fix[1:] + "."


@lru_cache(maxsize=1_024)
def _error_line(which: str, exit_code: int | None, error: str | None) -> str:
    if error is None:
        return f"{which} attempt (exit {_code(exit_code)}): no output recorded."
    return f"{which} error (exit {_code(exit_code)}): {quote(error)}"


@lru_cache(maxsize=4_096)
def error_line(salient_error: str | None, error_excerpt: str | None) -> str | None:
    """An attempt's line that says what went wrong: the one the recognisers table picked, else
    the telling line of its excerpt; None when no output was recorded. The runs a window may
    change are read again at every window: their lines are picked once."""
    line = salient_error or telling_line(error_excerpt)
    return line if line and line.strip() else None


@lru_cache(maxsize=4_096)
def error_key_of(line: str | None, branch: str | None = None) -> str | None:
    """The project-wide key of an error line met on `branch`; a bare summary ("297 tests, 11
    failures") says which tool failed, not why, and keys nothing. A streak's lesson is written
    again as the streak grows: its lines are keyed once."""
    if not line or recognisers.is_summary(line):
        return None
    return recognisers.error_key(line, branch)


def name_files(files: Sequence[str], limit: int = FILES_NAMED) -> str:
    """At most `limit` file names, then how many more there were."""
    named = ", ".join(inert_path(name) for name in files[:limit])
    more = len(files) - limit
    return f"{named} +{more} more" if more > 0 else named


def _code(exit_code: int | None) -> str:
    return "?" if exit_code is None else str(exit_code)
