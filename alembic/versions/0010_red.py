"""red is not broken: each failed attempt says whether its command could not run at all

`attempts.cannot_run` marks the failures that break a procedure (not found, not installed, timed
out, misconfigured); the others only say the code is red on their branch. Group tallies also
keep every verified run and session, so a stale procedure shows its real runs. A `pending_jobs`
row asks the worker to re-derive memory under these rules.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ALTER, also on SQLite: a batch copy of a table others refer to would break their
    # foreign keys.
    op.add_column(
        "attempts",
        sa.Column("cannot_run", sa.Integer, nullable=False, server_default=sa.text("0")),
    )
    op.get_bind().execute(
        sa.text(
            "INSERT INTO pending_jobs (name, reason, created_at) SELECT 'rebuild_procedures', "
            ":reason, :now WHERE EXISTS (SELECT 1 FROM captured_events) AND NOT EXISTS "
            "(SELECT 1 FROM pending_jobs WHERE name = 'rebuild_procedures')"
        ),
        {"reason": "schema 0010 tells red code from commands that cannot run", "now": time.time()},
    )


def downgrade() -> None:
    op.drop_column("attempts", "cannot_run")
