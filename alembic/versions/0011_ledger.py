"""session ledger: what the SessionStart digest showed each session, what advice names as its
follow-up, and, derived per session, what was used, passed, met again and followed, summed per
workflow for the digest's order

digest_shown is a record (a rebuild keeps it, `remem forget` erases it with its event or
session); session_ledger and workflow_use are derived and re-derived by a rebuild.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ALTER, also on SQLite: a batch copy of a table others refer to would break their
    # foreign keys.
    op.add_column("advice_given", sa.Column("follow", sa.Text))
    op.create_table(
        "digest_shown",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("event_id", sa.Integer, sa.ForeignKey("captured_events.id"), nullable=False),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("page", sa.Integer, nullable=False),
        sa.Column("procedures", sa.Text, nullable=False),
        sa.Column("known_errors", sa.Text, nullable=False),
        sa.Column("shown_at", sa.Float, nullable=False),
    )
    op.create_index("ix_digest_shown_session", "digest_shown", ["session_id"])
    op.create_index("ix_digest_shown_event", "digest_shown", ["event_id"])
    op.create_index("ix_digest_shown_project", "digest_shown", ["project_id", "shown_at"])
    op.create_table(
        "session_ledger",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("procedure_id", sa.Integer),
        sa.Column("directory", sa.Text),
        sa.Column("workflow_hash", sa.Text),
        sa.Column("item_key", sa.Text),
        sa.Column("used", sa.Integer, nullable=False),
        sa.Column("passed", sa.Integer, nullable=False),
        sa.Column("repeated", sa.Integer, nullable=False),
        sa.Column("followed", sa.Integer, nullable=False),
        sa.Column("failed_after", sa.Integer, nullable=False),
        sa.Column("failed_at", sa.Float),
        sa.Column("at", sa.Float, nullable=False),
        sa.CheckConstraint(
            "kind IN ('procedure', 'known_error', 'advice')", name="ck_session_ledger_kind"
        ),
    )
    op.create_index("ix_session_ledger_session", "session_ledger", ["session_id"])
    op.create_index(
        "ix_session_ledger_workflow",
        "session_ledger",
        ["project_id", "directory", "workflow_hash"],
    )
    op.create_index("ix_session_ledger_time", "session_ledger", ["project_id", "at"])
    op.create_table(
        "workflow_use",
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("workflow_hash", sa.Text, nullable=False),
        sa.Column("shown_sessions", sa.Integer, nullable=False),
        sa.Column("used_sessions", sa.Integer, nullable=False),
        sa.Column("passed_sessions", sa.Integer, nullable=False),
        sa.Column("failed_at", sa.Float),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint(
            "project_id", "directory", "workflow_hash", name="pk_workflow_use"
        ),
    )


def downgrade() -> None:
    op.drop_table("workflow_use")
    op.drop_index("ix_session_ledger_time", "session_ledger")
    op.drop_index("ix_session_ledger_workflow", "session_ledger")
    op.drop_index("ix_session_ledger_session", "session_ledger")
    op.drop_table("session_ledger")
    op.drop_index("ix_digest_shown_project", "digest_shown")
    op.drop_index("ix_digest_shown_event", "digest_shown")
    op.drop_index("ix_digest_shown_session", "digest_shown")
    op.drop_table("digest_shown")
    with op.batch_alter_table("advice_given") as batch:
        batch.drop_column("follow")
