"""the fix journal on attempts, and lessons

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(
            sa.Column("attempt_number", sa.Integer, nullable=False, server_default=sa.text("1"))
        )
        batch.add_column(sa.Column("files", sa.Text))
        batch.add_column(sa.Column("change_hash", sa.Text))
        batch.add_column(sa.Column("duplicate_of", sa.Integer))
        batch.add_column(
            sa.Column(
                "resolved_by_event_id",
                sa.Integer,
                sa.ForeignKey("captured_events.id", name="fk_attempts_resolved_by"),
            )
        )
    op.create_table(
        "lessons",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("command_hash", sa.Text, nullable=False),
        sa.Column(
            "resolved_by_event_id",
            sa.Integer,
            sa.ForeignKey("captured_events.id"),
            nullable=False,
            unique=True,
        ),
        sa.Column("failed_attempts", sa.Integer, nullable=False),
        sa.Column("first_error", sa.Text),
        sa.Column("last_error", sa.Text),
        sa.Column("fix_files", sa.Text, nullable=False),
        sa.Column("repeats", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("pitfall", sa.Text, nullable=False),
        sa.Column("resolved_at", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index(
        "ix_lessons_group", "lessons", ["project_id", "branch", "command_hash", "resolved_at"]
    )


def downgrade() -> None:
    op.drop_table("lessons")
    with op.batch_alter_table("attempts") as batch:
        batch.drop_constraint("fk_attempts_resolved_by", type_="foreignkey")
        for column in ("resolved_by_event_id", "duplicate_of", "change_hash", "files",
                       "attempt_number"):
            batch.drop_column(column)
