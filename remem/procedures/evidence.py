"""A procedure's newest evidence runs, and the files edited right before the newest of them.

A procedure lists its newest verified runs and names the files most often edited right before
them. A window's prepare reads both for the procedures of its groups as they stand before the
window (`Evidence`), outside the write transaction; apply adds the window's own runs, whose
files the window's events tell, and reads under the lock only what prepare could not: a
procedure the window promotes, one that another writer changed meanwhile, or a window holding
earlier events resolved late, whose runs may come between a stored run and its edits.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import text

from remem.db.driver import Driver
from remem.procedures import lessons, policy
from remem.procedures.journal import names_of

FILES_FROM_LAST_RUNS = 10
# The evidence ids a procedure row lists (its newest); every one is in procedure_evidence.
EVIDENCE_LISTED = 20

Run = tuple[float, int, int]  # (verified_at, event id, session id)


@dataclass(frozen=True)
class Evidence:
    procedure_id: int
    newest: tuple[Run, ...]  # newest first, at most EVIDENCE_LISTED, whatever their age
    edited: Mapping[int, frozenset[str]]  # event id -> the files edited right before it

    def adding(self, runs: Iterable[Run], edited: Mapping[int, frozenset[str]]) -> Evidence:
        """With a window's verified runs, and the files edited before them."""
        newest = sorted({*self.newest, *runs}, reverse=True)[:EVIDENCE_LISTED]
        return Evidence(self.procedure_id, tuple(newest), {**self.edited, **edited})

    def latest(self, since: float) -> list[tuple[int, int]]:
        """(event, session) of the newest runs from `since`, as `send_latest` reads them: those
        past `since` are a prefix of the newest whatever their age."""
        return [(event, session) for at, event, session in self.newest if at >= since]


# The newest evidence runs of a procedure, from `since` (its fresh runs, or all of them): the
# index on (procedure, time) read backwards, `n` rows of it.
LATEST_EVIDENCE = text(
    "SELECT e.verified_at, e.event_id, c.session_id, c.host FROM procedure_evidence e "
    "JOIN captured_events c ON c.id = e.event_id WHERE e.procedure_id = :id "
    "AND e.verified_at >= :since ORDER BY e.verified_at DESC, e.event_id DESC LIMIT :n"
)
# A Codex command whose outcome its rollout holds only later becomes a run then, between the
# session's runs before it and after it (for a day: window.LATE_RESOLUTION_S).
FIRST_UNSETTLED = text(
    "SELECT min(id) FROM captured_events WHERE session_id = :session_id AND host = 'codex' "
    "AND kind = 'command' AND outcome = 'unknown'"
)


def send_latest(
    connection: Driver, procedure_id: int, since: float
) -> Callable[[], list[tuple[int, int]]]:
    """(event, session) of a procedure's newest evidence runs from `since`, newest first:
    sent, read once called."""
    params = {"id": procedure_id, "since": since, "n": EVIDENCE_LISTED}
    rows = connection.execute(LATEST_EVIDENCE, params)
    return lambda: [(event, session) for _at, event, session, _host in rows]


def read_many(
    connection: Driver,
    wanted: Sequence[tuple[int, Collection[Run]]],
    also: Sequence[tuple[int, int]] = (),
) -> tuple[list[Evidence], dict[int, frozenset[str]]]:
    """The evidence of procedures given as (id, the window's verified runs of its group): its
    newest runs and, when the window brings it runs, the files edited before the stored runs
    that may be among the newest once the window's are added. Those before which a run may
    yet be stored (after a Codex command whose outcome is unknown) are left to be read under
    the write lock. Each stage's statements are sent for every procedure before any is read.
    `also` are more runs (session, event) whose files are read with theirs, returned apart."""
    params = {"since": float("-inf"), "n": EVIDENCE_LISTED}
    sent = [connection.execute(LATEST_EVIDENCE, {**params, "id": i}) for i, _runs in wanted]
    rows_of = [found.all() for found in sent]
    listed = [
        _listed(rows, window_runs) if window_runs else []
        for rows, (_id, window_runs) in zip(rows_of, wanted, strict=True)
    ]
    unsettled = _first_unsettled(
        connection, {row[2] for rows in listed for row in rows if row[3] == "codex"}
    )
    settled = [
        [
            (session, event)
            for _at, event, session, _host in rows
            if unsettled.get(session) is None or unsettled[session] > event
        ]
        for rows in listed
    ]
    # A branch group's procedure and its project group's share their runs: each run once.
    runs = sorted({run for runs in settled for run in runs}.union(also))
    edited = send_files_before(connection, runs)()
    found = [
        Evidence(
            procedure_id,
            tuple((at, e, session) for at, e, session, _h in rows),
            {event: edited[event] for _session, event in kept},
        )
        for (procedure_id, _runs), rows, kept in zip(wanted, rows_of, settled, strict=True)
    ]
    return found, {event: edited[event] for _session, event in also}


def _listed(rows: list[Any], window_runs: Collection[Run]) -> list[Any]:
    """The stored runs (rows, newest first) that may be among the newest a procedure lists
    once the window's runs are added (Evidence.adding): those whose files `latest` may ask
    for. A row is ranked after the stored rows before it and the window's runs newer than it."""
    newer = sorted((at, event) for at, event, _session in window_runs)
    top = rows[:FILES_FROM_LAST_RUNS]
    for kept, (at, event, _session, _host) in enumerate(top):
        if kept + len(newer) - bisect_right(newer, (at, event)) >= FILES_FROM_LAST_RUNS:
            return top[:kept]
    return top


def _first_unsettled(connection: Driver, sessions: Collection[int]) -> dict[int, int | None]:
    """Session -> its first Codex command whose outcome is still unknown (None: none): a run
    after it may yet be stored before the runs that follow."""
    sent = {
        session: connection.execute(FIRST_UNSETTLED, {"session_id": session})
        for session in sorted(sessions)
    }
    return {session: found.scalar() for session, found in sent.items()}


# The files edited right before each run: in its own session, after the session's previous
# run of any workflow (verified, failed or unverified), up to the run itself. An edit the agent
# made before running something else belongs to that other run, not to every later one. One
# EXISTS over a UNION ALL (journal.PREVIOUS_RUN says why). The runs come as rows of VALUES
# (their position, session and event): one index range per run, and a plan as small for ten
# runs as for one.
_PREVIOUS_RUN = (
    "SELECT p.id FROM captured_events p WHERE p.session_id = r.column2 AND p.id < r.column3 "
    "AND p.kind = 'command' AND EXISTS (SELECT 1 FROM verifications v WHERE v.event_id = p.id "
    "UNION ALL SELECT 1 FROM attempts a WHERE a.event_id = p.id "
    "UNION ALL SELECT 1 FROM unverified_runs u WHERE u.event_id = p.id) "
    "ORDER BY p.id DESC LIMIT 1"
)
_EDITED_BEFORE_RUNS = (
    "SELECT r.column1 AS run, e.files FROM (VALUES {runs}) AS r JOIN captured_events e "
    "ON e.session_id = r.column2 AND e.id <= r.column3 AND e.files IS NOT NULL "
    f"AND e.id > COALESCE(({_PREVIOUS_RUN}), 0)"
)


@lru_cache(maxsize=64)
def _edited_before_runs(count: int) -> Any:
    """One statement for `count` runs."""
    runs = ", ".join(f"(:i{i}, :s{i}, :run{i})" for i in range(count))
    return text(_EDITED_BEFORE_RUNS.format(runs=runs))


def send_files_before(
    connection: Driver, runs: Sequence[tuple[int, int]]
) -> Callable[[], dict[int, frozenset[str]]]:
    """Event id -> the files edited right before it, for runs given as (session, event):
    sent, read once called."""
    if not runs:
        return dict
    params: dict[str, Any] = {}
    for i, (session_id, event_id) in enumerate(runs):
        params.update({f"i{i}": i, f"s{i}": session_id, f"run{i}": event_id})
    sent = connection.execute(_edited_before_runs(len(runs)), params)

    def found() -> dict[int, frozenset[str]]:
        names: dict[int, set[str]] = {event_id: set() for _session, event_id in runs}
        for i, encoded in sent:
            names[runs[i][1]].update(names_of(encoded))
        return {event_id: frozenset(files) for event_id, files in names.items()}

    return found


def files_in_window(
    events: Iterable[tuple[int, str | None]], runs: Collection[int], verified: Collection[int]
) -> tuple[dict[int, frozenset[str]], int | None]:
    """The files edited right before each verified run of a window, from the window's events
    (id and files, in order: every event of its session in a range of ids); `runs` are the
    events with runs of any verdict. The window's first run follows a run before the window:
    it comes apart (None when it is not verified), its files to be read (send_files_before), as the
    window's own runs are not stored yet."""
    edited: dict[int, frozenset[str]] = {}
    names: set[str] = set()
    previous = first = None
    for event_id, files in events:
        if files is not None:
            names.update(names_of(files))
        if event_id not in runs:
            continue
        if event_id in verified:
            if previous is None:
                first = event_id
            else:
                edited[event_id] = frozenset(names)
        previous, names = event_id, set()
    return edited, first


def rank(edited: Iterable[frozenset[str]]) -> tuple[list[str], int]:
    """The files most often edited right before the runs (each run's set of files): at most
    5, and how many more."""
    return policy.rank_files(lessons.in_project(sorted(names)) for names in edited)
