"""The fix journal (DESIGN.md §6), pure: streaks of failed attempts closed by a success, and the
lesson each streak teaches. Deterministic text, no database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from remem.json_contract import date
from remem.record.quote import NO_EDIT, inert_path, pitfall_text
from remem.record.quote import quote_excerpt as quote
from remem.shell import recognisers
from remem.shell.recognisers import telling_line

LESSONS_KEPT = 3
FILES_NAMED = 5


@dataclass(frozen=True)
class JournalRun:
    event_id: int
    at: float
    succeeded: bool
    change_hash: str | None = None


@dataclass(frozen=True)
class Streak:
    """Failed attempts in order, and the success that closed them (None while open)."""

    attempts: tuple[JournalRun, ...]
    resolved_by: JournalRun | None


@dataclass(frozen=True)
class Numbered:
    event_id: int
    attempt_number: int
    duplicate_of: int | None
    resolved_by_event_id: int | None


def streaks(runs: Sequence[JournalRun]) -> list[Streak]:
    """Failures since the previous success, each streak closed by the next success. Interrupted
    and unknown runs are not runs here: they neither fail nor close a streak."""
    found: list[Streak] = []
    current: list[JournalRun] = []
    for run in sorted(runs, key=lambda r: (r.at, r.event_id)):
        if not run.succeeded:
            current.append(run)
        elif current:
            found.append(Streak(tuple(current), run))
            current = []
    if current:
        found.append(Streak(tuple(current), None))
    return found


def number(streak: Streak) -> list[Numbered]:
    """Attempt numbers within the streak; an attempt whose change equals an earlier one's is
    marked as its duplicate. An attempt with no change has no hash and is never a duplicate."""
    first_with_hash: dict[str, int] = {}
    numbered = []
    resolver = streak.resolved_by.event_id if streak.resolved_by else None
    for index, attempt in enumerate(streak.attempts, start=1):
        duplicate_of = None
        if attempt.change_hash is not None:
            duplicate_of = first_with_hash.setdefault(attempt.change_hash, index)
            duplicate_of = None if duplicate_of == index else duplicate_of
        numbered.append(Numbered(attempt.event_id, index, duplicate_of, resolver))
    return numbered


@dataclass(frozen=True)
class AttemptDetail:
    attempt_number: int
    exit_code: int | None
    error_excerpt: str | None
    duplicate_of: int | None
    salient_error: str | None = None  # the line the recognisers table picked from its output

    def error(self) -> str | None:
        """The line that says what went wrong; None when no output was recorded."""
        line = self.salient_error or telling_line(self.error_excerpt)
        return line if line and line.strip() else None


@dataclass(frozen=True)
class Lesson:
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
    fix = f"fixed after editing {name_files(fix_files)}" if fix_files else NO_EDIT
    body.append(fix[0].upper() + fix[1:] + ".")
    return Lesson(
        count,
        first_error,
        last_error,
        tuple(fix_files),
        repeats,
        "\n".join(body),
        pitfall_text(count, last_error, repeats, fix_files),
        error_key_of(last_error, branch),
    )


def _error_line(which: str, exit_code: int | None, error: str | None) -> str:
    if error is None:
        return f"{which} attempt (exit {_code(exit_code)}): no output recorded."
    return f"{which} error (exit {_code(exit_code)}): {quote(error)}"


@lru_cache(maxsize=4_096)
def error_key_of(line: str | None, branch: str | None = None) -> str | None:
    """The project-wide key of an error line met on `branch`; a bare summary ("297 tests, 11
    failures") says which tool failed, not why, and keys nothing. A streak's lesson is written
    again as the streak grows: its lines are keyed once."""
    if not line or recognisers.is_summary(line):
        return None
    return recognisers.error_key(line, branch)


def in_project(files: Sequence[str]) -> list[str]:
    """The files of the project: capture keeps a file outside the work tree (an agent's plan,
    a scratch file in /tmp) absolute, and such a file says nothing about the project."""
    return [name for name in files if not name.startswith("/")]


def name_files(files: Sequence[str], limit: int = FILES_NAMED) -> str:
    """At most `limit` file names, then how many more there were."""
    named = ", ".join(inert_path(name) for name in files[:limit])
    more = len(files) - limit
    return f"{named} +{more} more" if more > 0 else named


def _code(exit_code: int | None) -> str:
    return "?" if exit_code is None else str(exit_code)


# --- known errors: every distinct error of a streak (DESIGN.md §6) ----------------------------


@dataclass(frozen=True)
class Sighting:
    """A failed attempt as known errors read it: the error it showed, keyed (None: no output,
    or only a tool's summary, which says that it failed, not why)."""

    event_id: int
    at: float
    session_id: int
    error: str | None
    error_key: str | None


@dataclass(frozen=True)
class Occurrence:
    """One stretch of a streak's attempts showing one error, and the group's first later run
    that no longer shows it (None while the streak is open and nothing has)."""

    error_key: str
    sightings: tuple[Sighting, ...]
    resolved_by: JournalRun | None

    @property
    def error(self) -> str:
        return self.sightings[-1].error or ""


def sighting(
    event_id: int, at: float, session_id: int, detail: AttemptDetail, branch: str | None
) -> Sighting:
    line = detail.error()
    return Sighting(event_id, at, session_id, line, error_key_of(line, branch))


def occurrences(streak: Streak, sightings: dict[int, Sighting]) -> list[Occurrence]:
    """Each error of the streak, from its first attempt to the attempt after its last one in a
    row: resolved by the next attempt showing another error, or by the success that closed the
    streak. An attempt that showed no error neither shows nor resolves one."""
    found: list[Occurrence] = []
    key, current = "", list[Sighting]()
    for attempt in streak.attempts:
        seen = sightings[attempt.event_id]
        if seen.error_key is None:
            continue
        if current and seen.error_key != key:
            found.append(Occurrence(key, tuple(current), attempt))
            current = []
        key = seen.error_key
        current.append(seen)
    if current:
        found.append(Occurrence(key, tuple(current), streak.resolved_by))
    return found
