"""Storing group tallies (remem/procedures/tally.py): reading one, the index ranges that age it
and qualify it, re-deriving it from every run when it cannot be advanced, and writing it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy import TextClause, bindparam, text

from remem.db.driver import Driver, Rounds, Rows
from remem.db.engine import row_lock
from remem.procedures import policy
from remem.procedures.groups import Group, scoped_statement, send_by_group
from remem.procedures.tally import (
    FAILED,
    UNVERIFIED,
    VERIFIED,
    Aging,
    GroupRun,
    Tally,
    derive,
    session_lasts,
)

SELECT_TALLY = (
    "SELECT id, tally, version FROM group_states WHERE project_id = :project_id "
    "AND scope = :scope AND branch = :branch AND directory = :directory "
    "AND workflow_hash = :workflow_hash {lock}"
)


@lru_cache(maxsize=2)
def _select_tally(lock: str) -> TextClause:
    """The group's tally; with row_lock's clause, the group's lock where write transactions run
    side by side: held to commit, it makes a window that re-derives the tally wait for any
    other writing it."""
    return text(SELECT_TALLY.format(lock=lock).rstrip())


# A window that found no tally may race another inserting the group's first one: the loser
# inserts nothing, then locks the winner's row and derives the tally again.
INSERT_TALLY = text(
    "INSERT INTO group_states (project_id, scope, branch, directory, workflow, workflow_hash, "
    "tally, oldest_fresh_at, version, updated_at) VALUES (:project_id, :scope, :branch, "
    ":directory, :workflow, :workflow_hash, :tally, :oldest_fresh_at, 1, :now) "
    "ON CONFLICT (project_id, scope, branch, directory, workflow_hash) DO NOTHING RETURNING id"
)
# Rows of a window's groups, each (group, session) once.
UPSERT_SESSION = text(
    "INSERT INTO group_sessions (group_id, session_id, last_verified_at) "
    "VALUES (:group_id, :session_id, :at) ON CONFLICT (group_id, session_id) DO UPDATE SET "
    "last_verified_at = CASE WHEN excluded.last_verified_at > "
    "group_sessions.last_verified_at THEN excluded.last_verified_at "
    "ELSE group_sessions.last_verified_at END"
)
SESSIONS_AGED_OUT = text(
    "SELECT count(*) FROM group_sessions WHERE group_id = :group_id "
    "AND last_verified_at >= :old AND last_verified_at < :new"
)
# Guarded by the version it was read at: a tally written in between wins, and this one is
# derived again.
UPDATE_TALLY = text(
    "UPDATE group_states SET tally = :tally, oldest_fresh_at = :oldest_fresh_at, "
    "version = version + 1, updated_at = :now WHERE id = :id AND version = :version"
)


class Stored:
    """A tally as read, with what guards its update."""

    __slots__ = ("id", "tally", "version")

    def __init__(self, row: Any) -> None:
        self.id, self.version = row.id, row.version
        self.tally = Tally.from_json(row.tally)


def load(connection: Driver, group: Group, lock: bool = False) -> Stored | None:
    """The group's tally; with `lock`, locked until the transaction ends (PostgreSQL)."""
    return send_load(connection, group, lock)()


def send_load(connection: Driver, group: Group, lock: bool = False) -> Callable[[], Stored | None]:
    """load(), sent: what it finds once called."""
    statement = _select_tally(row_lock(connection) if lock else "")
    rows = connection.execute(statement, group.key())

    def found() -> Stored | None:
        row = rows.first()
        return None if row is None else Stored(row)

    return found


SELECT_TALLIES = text(
    "SELECT id, tally, version, scope, branch, directory, workflow_hash FROM group_states "
    "WHERE project_id = :project_id AND workflow_hash IN :hashes"
).bindparams(bindparam("hashes", expanding=True))


def send_many(
    connection: Driver, groups: Iterable[Group]
) -> Callable[[], dict[Group, Stored | None]]:
    """The stored tallies of a window's groups, one statement per project: sent, read once
    called."""
    sent = send_by_group(connection, SELECT_TALLIES, groups)
    return lambda: {group: None if row is None else Stored(row) for group, row in sent().items()}


SELECT_VERSIONS = text(
    "SELECT id, version, scope, branch, directory, workflow_hash FROM group_states "
    "WHERE project_id = :project_id AND workflow_hash IN :hashes"
).bindparams(bindparam("hashes", expanding=True))


def unchanged(connection: Driver, stored: dict[Group, Stored | None]) -> bool:
    """Whether every group's tally is still the one read (none inserted where there was none,
    none deleted): versions only, one statement per project."""
    found = _rows(connection, SELECT_VERSIONS, stored)
    return all(
        (row is None and was is None)
        or (row is not None and was is not None and (row.id, row.version) == (was.id, was.version))
        for row, was in ((found[group], was) for group, was in stored.items())
    )


def _rows(connection: Driver, statement: Any, groups: Iterable[Group]) -> dict[Group, Any]:
    return send_by_group(connection, statement, groups)()


_AGED_OUT = (
    "SELECT count(DISTINCT event_id) FROM verifications WHERE {where} "
    "AND verified_at >= :old AND verified_at < :new"
)
_OLDEST_FRESH = "SELECT min(verified_at) FROM verifications WHERE {where} AND verified_at >= :new"
_NEARBY = (
    "SELECT event_id, session_id, verified_at, branch FROM verifications "
    "WHERE {where} AND verified_at >= :start AND verified_at <= :end"
)


def aging(connection: Driver, group: Group, stored: Stored, cutoff: float) -> Aging:
    """The stored verified runs and sessions that aged out between the tally's cutoff and
    `cutoff`, and the oldest run left: ranges of the indexes on time."""
    tally = stored.tally
    if tally.oldest_fresh_at is None or tally.oldest_fresh_at >= cutoff:
        return Aging(0, tally.oldest_fresh_at)
    params = {**group.params(), "old": tally.cutoff, "new": cutoff, "group_id": stored.id}
    left = connection.execute(scoped_statement(_AGED_OUT, group.scope), params).scalar_one()
    oldest = connection.execute(scoped_statement(_OLDEST_FRESH, group.scope), params).scalar_one()
    sessions = connection.execute(SESSIONS_AGED_OUT, params).scalar_one()
    return Aging(int(left), oldest, int(sessions))


SELECT_GROUPS_SESSIONS = text(
    "SELECT group_id, session_id, last_verified_at FROM group_sessions "
    "WHERE group_id IN :groups AND session_id IN :sessions"
).bindparams(bindparam("groups", expanding=True), bindparam("sessions", expanding=True))


def known_sessions(
    connection: Driver,
    stored: dict[Group, Stored | None],
    runs: dict[Group, list[GroupRun]],
) -> Callable[[], dict[Group, dict[int, float]]]:
    """For each group, the stored latest verified run of each session with a verified run
    among its `runs`: one statement for them all, sent; read once called."""
    wanted = {
        group: {run.session_id for run in group_runs if run.verdict == VERIFIED}
        for group, group_runs in runs.items()
    }
    ids = {found.id: group for group, found in stored.items() if found is not None}
    sessions = sorted({s for group in ids.values() for s in wanted[group]})
    if not sessions:
        return lambda: {group: {} for group in runs}
    params = {"groups": sorted(ids), "sessions": sessions}
    sent = connection.execute(SELECT_GROUPS_SESSIONS, params)

    def found() -> dict[Group, dict[int, float]]:
        by_group: dict[Group, dict[int, float]] = {group: {} for group in runs}
        for group_id, session_id, at in sent:
            group = ids[group_id]
            if session_id in wanted[group]:
                by_group[group][session_id] = at
        return by_group

    return found


def nearby(
    connection: Driver, group: Group, runs: Sequence[GroupRun], max_age_s: float
) -> Callable[[], list[policy.Run]]:
    """The stored verified runs within max_age of the window's verified runs: all a group
    that has not qualified yet needs to know whether it does now. Sent, and read once
    called."""
    times = [run.at for run in runs if run.verdict == VERIFIED]
    if not times:
        return list
    sent = connection.execute(
        scoped_statement(_NEARBY, group.scope),
        {**group.params(), "start": min(times) - max_age_s, "end": max(times) + max_age_s},
    )
    return lambda: [policy.Run(e, s, at, True, b) for e, s, at, b in sent]


_RUNS = (
    "SELECT event_id, step, session_id, {at} AS run_at, '{verdict}' AS verdict, branch, "
    "command, masked, {cannot_run} AS cannot_run FROM {table} WHERE {{where}}"
)
_ALL_RUNS = (
    "SELECT * FROM ("
    + " UNION ALL ".join(
        _RUNS.format(at=at, verdict=verdict, table=table, cannot_run=cannot_run)
        for table, at, verdict, cannot_run in (
            ("verifications", "verified_at", VERIFIED, "0"),
            ("attempts", "failed_at", FAILED, "cannot_run"),
            ("unverified_runs", "ran_at", UNVERIFIED, "0"),
        )
    )
    + ") AS runs ORDER BY event_id, step"
)


def all_runs(connection: Driver, group: Group) -> list[GroupRun]:
    """Every stored run of the group, by event then step, as a window lists them: of two steps
    of one event, the later counts (tally.derive), whatever order the rows lie in."""
    return send_all_runs(connection, group)()


def send_all_runs(connection: Driver, group: Group) -> Callable[[], list[GroupRun]]:
    """all_runs(), sent: what it finds once called."""
    rows = connection.execute(scoped_statement(_ALL_RUNS, group.scope), group.params())
    return lambda: [
        GroupRun(e, s, at, v, b, c, bool(m), bool(x)) for e, _step, s, at, v, b, c, m, x in rows
    ]


def rederive(
    connection: Driver, group: Group, rules: policy.Rules, now: float
) -> tuple[Tally, dict[int, float]]:
    """The tally from every stored run, and each session's latest verified run."""
    return _derived(all_runs(connection, group), group, rules, now)


def _derived(
    runs: list[GroupRun], group: Group, rules: policy.Rules, now: float
) -> tuple[Tally, dict[int, float]]:
    return derive(runs, now, rules, group.min_branches()), session_lasts(runs)


def rederive_locked(
    connection: Driver, group: Group, rules: policy.Rules, now: float
) -> Rounds[tuple[Tally, dict[int, float]]]:
    """Derive the tally again from every stored run and write it, under the group's lock:
    taken before the runs are read (the statement that reads them runs after the one that
    waits for the lock), so that every window that wrote the tally before has committed its
    runs, and none writes it until this transaction ends. Work that reads in rounds
    (remem/db/driver.py)."""
    for _attempt in range(2):
        stored_sent = send_load(connection, group, lock=True)
        runs_sent = send_all_runs(connection, group)
        yield
        stored = stored_sent()
        tally, lasts = _derived(runs_sent(), group, rules, now)
        sent = send(connection, group, tally, stored, now, lasts)
        yield
        # Refused only when another window inserted the group's first tally meanwhile: the
        # row exists now, and the second attempt waits for that window's lock.
        if landed(connection, sent):
            return tally, lasts
    raise RuntimeError(f"the tally of group {group.key()} changed under its lock")


def write(
    connection: Driver,
    group: Group,
    tally: Tally,
    stored: Stored | None,
    now: float,
    lasts: dict[int, float],
) -> bool:
    """Store the tally and its sessions' latest verified runs; False when another
    transaction changed the tally since it was read, or inserted the group's first one
    (nothing is written then)."""
    return landed(connection, send(connection, group, tally, stored, now, lasts))


class Sent(NamedTuple):
    """A tally's write, sent: landed() tells whether it was written."""

    result: Rows
    stored: Stored | None
    lasts: dict[int, float]


def send(
    connection: Driver,
    group: Group,
    tally: Tally,
    stored: Stored | None,
    now: float,
    lasts: dict[int, float],
    sessions: list[dict[str, Any]] | None = None,
) -> Sent:
    """Send the tally's write without waiting for it: a window sends every group's before it
    reads whether any was refused. Its sessions' rows are written now, or added to
    `sessions` for the caller to write with other groups' (send_sessions)."""
    params = {"tally": tally.to_json(), "oldest_fresh_at": tally.oldest_fresh_at, "now": now}
    if stored is None:
        result = connection.execute(
            INSERT_TALLY, {**params, **group.key(), "workflow": group.workflow}
        )
        return Sent(result, stored, lasts)
    result = connection.execute(
        UPDATE_TALLY, {**params, "id": stored.id, "version": stored.version}
    )
    # Written whether or not the update is refused: these runs are the group's, stored in this
    # transaction, and a session's row only ever moves to a later run; a refused tally is
    # derived again from every run, these among them.
    _send_sessions(connection, stored.id, lasts, sessions)
    return Sent(result, stored, lasts)


def landed(connection: Driver, sent: Sent, sessions: list[dict[str, Any]] | None = None) -> bool:
    """Whether a sent write stored the tally (see write); `sessions` as for send."""
    if sent.stored is not None:
        return bool(sent.result.rowcount)
    group_id = sent.result.scalar()
    if group_id is None:
        return False
    _send_sessions(connection, group_id, sent.lasts, sessions)
    return True


def send_sessions(connection: Driver, sessions: list[dict[str, Any]]) -> None:
    """The session rows send and landed added up, of different groups: one statement."""
    if sessions:
        connection.execute(UPSERT_SESSION, sessions)


def _send_sessions(
    connection: Driver,
    group_id: int,
    lasts: dict[int, float],
    sessions: list[dict[str, Any]] | None,
) -> None:
    rows = [{"group_id": group_id, "session_id": s, "at": at} for s, at in lasts.items()]
    if sessions is not None:
        sessions.extend(rows)
    elif rows:
        connection.execute(UPSERT_SESSION, rows)
