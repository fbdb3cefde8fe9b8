"""drop excerpts: the redacted start of each dropped payload, for `remem drops`

Rows dropped before this revision keep a null excerpt.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dropped_payloads") as batch:
        batch.add_column(sa.Column("excerpt", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("dropped_payloads") as batch:
        batch.drop_column("excerpt")
