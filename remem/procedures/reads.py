"""What applying a window needs from the database, read by its prepare outside the write
transaction: its runs as rows and as runs of their groups, the groups' tallies, their
procedures' newest evidence and the files edited before it, and the region of streaks the
window may change.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

from remem.config import Settings
from remem.db.driver import Driver, with_ids
from remem.procedures import evidence, journal, policy, tallies
from remem.procedures.evidence import Evidence
from remem.procedures.groups import BRANCH, Group, send_procedures
from remem.procedures.rollout import Resolution
from remem.procedures.steps import FAILED, UNVERIFIED, VERIFIED, StepRun
from remem.procedures.tally import GroupRun, Tally
from remem.procedures.window import Window, WindowEvent
from remem.shell.arguments import without_messages


@dataclass(frozen=True)
class Reads:
    """A window's runs as rows to insert and as runs of their groups, the groups' stored
    tallies, and for a group that has not qualified the stored verified runs near the new
    ones. Apply checks under the write lock that no other writer moved these groups since and
    reads the window again if one did (another worker, maintenance). Each tally is written back
    guarded by the version read: one moved after that check (PostgreSQL's writers overlap) is
    derived again from every run, under the group's lock."""

    rows: dict[str, list[dict[str, Any]]]  # verdict -> the rows of its table (INSERT_RUN)
    runs: dict[Group, list[GroupRun]]  # branch groups, then project groups
    stored: dict[Group, tallies.Stored | None]
    nearby: dict[Group, list[policy.Run]]
    sessions: dict[Group, dict[int, float]]  # the stored latest run of the window's sessions
    # For a verified run that may close a failure streak (the first of its session's runs of
    # the group in the window, or the first after a failure): the files edited since that
    # session's run of the group before it. A lesson's fix files, read here once.
    fixes: dict[Group, dict[int, list[str]]]
    # The procedures of these groups as they stood before the window (none when the window
    # holds late events), and the files edited right before each of its verified runs.
    evidence: dict[Group, Evidence]
    edited: dict[int, frozenset[str]]
    # A branch group's region of streaks the window may change: from its last success before
    # the window's runs to its first success after them (journal.send_region).
    regions: dict[Group, journal.Region]
    # Whether some of the window's events had runs stored before it (a window applied again):
    # then what the database holds of them may not be `rows`.
    stored_before: bool = False


_RUN_COLUMNS = (
    "event_id, step, project_id, branch, directory, workflow, workflow_hash, command, masked, "
    "session_id, host"
)
_RUN_VALUES = (
    ":event_id, :step, :project_id, :branch, :directory, :workflow, :workflow_hash, :command, "
    ":masked, :session_id, :host"
)
INSERT_VERIFICATION = text(
    f"INSERT INTO verifications ({_RUN_COLUMNS}, verified_at) VALUES ({_RUN_VALUES}, :at) "
    "ON CONFLICT (event_id, step) DO NOTHING"
)
INSERT_UNVERIFIED = text(
    f"INSERT INTO unverified_runs ({_RUN_COLUMNS}, ran_at) VALUES ({_RUN_VALUES}, :at) "
    "ON CONFLICT (event_id, step) DO NOTHING"
)
INSERT_ATTEMPT = text(
    f"INSERT INTO attempts ({_RUN_COLUMNS}, exit_code, error_excerpt, salient_error, "
    f"failed_at, files, change_hash, cannot_run) VALUES ({_RUN_VALUES}, :exit_code, "
    ":error_excerpt, :salient_error, :at, :files, :change_hash, :cannot_run) "
    "ON CONFLICT (event_id, step) DO NOTHING"
)
# A run's verdict -> the table its row goes in, in the order they are written.
INSERT_RUN = {VERIFIED: INSERT_VERIFICATION, FAILED: INSERT_ATTEMPT, UNVERIFIED: INSERT_UNVERIFIED}


def read_window(connection: Driver, window: Window, settings: Settings) -> Reads:
    """Everything apply reads, read once (prepare calls it outside the write transaction).
    Each stage sends its statements for every group before it reads any (remem/db/driver.py:
    one wait per stage on a server)."""
    with connection.pipelined():
        return _read_window(connection, window, settings)


def _read_window(connection: Driver, window: Window, settings: Settings) -> Reads:
    batch = _Batch(connection, window.events)
    for event in window.events + window.late:
        resolution = window.resolutions.get(event.id)
        for run in window.steps.get(event.id, ()):
            _record(batch, event, run, resolution)
    found = {group: group_runs for group, _params, group_runs in batch.groups.values()}
    # The first round: the edits the window does not tell, which of its events were stored
    # (a window applied again counts nothing twice), and its groups' tallies and procedures.
    batch.send()
    stored_sent = _send_stored_events(connection, {r.event_id for rs in found.values() for r in rs})
    # In the order of `runs` below: branch groups, then project groups.
    projects_of = sorted({group.project_wide() for group in found}, key=Group.sort_key)
    groups = [group for group, _runs in sorted_groups(found)] + projects_of
    tallies_sent = tallies.send_many(connection, groups)
    procedures = send_procedures(connection, groups) if _has_evidence(window) else dict
    batch.land()
    stored = stored_sent()
    runs = {g: [r for r in rs if r.event_id not in stored] for g, rs in sorted_groups(found)}
    projects: dict[Group, list[GroupRun]] = {}
    for group, group_runs in runs.items():
        projects.setdefault(group.project_wide(), []).extend(group_runs)
    runs.update(sorted_groups(projects))
    tallies_found = tallies_sent()
    max_age_s = settings.max_age_s
    nearby = {
        group: tallies.nearby(connection, group, runs[group], max_age_s)
        for group, found_tally in tallies_found.items()
        if found_tally is not None and _may_qualify(group, found_tally.tally, runs[group])
    }
    sessions = tallies.known_sessions(connection, tallies_found, runs)
    regions = {}
    for group, group_runs in runs.items():
        if group.scope != BRANCH:
            continue  # a project group keeps no journal
        stored_tally = tallies_found[group]
        previous = stored_tally.tally if stored_tally else None
        span = streak_span(previous, group_runs)
        if span is not None and after_latest(previous, span) is None:
            regions[group] = journal.send_region(connection, group.params(), *span)
    found_evidence, edited = _evidence(connection, window, runs, procedures())
    return Reads(
        batch.rows,
        runs,
        tallies_found,
        {group: read() for group, read in nearby.items()},
        sessions(),
        batch.fixes,
        found_evidence,
        edited,
        {group: read() for group, read in regions.items()},
        bool(stored),
    )


def _has_evidence(window: Window) -> bool:
    """Whether the window reads its procedures' evidence before it (_evidence). A window with
    late events does not: its runs come between stored runs and the edits before them
    (evidence.read leaves out the stored runs a late run may yet precede)."""
    return bool(window.events) and not window.late


def _evidence(
    connection: Driver,
    window: Window,
    runs: dict[Group, list[GroupRun]],
    procedure_rows: dict[Group, Any],
) -> tuple[dict[Group, Evidence], dict[int, frozenset[str]]]:
    """The evidence of the groups' procedures (their rows: send_procedures) before the
    window, and the files edited before its verified runs; none without _has_evidence."""
    if not _has_evidence(window):
        return {}, {}
    # As apply adds them to the procedures' evidence (Evidence.adding).
    verified_by_group = {
        group: {
            (run.at, run.event_id, run.session_id) for run in group_runs if run.verdict == VERIFIED
        }
        for group, group_runs in runs.items()
    }
    procedures = {group: row.id for group, row in procedure_rows.items() if row is not None}
    wanted = [(procedure_id, verified_by_group[g]) for g, procedure_id in procedures.items()]
    verified = {event_id for g in procedures for _at, event_id, _session in verified_by_group[g]}
    # A Codex call of the session that maintenance resolves meanwhile comes with the window's
    # own calls, resolved as well then: their runs are stored by then and the window adds none.
    events = ((event.id, event.files) for event in window.events)
    edited, first = (
        evidence.files_in_window(events, window.steps, verified) if verified else ({}, None)
    )
    also = [] if first is None else [(window.events[0].session_id, first)]
    read, edited_first = evidence.read_many(connection, wanted, also)
    found = dict(zip(procedures, read, strict=True))
    if not verified:
        return found, {}  # no procedure gains a run here
    edited.update(edited_first)
    return found, edited


def sorted_groups(found: dict[Group, list[GroupRun]]) -> list[tuple[Group, list[GroupRun]]]:
    return sorted(found.items(), key=lambda item: item[0].sort_key())


def _may_qualify(group: Group, tally: Tally, runs: list[GroupRun]) -> bool:
    """Whether the window's runs may qualify a group that has not qualified: they must hold a
    verified run, and a project group runs on two named branches."""
    if tally.qualified or not any(run.verdict == VERIFIED for run in runs):
        return False
    branches = {*tally.all_branches, *(run.branch for run in runs if run.branch)}
    return group.min_branches() == 1 or len(branches) >= group.min_branches()


def streak_span(
    previous: Tally | None, runs: list[GroupRun]
) -> tuple[journal.Key, journal.Key] | None:
    """The earliest and latest of the runs whose streaks may change, given the group's tally
    before them (None when unknown); None when none can: no open streak, no failure, no run
    inside a closed streak."""
    counted = [run for run in runs if run.verdict != UNVERIFIED]
    if not counted:
        return None
    first = min((run.at, run.event_id) for run in counted)
    if (
        previous is not None
        and not previous.failures
        and all(run.verdict != FAILED for run in counted)
        and (previous.last is None or first > previous.last)
    ):
        return None
    return first, max((run.at, run.event_id) for run in counted)


def after_latest(
    previous: Tally | None, span: tuple[journal.Key, journal.Key]
) -> journal.Region | None:
    """The region of runs from span's first to its last (journal.send_region) when they all
    come after the group's latest verified run, which its tally `previous` holds, as a
    window's new runs mostly do: from there, with no end, and no verified run in it but
    theirs. None when they do not, or the tally is not known: the region is read."""
    if previous is None:
        return None
    latest = previous.last
    if latest is not None and not latest < span[0]:
        return None
    return (latest if latest is not None else journal.BEFORE_ALL, None)


SELECT_STORED_EVENTS = with_ids(
    "SELECT event_id FROM verifications WHERE event_id IN :ids UNION "
    "SELECT event_id FROM attempts WHERE event_id IN :ids UNION "
    "SELECT event_id FROM unverified_runs WHERE event_id IN :ids"
)


def _send_stored_events(connection: Driver, event_ids: set[int]) -> Callable[[], set[int]]:
    """Which of the events have runs stored: sent, read once called."""
    if not event_ids:
        return set
    sent = connection.execute(SELECT_STORED_EVENTS, {"ids": sorted(event_ids)})
    return lambda: set(sent.scalars())


class _Batch:
    """Runs are written many rows to a statement. An attempt's journal needs the edits since
    the session's previous run of its workflow: a run earlier in this window is remembered
    here, with the edits between read from the window's own events; one before the window is
    looked up in what is already stored."""

    def __init__(self, connection: Driver, events: tuple[WindowEvent, ...]) -> None:
        self.connection = connection
        self.rows: dict[str, list[dict[str, Any]]] = {verdict: [] for verdict in INSERT_RUN}
        # A branch group's runs in the window, found by a tuple of its key (the group is made
        # once, its root that of its project): the group, its parameters and its runs.
        self.groups: dict[tuple[Any, ...], tuple[Group, dict[str, Any], list[GroupRun]]] = {}
        # (group's tuple, session) -> the event id and verdict of the last run before.
        self.last_run: dict[tuple[tuple[Any, ...], int], tuple[int, str]] = {}
        self.fixes: dict[Group, dict[int, list[str]]] = {}
        # The window is every event of its session in a range of ids, in order.
        self.ids = [event.id for event in events]
        self.edits = [
            (event.files, event.change_hash) if event.kind == "edit" else None for event in events
        ]
        # What is filled in once the edits asked of the database are read (land()).
        self.later: list[Callable[[], None]] = []
        self.asked: list[tuple[dict[str, Any], int, int, int | None]] = []
        self.sent: Callable[[], list[tuple[list[str], str | None]]] = list
        self.answers: list[tuple[list[str], str | None]] = []

    def add(self, verdict: str, params: dict[str, Any]) -> None:
        self.rows[verdict].append(params)

    def edits_between(
        self, group: Group, session_id: int, previous: int | None, event_id: int
    ) -> Callable[[], tuple[list[str], str | None]]:
        """The files and change hash of the edits between, now or once called."""
        ids = self.ids
        if previous is not None and ids and ids[0] <= previous < event_id <= ids[-1]:
            start, end = bisect_right(ids, previous), bisect_left(ids, event_id)
            edits = journal.edits_from([edit for edit in self.edits[start:end] if edit])
            return lambda: edits
        self.asked.append((group.params(), session_id, event_id, previous))
        n = len(self.asked) - 1
        return lambda: self.answers[n]

    def send(self) -> None:
        """Ask the database for the edits the window's events do not tell: one statement."""
        self.sent = journal.send_edits_many(self.connection, self.asked)

    def land(self) -> None:
        self.answers = self.sent()
        for fill in self.later:
            fill()
        self.later = []


def _record(batch: _Batch, event: WindowEvent, run: StepRun, resolution: Resolution | None) -> None:
    """A run as the row of its table and as a run of its branch group (batch.groups)."""
    branch = event.branch or ""
    key = (event.project_id, branch, run.directory, run.workflow, run.workflow_hash)
    known = batch.groups.get(key)
    if known is None:
        group = Group(
            event.project_id,
            BRANCH,
            branch,
            run.directory,
            run.workflow,
            run.workflow_hash,
            event.root,
        )
        known = batch.groups[key] = (group, group.params(), [])
    group, group_params, group_runs = known
    params: dict[str, Any] = {
        **group_params,
        "event_id": event.id,
        "step": run.step,
        "workflow": run.workflow,
        "command": run.command,
        "masked": int(run.masked),
        "session_id": event.session_id,
        "host": event.host,
        "at": event.event_at,
    }
    group_runs.append(
        GroupRun(
            event.id,
            event.session_id,
            event.event_at,
            run.verdict,
            branch,
            run.command,
            run.masked,
            run.cannot_run,
        )
    )
    if run.verdict == UNVERIFIED:
        batch.add(UNVERIFIED, params)
        return
    last = batch.last_run.get((key, event.session_id))
    batch.last_run[(key, event.session_id)] = (event.id, run.verdict)
    previous = last[0] if last else None
    if run.verdict == VERIFIED:
        batch.add(VERIFIED, params)
        # It may close a streak: its lesson's fix files. A late event comes after the window's
        # own, whose runs are later: its previous run is for the journal to find.
        if last is None or (last[1] == FAILED and last[0] < event.id):
            edits = batch.edits_between(group, event.session_id, previous, event.id)
            fixes = batch.fixes.setdefault(group, {})
            batch.later.append(lambda: fixes.__setitem__(event.id, edits()[0]))
        return
    edits = batch.edits_between(group, event.session_id, previous, event.id)
    params.update(
        exit_code=resolution.exit_code if resolution else event.exit_code,
        error_excerpt=without_messages(
            event.error_excerpt or (resolution.excerpt if resolution else None), run.messages
        ),
        salient_error=run.salient_error,
        cannot_run=int(run.cannot_run),
    )

    def fill() -> None:
        files, change_hash = edits()
        params.update(files=json.dumps(files) if files else None, change_hash=change_hash)

    batch.later.append(fill)
    batch.add(FAILED, params)
