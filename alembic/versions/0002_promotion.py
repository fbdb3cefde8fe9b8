"""verifications, attempts and procedures

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _run_columns() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "event_id", sa.Integer, sa.ForeignKey("captured_events.id"), nullable=False, unique=True
        ),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("command_hash", sa.Text, nullable=False),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("host", sa.Text, nullable=False),
    ]


def upgrade() -> None:
    op.create_table("verifications", *_run_columns(), sa.Column("verified_at", sa.Float, nullable=False))
    op.create_index(
        "ix_verifications_group",
        "verifications",
        ["project_id", "branch", "command_hash", "verified_at"],
    )
    op.create_table(
        "attempts",
        *_run_columns(),
        sa.Column("exit_code", sa.Integer),
        sa.Column("error_excerpt", sa.Text),
        sa.Column("failed_at", sa.Float, nullable=False),
    )
    op.create_index(
        "ix_attempts_group", "attempts", ["project_id", "branch", "command_hash", "failed_at"]
    )
    op.create_table(
        "procedures",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("workflow_key", sa.Text, nullable=False),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("command_hash", sa.Text, nullable=False),
        sa.Column("topic_key", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("verified_runs", sa.Integer, nullable=False),
        sa.Column("distinct_sessions", sa.Integer, nullable=False),
        sa.Column("evidence_event_ids", sa.Text, nullable=False),
        sa.Column("files", sa.Text, nullable=False),
        sa.Column("first_verified_at", sa.Float, nullable=False),
        sa.Column("last_verified_at", sa.Float, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.CheckConstraint(
            "status IN ('active', 'broken', 'stale', 'archived')", name="ck_procedures_status"
        ),
        sa.UniqueConstraint("project_id", "branch", "command_hash", name="uq_procedures_group"),
    )
    op.create_index("ix_procedures_listing", "procedures", ["project_id", "branch", "status"])


def downgrade() -> None:
    op.drop_table("procedures")
    op.drop_table("attempts")
    op.drop_table("verifications")
