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
from remem.procedures import lessons
from remem.procedures.digest import needs_credentials
from remem.procedures.policy import ARCHIVED


def iso(epoch_s: float | None) -> str | None:
    if epoch_s is None:
        return None
    return datetime.fromtimestamp(epoch_s, UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Procedure:
    id: int
    project: str
    scope: str
    branch: str | None  # None when the procedure holds on every branch of the project
    directory: str
    workflow: str
    workflow_hash: str
    command: str
    variants: tuple[tuple[str, int], ...]
    status: str
    confidence: float
    verified_runs: int
    distinct_sessions: int
    branches: tuple[str, ...]
    evidence_event_ids: tuple[int, ...]  # the newest 20; evidence_runs pages through all
    files: tuple[str, ...]
    files_more: int
    first_verified_at: float
    last_verified_at: float
    topic_key: str
    body: str

    @property
    def needs_credentials(self) -> bool:
        """Whether its command had credentials redacted: it cannot run as stored."""
        return needs_credentials(self.command)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["needs_credentials"] = self.needs_credentials
        data["variants"] = [{"command": c, "runs": n} for c, n in self.variants]
        data["branches"] = list(self.branches)
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
    branch: str | None

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "at": iso(self.at)}


_SELECT = """
SELECT p.id, pr.root, p.scope, p.branch, p.directory, p.workflow, p.workflow_hash, p.command,
    p.variants, p.status, p.confidence, p.verified_runs, p.distinct_sessions, p.branches,
    p.evidence_event_ids, p.files, p.files_more, p.first_verified_at, p.last_verified_at,
    p.topic_key, p.body
FROM procedures p JOIN projects pr ON pr.id = p.project_id
"""


def _procedure(row: Any) -> Procedure:
    values = dict(row._mapping)
    return Procedure(
        id=values["id"],
        project=values["root"],
        scope=values["scope"],
        branch=None if values["scope"] == "project" else values["branch"],
        directory=values["directory"],
        workflow=values["workflow"],
        workflow_hash=values["workflow_hash"],
        command=values["command"],
        variants=tuple((v["command"], int(v["runs"])) for v in json.loads(values["variants"])),
        status=values["status"],
        confidence=values["confidence"],
        verified_runs=values["verified_runs"],
        distinct_sessions=values["distinct_sessions"],
        branches=tuple(json.loads(values["branches"])),
        evidence_event_ids=tuple(json.loads(values["evidence_event_ids"])),
        files=tuple(json.loads(values["files"])),
        files_more=values["files_more"],
        first_verified_at=values["first_verified_at"],
        last_verified_at=values["last_verified_at"],
        topic_key=values["topic_key"],
        body=values["body"],
    )


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
    if branch is not None:  # a branch's own procedures and those that hold on every branch
        clauses.append("(p.branch = :branch OR p.scope = 'project')")
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


EVIDENCE_PAGE = 50


@dataclass(frozen=True)
class EvidencePage:
    """One page of a procedure's evidence, newest page first, each page in time order."""

    runs: tuple[EvidenceRun, ...]
    page: int
    pages: int
    total: int

    def as_json(self) -> dict[str, Any]:
        return {
            "evidence_page": self.page,
            "evidence_pages": self.pages,
            "evidence_runs": self.total,
        }


_EVIDENCE_COUNT = text("SELECT count(*) FROM procedure_evidence WHERE procedure_id = :id")
_EVIDENCE_PAGE = text(
    "SELECT e.id, e.host, s.session_key, e.outcome, e.exit_code, e.event_at, e.branch "
    "FROM procedure_evidence pe JOIN captured_events e ON e.id = pe.event_id "
    "JOIN sessions s ON s.id = e.session_id WHERE pe.procedure_id = :id "
    "ORDER BY pe.verified_at DESC, pe.event_id DESC LIMIT :limit OFFSET :offset"
)


def evidence_runs(
    engine: Engine, procedure: Procedure, page: int = 1, per_page: int = EVIDENCE_PAGE
) -> EvidencePage:
    """The verified runs a procedure cites (its fresh ones, or all when none is fresh), a page
    at a time: a procedure may cite thousands."""
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        total = procedure.verified_runs
        if not total:
            total = int(connection.execute(_EVIDENCE_COUNT, {"id": procedure.id}).scalar_one())
        pages = max(1, -(-total // per_page))
        if not 1 <= page <= pages:
            raise NotFound(
                f"Procedure {procedure.id} has {pages} evidence page(s): ask for 1 to {pages}."
            )
        offset = (page - 1) * per_page
        params = {"id": procedure.id, "limit": min(per_page, total - offset), "offset": offset}
        rows = connection.execute(_EVIDENCE_PAGE, params).all() if total else []
    runs = sorted((EvidenceRun(*row) for row in rows), key=lambda run: (run.at, run.event_id))
    return EvidencePage(tuple(runs), page, pages, total)


def unverified_count(engine: Engine, procedure: Procedure) -> int:
    """Runs of the workflow whose status was hidden and whose output showed no summary."""
    query = (
        "SELECT count(*) FROM unverified_runs u JOIN procedures p ON p.project_id = u.project_id "
        "AND p.directory = u.directory AND p.workflow_hash = u.workflow_hash "
        "AND (p.scope = 'project' OR p.branch = u.branch) WHERE p.id = :id"
    )
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        return int(connection.execute(text(query), {"id": procedure.id}).scalar_one())


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
    salient_error: str | None
    files: tuple[str, ...]
    duplicate_of: int | None
    failed_at: float

    def detail(self) -> lessons.AttemptDetail:
        return lessons.AttemptDetail(
            self.attempt_number,
            self.exit_code,
            self.error_excerpt,
            self.duplicate_of,
            self.salient_error,
        )

    @property
    def has_output(self) -> bool:
        """Whether its output says anything: a failure with none is shown as such."""
        return self.detail().error() is not None

    def as_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "files": list(self.files),
            "failed_at": iso(self.failed_at),
            "has_output": self.has_output,
        }


@dataclass(frozen=True)
class LessonView:
    resolved_by_event_id: int
    branch: str
    failed_attempts: int
    last_error: str | None
    error_key: str | None
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
SELECT l.resolved_by_event_id, l.branch, l.failed_attempts, l.last_error, l.error_key,
    l.fix_files, l.repeats, l.body, l.pitfall, l.resolved_at
FROM lessons l JOIN procedures p ON p.project_id = l.project_id
    AND p.directory = l.directory AND p.workflow_hash = l.workflow_hash
    AND (p.scope = 'project' OR p.branch = l.branch)
WHERE p.id = :id ORDER BY l.resolved_at DESC, l.id DESC
"""
_ATTEMPTS = """
SELECT a.attempt_number, a.event_id, a.exit_code, a.error_excerpt, a.salient_error, a.files,
    a.duplicate_of, a.failed_at
FROM attempts a JOIN procedures p ON p.project_id = a.project_id
    AND p.directory = a.directory AND p.workflow_hash = a.workflow_hash
WHERE p.id = :id AND a.branch = :branch AND a.resolved_by_event_id = :resolved_by
ORDER BY a.attempt_number
"""


def lessons_of(engine: Engine, procedure_id: int) -> list[LessonView]:
    """The procedure's lessons, newest first, each with the attempts of its streak."""
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        views = []
        for row in connection.execute(text(_LESSONS), {"id": procedure_id}).all():
            params = {"id": procedure_id, "branch": row.branch, "resolved_by": row[0]}
            attempts = tuple(
                JournalAttempt(
                    a[0], a[1], a[2], a[3], a[4], tuple(json.loads(a[5] or "[]")), a[6], a[7]
                )
                for a in connection.execute(text(_ATTEMPTS), params)
            )
            fix_files = tuple(json.loads(row.fix_files))
            body, pitfall = row.body, row.pitfall
            if len(attempts) == row.failed_attempts:
                # Told again from its whole journal: in the current wording, whenever stored.
                lesson = lessons.distill([a.detail() for a in attempts], fix_files, row.resolved_at)
                body, pitfall = lesson.body, lesson.pitfall
            views.append(
                LessonView(
                    resolved_by_event_id=row[0],
                    branch=row.branch,
                    failed_attempts=row.failed_attempts,
                    last_error=row.last_error or None,
                    error_key=row.error_key,
                    fix_files=fix_files,
                    repeats=tuple((int(n), int(of)) for n, of in json.loads(row.repeats)),
                    body=body,
                    pitfall=pitfall,
                    resolved_at=row.resolved_at,
                    attempts=attempts,
                )
            )
        return views


@dataclass(frozen=True)
class ErrorSighting:
    """Where a known error was met and what fixed it there."""

    error: str
    error_key: str
    branch: str
    directory: str
    workflow: str | None
    fix_files: tuple[str, ...]
    resolved_at: float

    def as_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "fix_files": list(self.fix_files),
            "resolved_at": iso(self.resolved_at),
        }


_ERRORS = """
SELECT l.last_error, l.error_key, l.branch, l.directory,
    (SELECT a.workflow FROM attempts a WHERE a.project_id = l.project_id
        AND a.directory = l.directory AND a.workflow_hash = l.workflow_hash LIMIT 1),
    l.fix_files, l.resolved_at
FROM lessons l JOIN projects pr ON pr.id = l.project_id
WHERE l.error_key IS NOT NULL {where}
ORDER BY l.resolved_at DESC, l.id DESC
"""


def known_errors(
    engine: Engine, project: str | None = None, error_keys: tuple[str, ...] | None = None
) -> list[ErrorSighting]:
    """Every lesson's error, newest first: on which branch, under which workflow, fixed how."""
    clauses, params = [], {}
    if project is not None:
        clauses.append("pr.root = :project")
        params["project"] = project
    if error_keys is not None:
        if not error_keys:
            return []
        names = [f":k{i}" for i in range(len(error_keys))]
        clauses.append(f"l.error_key IN ({', '.join(names)})")
        params.update({f"k{i}": key for i, key in enumerate(error_keys)})
    where = "".join(f" AND {clause}" for clause in clauses)
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        rows = connection.execute(text(_ERRORS.format(where=where)), params).all()
    return [
        ErrorSighting(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6]) for r in rows
    ]
