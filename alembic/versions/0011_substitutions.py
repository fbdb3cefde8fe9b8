"""substitutions: "instead of A, B worked here"

A failed workflow and the different workflow for the same purpose that passed after it in the
same session, before any edit (DESIGN.md §6). Derived: a `pending_jobs` row asks the worker
to re-derive memory, which fills it from the captured events.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "substitutions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column(
            "failed_event_id", sa.Integer, sa.ForeignKey("captured_events.id"), nullable=False
        ),
        sa.Column("failed_step", sa.Integer, nullable=False),
        sa.Column("failed_workflow", sa.Text, nullable=False),
        sa.Column("failed_workflow_hash", sa.Text, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("error_key", sa.Text),
        sa.Column(
            "substitute_event_id", sa.Integer, sa.ForeignKey("captured_events.id"), nullable=False
        ),
        sa.Column("substitute_workflow", sa.Text, nullable=False),
        sa.Column("substitute_workflow_hash", sa.Text, nullable=False),
        sa.Column("substitute_command", sa.Text, nullable=False),
        sa.Column("failed_at", sa.Float, nullable=False),
        sa.Column("found_at", sa.Float, nullable=False),
        sa.UniqueConstraint("failed_event_id", "failed_step", name="uq_substitutions_failed"),
    )
    op.create_index("ix_substitutions_session", "substitutions", ["session_id", "failed_event_id"])
    op.create_index(
        "ix_substitutions_workflow",
        "substitutions",
        ["project_id", "failed_workflow_hash", "found_at"],
    )
    op.create_index(
        "ix_substitutions_error", "substitutions", ["project_id", "error_key", "found_at"]
    )
    op.get_bind().execute(
        sa.text(
            "INSERT INTO pending_jobs (name, reason, created_at) SELECT 'rebuild_procedures', "
            ":reason, :now WHERE EXISTS (SELECT 1 FROM captured_events) AND NOT EXISTS "
            "(SELECT 1 FROM pending_jobs WHERE name = 'rebuild_procedures')"
        ),
        {"reason": "schema 0011 records substitutions", "now": time.time()},
    )


def downgrade() -> None:
    op.drop_index("ix_substitutions_error", "substitutions")
    op.drop_index("ix_substitutions_workflow", "substitutions")
    op.drop_index("ix_substitutions_session", "substitutions")
    op.drop_table("substitutions")
