"""What a forgetting finds beyond the events and what is derived from them: the drop ledger (a
refused payload's excerpt, the note of an output cut), the drafts `remem procedures export`
wrote, the agents' own transcripts (which remem reads and never owns: it names them, and
rewrites them only when asked), and the words that held each match, recorded so that nothing
brings them back (remem/record/forgotten.py)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from sqlalchemy import Connection, text

from remem.forgetting.selection import Draft, hit
from remem.record.forgotten import words_holding
from remem.regex import Regex
from remem.transcripts.importer import discover

# More distinct words than this and the match is too broad to mask from then on: it would
# mask ordinary text. The forget still deletes what it matched, and says so.
MAX_WORDS = 100
TRANSCRIPT_HOSTS = ("claude-code", "codex")


@dataclass
class Words:
    """The words holding the pattern's matches, gathered while the plan reads."""

    pattern: Regex | None
    found: set[str] = field(default_factory=set)
    unheld: set[str] = field(default_factory=set)  # matches no single word holds

    def add(self, values: Iterable[object]) -> None:
        if self.pattern is None:
            return
        for value in values:
            if not isinstance(value, str):
                continue
            for match in self.pattern.finditer(value):
                if match.end() == match.start():
                    continue
                held = set(words_holding(value, match.start(), match.end()))
                if held:
                    self.found |= held
                else:
                    self.unheld.add(match.group())

    def recorded(self) -> frozenset[str]:
        return frozenset(self.found) if len(self.found) <= MAX_WORDS else frozenset()

    def unrecorded(self) -> int:
        return len(self.unheld) + (len(self.found) if len(self.found) > MAX_WORDS else 0)


_DROPS = text("SELECT id, idempotency_key, detail, excerpt FROM dropped_payloads")


def matching_drops(
    connection: Connection, pattern: Regex | None, keys: set[str], words: Words
) -> tuple[int, ...]:
    """The drop ledger's rows that quote the match, and the notes of the forgotten events'
    cut outputs (the hook keys them after their event)."""
    notes = {f"output_cut:{key}" for key in keys}
    found = []
    for row in connection.execute(_DROPS.execution_options(yield_per=1000)):
        if row.idempotency_key in notes or (pattern and hit(pattern, row[2:])):
            found.append(int(row.id))
            words.add(row[2:])
    return tuple(found)


_DRAFTS = text("SELECT id, procedure_id, path FROM exports ORDER BY path")


def matching_drafts(
    connection: Connection,
    pattern: Regex | None,
    procedure_ids: set[int],
    words: Words,
) -> tuple[Draft, ...]:
    """The drafts remem wrote of a forgotten procedure, or whose name or text the match finds
    (a draft of a procedure that stays may quote a forgotten lesson's error)."""
    found = []
    for row in connection.execute(_DRAFTS):
        content = _read_text(row.path)
        quoted = pattern is not None and hit(pattern, (row.path, content))
        if row.procedure_id in procedure_ids or quoted:
            found.append(Draft(int(row.id), row.path))
            words.add((row.path, content))
    return tuple(found)


def _read_text(path: str) -> str | None:
    try:
        if not os.path.isfile(path) or os.path.islink(path):
            return None
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "surrogateescape")
    except OSError:
        return None


def transcript_files(named: Iterable[str | None], user_home: str | None) -> list[str]:
    """The transcripts an import reads (the agents' own folders, when user_home is given)
    and those the database names, once each."""
    paths = {
        os.path.abspath(source.path)
        for host in TRANSCRIPT_HOSTS
        if user_home is not None
        for source in discover(host, [], user_home)
    }
    paths.update(os.path.abspath(path) for path in named if path and os.path.isfile(path))
    return sorted(paths)


def matching_transcripts(
    paths: Iterable[str], pattern: Regex | None, words: Words
) -> dict[str, int]:
    """Lines that quote the match, by transcript file."""
    counts: dict[str, int] = {}
    if pattern is None:
        return counts
    for path in paths:
        found = 0
        for line in _lines(path):
            if pattern.search(line):
                found += 1
                words.add((line,))
        if found:
            counts[path] = found
    return counts


def _lines(path: str) -> Iterator[str]:
    try:
        with open(path, "rb") as handle:
            for line in handle:
                yield line.decode("utf-8", "surrogateescape")
    except OSError:
        return
