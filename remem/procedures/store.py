"""Reading and archiving procedures: what the CLI (and later the digest) shows."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, text

from remem.db.engine import READ_ONLY
from remem.errors import NotFound
from remem.procedures.policy import ARCHIVED


def iso(epoch_s: float | None) -> str | None:
    if epoch_s is None:
        return None
    return datetime.fromtimestamp(epoch_s, UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Procedure:
    id: int
    project: str
    branch: str
    workflow_key: str
    command: str
    status: str
    confidence: float
    verified_runs: int
    distinct_sessions: int
    evidence_event_ids: tuple[int, ...]
    files: tuple[str, ...]
    first_verified_at: float
    last_verified_at: float
    topic_key: str
    body: str

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["evidence_event_ids"] = list(self.evidence_event_ids)
        data["files"] = list(self.files)
        data["first_verified_at"] = iso(self.first_verified_at)
        data["last_verified_at"] = iso(self.last_verified_at)
        return data


@dataclass(frozen=True)
class EvidenceRun:
    event_id: int
    host: str
    session_key: str
    outcome: str
    exit_code: int | None
    at: float

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "at": iso(self.at)}


_SELECT = """
SELECT p.id, pr.root, p.branch, p.workflow_key, p.command, p.status, p.confidence,
    p.verified_runs, p.distinct_sessions, p.evidence_event_ids, p.files, p.first_verified_at,
    p.last_verified_at, p.topic_key, p.body
FROM procedures p JOIN projects pr ON pr.id = p.project_id
"""


def _procedure(row: Any) -> Procedure:
    values = list(row)
    values[9] = tuple(json.loads(values[9]))
    values[10] = tuple(json.loads(values[10]))
    return Procedure(*values)


def list_procedures(
    engine: Engine,
    project: str | None = None,
    branch: str | None = None,
    statuses: tuple[str, ...] | None = ("active",),
    limit: int | None = None,
) -> list[Procedure]:
    """By confidence, then most recently verified, then id (a stable order)."""
    clauses, params = [], {}
    if project is not None:
        clauses.append("pr.root = :project")
        params["project"] = project
    if branch is not None:
        clauses.append("p.branch = :branch")
        params["branch"] = branch
    if statuses:
        names = [f":status{i}" for i in range(len(statuses))]
        clauses.append(f"p.status IN ({', '.join(names)})")
        params.update({f"status{i}": status for i, status in enumerate(statuses)})
    query = _SELECT + (" WHERE " + " AND ".join(clauses) if clauses else "")
    query += " ORDER BY p.confidence DESC, p.last_verified_at DESC, p.id"
    if limit is not None:
        query += f" LIMIT {int(limit)}"
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        return [_procedure(row) for row in connection.execute(text(query), params)]


def get_procedure(engine: Engine, procedure_id: int) -> Procedure:
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        row = connection.execute(text(_SELECT + " WHERE p.id = :id"), {"id": procedure_id}).first()
    if row is None:
        raise NotFound(f"No procedure {procedure_id}: see `remem procedures list --all`.")
    return _procedure(row)


def evidence_runs(engine: Engine, procedure: Procedure) -> list[EvidenceRun]:
    if not procedure.evidence_event_ids:
        return []
    ids = ", ".join(str(int(i)) for i in procedure.evidence_event_ids)
    query = (
        "SELECT e.id, e.host, s.session_key, e.outcome, e.exit_code, e.event_at "
        f"FROM captured_events e JOIN sessions s ON s.id = e.session_id WHERE e.id IN ({ids}) "
        "ORDER BY e.event_at, e.id"
    )
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        return [EvidenceRun(*row) for row in connection.execute(text(query))]


def archive(engine: Engine, procedure_id: int, now: float | None = None) -> Procedure:
    now = time.time() if now is None else now
    with engine.begin() as connection:
        updated = connection.execute(
            text("UPDATE procedures SET status = :archived, updated_at = :now WHERE id = :id"),
            {"archived": ARCHIVED, "now": now, "id": procedure_id},
        ).rowcount
    if not updated:
        raise NotFound(f"No procedure {procedure_id}: see `remem procedures list --all`.")
    return get_procedure(engine, procedure_id)


def count_by_status(engine: Engine) -> dict[str, int]:
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        rows = connection.execute(text("SELECT status, count(*) FROM procedures GROUP BY status"))
        counts = {status: int(count) for status, count in rows}
    return {status: counts.get(status, 0) for status in ("active", "broken", "stale", "archived")}


@dataclass(frozen=True)
class JournalAttempt:
    attempt_number: int
    event_id: int
    exit_code: int | None
    error_excerpt: str | None
    files: tuple[str, ...]
    duplicate_of: int | None
    failed_at: float

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "files": list(self.files), "failed_at": iso(self.failed_at)}


@dataclass(frozen=True)
class LessonView:
    resolved_by_event_id: int
    failed_attempts: int
    fix_files: tuple[str, ...]
    repeats: tuple[tuple[int, int], ...]
    body: str
    pitfall: str
    resolved_at: float
    attempts: tuple[JournalAttempt, ...]

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            fix_files=list(self.fix_files),
            repeats=[list(r) for r in self.repeats],
            resolved_at=iso(self.resolved_at),
            attempts=[a.as_json() for a in self.attempts],
        )
        return data


_LESSONS = """
SELECT l.resolved_by_event_id, l.failed_attempts, l.fix_files, l.repeats, l.body, l.pitfall,
    l.resolved_at
FROM lessons l JOIN procedures p ON p.project_id = l.project_id AND p.branch = l.branch
    AND p.command_hash = l.command_hash
WHERE p.id = :id ORDER BY l.resolved_at DESC, l.id DESC
"""
_ATTEMPTS = """
SELECT attempt_number, event_id, exit_code, error_excerpt, files, duplicate_of, failed_at
FROM attempts WHERE resolved_by_event_id = :resolved_by ORDER BY attempt_number
"""


def lessons_of(engine: Engine, procedure_id: int) -> list[LessonView]:
    """The procedure's lessons, newest first, each with the attempts of its streak."""
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        views = []
        for row in connection.execute(text(_LESSONS), {"id": procedure_id}).all():
            attempts = tuple(
                JournalAttempt(a[0], a[1], a[2], a[3], tuple(json.loads(a[4] or "[]")), a[5], a[6])
                for a in connection.execute(text(_ATTEMPTS), {"resolved_by": row[0]})
            )
            repeats = tuple((int(n), int(of)) for n, of in json.loads(row[3]))
            views.append(
                LessonView(
                    row[0],
                    row[1],
                    tuple(json.loads(row[2])),
                    repeats,
                    row[4],
                    row[5],
                    row[6],
                    attempts,
                )
            )
        return views
