"""The promote handler: a session's window of events -> runs of workflow steps -> procedures.

`prepare` reads and analyses outside any write transaction: it builds the window (window.py:
parses commands, may open rollout files) and reads what applying it needs (reads.py: the
groups' tallies and what advancing them needs, their procedures' newest evidence, the region of
streaks the window may change), so that a write transaction is held for writing: SQLite's one
write lock, a server's row locks. `apply` checks that nothing it read has moved since (reading
again what has), then writes, in the transaction that also completes the task, so a window is
applied entirely or not at all; it still reads the streaks' runs in that region, which include
the window's own, an index range as small as the window. Both backends go this one way.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, Engine, text

from remem.config import Settings
from remem.db.driver import Driver, Rounds, Rows, run, side_by_side
from remem.db.engine import READ_ONLY
from remem.errors import NotFound
from remem.procedures import inputs, instead, journal, known, ledger_rows, policy, siblings, tallies
from remem.procedures.groups import BRANCH, Group, evaluate, send_procedures
from remem.procedures.reads import INSERT_RUN, Reads, after_latest, read_window, streak_span
from remem.procedures.steps import VERIFIED
from remem.procedures.tally import GroupRun, Tally, advance, session_lasts
from remem.procedures.window import (
    LATE_RESOLUTION_S,
    SELECT_UNRESOLVED,
    SELECT_WINDOW,
    Window,
    WindowEvent,
    build_window,
    event_of,
)
from remem.queue.store import ClaimedTask

log = logging.getLogger("remem.worker")


def rules_of(settings: Settings) -> policy.Rules:
    return policy.Rules(
        settings.min_verified_runs, settings.max_age_s, settings.min_distinct_sessions
    )


def prepare(engine: Engine, task: ClaimedTask, settings: Settings) -> Window:
    params: dict[str, Any] = {
        "session_id": task.session_id,
        "cursor": task.cursor_event_id,
        "watermark": task.watermark_event_id,
    }
    with engine.connect().execution_options(**{READ_ONLY: True}) as sa_connection:
        connection = Driver(sa_connection)
        events = tuple(event_of(row) for row in connection.execute(SELECT_WINDOW, params).all())
        late: tuple[WindowEvent, ...] = ()
        if any(event.host == "codex" for event in events):
            params["since"] = max(event.captured_at for event in events) - LATE_RESOLUTION_S
            late = tuple(event_of(row) for row in connection.execute(SELECT_UNRESOLVED, params))
        window = build_window(events, late, settings)
        return replace(window, reads=read_window(connection, window, settings))


RESOLVE_OUTCOME = text("""
UPDATE captured_events SET outcome = :outcome, exit_code = :exit_code,
    exit_code_source = 'rollout', error_excerpt = COALESCE(error_excerpt, :excerpt),
    output_excerpt = COALESCE(output_excerpt, :output)
WHERE id = :id AND outcome = 'unknown'
""")


def apply(
    sa_connection: Connection, window: Window, settings: Settings, now: float
) -> Counter[str]:
    """Record the window's runs, advance the tally of every group it touched, on its branch and
    across the project, and re-decide their procedures: work in proportion to the window, not
    to the groups' histories. Statements go out pipelined (remem/db/driver.py): each stage
    sends every group's statements before it reads any answer, so a window waits on a server
    a few times, not once per group (`server_waits` in what it returns)."""
    connection = Driver(sa_connection)
    with connection.pipelined():
        stats = _apply(connection, window, settings, now)
    if connection.waits:
        stats["server_waits"] += connection.waits
    return stats


def _apply(connection: Driver, window: Window, settings: Settings, now: float) -> Counter[str]:
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
    around = known.Surroundings.of(settings.ignore_commands, _resolved(window))
    sessions: list[dict[str, Any]] = []
    sent = [step.send(connection, now, sessions) for step in steps]
    run(
        side_by_side(
            [
                step.land(connection, write, rules, now, sessions)
                for step, write in zip(steps, sent, strict=True)
            ]
        )
    )
    tallies.send_sessions(connection, sessions)
    # The journals of the branch groups, then every group's procedure, read under the
    # tallies' locks.
    _journals(connection, [step for step in steps if step.group.scope == BRANCH], now, around)
    procedures = send_procedures(connection, [step.group for step in steps])()
    outcomes = run(
        side_by_side([step.evaluate(connection, now, procedures[step.group]) for step in steps])
    )
    for step, outcome in zip(steps, outcomes, strict=True):
        if step.group.scope == BRANCH or outcome != "unpromoted":
            stats[outcome] += 1
    inputs.keep(connection, window.inputs)
    if window.events:
        passed = {
            run.workflow
            for runs in window.steps.values()
            for run in runs
            if run.verdict == VERIFIED
        } | known.passed_reads(around.events + _late_passes(window), settings.ignore_commands)
        touched = {
            (group.project_id, group.branch, group.directory, group.workflow_hash)
            for group in reads.runs
            if group.scope == BRANCH
        }
        session_id = window.events[0].session_id
        known.resolve_open(connection, session_id, passed, touched, now, around)
    # Every run is in a branch group once (and in its project group again).
    branch_runs = (
        run for group, runs in reads.runs.items() if group.scope == BRANCH for run in runs
    )
    held = None
    if window.events and not reads.stored_before:
        held = instead.Held.of(window.events, reads.rows)
    spanned = instead.spans(branch_runs)
    stats.update(instead.derive(connection, spanned, held))
    stats.update(siblings.derive(connection, spanned, held))
    if window.events:
        # After the window's runs are stored: what the session was shown, judged again.
        stats.update(ledger_rows.derive(connection, window.events[0].session_id, now))
    return stats


def _resolved(window: Window) -> tuple[WindowEvent, ...]:
    """The window's own events, as apply leaves them stored: Codex outcomes resolved."""
    events = []
    for event in window.events:
        resolution = window.resolutions.get(event.id)
        if resolution is not None:
            outcome = "success" if resolution.exit_code == 0 else "failure"
            excerpt = event.error_excerpt or resolution.excerpt
            output = event.output_excerpt or resolution.output
            event = event._replace(outcome=outcome, error_excerpt=excerpt, output_excerpt=output)
        events.append(event)
    return tuple(events)


def _late_passes(window: Window) -> tuple[WindowEvent, ...]:
    """The earlier Codex events of the window's session that the rollout says passed (or that
    are stored passed already)."""
    passes = []
    for event in window.late:
        resolution = window.resolutions.get(event.id)
        if resolution is None and event.outcome == "success":
            passes.append(event)
        elif resolution is not None and resolution.exit_code == 0:
            passes.append(event._replace(outcome="success"))
    return tuple(passes)


class _Step:
    """One group's share of a window: its new runs, its tally before and after."""

    def __init__(
        self, group: Group, runs: list[GroupRun], reads: Reads, advanced: Tally | None
    ) -> None:
        self.group, self.runs, self.reads, self.advanced = group, runs, reads, advanced
        self.stored = reads.stored[group]
        # Whether the advanced tally was written over the version prepare read (land()):
        # what prepare read before the window stands only then.
        self.current = False
        self.tally = advanced

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

    def send(
        self, connection: Driver, now: float, sessions: list[dict[str, Any]]
    ) -> tallies.Sent | None:
        if self.advanced is None:
            return None
        lasts = session_lasts(self.runs)
        return tallies.send(
            connection, self.group, self.advanced, self.stored, now, lasts, sessions
        )

    def land(
        self,
        connection: Driver,
        sent: tallies.Sent | None,
        rules: policy.Rules,
        now: float,
        sessions: list[dict[str, Any]],
    ) -> Rounds[None]:
        self.current = sent is not None and tallies.landed(connection, sent, sessions)
        if not self.current:
            self.tally, _lasts = yield from tallies.rederive_locked(
                connection, self.group, rules, now
            )

    def evaluate(self, connection: Driver, now: float, procedure: Any) -> Rounds[str]:
        assert self.tally is not None
        verified = {run.event_id: run for run in self.runs if run.verdict == VERIFIED}
        new_evidence = [
            {"event_id": run.event_id, "verified_at": run.at} for run in verified.values()
        ]
        known = self.reads.evidence.get(self.group) if self.current else None
        if known is not None:
            runs = [(run.at, run.event_id, run.session_id) for run in verified.values()]
            known = known.adding(runs, self.reads.edited)
        return (
            yield from evaluate(
                connection, self.group, self.tally, now, new_evidence, known, procedure
            )
        )


def _journals(
    connection: Driver, steps: list[_Step], now: float, around: known.Surroundings
) -> None:
    """Only the streaks from a group's last success before the window's earliest run to its
    first success after the window's latest run can change: they are re-derived from the runs
    between, read by time. Every group's runs there, lessons and known errors are sent for
    before any is read; the groups then read what fixed their errors side by side, and their
    rows are written together (journal.Writes), in the groups' order."""
    # Each group's region: after its latest verified run, as its tally says, where the
    # window's runs all come after it; else as prepare read it, else sent for now (asked) and
    # read below.
    regions: list[tuple[_Step, dict[str, Any], journal.Region | None, bool]] = []
    asked: dict[Group, Callable[[], journal.Region]] = {}
    for step in steps:
        previous = step.stored.tally if step.current and step.stored else None
        span = streak_span(previous, step.runs)
        if span is None:
            continue
        params = step.group.params()
        appended = after_latest(previous, span)
        found = appended or (step.reads.regions.get(step.group) if step.current else None)
        if found is None:
            asked[step.group] = journal.send_region(connection, params, *span)
        regions.append((step, params, found, appended is not None))
    sent = []
    for step, params, found, after_stored in regions:
        start, end = found if found is not None else asked[step.group]()
        # After the latest stored verified run, the window's own are the only ones.
        verified = _verified(step.runs) if after_stored else None
        tail = journal.send_tail(connection, params, start, end, verified)
        stored_lessons = journal.send_lessons(connection, params)
        stored_known = known.send_stored(connection, params, (start, end))
        sent.append((step, params, (start, end), tail, stored_lessons, stored_known))
    writes = journal.Writes(connection)
    kept = [journal.Kept(connection) for _ in sent]
    run(
        side_by_side(
            [
                _journal(connection, *sent_for, now, around, group_writes)
                for sent_for, group_writes in zip(sent, kept, strict=True)
            ]
        )
    )
    for group_writes in kept:
        group_writes.into(writes)
    writes.send()


def _verified(runs: list[GroupRun]) -> list[journal.Success]:
    """A group's verified runs in a window, as the database holds them once it is applied:
    one per event, its last step's."""
    found = {
        run.event_id: journal.Success(
            run.event_id, run.at, run.session_id, run.branch, run.command, int(run.masked)
        )
        for run in runs
        if run.verdict == VERIFIED
    }
    return list(found.values())


def _journal(
    connection: Driver,
    step: _Step,
    params: dict[str, Any],
    region: journal.Region,
    tail: Callable[[], journal.History],
    stored_lessons: Rows,
    stored_known: Rows,
    now: float,
    around: known.Surroundings,
    writes: journal.Writes,
) -> Rounds[None]:
    history = tail()
    fixes = step.reads.fixes.get(step.group, {})
    yield from journal.rebuild(
        connection, params, history, now, region, fixes, stored_lessons, writes
    )
    yield from known.rederive(
        connection, params, history, now, region, around, stored_known, writes
    )


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
            late = tuple(event_of(row) for row in connection.execute(SELECT_UNRESOLVED, params))
        window = build_window((), late, settings, now)
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


def archive(engine: Engine, procedure_id: int, now: float) -> None:
    """The user's own verdict on a procedure, which new runs never revive."""
    with engine.begin() as connection:
        updated = connection.execute(
            text("UPDATE procedures SET status = :archived, updated_at = :now WHERE id = :id"),
            {"archived": policy.ARCHIVED, "now": now, "id": procedure_id},
        ).rowcount
    if not updated:
        raise NotFound(f"No procedure {procedure_id}: see `remem procedures list --all`.")


SELECT_GROUP_OF = text(
    "SELECT q.project_id, q.scope, q.branch, q.directory, q.workflow, q.workflow_hash, p.root "
    "FROM procedures q JOIN projects p ON p.id = q.project_id WHERE q.id = :id"
)
SELECT_STATUS = text("SELECT status FROM procedures WHERE id = :id")


def unarchive(engine: Engine, procedure_id: int, now: float) -> str:
    """Take back the user's archive: the procedure is decided again from its group's runs,
    those that came while it was archived included (stale until its tally says otherwise).
    Returns its status; one that was not archived is left as it is."""
    with engine.begin() as sa_connection:
        connection = Driver(sa_connection)
        row = connection.execute(SELECT_GROUP_OF, {"id": procedure_id}).first()
        if row is None:
            raise NotFound(f"No procedure {procedure_id}: see `remem procedures list --all`.")
        taken_back = connection.execute(
            text(
                "UPDATE procedures SET status = :stale, updated_at = :now "
                "WHERE id = :id AND status = :archived"
            ),
            {"stale": policy.STALE, "archived": policy.ARCHIVED, "now": now, "id": procedure_id},
        ).rowcount
        group = Group(*row)
        stored = tallies.load(connection, group, lock=True) if taken_back else None
        if stored is not None:
            run(evaluate(connection, group, stored.tally, now))
        return str(connection.execute(SELECT_STATUS, {"id": procedure_id}).scalar_one())


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
                    outcome = run(evaluate(connection, group, tally, now))
                    if outcome != "unpromoted":
                        stats[outcome] += 1
        stats["aged_groups"] += len(aged)
