"""What `remem forget` is asked to forget, and what it found: the selection, the plan, and which
spool and log lines carry it. Shared by the local forgetting and the team database's
(remem/team/forget.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from remem.capture import spool
from remem.errors import RememError
from remem.record.forgotten import MASK, words_holding
from remem.record.redact import redact_text
from remem.regex import Regex, RegexError, compile_regex

EXCERPT_CHARS = 100
# What a printed match keeps of the text around it: the rest may be the secret's own.
AROUND_CHARS = 4
CHUNK = 500  # ids per IN (...): far below SQLite's bound-parameter limit


class BadPattern(RememError):
    def __init__(self, pattern: str, problem: str) -> None:
        super().__init__(
            f"--match {pattern!r} is not a regular expression: {problem} (RE2, as remem recall "
            "takes it: no backreferences or lookaround)."
        )


def compile_pattern(pattern: str) -> Regex:
    """Case-sensitive, on RE2 as recall's search: no pattern makes a forget hang."""
    try:
        return compile_regex(pattern)
    except RegexError as exc:
        raise BadPattern(pattern, str(exc)) from None


@dataclass(frozen=True)
class Selection:
    event_ids: tuple[int, ...] = ()
    procedure_ids: tuple[int, ...] = ()
    pattern: str | None = None
    project: str | None = None  # a project root: --match only looks there


@dataclass(frozen=True)
class Item:
    """An event or a procedure that goes, with a redacted excerpt of its command."""

    id: int
    label: str  # the event's time, the procedure's status
    command: str

    def as_json(self, label: str, shown: str = "command") -> dict[str, Any]:
        return {"id": self.id, label: self.label, shown: self.command}


@dataclass(frozen=True)
class Draft:
    """A draft `remem procedures export` wrote (its row in the exports table)."""

    id: int
    path: str


@dataclass(frozen=True)
class Plan:
    events: tuple[Item, ...]
    procedures: tuple[Item, ...]  # deleted, whatever their status
    # Pulled from the team, named after their tables (forgetting.erase deletes them by name).
    team_procedures: tuple[Item, ...]
    team_lessons: tuple[Item, ...]
    rederived_procedure_ids: tuple[int, ...]  # lose evidence and are re-derived
    task_errors: tuple[int, ...]  # tasks whose last error quotes the match
    spool_lines: dict[str, int]  # matching lines by file name
    log_lines: dict[str, int]
    lines: Lines = field(repr=False)
    session_ids: tuple[int, ...] = field(repr=False)
    project_ids: tuple[int, ...] = field(repr=False)
    drops: tuple[int, ...] = ()  # rows of the drop ledger
    drafts: tuple[Draft, ...] = ()
    transcripts: dict[str, int] = field(default_factory=dict)  # matching lines by file
    # Derived from the events that go, so they go with them (what remains derives anew).
    lessons: tuple[Item, ...] = ()
    known_errors: tuple[Item, ...] = ()
    # The words that held the matches, recorded hashed (remem/record/forgotten.py): never shown.
    words: frozenset[str] = field(default=frozenset(), repr=False)
    unrecorded: int = 0  # matches held by no word, or too many words to record

    def empty(self) -> bool:
        return not (
            self.touches_database() or self.spool_lines or self.log_lines or self.transcripts
        )

    def touches_database(self) -> bool:
        return bool(
            self.events
            or self.procedures
            or self.team_procedures
            or self.team_lessons
            or self.task_errors
            or self.drops
            or self.drafts
            or self.words
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "events": [event.as_json("at") for event in self.events],
            "procedures": [procedure.as_json("status") for procedure in self.procedures],
            "team_procedures": [item.as_json("status") for item in self.team_procedures],
            "team_lessons": [item.as_json("branch") for item in self.team_lessons],
            "lessons": [item.as_json("branch", "error") for item in self.lessons],
            "known_errors": [item.as_json("workflow", "error") for item in self.known_errors],
            "rederived_procedures": list(self.rederived_procedure_ids),
            "task_errors_cleared": len(self.task_errors),
            "spool_lines": self.spool_lines,
            "log_lines": self.log_lines,
            "drops": len(self.drops),
            "drafts": [draft.path for draft in self.drafts],
            "transcripts": self.transcripts,
            "words_recorded": len(self.words),
            "matches_unrecorded": self.unrecorded,
        }


def chunks(ids: Iterable[int]) -> Iterator[list[int]]:
    ordered = sorted(ids)
    for start in range(0, len(ordered), CHUNK):
        yield ordered[start : start + CHUNK]


def hit(pattern: Regex, values: Iterable[Any]) -> bool:
    return any(isinstance(value, str) and pattern.search(value) for value in values)


def excerpt(command: str, pattern: Regex | None) -> str:
    """Redacted, and without the match itself: what is printed must not repeat it. A command
    that holds the match shows at most AROUND_CHARS either side of it."""
    shown = " ".join(redact_text(command).split())
    if pattern is not None:
        found = pattern.search(shown)
        if found is not None and found.end() > found.start():
            start, end = held_span(shown, found.start(), found.end())
            before = shown[max(0, start - AROUND_CHARS) : start]
            after = shown[end : end + AROUND_CHARS]
            return "…" + mask_matches(pattern, before + MASK + after) + "…"
        shown = mask_matches(pattern, shown)
    return shown if len(shown) <= EXCERPT_CHARS else shown[: EXCERPT_CHARS - 1] + "…"


def held_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of the widest word holding [start, end): the rest of a word the match began
    is as secret as the match."""
    for word in sorted(words_holding(text, start, end), key=len, reverse=True):
        at = text.rfind(word, max(0, end - len(word)), start + len(word))
        if at != -1:
            return at, at + len(word)
    return start, end


def mask_matches(pattern: Regex, text: str) -> str:
    """The text with each match, and the word holding it, replaced by MASK."""
    parts, at = [], 0
    for found in pattern.finditer(text):
        if found.end() == found.start() or found.start() < at:
            continue
        start, end = held_span(text, found.start(), found.end())
        start = max(start, at)
        parts.append(text[at:start] + MASK)
        at = end
    parts.append(text[at:])
    return "".join(parts)


@dataclass(frozen=True)
class Lines:
    """Which spool and log lines carry what is forgotten."""

    pattern: Regex | None
    project: str | None
    keys: frozenset[str]  # idempotency keys of the forgotten events

    def spool_line(self, line: bytes) -> bool:
        events, strings = spool.search_line(line)
        if any(event.get("idempotency_key") in self.keys for event in events):
            return True
        if self.pattern is None:
            return False
        if self.project is not None and events and events[-1].get("project_root") != self.project:
            return False  # another project's event: --project keeps it
        return hit(self.pattern, strings)

    def log_line(self, line: bytes) -> bool:
        return self.pattern is not None and hit(
            self.pattern, [line.decode("utf-8", "surrogateescape")]
        )
