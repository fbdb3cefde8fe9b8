"""memory derived again now that a line of a code frame is never an error line

vitest, jest, babel, rustc and gcc quote the source under an error in a numbered gutter; when a
pipe's tail cut the error itself, a quoted line (`77|  throw new CryptoError(`) became a
lesson's last error. No table changes: a `pending_jobs` row asks the worker to derive memory
again under this rule.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-08
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.get_bind().execute(
        sa.text(
            "INSERT INTO pending_jobs (name, reason, created_at) SELECT 'rebuild_procedures', "
            ":reason, :now WHERE EXISTS (SELECT 1 FROM captured_events WHERE kind = 'command') "
            "AND NOT EXISTS (SELECT 1 FROM pending_jobs WHERE name = 'rebuild_procedures')"
        ),
        {
            "reason": "schema 0021 reads no line of a code frame as an error",
            "now": time.time(),
        },
    )


def downgrade() -> None:
    pass  # the rows derived under this rule are derived again by the next rebuild
