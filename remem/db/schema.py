"""Table definitions. Timestamps are UTC epoch seconds (REAL) named *_at, in every table."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    text,
)

metadata = MetaData()

OUTCOMES = ("success", "failure", "interrupted", "backgrounded", "unknown")
TASK_STATUSES = ("pending", "processing", "done", "failed")
PROCEDURE_STATUSES = ("active", "broken", "stale", "archived")
EVENT_KINDS = ("command", "edit", "session_start")


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


projects = Table(
    "projects",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("root", Text, nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
)

sessions = Table(
    "sessions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("host", Text, nullable=False),
    Column("session_key", Text, nullable=False),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("started_at", Float, nullable=False),
    Column("last_event_at", Float, nullable=False),
    UniqueConstraint("host", "session_key", name="uq_sessions_host_key"),
)

captured_events = Table(
    "captured_events",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("idempotency_key", Text, nullable=False, unique=True),
    Column("session_id", Integer, ForeignKey("sessions.id"), nullable=False),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("host", Text, nullable=False),
    Column("hook_event", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("tool_name", Text),
    Column("tool_use_id", Text),
    Column("command", Text),
    Column("outcome", Text),
    Column("exit_code", Integer),
    Column("exit_code_source", Text),
    Column("error_excerpt", Text),
    Column("branch", Text),
    Column("cwd", Text, nullable=False),
    Column("files", Text),
    Column("change_hash", Text),
    Column("transcript_path", Text),
    Column("payload", Text, nullable=False),
    Column("event_at", Float, nullable=False),
    Column("captured_at", Float, nullable=False),
    CheckConstraint(_one_of("kind", EVENT_KINDS), name="ck_captured_events_kind"),
    CheckConstraint(
        "outcome IS NULL OR " + _one_of("outcome", OUTCOMES), name="ck_captured_events_outcome"
    ),
    Index("ix_captured_events_session", "session_id", "id"),
    sqlite_autoincrement=True,
)

extraction_tasks = Table(
    "extraction_tasks",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("idempotency_key", Text, nullable=False, unique=True),
    Column("session_id", Integer, ForeignKey("sessions.id"), nullable=False),
    Column("kind", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("priority", Integer, nullable=False, server_default=text("0")),
    Column("high_watermark_event_id", Integer, nullable=False),
    Column("cursor_event_id", Integer, nullable=False, server_default=text("0")),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    Column("run_after", Float, nullable=False),
    Column("lease_owner", Text),
    Column("lease_expires_at", Float),
    Column("last_error", Text),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    CheckConstraint(_one_of("status", TASK_STATUSES), name="ck_extraction_tasks_status"),
    # Only pending rows are in the claim index, so claiming costs the same with a million done
    # tasks as with none.
    Index(
        "ix_extraction_tasks_claim",
        "priority",
        "id",
        sqlite_where=text("status = 'pending'"),
        postgresql_where=text("status = 'pending'"),
    ),
    Index(
        "ix_extraction_tasks_lease",
        "lease_expires_at",
        sqlite_where=text("status = 'processing'"),
        postgresql_where=text("status = 'processing'"),
    ),
)

dropped_payloads = Table(
    "dropped_payloads",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("idempotency_key", Text, nullable=False, unique=True),
    Column("reason", Text, nullable=False),
    Column("host", Text),
    Column("hook_event", Text),
    Column("size_bytes", Integer, nullable=False),
    Column("payload_sha256", Text, nullable=False),
    Column("detail", Text),
    Column("dropped_at", Float, nullable=False),
)

worker_heartbeats = Table(
    "worker_heartbeats",
    metadata,
    Column("worker_id", Text, primary_key=True),
    Column("pid", Integer, nullable=False),
    Column("hostname", Text, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("heartbeat_at", Float, nullable=False),
    Column("current_task_id", Integer),
)


# Successful runs of a command, one per source event: the evidence procedures are built from.
# branch is '' when the work tree had none (detached HEAD, no repository), so that the unique
# keys below treat "no branch" as one value.
def _run_columns() -> list[Column[Any]]:
    """What a verification and an attempt both record of the run they stand for."""
    return [
        Column("id", Integer, primary_key=True),
        Column("event_id", Integer, ForeignKey("captured_events.id"), nullable=False, unique=True),
        Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
        Column("branch", Text, nullable=False),
        Column("command", Text, nullable=False),
        Column("command_hash", Text, nullable=False),
        Column("session_id", Integer, ForeignKey("sessions.id"), nullable=False),
        Column("host", Text, nullable=False),
    ]


verifications = Table(
    "verifications",
    metadata,
    *_run_columns(),
    Column("verified_at", Float, nullable=False),
    Index("ix_verifications_group", "project_id", "branch", "command_hash", "verified_at"),
)

# Failed runs of a command: they lower confidence, break procedures, and become lessons.
attempts = Table(
    "attempts",
    metadata,
    *_run_columns(),
    Column("exit_code", Integer),
    Column("error_excerpt", Text),
    Column("failed_at", Float, nullable=False),
    # The fix journal (DESIGN.md §6): what changed before this attempt, and whether it was the
    # same change as an earlier attempt of the streak; the success that closed the streak.
    Column("attempt_number", Integer, nullable=False, server_default=text("1")),
    Column("files", Text),
    Column("change_hash", Text),
    Column("duplicate_of", Integer),
    Column("resolved_by_event_id", Integer, ForeignKey("captured_events.id")),
    Index("ix_attempts_group", "project_id", "branch", "command_hash", "failed_at"),
)

lessons = Table(
    "lessons",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("branch", Text, nullable=False),
    Column("command_hash", Text, nullable=False),
    Column(
        "resolved_by_event_id",
        Integer,
        ForeignKey("captured_events.id"),
        nullable=False,
        unique=True,
    ),
    Column("failed_attempts", Integer, nullable=False),
    Column("first_error", Text),
    Column("last_error", Text),
    Column("fix_files", Text, nullable=False),
    Column("repeats", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("pitfall", Text, nullable=False),
    Column("resolved_at", Float, nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_lessons_group", "project_id", "branch", "command_hash", "resolved_at"),
)

procedures = Table(
    "procedures",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("branch", Text, nullable=False),
    Column("workflow_key", Text, nullable=False),
    Column("command", Text, nullable=False),
    Column("command_hash", Text, nullable=False),
    Column("topic_key", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("verified_runs", Integer, nullable=False),
    Column("distinct_sessions", Integer, nullable=False),
    Column("evidence_event_ids", Text, nullable=False),
    Column("files", Text, nullable=False),
    Column("first_verified_at", Float, nullable=False),
    Column("last_verified_at", Float, nullable=False),
    Column("body", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    CheckConstraint(_one_of("status", PROCEDURE_STATUSES), name="ck_procedures_status"),
    UniqueConstraint("project_id", "branch", "command_hash", name="uq_procedures_group"),
    Index("ix_procedures_listing", "project_id", "branch", "status"),
)
