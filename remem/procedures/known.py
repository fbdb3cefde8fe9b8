"""Persisting known errors (DESIGN.md §6): each distinct error of a workflow's failing attempts,
what resolved it and what fixed it, re-derived with the journal for the streaks a window may
change (lessons.occurrences, fixes.read_fix)."""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text

from remem.db.driver import Driver, Rounds, Rows, run, side_by_side
from remem.procedures import fixes, journal, lessons
from remem.procedures.journal import GROUP, PREVIOUS_RUN, History, Key, Region, inside
from remem.procedures.window import WindowEvent
from remem.shell.analysis import analyse
from remem.shell.recognisers import mask_branch

# How many of a session's events after a failure are read for its fix: a fix comes soon after.
EVENTS_READ = 50
_END = float("inf")
OPEN = 2**62  # the id no event reaches: an error nothing resolved is looked after to the end

SELECT_KNOWN = text(
    "SELECT id, first_event_id, first_seen_at, last_event_id, times_seen, error_key, error, "
    f"resolved_by_event_id, resolved_at FROM known_errors WHERE {GROUP} "
    "AND first_seen_at >= :since AND first_seen_at <= :until"
)
# Rows of one group, each sighting once (rederive).
UPSERT_KNOWN = text(
    "INSERT INTO known_errors (project_id, branch, directory, workflow, workflow_hash, "
    "error_key, error, first_event_id, last_event_id, session_id, first_seen_at, last_seen_at, "
    "times_seen, sessions, resolved_by_event_id, resolved_at, fix_files, fix_commands, "
    "fix_in_command, updated_at) VALUES (:project_id, :branch, :directory, :workflow, "
    ":workflow_hash, :error_key, :error, :first_event_id, :last_event_id, :session_id, "
    ":first_seen_at, :last_seen_at, :times_seen, :sessions, :resolved_by_event_id, "
    ":resolved_at, :fix_files, :fix_commands, :fix_in_command, :now) "
    "ON CONFLICT (project_id, branch, directory, workflow_hash, first_event_id) "
    "DO UPDATE SET workflow = excluded.workflow, "
    "error_key = excluded.error_key, error = excluded.error, "
    "last_event_id = excluded.last_event_id, session_id = excluded.session_id, "
    "first_seen_at = excluded.first_seen_at, last_seen_at = excluded.last_seen_at, "
    "times_seen = excluded.times_seen, sessions = excluded.sessions, "
    "resolved_by_event_id = excluded.resolved_by_event_id, resolved_at = excluded.resolved_at, "
    "fix_files = excluded.fix_files, fix_commands = excluded.fix_commands, "
    "fix_in_command = excluded.fix_in_command, "
    "updated_at = excluded.updated_at"
)
DELETE_KNOWN = text("DELETE FROM known_errors WHERE id = :id")
OPEN_IN_SESSION = text(
    "SELECT DISTINCT project_id, branch, directory, workflow_hash, workflow FROM known_errors "
    "WHERE session_id = :session_id AND resolved_by_event_id IS NULL"
)
# Only a failed command's output is read: it tells whether the error was still there.
_EVENTS = (
    "SELECT id, event_at, kind, command, outcome, files, CASE WHEN outcome = 'failure' "
    "THEN COALESCE(output_excerpt, error_excerpt) END AS output "
    "FROM captured_events WHERE session_id = :session_id AND id < :before "
    "AND (kind = 'edit' OR (kind = 'command' AND outcome IN ('success', 'failure'))) "
)
# The failing session's events after the failure, oldest first.
EVENTS_AFTER = text(_EVENTS + f"AND id > :after ORDER BY id LIMIT {EVENTS_READ}")
# The resolving session's events since its previous run of the workflow, newest first.
EVENTS_BEFORE = text(
    _EVENTS + f"AND id > COALESCE(({PREVIOUS_RUN}), 0) ORDER BY id DESC LIMIT {EVENTS_READ}"
)


@dataclass(frozen=True)
class Surroundings:
    """What a known error's fix is read from besides its group's runs: the commands judged
    read-only (`promotion.ignore_commands`), and a window's events (outcomes resolved, in id
    order: every event of its session in a range of ids), which spare reading them again."""

    ignore: tuple[str, ...] = ()
    events: tuple[WindowEvent, ...] = ()
    # Those of the events a fix reads (EVENTS_AFTER's), their ids, and each as a fix reads
    # it once it was (many errors of a window read the same few events).
    read: tuple[WindowEvent, ...] = ()
    read_ids: tuple[int, ...] = ()
    _read_as: dict[int, fixes.Between] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, ignore: tuple[str, ...], events: tuple[WindowEvent, ...]) -> Surroundings:
        read = tuple(
            event
            for event in events
            if event.kind == "edit"
            or (event.kind == "command" and event.outcome in ("success", "failure"))
        )
        return cls(ignore, events, read, tuple(event.id for event in read))

    def after(self, session_id: int, after: int, before: int) -> Iterator[fixes.Between] | None:
        """The session's events after `after` and before `before`, as the database would give
        them (EVENTS_AFTER), when the window holds them all; else None. Each is made as it is
        read: a fix is read up to the first run of its tool."""
        events = self.events
        if not events or events[0].session_id != session_id or after < events[0].id:
            return None
        if before > events[-1].id + 1 and before != OPEN:
            return None
        start = bisect_right(self.read_ids, after)
        stop = min(bisect_left(self.read_ids, before, start), start + EVENTS_READ)
        return self._between(start, stop)

    def _between(self, start: int, stop: int) -> Iterator[fixes.Between]:
        read_as, read = self._read_as, self.read
        for index in range(start, stop):
            between = read_as.get(index)
            if between is None:
                between = read_as[index] = _from_window(read[index])
            yield between


def rederive(
    connection: Driver,
    group: dict[str, Any],
    history: History,
    now: float,
    region: Region | None = None,
    around: Surroundings = Surroundings(),
    stored_rows: Rows | None = None,
    writes: journal.Writes | None = None,
) -> Rounds[None]:
    """The known errors of the group's streaks in `region` (None: all of them) from their
    runs in `history`; those that first showed outside the region stand. A resolved error
    whose attempts did not change keeps its fix; an open one is looked at again, as a later
    command may have resolved it. `stored_rows`: send_stored's for the region, when the
    caller sent it; `writes`: where its rows are gathered (None: written at once). Work that
    reads in rounds (remem/db/driver.py); what fixed each error is read for all of them side
    by side."""
    attempts, successes = history.attempts, history.successes
    if not attempts:
        return  # no failure in the region: none of its errors (attempts are never deleted)
    branch = group["branch"] or None
    runs = [lessons.JournalRun(row.event_id, row.failed_at, False) for row in attempts.values()] + [
        lessons.JournalRun(row.event_id, row.verified_at, True) for row in successes.values()
    ]
    seen = {
        row.event_id: lessons.sighting(
            row.event_id,
            row.failed_at,
            row.session_id,
            row.salient_error,
            row.error_excerpt,
            branch,
        )
        for row in attempts.values()
    }
    found = [
        occurrence
        for streak in lessons.streaks(runs)
        for occurrence in lessons.occurrences(streak, seen)
    ]
    if stored_rows is None:
        stored_rows = send_stored(connection, group, region)
    stored = _stored(stored_rows, region)
    changed = []
    for occurrence in found:
        first = occurrence.sightings[0].event_id
        row = stored.pop(first, None)
        workflow = attempts[occurrence.sightings[-1].event_id].workflow
        if row is not None and _stands(row, occurrence, workflow):
            continue
        changed.append((first, _values(connection, group, occurrence, history, workflow, around)))
    found_values = yield from side_by_side([values for _first, values in changed])
    # By first sighting, the key of a row: the last written of one key is the one that stays.
    written: dict[int, dict[str, Any]] = {}
    for (first, _work), values in zip(changed, found_values, strict=True):
        written[first] = {**group, **values, "now": now}
    if writes is None:
        writes = journal.Writes(connection, gather=False)
    writes.add(UPSERT_KNOWN, list(written.values()))
    if stored:
        writes.now(DELETE_KNOWN, [{"id": row.id} for row in stored.values()], after=UPSERT_KNOWN)


def _bounds(region: Region | None) -> tuple[Key, Key | None]:
    return region if region is not None else (journal.BEFORE_ALL, None)


def send_stored(connection: Driver, group: dict[str, Any], region: Region | None) -> Rows:
    """The group's known errors that may have first shown in `region`, sent."""
    after, end = _bounds(region)
    params = {**group, "since": after[0], "until": end[0] if end else _END}
    return connection.execute(SELECT_KNOWN, params)


def _stored(rows: Rows, region: Region | None) -> dict[int, Any]:
    after, end = _bounds(region)
    return {
        row.first_event_id: row
        for row in rows
        if inside((row.first_seen_at, row.first_event_id), after, end)
    }


def _stands(row: Any, occurrence: lessons.Occurrence, workflow: str) -> bool:
    """Whether a stored row holds what deriving the occurrence again would give: the same
    attempts, and the same resolver (a passing run of the command with more words, before
    the group's own resolver, stays its resolver). An open one that such a run may resolve is
    looked at again."""
    last, resolver = occurrence.sightings[-1], occurrence.resolved_by
    if (row.last_event_id, row.times_seen, row.error_key) != (
        last.event_id,
        len(occurrence.sightings),
        occurrence.error_key,
    ):
        return False
    if row.resolved_by_event_id is None:
        return resolver is None and not fixes.may_resolve(workflow)
    if resolver is None or row.resolved_by_event_id == resolver.event_id:
        return True
    return fixes.may_resolve(workflow) and (row.resolved_at, row.resolved_by_event_id) < (
        resolver.at,
        resolver.event_id,
    )


def _values(
    connection: Driver,
    group: dict[str, Any],
    occurrence: lessons.Occurrence,
    history: History,
    workflow: str,
    around: Surroundings,
) -> Rounds[dict[str, Any]]:
    branch = group["branch"] or None
    first, last = occurrence.sightings[0], occurrence.sightings[-1]
    failing = fixes.Failing(workflow, occurrence.error_key, branch)
    fix, resolved = yield from _fix(connection, group, occurrence, history, failing, around)
    return {
        "workflow": workflow,
        "error_key": occurrence.error_key,
        "error": mask_branch(occurrence.error, branch),
        "first_event_id": first.event_id,
        "last_event_id": last.event_id,
        "session_id": last.session_id,
        "first_seen_at": first.at,
        "last_seen_at": last.at,
        "times_seen": len(occurrence.sightings),
        "sessions": len({s.session_id for s in occurrence.sightings}),
        "resolved_by_event_id": resolved[0] if resolved else None,
        "resolved_at": resolved[1] if resolved else None,
        "fix_files": json.dumps(list(fix.files)) if fix.files else "[]",
        "fix_commands": json.dumps(list(fix.commands)) if fix.commands else "[]",
        "fix_in_command": int(_in_command(fix, occurrence, history)),
    }


def _in_command(fix: fixes.Fix, occurrence: lessons.Occurrence, history: History) -> bool:
    """Whether it was fixed only by editing files its failing runs named: a family's
    placeholder (`mix test <test file>`) hides them, the runs' own commands do not."""
    if fix.commands or not fix.files:
        return False
    named = {
        word
        for sighting in occurrence.sightings
        if sighting.event_id in history.attempts
        for word in (history.attempts[sighting.event_id].command or "").split()
    }
    return all(name in named for name in fix.files)


NO_FIX = fixes.Fix((), ())


def _fix(
    connection: Driver,
    group: dict[str, Any],
    occurrence: lessons.Occurrence,
    history: History,
    failing: fixes.Failing,
    around: Surroundings,
) -> Rounds[tuple[fixes.Fix, tuple[int, float] | None]]:
    """What fixed the error, and the run that resolved it (None: nothing yet, and then
    nothing fixed it). Its failing session's events after its last sighting are read, and,
    when another session resolved it, that session's events before the resolving run."""
    resolver, last = occurrence.resolved_by, occurrence.sightings[-1]
    if resolver is None and not fixes.may_resolve(failing.workflow):
        return NO_FIX, None  # only a run of its own workflow can resolve it: none did yet
    before = resolver.event_id if resolver is not None else OPEN
    events: Iterable[fixes.Between] | None = around.after(last.session_id, last.event_id, before)
    if events is None:
        params = {"session_id": last.session_id, "after": last.event_id, "before": before}
        sent = connection.execute(EVENTS_AFTER, params)
        yield
        events = [_between(row) for row in sent.all()]
    fix = fixes.read_fix(events, failing, around.ignore)
    if fix.resolved_by is not None:
        return fix, (fix.resolved_by.event_id, fix.resolved_by.at)
    if resolver is None:
        return NO_FIX, None
    row = history.successes.get(resolver.event_id) or history.attempts[resolver.event_id]
    if row.session_id != last.session_id:
        params = {**group, "session_id": row.session_id, "before": resolver.event_id}
        sent = connection.execute(EVENTS_BEFORE, params)
        yield
        earlier = [_between(r) for r in reversed(sent.all())]
        fix = fix.adding(fixes.read_fix(earlier, failing, around.ignore))
    return fix, (resolver.event_id, resolver.at)


def _from_window(event: WindowEvent) -> fixes.Between:
    files = journal.names_of(event.files) if event.kind == "edit" and event.files else ()
    output = event.output_excerpt or event.error_excerpt if event.outcome == "failure" else None
    succeeded = event.outcome == "success"
    return fixes.Between(
        event.id, event.event_at, event.kind, event.command, succeeded, output, files
    )


def _between(row: Any) -> fixes.Between:
    files = journal.names_of(row.files) if row.kind == "edit" and row.files else ()
    return fixes.Between(
        row.id,
        row.event_at,
        row.kind,
        row.command,
        row.outcome == "success",
        row.output,
        files,
    )


def passed_reads(events: Sequence[WindowEvent], ignore: Sequence[str]) -> set[str]:
    """The workflows of the read-only steps of the events' passing commands: their passes are
    no runs, yet they may resolve a read's error (`git add -f <path>` after `git add <path>`
    refused an ignored path)."""
    return {
        step.workflow
        for event in events
        if event.kind == "command" and event.outcome == "success" and event.command
        for step in analyse(event.command, ignore).steps
        if step.read_only
    }


def resolve_open(
    connection: Driver,
    session_id: int,
    passed: set[str],
    touched: set[tuple[Any, ...]],
    now: float,
    around: Surroundings = Surroundings(),
) -> None:
    """A window's passing runs of a variant of a command (`git push --set-upstream origin
    <branch>` after `git push`), or of a read-only command itself, resolve the errors the
    session's runs of that command left open, though the window holds no run of it: those
    groups' open streaks are looked at again. `passed`: the workflows of the window's
    verified runs and of its passing read-only steps (passed_reads); `touched` are the groups
    the window's own runs re-derived already."""
    if not passed:
        return
    works = []
    for row in connection.execute(OPEN_IN_SESSION, {"session_id": session_id}).all():
        group = {
            "project_id": row.project_id,
            "branch": row.branch,
            "directory": row.directory,
            "workflow_hash": row.workflow_hash,
        }
        if tuple(group.values()) in touched:
            continue
        if not any(
            workflow == row.workflow or fixes.runs_more(workflow, row.workflow)
            for workflow in passed
        ):
            continue
        works.append(_resolve(connection, group, now, around, journal.Kept(connection)))
    # The groups side by side, their rows written in turn.
    at_once = journal.Writes(connection, gather=False)
    for written in run(side_by_side(works)):
        written.into(at_once)


def _resolve(
    connection: Driver,
    group: dict[str, Any],
    now: float,
    around: Surroundings,
    writes: journal.Kept,
) -> Rounds[journal.Kept]:
    last = journal.send_last_success_before(connection, group, (_END, 0))
    yield
    start = last() or journal.BEFORE_ALL
    region = (start, None)
    tail = journal.send_tail(connection, group, start, None)
    stored = send_stored(connection, group, region)
    yield
    yield from rederive(connection, group, tail(), now, region, around, stored, writes)
    return writes
