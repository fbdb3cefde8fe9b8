"""forgotten texts: what `remem forget` forgot, hashed, so that the hook, import and the team
mask it from then on; and the index that makes a tool call one run whatever session repeats it

A `pending_jobs` row asks the worker to derive procedures again: their bodies now quote the
names they hold (directory, branch, project), which a body stored before held as they were.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "forgotten_texts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("bucket", sa.Integer, nullable=False),
        sa.Column("salt", sa.Text, nullable=False),
        sa.Column("digest", sa.Text, nullable=False, unique=True),
        sa.Column("forgotten_at", sa.Float, nullable=False),
    )
    op.create_index(
        "ix_captured_events_tool_use",
        "captured_events",
        ["tool_use_id"],
        sqlite_where=sa.text("tool_use_id IS NOT NULL"),
        postgresql_where=sa.text("tool_use_id IS NOT NULL"),
    )
    op.get_bind().execute(
        sa.text(
            "INSERT INTO pending_jobs (name, reason, created_at) SELECT 'rebuild_procedures', "
            ":reason, :now WHERE EXISTS (SELECT 1 FROM procedures) AND NOT EXISTS "
            "(SELECT 1 FROM pending_jobs WHERE name = 'rebuild_procedures')"
        ),
        {"reason": "schema 0012 quotes recorded names in procedure bodies", "now": time.time()},
    )


def downgrade() -> None:
    op.drop_index("ix_captured_events_tool_use", "captured_events")
    op.drop_table("forgotten_texts")
