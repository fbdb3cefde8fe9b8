"""a compound command's failure is its failing step's: git's refusals are recognised, and the
steps after the one that failed never ran

A `pending_jobs` row asks the worker to derive the runs, lessons and known errors again: a
database derived before filed `git add <ignored path> && git commit ...` failing under the
commit, and left `git commit ... && git push` failing without upstream under no step at all.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.get_bind().execute(
        sa.text(
            "INSERT INTO pending_jobs (name, reason, created_at) SELECT 'rebuild_procedures', "
            ":reason, :now WHERE EXISTS (SELECT 1 FROM captured_events WHERE kind = 'command' "
            "AND outcome = 'failure') AND NOT EXISTS "
            "(SELECT 1 FROM pending_jobs WHERE name = 'rebuild_procedures')"
        ),
        {"reason": "schema 0013 files a compound failure under its step", "now": time.time()},
    )


def downgrade() -> None:
    """Nothing to undo: the rebuild derives what the events say."""
