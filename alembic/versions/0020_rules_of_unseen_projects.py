"""memory derived again under the rules read from projects nobody tuned them to

A runner's echo of what it runs (`$ tsc --noEmit`) is no error line; bun test has a row of its
own; making a branch and opening a pull request keep books; a wrapper that cannot run never
breaks the procedure it wraps, and a command that cannot run here learns its sibling from any
session; states that are no errors (`nothing to commit`) teach nothing; a procedure shows the
command it runs; a fix is what changed state, smallest first. No table changes: a
`pending_jobs` row asks the worker to derive memory again under these rules.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from alembic import op

revision = "0020"
down_revision = "0019"
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
            "reason": "schema 0020 derives memory under the rules of unseen projects",
            "now": time.time(),
        },
    )


def downgrade() -> None:
    pass  # the rows derived under these rules are derived again by the next rebuild
