"""The promote handler: a session's window of events -> runs of workflow steps -> procedures.

`prepare` reads and analyses outside any write transaction: it parses commands, may open
rollout files, and reads the groups' tallies and what advancing them needs, their procedures'
newest evidence and the region of streaks the window may change. `apply` writes, in the
transaction that also completes the task, so a window is applied entirely or not at all; it
still reads the streaks' runs in that region, which include the window's own, an index range
as small as the window.
"""

from __future__ import annotations

import json
import logging
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, text

from remem.capture.hosts import output_excerpt, output_text
from remem.capture.identity import directory_under
from remem.config import Settings
from remem.db.driver import Driver
from remem.db.engine import READ_ONLY
from remem.procedures import evidence, journal, policy, tallies
from remem.procedures.evidence import Evidence
from remem.procedures.groups import BRANCH, Group, evaluate
from remem.procedures.rollout import Resolution, resolve_exit_codes
from remem.procedures.steps import FAILED, UNVERIFIED, VERIFIED, StepRun, classify
from remem.procedures.tally import GroupRun, Tally, advance, session_lasts
from remem.queue.store import ClaimedTask

log = logging.getLogger("remem.worker")


@dataclass(frozen=True)
class WindowEvent:
    id: int
    session_id: int
    project_id: int
    host: str
    kind: str
    command: str | None
    outcome: str | None
    exit_code: int | None
    error_excerpt: str | None
    output_excerpt: str | None
    branch: str | None
    cwd: str
    directory: str | None
    tool_use_id: str | None
    transcript_path: str | None
    event_at: float
    captured_at: float
    files: str | None  # an edit's files (JSON) and the hash of its change
    change_hash: str | None
    root: str = ""


@dataclass(frozen=True)
class Window:
    events: tuple[WindowEvent, ...]
    resolutions: dict[int, Resolution]
    steps: dict[int, list[StepRun]]
    # Earlier Codex events of the session whose outcome the rollout file holds only now.
    late: tuple[WindowEvent, ...] = ()
    # What apply needs from the database, read by prepare outside the write transaction.
    reads: Reads | None = None


@dataclass(frozen=True)
class Reads:
    """A window's runs as rows to insert and as runs of their groups, the groups' stored
    tallies, and for a group that has not qualified the stored verified runs near the new
    ones. A window prepared ahead is caught up before the lock (catch_up); apply checks under
    it that no other writer moved these groups since and reads the window again if one did
    (another worker, maintenance). Each tally is written back guarded by the version read:
    one moved after that check (PostgreSQL's writers overlap) is derived again from every run,
    under the group's lock."""

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
    # the window's runs to its first success after them (journal.region).
    regions: dict[Group, journal.Region]


def rules_of(settings: Settings) -> policy.Rules:
    return policy.Rules(
        settings.min_verified_runs, settings.max_age_s, settings.min_distinct_sessions
    )


_STORED = [name for name in WindowEvent.__dataclass_fields__ if name != "root"]
# The stored payload only when an old command event has no output column to read instead.
_COLUMNS = ", ".join(f"e.{name}" for name in _STORED) + (
    ", p.root, CASE WHEN e.output_excerpt IS NULL AND e.kind = 'command' THEN e.payload END"
)
SELECT_WINDOW = text(
    f"SELECT {_COLUMNS} "
    "FROM captured_events e JOIN projects p ON p.id = e.project_id "
    "WHERE e.session_id = :session_id AND e.id > :cursor AND e.id <= :watermark ORDER BY e.id"
)


# A Codex rollout may write a command's end after the hook fired: its outcome is looked for
# again on the session's later windows and by maintenance, for this long.
LATE_RESOLUTION_S = 86_400.0

SELECT_UNRESOLVED = text(
    f"SELECT {_COLUMNS} "
    "FROM captured_events e JOIN projects p ON p.id = e.project_id "
    "WHERE e.session_id = :session_id AND e.id <= :cursor AND e.host = 'codex' "
    "AND e.kind = 'command' AND e.outcome = 'unknown' AND e.captured_at >= :since ORDER BY e.id"
)


def prepare(engine: Engine, task: ClaimedTask, settings: Settings) -> Window:
    params: dict[str, Any] = {
        "session_id": task.session_id,
        "cursor": task.cursor_event_id,
        "watermark": task.watermark_event_id,
    }
    with engine.connect().execution_options(**{READ_ONLY: True}) as sa_connection:
        connection = Driver(sa_connection)
        events = tuple(_event(row) for row in connection.execute(SELECT_WINDOW, params).all())
        late: tuple[WindowEvent, ...] = ()
        if any(event.host == "codex" for event in events):
            params["since"] = max(event.captured_at for event in events) - LATE_RESOLUTION_S
            late = tuple(_event(row) for row in connection.execute(SELECT_UNRESOLVED, params))
        window = build_window(events, late, settings)
        return replace(window, reads=read_window(connection, window, settings))


def catch_up(
    engine: Engine, window: Window, settings: Settings, since: Sequence[Window | None]
) -> Window:
    """A window prepared ahead, before the windows applied `since` (None for one whose groups
    are not known here): when one of them moved its groups, its reads are taken again here,
    outside the write transaction, so that apply reads again under the lock only what a
    writer elsewhere moved meanwhile."""
    if window.reads is None:
        return window
    groups = window.reads.stored.keys()
    written = [other.reads.runs if other and other.reads else None for other in since]
    if all(runs is not None and groups.isdisjoint(runs) for runs in written):
        return window  # none of them wrote its groups: apply's own check is enough
    with engine.connect().execution_options(**{READ_ONLY: True}) as sa_connection:
        connection = Driver(sa_connection)
        if tallies.unchanged(connection, window.reads.stored):
            return window
        return replace(window, reads=read_window(connection, window, settings))


def build_window(
    events: tuple[WindowEvent, ...], late: tuple[WindowEvent, ...], settings: Settings
) -> Window:
    """Resolve Codex outcomes and classify every run; `late` events count only once
    resolved."""
    resolutions = _resolve_codex(events + late)
    steps = {}
    for event in events + late:
        resolution = resolutions.get(event.id)
        if resolution is not None:
            outcome = "success" if resolution.exit_code == 0 else "failure"
            event = replace(event, outcome=outcome, output_excerpt=resolution.output)
        runs = _classify(event, settings)
        if runs:
            steps[event.id] = runs
    resolved_late = tuple(event for event in late if event.id in resolutions)
    return Window(events, resolutions, steps, resolved_late)


def _event(row: Any) -> WindowEvent:
    """A window event; events stored before directories and outputs were recorded get them
    from their cwd and their stored payload."""
    payload = row[-1]
    event = WindowEvent(*row[:-1])  # the stored columns, then the project's root
    if event.directory is None:
        event = replace(event, directory=directory_under(event.cwd, event.root))
    if event.output_excerpt is None and payload and event.kind == "command":
        try:
            found = output_text(event.host, json.loads(payload))
        except ValueError:
            found = None
        event = replace(event, output_excerpt=output_excerpt(found))
    return event


def _classify(event: WindowEvent, settings: Settings) -> list[StepRun]:
    if event.kind != "command" or event.outcome not in ("success", "failure"):
        return []
    if not event.command:
        return []
    output = event.output_excerpt or event.error_excerpt
    try:
        return classify(
            event.command,
            event.outcome == "success",
            output,
            event.cwd,
            event.directory or ".",
            settings.ignore_commands,
        )
    except Exception:  # one command no rule can read must not hold up its session's others
        log.exception(
            "could not analyse event %s; it counts as no run",
            event.id,
            extra={"action": "analyse_command", "event_id": event.id},
        )
        return []


def _resolve_codex(events: tuple[WindowEvent, ...]) -> dict[int, Resolution]:
    wanted: dict[str, dict[str, int]] = {}
    for event in events:
        path, call_id = event.transcript_path, event.tool_use_id
        if event.host == "codex" and event.outcome == "unknown" and path and call_id:
            wanted.setdefault(path, {})[call_id] = event.id
    resolved: dict[int, Resolution] = {}
    for path, by_call in wanted.items():
        for call_id, resolution in resolve_exit_codes(path, set(by_call)).items():
            resolved[by_call[call_id]] = resolution
    return resolved


RESOLVE_OUTCOME = text("""
UPDATE captured_events SET outcome = :outcome, exit_code = :exit_code,
    exit_code_source = 'rollout', error_excerpt = COALESCE(error_excerpt, :excerpt),
    output_excerpt = COALESCE(output_excerpt, :output)
WHERE id = :id AND outcome = 'unknown'
""")

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
    f"INSERT INTO attempts ({_RUN_COLUMNS}, exit_code, error_excerpt, salient_error, failed_at, "
    f"files, change_hash) VALUES ({_RUN_VALUES}, :exit_code, :error_excerpt, :salient_error, "
    ":at, :files, :change_hash) ON CONFLICT (event_id, step) DO NOTHING"
)
# A run's verdict -> the table its row goes in, in the order they are written.
INSERT_RUN = {VERIFIED: INSERT_VERIFICATION, FAILED: INSERT_ATTEMPT, UNVERIFIED: INSERT_UNVERIFIED}


def read_window(connection: Driver, window: Window, settings: Settings) -> Reads:
    """Everything apply reads, read once (prepare calls it outside the write transaction)."""
    batch = _Batch(connection, window.events)
    found: dict[Group, list[GroupRun]] = {}
    for event in window.events + window.late:
        resolution = window.resolutions.get(event.id)
        for run in window.steps.get(event.id, ()):
            group, group_run = _record(batch, event, run, resolution)
            found.setdefault(group, []).append(group_run)
    # A window applied again (its runs are stored) counts nothing twice.
    stored = _stored_events(connection, {r.event_id for runs in found.values() for r in runs})
    runs = {g: [r for r in rs if r.event_id not in stored] for g, rs in sorted_groups(found)}
    projects: dict[Group, list[GroupRun]] = {}
    for group, group_runs in runs.items():
        projects.setdefault(group.project_wide(), []).extend(group_runs)
    runs.update(sorted_groups(projects))
    tallies_found = tallies.load_many(connection, runs)
    max_age_s = rules_of(settings).max_age_s
    nearby = {
        group: tallies.nearby(connection, group, runs[group], max_age_s)
        for group, found_tally in tallies_found.items()
        if found_tally is not None and _may_qualify(group, found_tally.tally, runs[group])
    }
    sessions = {
        group: tallies.known_sessions(connection, tallies_found[group], group_runs)
        for group, group_runs in runs.items()
    }
    found_evidence, edited = _evidence(connection, window, runs)
    regions = {}
    for group, group_runs in runs.items():
        stored_tally = tallies_found[group]
        span = _span(stored_tally.tally if stored_tally else None, group_runs)
        if group.scope == BRANCH and span is not None:
            regions[group] = journal.region(connection, group.params(), *span)
    return Reads(
        batch.rows,
        runs,
        tallies_found,
        nearby,
        sessions,
        batch.fixes,
        found_evidence,
        edited,
        regions,
    )


def _evidence(
    connection: Driver, window: Window, runs: dict[Group, list[GroupRun]]
) -> tuple[dict[Group, Evidence], dict[int, frozenset[str]]]:
    """The evidence of the groups' procedures before the window, and the files edited before
    its verified runs. A window with late events has none: its runs come between stored runs
    and the edits before them (evidence.read leaves out the stored runs a late run may yet
    precede)."""
    if window.late or not window.events:
        return {}, {}
    verified = {
        run.event_id
        for group_runs in runs.values()
        for run in group_runs
        if run.verdict == VERIFIED
    }
    found = {}
    for group, group_runs in runs.items():
        with_files = any(run.verdict == VERIFIED for run in group_runs)
        known = evidence.read(connection, group.key(), with_files)
        if known is not None:
            found[group] = known
    if not verified:
        return found, {}
    # A Codex call of the session that maintenance resolves meanwhile comes with the window's
    # own calls, resolved as well then: their runs are stored by then and the window adds none.
    events = ((event.id, event.files) for event in window.events)
    session_id = window.events[0].session_id
    edited = evidence.files_in_window(connection, session_id, events, window.steps, verified)
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


def apply(
    sa_connection: Connection, window: Window, settings: Settings, now: float
) -> Counter[str]:
    """Record the window's runs, advance the tally of every group it touched, on its branch and
    across the project, and re-decide their procedures: work in proportion to the window, not
    to the groups' histories."""
    connection = Driver(sa_connection)
    stats: Counter[str] = Counter(events=len(window.events))
    reads = window.reads
    if reads is None:
        reads = read_window(connection, window, settings)
    elif not tallies.unchanged(connection, reads.stored):
        # Another writer moved one of these groups after prepare read them (another worker, or
        # maintenance, which may have stored some of these runs): read again, reads as small
        # as the window, rather than derive the tallies from every run.
        reads = read_window(connection, window, settings)
        stats["groups_read_again"] += 1
    for event in window.events + window.late:
        resolution = window.resolutions.get(event.id)
        if resolution is not None:
            connection.execute(
                RESOLVE_OUTCOME,
                {
                    "id": event.id,
                    "outcome": "success" if resolution.exit_code == 0 else "failure",
                    "exit_code": resolution.exit_code,
                    "excerpt": resolution.excerpt,
                    "output": resolution.output,
                },
            )
    rules = rules_of(settings)
    # Tallies advance from what was stored before the window: aged before its runs go in.
    steps = [
        _Step.advance(connection, group, runs, reads, rules, now)
        for group, runs in reads.runs.items()
    ]
    for verdict, rows in reads.rows.items():
        if rows:
            connection.execute(INSERT_RUN[verdict], rows)
    for step in steps:
        outcome = step.write(connection, rules, now)
        if step.group.scope == BRANCH or outcome != "unpromoted":
            stats[outcome] += 1
    return stats


class _Step:
    """One group's share of a window: its new runs, its tally before and after."""

    def __init__(
        self, group: Group, runs: list[GroupRun], reads: Reads, advanced: Tally | None
    ) -> None:
        self.group, self.runs, self.reads, self.advanced = group, runs, reads, advanced
        self.stored = reads.stored[group]

    @classmethod
    def advance(
        cls,
        connection: Driver,
        group: Group,
        runs: list[GroupRun],
        reads: Reads,
        rules: policy.Rules,
        now: float,
    ) -> _Step:
        stored = reads.stored[group]
        cutoff = now - rules.max_age_s
        if stored is None or cutoff < stored.tally.cutoff:
            # Derived from every run once they are stored.
            return cls(group, runs, reads, None)
        # Read only when a run crossed the cutoff since: a range of the index on time.
        aging = tallies.aging(connection, group, stored, cutoff)
        nearby = reads.nearby.get(group, ())
        known = reads.sessions.get(group, {})
        advanced = advance(
            stored.tally, runs, now, rules, aging, nearby, group.min_branches(), known
        )
        return cls(group, runs, reads, advanced)

    def write(self, connection: Driver, rules: policy.Rules, now: float) -> str:
        group = self.group
        tally = self.advanced
        lasts = session_lasts(self.runs)
        current = tally is not None and tallies.write(
            connection, group, tally, self.stored, now, lasts
        )
        if tally is None or not current:
            tally, _lasts = tallies.rederive_locked(connection, group, rules, now)
        # What prepare read before the window stands only when no other window moved the
        # group meanwhile: its tally was written over the version prepare read.
        if group.scope == BRANCH:
            previous = self.stored.tally if current and self.stored else None
            region = self.reads.regions.get(group) if current else None
            self._journal(connection, now, previous, region)
        verified = {run.event_id: run for run in self.runs if run.verdict == VERIFIED}
        new_evidence = [
            {"event_id": run.event_id, "verified_at": run.at} for run in verified.values()
        ]
        known = self.reads.evidence.get(group) if current else None
        if known is not None:
            runs = [(run.at, run.event_id, run.session_id) for run in verified.values()]
            known = known.adding(runs, self.reads.edited)
        return evaluate(connection, group, tally, now, new_evidence, known)

    def _journal(
        self,
        connection: Driver,
        now: float,
        previous: Tally | None,
        region: journal.Region | None,
    ) -> None:
        """Only the streaks from the group's last success before the window's earliest run to
        its first success after the window's latest run can change: they are re-derived from
        the runs between, read by time."""
        span = _span(previous, self.runs)
        if span is None:
            return
        params = self.group.params()
        start, end = region or journal.region(connection, params, *span)
        tail = journal.load_tail(connection, params, start, end)
        fixes = self.reads.fixes.get(self.group, {})
        journal.rebuild(connection, params, tail, now, region=(start, end), fixes=fixes)


def _span(previous: Tally | None, runs: list[GroupRun]) -> tuple[journal.Key, journal.Key] | None:
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


SELECT_STORED_EVENTS = text(
    "SELECT event_id FROM verifications WHERE event_id IN :ids UNION "
    "SELECT event_id FROM attempts WHERE event_id IN :ids UNION "
    "SELECT event_id FROM unverified_runs WHERE event_id IN :ids"
).bindparams(bindparam("ids", expanding=True))


def _stored_events(connection: Driver, event_ids: set[int]) -> set[int]:
    if not event_ids:
        return set()
    return set(connection.execute(SELECT_STORED_EVENTS, {"ids": sorted(event_ids)}).scalars())


class _Batch:
    """Runs are written many rows to a statement. An attempt's journal needs the edits since
    the session's previous run of its workflow: a run earlier in this window is remembered
    here, with the edits between read from the window's own events; one before the window is
    looked up in what is already stored."""

    def __init__(self, connection: Driver, events: tuple[WindowEvent, ...]) -> None:
        self.connection = connection
        self.rows: dict[str, list[dict[str, Any]]] = {verdict: [] for verdict in INSERT_RUN}
        self.last_run: dict[tuple[Group, int], tuple[int, str]] = {}  # event id, verdict
        self.fixes: dict[Group, dict[int, list[str]]] = {}
        # The window is every event of its session in a range of ids, in order.
        self.ids = [event.id for event in events]
        self.edits = [
            (event.files, event.change_hash) if event.kind == "edit" else None for event in events
        ]

    def add(self, verdict: str, params: dict[str, Any]) -> None:
        self.rows[verdict].append(params)

    def edits_between(
        self, group: Group, session_id: int, previous: int | None, event_id: int
    ) -> tuple[list[str], str | None]:
        ids = self.ids
        if previous is not None and ids and ids[0] <= previous < event_id <= ids[-1]:
            start, end = bisect_right(ids, previous), bisect_left(ids, event_id)
            return journal.edits_from([edit for edit in self.edits[start:end] if edit])
        return journal.edits_before(self.connection, group.params(), session_id, event_id, previous)


def _record(
    batch: _Batch, event: WindowEvent, run: StepRun, resolution: Resolution | None
) -> tuple[Group, GroupRun]:
    group = Group(
        event.project_id,
        BRANCH,
        event.branch or "",
        run.directory,
        run.workflow,
        run.workflow_hash,
        event.root,
    )
    params: dict[str, Any] = {
        **group.params(),
        "event_id": event.id,
        "step": run.step,
        "workflow": run.workflow,
        "command": run.command,
        "masked": int(run.masked),
        "session_id": event.session_id,
        "host": event.host,
        "at": event.event_at,
    }
    group_run = GroupRun(
        event.id,
        event.session_id,
        event.event_at,
        run.verdict,
        group.branch,
        run.command,
        run.masked,
    )
    if run.verdict == UNVERIFIED:
        batch.add(UNVERIFIED, params)
        return group, group_run
    last = batch.last_run.get((group, event.session_id))
    batch.last_run[(group, event.session_id)] = (event.id, run.verdict)
    previous = last[0] if last else None
    if run.verdict == VERIFIED:
        batch.add(VERIFIED, params)
        # It may close a streak: its lesson's fix files. A late event comes after the window's
        # own, whose runs are later: its previous run is for the journal to find.
        if last is None or (last[1] == FAILED and last[0] < event.id):
            files, _hash = batch.edits_between(group, event.session_id, previous, event.id)
            batch.fixes.setdefault(group, {})[event.id] = files
        return group, group_run
    files, change_hash = batch.edits_between(group, event.session_id, previous, event.id)
    params.update(
        exit_code=resolution.exit_code if resolution else event.exit_code,
        error_excerpt=event.error_excerpt or (resolution.excerpt if resolution else None),
        salient_error=run.salient_error,
        files=json.dumps(files) if files else None,
        change_hash=change_hash,
    )
    batch.add(FAILED, params)
    return group, group_run


SELECT_UNRESOLVED_SESSIONS = text(
    "SELECT DISTINCT session_id FROM captured_events WHERE host = 'codex' AND kind = 'command' "
    "AND outcome = 'unknown' AND captured_at >= :since"
)


def resolve_late(engine: Engine, settings: Settings, now: float) -> Counter[str]:
    """Maintenance: Codex events of the last day whose rollout now holds their end."""
    stats: Counter[str] = Counter()
    since = now - LATE_RESOLUTION_S
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        sessions = [
            row[0] for row in connection.execute(SELECT_UNRESOLVED_SESSIONS, {"since": since})
        ]
    for session_id in sessions:
        params = {"session_id": session_id, "cursor": 2**62, "since": since}
        with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
            late = tuple(_event(row) for row in connection.execute(SELECT_UNRESOLVED, params))
        window = build_window((), late, settings)
        if not window.late:
            continue
        with engine.begin() as connection:
            stats.update(apply(connection, window, settings, now))
        stats["resolved_late"] += len(window.late)
    return stats


AGING_BATCH = 16
SELECT_AGED = text(
    "SELECT g.id, g.project_id, g.scope, g.branch, g.directory, g.workflow, g.workflow_hash, "
    "p.root FROM group_states g JOIN projects p ON p.id = g.project_id "
    "WHERE g.oldest_fresh_at < :cutoff AND g.id > :after ORDER BY g.id LIMIT :n"
)


def mark_stale(
    engine: Engine, settings: Settings, now: float, batch_size: int = AGING_BATCH
) -> Counter[str]:
    """Maintenance: the groups whose oldest fresh run aged out of max_age (found by the index
    on it) lose it from their tally, and their procedures are re-decided: lower runs and
    confidence, stale with no fresh run. Each batch is read and computed outside the write
    transaction, which only writes what a newer tally did not overtake."""
    stats: Counter[str] = Counter()
    rules = rules_of(settings)
    after = 0
    while True:
        with engine.connect().execution_options(**{READ_ONLY: True}) as sa_connection:
            connection = Driver(sa_connection)
            params = {"cutoff": now - rules.max_age_s, "after": after, "n": batch_size}
            rows = connection.execute(SELECT_AGED, params).all()
            aged = []
            for row in rows:
                group = Group(*row[1:])
                stored = tallies.load(connection, group)
                if stored is None or now - rules.max_age_s < stored.tally.cutoff:
                    continue
                aging = tallies.aging(connection, group, stored, now - rules.max_age_s)
                tally = advance(stored.tally, [], now, rules, aging, (), group.min_branches())
                aged.append((group, stored, tally))
        if not rows:
            return stats
        after = rows[-1].id
        # Written in the order windows write groups (read_window): on PostgreSQL, where
        # writers run side by side, each holds its groups' locks in one order, so none waits
        # for another that waits for it.
        aged.sort(key=lambda found: (found[0].scope != BRANCH, found[0].sort_key()))
        with engine.begin() as sa_connection:
            connection = Driver(sa_connection)
            for group, stored, tally in aged:
                if tallies.write(connection, group, tally, stored, now, {}):
                    outcome = evaluate(connection, group, tally, now)
                    if outcome != "unpromoted":
                        stats[outcome] += 1
        stats["aged_groups"] += len(aged)
