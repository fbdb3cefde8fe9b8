"""a read-only step's failure is a known error of its own, and a compound command's failure is
the step whose program its output names

A `pending_jobs` row asks the worker to derive the runs, lessons and known errors again: a
database derived before kept no run of `git add <ignored path>` failing (so no known error,
and no `git add -f` named as what worked), and filed `cat missing.txt && make test` failing
under `make test`, which never ran.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from alembic import op

revision = "0015"
down_revision = "0014"
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
        {
            "reason": "schema 0015 keeps a read's failure and files it under its step",
            "now": time.time(),
        },
    )


def downgrade() -> None:
    """Nothing to undo: the rebuild derives what the events say."""
