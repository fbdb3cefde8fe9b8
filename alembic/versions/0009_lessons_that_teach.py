"""lessons that teach: each error its own known error, red told from cannot-run, substitutions

- `known_errors`: each distinct error of a workflow's failing attempts, from its first sighting
  to the first later run that no longer shows it, with what fixed it (files and commands).
- `attempts.cannot_run`: the failures that break a procedure (not found, not installed, timed
  out, misconfigured); the others only say the code is red on their branch.
- `substitutions`: a failed workflow and the different workflow for the same purpose that
  passed after it in the same session, before any edit ("instead of A, B worked here").

A `pending_jobs` row asks the worker to re-derive memory under these rules: reads, inline
scripts and file writes are no procedures, messages are elided, runs on project files are one
family, and error keys mask the branch, hashes, temporary names and durations.

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
    # A plain ALTER, also on SQLite: a batch copy of a table others refer to would break their
    # foreign keys.
    op.add_column(
        "attempts",
        sa.Column("cannot_run", sa.Integer, nullable=False, server_default=sa.text("0")),
    )
    op.create_table(
        "substitutions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("failed_event_id", sa.Integer, sa.ForeignKey(events), nullable=False),
        sa.Column("failed_step", sa.Integer, nullable=False),
        sa.Column("failed_workflow", sa.Text, nullable=False),
        sa.Column("failed_workflow_hash", sa.Text, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("error_key", sa.Text),
        sa.Column("substitute_event_id", sa.Integer, sa.ForeignKey(events), nullable=False),
        sa.Column("substitute_workflow", sa.Text, nullable=False),
        sa.Column("substitute_workflow_hash", sa.Text, nullable=False),
        sa.Column("substitute_command", sa.Text, nullable=False),
        sa.Column("failed_at", sa.Float, nullable=False),
        sa.Column("found_at", sa.Float, nullable=False),
        sa.UniqueConstraint("failed_event_id", "failed_step", name="uq_substitutions_failed"),
    )
    for name, columns in (
        ("session", ["session_id", "failed_event_id"]),
        ("workflow", ["project_id", "failed_workflow_hash", "found_at"]),
        ("error", ["project_id", "error_key", "found_at"]),
    ):
        op.create_index(f"ix_substitutions_{name}", "substitutions", columns)
    op.get_bind().execute(
        sa.text(
            "INSERT INTO pending_jobs (name, reason, created_at) SELECT 'rebuild_procedures', "
            ":reason, :now WHERE EXISTS (SELECT 1 FROM captured_events) AND NOT EXISTS "
            "(SELECT 1 FROM pending_jobs WHERE name = 'rebuild_procedures')"
        ),
        {"reason": "schema 0009 derives lessons that teach", "now": time.time()},
    )


def downgrade() -> None:
    for name in ("error", "workflow", "session"):
        op.drop_index(f"ix_substitutions_{name}", "substitutions")
    op.drop_table("substitutions")
    op.drop_column("attempts", "cannot_run")
    for index in ("open", "recent", "group"):
        op.drop_index(f"ix_known_errors_{index}", "known_errors")
    op.drop_table("known_errors")
