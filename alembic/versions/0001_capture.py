"""capture and queue tables

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("root", sa.Text, nullable=False, unique=True),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("session_key", sa.Text, nullable=False),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("last_event_at", sa.Float, nullable=False),
        sa.UniqueConstraint("host", "session_key", name="uq_sessions_host_key"),
    )
    op.create_table(
        "captured_events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("idempotency_key", sa.Text, nullable=False, unique=True),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("hook_event", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("tool_name", sa.Text),
        sa.Column("tool_use_id", sa.Text),
        sa.Column("command", sa.Text),
        sa.Column("outcome", sa.Text),
        sa.Column("exit_code", sa.Integer),
        sa.Column("exit_code_source", sa.Text),
        sa.Column("error_excerpt", sa.Text),
        sa.Column("branch", sa.Text),
        sa.Column("cwd", sa.Text, nullable=False),
        sa.Column("files", sa.Text),
        sa.Column("change_hash", sa.Text),
        sa.Column("transcript_path", sa.Text),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("event_at", sa.Float, nullable=False),
        sa.Column("captured_at", sa.Float, nullable=False),
        sa.CheckConstraint(
            "kind IN ('command', 'edit', 'session_start')", name="ck_captured_events_kind"
        ),
        sa.CheckConstraint(
            "outcome IS NULL OR outcome IN "
            "('success', 'failure', 'interrupted', 'backgrounded', 'unknown')",
            name="ck_captured_events_outcome",
        ),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_captured_events_session", "captured_events", ["session_id", "id"])
    op.create_table(
        "extraction_tasks",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("idempotency_key", sa.Text, nullable=False, unique=True),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("priority", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("high_watermark_event_id", sa.Integer, nullable=False),
        sa.Column("cursor_event_id", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("attempts", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("run_after", sa.Float, nullable=False),
        sa.Column("lease_owner", sa.Text),
        sa.Column("lease_expires_at", sa.Float),
        sa.Column("last_error", sa.Text),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'processing', 'done', 'failed')",
            name="ck_extraction_tasks_status",
        ),
    )
    op.create_index(
        "ix_extraction_tasks_claim",
        "extraction_tasks",
        ["priority", "id"],
        sqlite_where=sa.text("status = 'pending'"),
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index(
        "ix_extraction_tasks_lease",
        "extraction_tasks",
        ["lease_expires_at"],
        sqlite_where=sa.text("status = 'processing'"),
        postgresql_where=sa.text("status = 'processing'"),
    )
    op.create_table(
        "dropped_payloads",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("idempotency_key", sa.Text, nullable=False, unique=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("host", sa.Text),
        sa.Column("hook_event", sa.Text),
        sa.Column("size_bytes", sa.Integer, nullable=False),
        sa.Column("payload_sha256", sa.Text, nullable=False),
        sa.Column("detail", sa.Text),
        sa.Column("dropped_at", sa.Float, nullable=False),
    )
    op.create_table(
        "worker_heartbeats",
        sa.Column("worker_id", sa.Text, primary_key=True),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("hostname", sa.Text, nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("heartbeat_at", sa.Float, nullable=False),
        sa.Column("current_task_id", sa.Integer),
    )


def downgrade() -> None:
    for table in (
        "worker_heartbeats",
        "dropped_payloads",
        "extraction_tasks",
        "captured_events",
        "sessions",
        "projects",
    ):
        op.drop_table(table)
