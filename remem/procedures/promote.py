"""The promote handler: a session's window of events -> verifications, attempts, procedures.

`prepare` reads (outside any write transaction: it may open rollout files); `apply` writes, in
the transaction that also completes the task, so a window is applied entirely or not at all.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, text

from remem.config import Settings
from remem.db.engine import READ_ONLY
from remem.procedures import journal, policy
from remem.procedures.rollout import Resolution, resolve_exit_codes
from remem.queue.store import ClaimedTask

MAX_FILES = 20
FILES_FROM_LAST_RUNS = 10


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
    branch: str | None
    tool_use_id: str | None
    transcript_path: str | None
    event_at: float


@dataclass(frozen=True)
class Window:
    events: tuple[WindowEvent, ...]
    resolutions: dict[int, Resolution]


@dataclass(frozen=True)
class Group:
    project_id: int
    branch: str
    command: str
    command_hash: str


def rules_of(settings: Settings) -> policy.Rules:
    return policy.Rules(
        settings.min_verified_runs, settings.max_age_s, settings.min_distinct_sessions
    )


def prepare(engine: Engine, task: ClaimedTask) -> Window:
    query = text(
        f"SELECT {', '.join(WindowEvent.__dataclass_fields__)} FROM captured_events "
        "WHERE session_id = :session_id AND id > :cursor AND id <= :watermark ORDER BY id"
    )
    params = {
        "session_id": task.session_id,
        "cursor": task.cursor_event_id,
        "watermark": task.watermark_event_id,
    }
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        events = tuple(WindowEvent(*row) for row in connection.execute(query, params))
    return Window(events, _resolve_codex(events))


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
    exit_code_source = 'rollout', error_excerpt = COALESCE(error_excerpt, :excerpt)
WHERE id = :id AND outcome = 'unknown'
""")

INSERT_VERIFICATION = text("""
INSERT INTO verifications (event_id, project_id, branch, command, command_hash, session_id,
    host, verified_at)
VALUES (:event_id, :project_id, :branch, :command, :command_hash, :session_id, :host, :at)
ON CONFLICT (event_id) DO NOTHING
""")

INSERT_ATTEMPT = text("""
INSERT INTO attempts (event_id, project_id, branch, command, command_hash, session_id, host,
    exit_code, error_excerpt, failed_at, files, change_hash)
VALUES (:event_id, :project_id, :branch, :command, :command_hash, :session_id, :host,
    :exit_code, :error_excerpt, :at, :files, :change_hash)
ON CONFLICT (event_id) DO NOTHING
""")


def apply(connection: Connection, window: Window, settings: Settings, now: float) -> Counter[str]:
    """Record the window's runs, then re-decide every group it touched."""
    stats: Counter[str] = Counter(events=len(window.events))
    groups: set[Group] = set()
    for event in window.events:
        outcome, exit_code, excerpt = event.outcome, event.exit_code, event.error_excerpt
        resolution = window.resolutions.get(event.id)
        if resolution is not None:
            outcome = "success" if resolution.exit_code == 0 else "failure"
            exit_code, excerpt = resolution.exit_code, excerpt or resolution.excerpt
            connection.execute(
                RESOLVE_OUTCOME,
                {
                    "id": event.id,
                    "outcome": outcome,
                    "exit_code": exit_code,
                    "excerpt": resolution.excerpt,
                },
            )
        if event.kind != "command" or outcome not in ("success", "failure") or not event.command:
            continue
        command = policy.normalise_command(event.command)
        if policy.is_ignored(command, settings.ignore_commands):
            continue
        group = Group(event.project_id, event.branch or "", command, policy.command_hash(command))
        groups.add(group)
        params: dict[str, Any] = {
            "event_id": event.id,
            "project_id": group.project_id,
            "branch": group.branch,
            "command": command,
            "command_hash": group.command_hash,
            "session_id": event.session_id,
            "host": event.host,
            "at": event.event_at,
        }
        if outcome == "success":
            connection.execute(INSERT_VERIFICATION, params)
        else:
            files, change_hash = journal.edits_before(
                connection, _group_params(group), event.session_id, event.id
            )
            params.update(
                exit_code=exit_code,
                error_excerpt=excerpt,
                files=json.dumps(files) if files else None,
                change_hash=change_hash,
            )
            connection.execute(INSERT_ATTEMPT, params)
    for group in sorted(groups, key=lambda g: (g.project_id, g.branch, g.command_hash)):
        history = journal.load_history(connection, _group_params(group))
        journal.rebuild(connection, _group_params(group), history, now)
        stats[evaluate_group(connection, group, rules_of(settings), now, history.runs())] += 1
    return stats


# Files edited in the run's session after that session's previous verified run of the command.
SELECT_FILES = text(
    "SELECT DISTINCT e.files FROM captured_events e, captured_events run "
    "WHERE run.id IN :event_ids AND e.session_id = run.session_id "
    "AND e.files IS NOT NULL AND e.id <= run.id AND e.id > COALESCE(("
    "  SELECT max(v.event_id) FROM verifications v WHERE v.session_id = run.session_id"
    "  AND v.project_id = :project_id AND v.branch = :branch"
    "  AND v.command_hash = :command_hash AND v.event_id < run.id), 0)"
).bindparams(bindparam("event_ids", expanding=True))

SELECT_PROCEDURE = text(
    "SELECT id, status, confidence, verified_runs, distinct_sessions, evidence_event_ids, "
    "files, body FROM procedures WHERE project_id = :project_id AND branch = :branch "
    "AND command_hash = :command_hash"
)

SELECT_ROOT = text("SELECT root FROM projects WHERE id = :id")


def _group_params(group: Group) -> dict[str, Any]:
    return {
        "project_id": group.project_id,
        "branch": group.branch,
        "command_hash": group.command_hash,
    }


def _files(connection: Connection, group: Group, evidence: tuple[int, ...]) -> list[str]:
    """Files edited before each of the latest verified runs, plus files its payload named."""
    params = {**_group_params(group), "event_ids": list(evidence[-FILES_FROM_LAST_RUNS:])}
    files: set[str] = set()
    for (encoded,) in connection.execute(SELECT_FILES, params):
        files.update(json.loads(encoded))
    return sorted(files)[:MAX_FILES]


UPDATE_PROCEDURE = text(
    "UPDATE procedures SET status = :status, confidence = :confidence, "
    "verified_runs = :verified_runs, distinct_sessions = :distinct_sessions, "
    "evidence_event_ids = :evidence_event_ids, files = :files, "
    "first_verified_at = :first_verified_at, last_verified_at = :last_verified_at, "
    "body = :body, updated_at = :now WHERE id = :id"
)

INSERT_PROCEDURE = text(
    "INSERT INTO procedures (project_id, branch, workflow_key, command, command_hash, "
    "topic_key, status, confidence, verified_runs, distinct_sessions, evidence_event_ids, "
    "files, first_verified_at, last_verified_at, body, created_at, updated_at) "
    "VALUES (:project_id, :branch, :workflow_key, :command, :command_hash, :topic_key, "
    ":status, :confidence, :verified_runs, :distinct_sessions, :evidence_event_ids, :files, "
    ":first_verified_at, :last_verified_at, :body, :now, :now)"
)

# What makes a stored procedure differ from a fresh decision (timestamps follow these).
COMPARED = (
    "status",
    "confidence",
    "verified_runs",
    "distinct_sessions",
    "evidence_event_ids",
    "files",
    "body",
)


def _values(
    connection: Connection, group: Group, decision: policy.Decision, now: float
) -> dict[str, Any]:
    files = _files(connection, group, decision.evidence_event_ids)
    root = connection.execute(SELECT_ROOT, {"id": group.project_id}).scalar_one()
    return {
        "status": decision.status,
        "confidence": decision.confidence,
        "verified_runs": decision.verified_runs,
        "distinct_sessions": decision.distinct_sessions,
        "evidence_event_ids": json.dumps(list(decision.evidence_event_ids)),
        "files": json.dumps(files),
        "first_verified_at": decision.first_verified_at,
        "last_verified_at": decision.last_verified_at,
        "body": policy.render_body(group.command, root, group.branch, decision, files),
        "now": now,
    }


def evaluate_group(
    connection: Connection,
    group: Group,
    rules: policy.Rules,
    now: float,
    runs: list[policy.Run] | None = None,
) -> str:
    """Re-decide one group's procedure and store it if anything changed. Returns what happened:
    promoted, refreshed, broken, stale, unchanged or unpromoted."""
    existing = connection.execute(SELECT_PROCEDURE, _group_params(group)).first()
    status = existing.status if existing else None
    if runs is None:
        runs = journal.load_history(connection, _group_params(group)).runs()
    decision = policy.decide(runs, status, rules, now)
    if decision is None:
        return "unpromoted" if existing is None else "unchanged"
    values = _values(connection, group, decision, now)
    if existing is None:
        connection.execute(
            INSERT_PROCEDURE,
            {
                **values,
                **_group_params(group),
                "command": group.command,
                "workflow_key": policy.slug(group.command),
                "topic_key": policy.topic_key(group.command),
            },
        )
        return "promoted"
    if tuple(getattr(existing, key) for key in COMPARED) == tuple(values[k] for k in COMPARED):
        return "unchanged"
    connection.execute(UPDATE_PROCEDURE, {**values, "id": existing.id})
    if decision.status != status and decision.status in (policy.BROKEN, policy.STALE):
        return decision.status
    return "refreshed"


def mark_stale(engine: Engine, settings: Settings, now: float) -> Counter[str]:
    """Maintenance: re-decide every active or broken procedure, so runs that aged out of
    max_age lower its runs and confidence, and one with no fresh run becomes stale."""
    stats: Counter[str] = Counter()
    with engine.begin() as connection:
        groups = [
            Group(*row)
            for row in connection.execute(
                text(
                    "SELECT project_id, branch, command, command_hash FROM procedures "
                    "WHERE status IN ('active', 'broken') ORDER BY id"
                )
            )
        ]
        for group in groups:
            stats[evaluate_group(connection, group, rules_of(settings), now)] += 1
    return stats
