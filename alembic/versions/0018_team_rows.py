"""team rows are data: each forgotten word names its machine and forget, a pulled one is
marked as such (the next pull deletes it when the team no longer holds it), and the hook reads
the records through an index on their bucket rather than all of them

Revision ID: 0018
Revises: 0016
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("forgotten_texts") as batch:
        batch.add_column(sa.Column("machine", sa.Text))
        batch.add_column(sa.Column("forget_key", sa.Text))
        batch.add_column(sa.Column("pulled_at", sa.Float))
    op.create_index("ix_forgotten_texts_bucket", "forgotten_texts", ["bucket"])


def downgrade() -> None:
    op.drop_index("ix_forgotten_texts_bucket", "forgotten_texts")
    with op.batch_alter_table("forgotten_texts") as batch:
        batch.drop_column("pulled_at")
        batch.drop_column("forget_key")
        batch.drop_column("machine")
