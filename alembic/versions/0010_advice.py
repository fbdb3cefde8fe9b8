"""advice given: what the hook told each session at the moment a command failed, or before it
ran one known to fail here; and the index the hook finds a fixed known error by

A record, not derived: a rebuild keeps it, `remem forget` erases it with its event or session.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "advice_given",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("event_id", sa.Integer, sa.ForeignKey("captured_events.id")),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("given_at", sa.Float, nullable=False),
        sa.CheckConstraint(
            "kind IN ('known_error', 'substitution', 'before')", name="ck_advice_given_kind"
        ),
        sa.UniqueConstraint("session_id", "kind", "key", name="uq_advice_given_once"),
    )
    op.create_index("ix_advice_given_event", "advice_given", ["event_id"])
    op.create_index(
        "ix_known_errors_error", "known_errors", ["project_id", "error_key", "resolved_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_known_errors_error", "known_errors")
    op.drop_index("ix_advice_given_event", "advice_given")
    op.drop_table("advice_given")
