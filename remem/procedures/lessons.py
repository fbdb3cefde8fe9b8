"""The fix journal (DESIGN.md §6), pure: streaks of failed attempts closed by a success, and the
lesson each streak teaches. Deterministic text, no database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# What a lesson says is told by remem.procedures.lesson_text, which readers of the lessons
# import without the rest of the journal.
from remem.procedures.lesson_text import FILES_NAMED as FILES_NAMED
from remem.procedures.lesson_text import AttemptDetail as AttemptDetail
from remem.procedures.lesson_text import Lesson as Lesson
from remem.procedures.lesson_text import distill as distill
from remem.procedures.lesson_text import error_key_of as error_key_of
from remem.procedures.lesson_text import error_line as error_line
from remem.procedures.lesson_text import name_files as name_files

LESSONS_KEPT = 3


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


def in_project(files: Sequence[str]) -> list[str]:
    """The files of the project: capture keeps a file outside the work tree (an agent's plan,
    a scratch file in /tmp) absolute, and such a file says nothing about the project."""
    return [name for name in files if not name.startswith("/")]


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
    event_id: int,
    at: float,
    session_id: int,
    salient_error: str | None,
    error_excerpt: str | None,
    branch: str | None,
) -> Sighting:
    """An attempt as a sighting of its error: its line, from its stored lines, and its key."""
    line = error_line(salient_error, error_excerpt)
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
