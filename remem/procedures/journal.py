"""Persisting the fix journal: the changes before each failed attempt, attempt numbers and
duplicates, and the newest lessons of each (project, branch, command)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy import bindparam, text

from remem.db.driver import Driver, Rounds, Rows
from remem.procedures import lessons

GROUP = (
    "project_id = :project_id AND branch = :branch AND directory = :directory "
    "AND workflow_hash = :workflow_hash"
)
# A run found by its event, then checked for its group: `+ 0` keeps the planner from reading
# the group's index, whose range is the group's whole history.
_EVENT_IN_GROUP = (
    "{t}.project_id + 0 = :project_id AND {t}.branch = :branch AND {t}.directory = :directory "
    "AND {t}.workflow_hash = :workflow_hash"
)
_GROUP_V = _EVENT_IN_GROUP.format(t="v")
_GROUP_A = _EVENT_IN_GROUP.format(t="a")

# Edits of the session after its previous run of the command (verified or failed) and before
# this run: one statement, as it runs for every failed attempt and every lesson. The previous
# run is looked for among the session's events, newest first, not among the group's runs,
# which may be many. One EXISTS over a UNION ALL, not two EXISTS joined by OR: PostgreSQL
# turns the second form into a hash of every attempt, built again at each call.
PREVIOUS_RUN = (
    "SELECT c.id FROM captured_events c "
    "WHERE c.session_id = :session_id AND c.id < :before AND c.kind = 'command' AND EXISTS ("
    f"SELECT 1 FROM verifications v WHERE v.event_id = c.id AND {_GROUP_V} UNION ALL "
    f"SELECT 1 FROM attempts a WHERE a.event_id = c.id AND {_GROUP_A}) "
    "ORDER BY c.id DESC LIMIT 1"
)
EDITS_SINCE_PREVIOUS_RUN = text(
    "SELECT files, change_hash FROM captured_events WHERE session_id = :session_id "
    f"AND kind = 'edit' AND id < :before AND id > COALESCE(({PREVIOUS_RUN}), 0) ORDER BY id"
)
# A run is an event: of two steps of one event in a group, the later is the one read (each
# statement orders them, as the rows may lie in any order on PostgreSQL).
_ATTEMPTS = (
    "SELECT id, event_id, failed_at, change_hash, attempt_number, duplicate_of, "
    "resolved_by_event_id, exit_code, error_excerpt, salient_error, session_id, branch, "
    f"command, masked, workflow FROM attempts WHERE {GROUP}"
)
_BY_STEP = " ORDER BY event_id, step"
TAIL_ATTEMPTS = text(_ATTEMPTS + " AND failed_at >= :since AND failed_at <= :until" + _BY_STEP)
_GROUP_F = " AND ".join(f"f.{clause}" for clause in GROUP.split(" AND "))
_GROUP_N = " AND ".join(f"n.{clause}" for clause in GROUP.split(" AND "))
TAIL_RESOLVERS = text(
    "SELECT DISTINCT v.event_id, v.verified_at, v.session_id, v.branch, v.command, v.masked "
    "FROM attempts f JOIN verifications v ON v.id = (SELECT n.id FROM verifications n "
    f"WHERE {_GROUP_N} AND n.verified_at >= f.failed_at AND (n.verified_at > f.failed_at "
    "OR n.event_id > f.event_id) ORDER BY n.verified_at, n.event_id LIMIT 1) "
    f"WHERE {_GROUP_F} AND f.failed_at >= :since AND f.failed_at <= :until"
)
UPDATE_ATTEMPT = text(
    "UPDATE attempts SET attempt_number = :attempt_number, duplicate_of = :duplicate_of, "
    "resolved_by_event_id = :resolved_by_event_id WHERE id = :id"
)
SELECT_LESSONS = text(
    "SELECT resolved_by_event_id, failed_attempts, first_error, last_error, error_key, "
    f"fix_files, repeats, body, pitfall, resolved_at FROM lessons WHERE {GROUP}"
)
# A streak's lesson, keyed by the success that closed it: one row per key in a call.
UPSERT_LESSON = text(
    "INSERT INTO lessons (project_id, branch, directory, workflow_hash, resolved_by_event_id, "
    "failed_attempts, first_error, last_error, error_key, fix_files, repeats, body, pitfall, "
    "resolved_at, created_at) VALUES (:project_id, :branch, :directory, :workflow_hash, "
    ":resolved_by_event_id, :failed_attempts, :first_error, :last_error, :error_key, "
    ":fix_files, :repeats, :body, :pitfall, :resolved_at, :now) "
    "ON CONFLICT (project_id, branch, directory, workflow_hash, resolved_by_event_id) "
    "DO UPDATE SET failed_attempts = excluded.failed_attempts, "
    "first_error = excluded.first_error, last_error = excluded.last_error, "
    "error_key = excluded.error_key, fix_files = excluded.fix_files, "
    "repeats = excluded.repeats, body = excluded.body, pitfall = excluded.pitfall, "
    "resolved_at = excluded.resolved_at"
)
DELETE_LESSONS = text(
    f"DELETE FROM lessons WHERE {GROUP} AND resolved_by_event_id IN :resolvers"
).bindparams(bindparam("resolvers", expanding=True))


EDITS_BETWEEN = text(
    "SELECT files, change_hash FROM captured_events WHERE session_id = :session_id "
    "AND kind = 'edit' AND id < :before AND id > :after ORDER BY id"
)


def send_edits(
    connection: Driver,
    group: dict[str, Any],
    session_id: int,
    event_id: int,
    previous_run: int | None = None,
) -> Rows:
    """The edits of the session since its previous run of this command and before `event_id`
    (edits_from reads them), sent. A caller that knows that previous run (`previous_run`)
    spares the look-up."""
    params = {**group, "session_id": session_id, "before": event_id}
    if previous_run is None:
        return connection.execute(EDITS_SINCE_PREVIOUS_RUN, params)
    return connection.execute(EDITS_BETWEEN, {**params, "after": previous_run})


# send_edits for many runs at once: each asked for as a row of VALUES (its position, session,
# event, group, and the previous run when the caller knows it), one index range per run.
_ASKED_GROUP = (
    "{t}.project_id + 0 = r.column4 AND {t}.branch = r.column5 AND {t}.directory = r.column6 "
    "AND {t}.workflow_hash = r.column7"
)
_EDITS_BEFORE_RUNS = (
    "SELECT r.column1 AS run, e.files, e.change_hash FROM (VALUES {asked}) AS r "
    "JOIN captured_events e ON e.session_id = r.column2 AND e.kind = 'edit' "
    "AND e.id < r.column3 AND e.id > COALESCE(CAST(r.column8 AS INTEGER), ("
    "SELECT c.id FROM captured_events c WHERE c.session_id = r.column2 AND c.id < r.column3 "
    "AND c.kind = 'command' AND EXISTS ("
    f"SELECT 1 FROM verifications v WHERE v.event_id = c.id AND {_ASKED_GROUP.format(t='v')} "
    f"UNION ALL SELECT 1 FROM attempts a WHERE a.event_id = c.id AND {_ASKED_GROUP.format(t='a')}"
    ") ORDER BY c.id DESC LIMIT 1), 0) ORDER BY r.column1, e.id"
)
_ASKED = (
    "i",
    "session_id",
    "before",
    "project_id",
    "branch",
    "directory",
    "workflow_hash",
    "after",
)


@lru_cache(maxsize=64)
def _edits_before_runs(count: int) -> Any:
    asked = ", ".join("(" + ", ".join(f":{name}{n}" for name in _ASKED) + ")" for n in range(count))
    return text(_EDITS_BEFORE_RUNS.format(asked=asked))


def send_edits_many(
    connection: Driver, asked: Sequence[tuple[dict[str, Any], int, int, int | None]]
) -> Callable[[], list[tuple[list[str], str | None]]]:
    """The edits before each (group, session, event, previous run or None), in one statement
    sent now; their answers, in order, once called."""
    if not asked:
        return list
    params: dict[str, Any] = {}
    for n, (group, session_id, event_id, previous) in enumerate(asked):
        values = {**group, "i": n, "session_id": session_id, "before": event_id}
        params.update({f"{name}{n}": values.get(name, previous) for name in _ASKED})
    sent = connection.execute(_edits_before_runs(len(asked)), params)

    def found() -> list[tuple[list[str], str | None]]:
        rows: list[list[tuple[str | None, str | None]]] = [[] for _ in asked]
        for n, files, change_hash in sent:
            rows[n].append((files, change_hash))
        return [edits_from(edits) for edits in rows]

    return found


def edits_from(rows: Sequence[tuple[str | None, str | None]]) -> tuple[list[str], str | None]:
    """The files of edit events (JSON lists), and one whitespace-insensitive hash of their
    changes (None when there were none)."""
    files = sorted({name for encoded, _hash in rows if encoded for name in names_of(encoded)})
    hashes = sorted(change for _files, change in rows if change)
    if not hashes:
        return files, None
    return files, hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:32]


@lru_cache(maxsize=4_096)
def names_of(encoded: str) -> tuple[str, ...]:
    """The files of an edit event, from their JSON list: an agent edits the same few files
    again and again, and the journal reads each edit for many runs."""
    return tuple(json.loads(encoded))


@dataclass(frozen=True)
class History:
    """Every run of a group, read once for both the journal and the promotion decision."""

    attempts: dict[int, Any]
    successes: dict[int, Any]


Key = tuple[float, int]  # (at, event_id)
BEFORE_ALL: Key = (float("-inf"), 0)  # where a region starts when no verified run comes before


def inside(key: Key, after: Key, end: Key | None) -> bool:
    return after < key and (end is None or key <= end)


class Success(NamedTuple):
    """A verified run as TAIL_RESOLVERS reads it."""

    event_id: int
    verified_at: float
    session_id: int
    branch: str
    command: str
    masked: int


def send_tail(
    connection: Driver,
    group: dict[str, Any],
    after: Key,
    end: Key | None = None,
    verified: Sequence[Success] | None = None,
) -> Callable[[], History]:
    """The failed runs after `after` and up to `end` (both (at, event_id)), and the verified
    runs among them that can close a streak: the first after each failure. The others, which
    follow a success, change no streak, and many agents' runs of one workflow may lie between
    two failures. `verified`: every verified run there, when the caller knows them (a
    window's own, after the group's latest stored one), not read. Sent; the History once
    called (a window sends every group's before it reads any)."""
    params = {**group, "since": after[0], "until": end[0] if end else float("inf")}
    failed = connection.execute(TAIL_ATTEMPTS, params)
    resolvers = connection.execute(TAIL_RESOLVERS, params) if verified is None else verified

    def tail() -> History:
        attempts = {
            row.event_id: row for row in failed if inside((row.failed_at, row.event_id), after, end)
        }
        successes = {
            row.event_id: row
            for row in resolvers
            if inside((row.verified_at, row.event_id), after, end)
        }
        return History(attempts, successes)

    return tail


def send_lessons(connection: Driver, group: dict[str, Any]) -> Rows:
    """The group's stored lessons, sent for rebuild to read."""
    return connection.execute(SELECT_LESSONS, group)


FIRST_SUCCESS_AFTER = text(
    "SELECT event_id, verified_at FROM verifications WHERE "
    f"{GROUP} AND verified_at >= :at ORDER BY verified_at, event_id LIMIT 8"
)
LAST_SUCCESS_BEFORE = text(
    "SELECT event_id, verified_at FROM verifications WHERE "
    f"{GROUP} AND verified_at <= :at ORDER BY verified_at DESC, event_id DESC LIMIT 8"
)
# More than 8 runs at one instant: the neighbour strictly beyond `key`, ties broken by id.
_STRICTLY_AFTER = text(
    f"SELECT event_id, verified_at FROM verifications WHERE {GROUP} "
    "AND (verified_at > :at OR (verified_at = :at AND event_id > :event_id)) "
    "ORDER BY verified_at, event_id LIMIT 1"
)
_STRICTLY_BEFORE = text(
    f"SELECT event_id, verified_at FROM verifications WHERE {GROUP} "
    "AND (verified_at < :at OR (verified_at = :at AND event_id < :event_id)) "
    "ORDER BY verified_at DESC, event_id DESC LIMIT 1"
)


Region = tuple[Key, Key | None]  # after a success, up to the next one (None: no next one)


def send_region(
    connection: Driver, group: dict[str, Any], first: Key, last: Key
) -> Callable[[], Region]:
    """The streaks runs from `first` to `last` can change: from the group's last success before
    the first to its first success after the last. A window's own runs lie between: its region
    is the same before they are stored as after. Sent; the region once called."""
    before = _send_neighbour(connection, group, first, later=False)
    after = _send_neighbour(connection, group, last, later=True)
    return lambda: (before() or BEFORE_ALL, after())


def send_last_success_before(
    connection: Driver, group: dict[str, Any], key: tuple[float, int]
) -> Callable[[], tuple[float, int] | None]:
    """The (at, event_id) of the group's latest verified run before `key`, where the streaks
    a run at `key` can change begin: sent, read once called."""
    return _send_neighbour(connection, group, key, later=False)


def _send_neighbour(
    connection: Driver, group: dict[str, Any], key: Key, later: bool
) -> Callable[[], Key | None]:
    """The nearest verified run beyond `key` on one side: a short indexed read from `key`'s
    time, and a strict one only when more than its 8 rows share that time."""
    nearest, strictly = (
        (FIRST_SUCCESS_AFTER, _STRICTLY_AFTER) if later else (LAST_SUCCESS_BEFORE, _STRICTLY_BEFORE)
    )
    sent = connection.execute(nearest, {**group, "at": key[0]})

    def found() -> Key | None:
        rows = sent.all()
        for event_id, at in rows:
            if ((at, event_id) > key) if later else ((at, event_id) < key):
                return (at, event_id)
        if len(rows) < 8:
            return None
        row = connection.execute(strictly, {**group, "at": key[0], "event_id": key[1]}).first()
        return None if row is None else (row.verified_at, row.event_id)

    return found


class Writes:
    """The rows of many-row statements (upserts, updates by id) that the journals of a window's
    groups write: each statement is sent once with every group's rows, when `send` is called
    (`gather` False: at once). A statement run at once (a delete) first sends the rows gathered
    for its table, so that new rows take the ids they would have taken group by group."""

    def __init__(self, connection: Driver, gather: bool = True) -> None:
        self.connection, self.gather = connection, gather
        self._rows: dict[Any, list[dict[str, Any]]] = {}

    def add(self, statement: Any, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        if self.gather:
            self._rows.setdefault(statement, []).extend(rows)
        else:
            self.connection.execute(statement, rows)

    def now(self, statement: Any, params: Any, after: Any) -> None:
        """Run `statement` now, once the rows gathered for `after` are sent."""
        rows = self._rows.pop(after, None)
        if rows:
            self.connection.execute(after, rows)
        self.connection.execute(statement, params)

    def send(self) -> None:
        for statement, rows in self._rows.items():
            self.connection.execute(statement, rows)
        self._rows.clear()


class Kept(Writes):
    """Writes kept as they are asked for, to be passed on `into` other writes later: work run
    side by side (remem/db/driver.py) passes each one's on in turn, and writes as if it had
    run one after another."""

    def __init__(self, connection: Driver) -> None:
        super().__init__(connection)
        self._asked: list[tuple[Any, Any, Any]] = []

    def add(self, statement: Any, rows: list[dict[str, Any]]) -> None:
        if rows:
            self._asked.append((statement, rows, None))

    def now(self, statement: Any, params: Any, after: Any) -> None:
        self._asked.append((statement, params, after))

    def send(self) -> None:
        raise TypeError("kept writes are passed on (into), not sent")

    def into(self, writes: Writes) -> None:
        for statement, params, after in self._asked:
            if after is None:
                writes.add(statement, params)
            else:
                writes.now(statement, params, after)
        self._asked.clear()


def rebuild(
    connection: Driver,
    group: dict[str, Any],
    history: History,
    now: float,
    region: Region | None = None,
    fixes: dict[int, list[str]] | None = None,
    stored_lessons: Rows | None = None,
    writes: Writes | None = None,
) -> Rounds[None]:
    """Re-derive the group's streaks from its runs, in time order, whatever order the windows
    arrived in; write only what changed. Journal rows are never deleted. A history of only the
    runs in a `region` (after a success, up to the next one: see send_tail) re-derives the
    streaks there: those outside it and their lessons stand. `fixes` are the files edited
    before verified runs, as a window read them: a lesson closed by one of those runs takes
    them instead of asking for them. `stored_lessons` are the group's lessons as send_lessons
    sent for them, when the caller did. `writes`: where its rows are gathered (None: written
    at once). Work that reads in rounds (remem/db/driver.py)."""
    attempts, successes = history.attempts, history.successes
    if not attempts:
        return
    if writes is None:
        writes = Writes(connection, gather=False)
    runs = [
        lessons.JournalRun(row.event_id, row.failed_at, False, row.change_hash)
        for row in attempts.values()
    ]
    runs += [lessons.JournalRun(row.event_id, row.verified_at, True) for row in successes.values()]
    found = lessons.streaks(runs)
    changed: set[int | None] = set()  # resolvers whose streak changed in this rebuild
    updates = []
    for streak in found:
        for numbered in lessons.number(streak):
            row = attempts[numbered.event_id]
            stored = (row.attempt_number, row.duplicate_of, row.resolved_by_event_id)
            fresh = (numbered.attempt_number, numbered.duplicate_of, numbered.resolved_by_event_id)
            if stored != fresh:
                updates.append({"id": row.id, **numbered.__dict__})
                changed.add(numbered.resolved_by_event_id)
    if updates:
        writes.add(UPDATE_ATTEMPT, updates)
    if not changed - {None}:
        return  # only the open streak (which has no lesson yet) moved: every lesson stands
    closed = [streak for streak in found if streak.resolved_by is not None]
    if stored_lessons is None:
        stored_lessons = send_lessons(connection, group)
    yield from _write_lessons(
        connection,
        group,
        closed,
        _Runs(attempts, successes),
        changed,
        now,
        stored_lessons,
        region,
        fixes,
        writes,
    )


@dataclass(frozen=True)
class _Runs:
    attempts: dict[int, Any]
    successes: dict[int, Any]


def _write_lessons(
    connection: Driver,
    group: dict[str, Any],
    closed: list[lessons.Streak],
    runs: _Runs,
    changed: set[int | None],
    now: float,
    stored_lessons: Rows,
    region: Region | None,
    fixes: dict[int, list[str]] | None,
    writes: Writes,
) -> Rounds[None]:
    attempts = runs.attempts
    existing = {row.resolved_by_event_id: tuple(row) for row in stored_lessons}
    # The newest streaks keep their lessons: those closed here, and the lessons of streaks
    # outside the region, which stand.
    candidates: list[tuple[Key, lessons.Streak | None]] = [
        ((s.resolved_by.at, s.resolved_by.event_id), s)  # type: ignore[union-attr]
        for s in closed
    ]
    if region is not None:
        candidates += [
            ((row[-1], r), None) for r, row in existing.items() if not inside((row[-1], r), *region)
        ]
    newest = sorted(candidates, key=lambda candidate: candidate[0])[-lessons.LESSONS_KEPT :]
    wanted = {key[1] for key, _streak in newest}
    # Every lesson's fix files are asked for first, then read: one wait for all of them.
    asked = []
    for _key, streak in newest:
        if streak is None:
            continue
        resolver = streak.resolved_by
        assert resolver is not None
        if resolver.event_id in existing and resolver.event_id not in changed:
            continue  # nothing in this streak moved: its lesson stands
        fix_files = _edits_between_failure_and_pass(connection, group, streak, runs, fixes or {})
        asked.append((streak, resolver, fix_files))
    if asked:
        yield
    written = []
    for streak, resolver, fix_files in asked:
        details = [
            lessons.AttemptDetail(
                n.attempt_number,
                attempts[n.event_id].exit_code,
                attempts[n.event_id].error_excerpt,
                n.duplicate_of,
                attempts[n.event_id].salient_error,
            )
            for n in lessons.number(streak)
        ]
        lesson = lessons.distill(
            details, lessons.in_project(fix_files()), resolver.at, group["branch"] or None
        )
        values = {
            "resolved_by_event_id": resolver.event_id,
            "failed_attempts": lesson.failed_attempts,
            "first_error": lesson.first_error,
            "last_error": lesson.last_error,
            "error_key": lesson.error_key,
            "fix_files": json.dumps(list(lesson.fix_files)),
            "repeats": json.dumps([list(pair) for pair in lesson.repeats]),
            "body": lesson.body,
            "pitfall": lesson.pitfall,
            "resolved_at": resolver.at,
        }
        if existing.get(resolver.event_id) != tuple(values.values()):
            written.append({**group, **values, "now": now})
    writes.add(UPSERT_LESSON, written)
    stale = sorted(set(existing) - wanted)
    if stale:
        writes.now(DELETE_LESSONS, {**group, "resolvers": stale}, after=UPSERT_LESSON)


def _edits_between_failure_and_pass(
    connection: Driver,
    group: dict[str, Any],
    streak: lessons.Streak,
    runs: _Runs,
    fixes: dict[int, list[str]],
) -> Callable[[], list[str]]:
    """What was edited between a streak's last failure and the success that closed it: in the
    passing session before the pass (since its previous run of the group: `fixes` when the
    window read it) and, when the failure was in another session, in that session after the
    failure. A lesson that says nothing was edited must mean it. Asked for now; the files
    once called."""
    assert streak.resolved_by is not None
    resolver = streak.resolved_by.event_id
    passing = runs.successes[resolver].session_id
    known = fixes.get(resolver)
    before = None if known is not None else send_edits(connection, group, passing, resolver)
    last = runs.attempts[streak.attempts[-1].event_id]
    after = None
    if last.session_id != passing:
        after = send_edits(connection, group, last.session_id, resolver, last.event_id)

    def files() -> list[str]:
        found = edits_from(before.all())[0] if before is not None else known or []
        if after is not None:
            found = sorted({*found, *edits_from(after.all())[0]})
        return found

    return files
