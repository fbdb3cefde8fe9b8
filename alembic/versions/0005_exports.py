"""exports: the registry of drafts `remem procedures export` wrote

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "exports",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("procedure_id", sa.Integer, nullable=False),
        sa.Column("format", sa.Text, nullable=False),
        sa.Column("path", sa.Text, nullable=False, unique=True),
        sa.Column("draft_sha256", sa.Text, nullable=False),
        sa.Column("procedure_sha256", sa.Text, nullable=False),
        sa.Column("exported_at", sa.Float, nullable=False),
        sa.CheckConstraint(
            "format IN ('claude-skill', 'agents-md', 'runbook')", name="ck_exports_format"
        ),
    )
    op.create_index("ix_exports_procedure", "exports", ["procedure_id"])


def downgrade() -> None:
    """The drafts stay where they were written; only remem's record of them goes."""
    op.drop_index("ix_exports_procedure", "exports")
    op.drop_table("exports")
