"""known errors: each distinct error of a workflow's failing attempts, and what fixed it

A `pending_jobs` row asks the worker to re-derive memory, which fills the table (and keys
every error again, its branch, hashes, temporary names and durations masked).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    events = "captured_events.id"
    op.create_table(
        "known_errors",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("workflow", sa.Text, nullable=False),
        sa.Column("workflow_hash", sa.Text, nullable=False),
        sa.Column("error_key", sa.Text, nullable=False),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("first_event_id", sa.Integer, sa.ForeignKey(events), nullable=False),
        sa.Column("last_event_id", sa.Integer, sa.ForeignKey(events), nullable=False),
        sa.Column("session_id", sa.Integer, nullable=False),
        sa.Column("first_seen_at", sa.Float, nullable=False),
        sa.Column("last_seen_at", sa.Float, nullable=False),
        sa.Column("times_seen", sa.Integer, nullable=False),
        sa.Column("sessions", sa.Integer, nullable=False),
        sa.Column("resolved_by_event_id", sa.Integer, sa.ForeignKey(events)),
        sa.Column("resolved_at", sa.Float),
        sa.Column("fix_files", sa.Text, nullable=False),
        sa.Column("fix_commands", sa.Text, nullable=False),
        sa.Column("fix_in_command", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.UniqueConstraint(
            "project_id", "branch", "directory", "workflow_hash", "first_event_id",
            name="uq_known_errors_sighting",
        ),
    )  # fmt: skip
    op.create_index(
        "ix_known_errors_group",
        "known_errors",
        ["project_id", "branch", "directory", "workflow_hash", "first_seen_at"],
    )
    op.create_index("ix_known_errors_recent", "known_errors", ["project_id", "last_seen_at"])
    op.create_index("ix_known_errors_open", "known_errors", ["session_id", "resolved_by_event_id"])
    op.get_bind().execute(
        sa.text(
            "INSERT INTO pending_jobs (name, reason, created_at) SELECT 'rebuild_procedures', "
            ":reason, :now WHERE EXISTS (SELECT 1 FROM captured_events) AND NOT EXISTS "
            "(SELECT 1 FROM pending_jobs WHERE name = 'rebuild_procedures')"
        ),
        {"reason": "schema 0009 keeps each error of a workflow as a known error", "now": time.time()},
    )


def downgrade() -> None:
    for index in ("open", "recent", "group"):
        op.drop_index(f"ix_known_errors_{index}", "known_errors")
    op.drop_table("known_errors")
