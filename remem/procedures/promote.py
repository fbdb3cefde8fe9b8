"""The promote handler: a session's window of events -> runs of workflow steps -> procedures.

`prepare` reads and analyses (outside any write transaction: it parses commands and may open
rollout files); `apply` writes, in the transaction that also completes the task, so a window is
applied entirely or not at all.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection, Engine, text

from remem.capture.hosts import output_excerpt, output_text
from remem.capture.identity import directory_under
from remem.config import Settings
from remem.db.engine import READ_ONLY
from remem.procedures import journal, policy
from remem.procedures.groups import BRANCH, Group, evaluate
from remem.procedures.rollout import Resolution, resolve_exit_codes
from remem.procedures.steps import UNVERIFIED, VERIFIED, StepRun, classify
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
    root: str = ""


@dataclass(frozen=True)
class Window:
    events: tuple[WindowEvent, ...]
    resolutions: dict[int, Resolution]
    steps: dict[int, list[StepRun]]
    # Earlier Codex events of the session whose outcome the rollout file holds only now.
    late: tuple[WindowEvent, ...] = ()


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
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        events = tuple(_event(row) for row in connection.execute(SELECT_WINDOW, params).all())
        late: tuple[WindowEvent, ...] = ()
        if any(event.host == "codex" for event in events):
            params["since"] = max(event.captured_at for event in events) - LATE_RESOLUTION_S
            late = tuple(_event(row) for row in connection.execute(SELECT_UNRESOLVED, params))
    return build_window(events, late, settings)


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
    root, payload = row[-2], row[-1]
    event = WindowEvent(**dict(zip(_STORED, row, strict=False)), root=root)
    if event.directory is None:
        event = replace(event, directory=directory_under(event.cwd, root))
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


def apply(connection: Connection, window: Window, settings: Settings, now: float) -> Counter[str]:
    """Record the window's runs, then re-decide every group it touched, on its branch and
    across the project."""
    stats: Counter[str] = Counter(events=len(window.events))
    groups: set[Group] = set()
    batch = _Batch(connection)
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
        for run in window.steps.get(event.id, ()):
            groups.add(_record(batch, event, run, resolution))
    batch.flush()
    rules = rules_of(settings)
    for group in sorted(groups, key=Group.sort_key):
        history = journal.load_history(connection, group.params())
        journal.rebuild(connection, group.params(), history, now)
        stats[evaluate(connection, group, rules, now, history)] += 1
    for group in sorted({g.project_wide() for g in groups}, key=Group.sort_key):
        outcome = evaluate(connection, group, rules, now)
        if outcome != "unpromoted":
            stats[outcome] += 1
    return stats


class _Batch:
    """Runs are written many rows to a statement. An attempt's journal needs the edits since
    the session's previous run of its workflow: a run earlier in this window is remembered
    here, one before it is looked up in what is already stored."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.rows: dict[Any, list[dict[str, Any]]] = {
            INSERT_VERIFICATION: [],
            INSERT_ATTEMPT: [],
            INSERT_UNVERIFIED: [],
        }
        self.last_run: dict[tuple[Group, int], int] = {}

    def add(self, statement: Any, params: dict[str, Any]) -> None:
        self.rows[statement].append(params)

    def flush(self) -> None:
        for statement, rows in self.rows.items():
            if rows:
                self.connection.execute(statement, rows)
                rows.clear()


def _record(
    batch: _Batch, event: WindowEvent, run: StepRun, resolution: Resolution | None
) -> Group:
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
    if run.verdict == UNVERIFIED:
        batch.add(INSERT_UNVERIFIED, params)
        return group
    previous = batch.last_run.get((group, event.session_id))
    batch.last_run[(group, event.session_id)] = event.id
    if run.verdict == VERIFIED:
        batch.add(INSERT_VERIFICATION, params)
        return group
    files, change_hash = journal.edits_before(
        batch.connection, group.params(), event.session_id, event.id, previous
    )
    params.update(
        exit_code=resolution.exit_code if resolution else event.exit_code,
        error_excerpt=event.error_excerpt or (resolution.excerpt if resolution else None),
        salient_error=run.salient_error,
        files=json.dumps(files) if files else None,
        change_hash=change_hash,
    )
    batch.add(INSERT_ATTEMPT, params)
    return group


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


def mark_stale(engine: Engine, settings: Settings, now: float) -> Counter[str]:
    """Maintenance: re-decide every active or broken procedure, so runs that aged out of
    max_age lower its runs and confidence, and one with no fresh run becomes stale."""
    stats: Counter[str] = Counter()
    with engine.begin() as connection:
        groups = [
            Group(*row)
            for row in connection.execute(
                text(
                    "SELECT p.project_id, p.scope, p.branch, p.directory, p.workflow, "
                    "p.workflow_hash, pr.root FROM procedures p JOIN projects pr "
                    "ON pr.id = p.project_id WHERE p.status IN ('active', 'broken') ORDER BY p.id"
                )
            )
        ]
        for group in groups:
            stats[evaluate(connection, group, rules_of(settings), now)] += 1
    return stats
