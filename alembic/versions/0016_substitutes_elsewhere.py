"""a substitute may have run in another directory: the same command, run from where it works

`substitutions.substitute_directory` says where the command that passed instead ran: the
failed run's directory, or another where the same command passed (`node assets/build.js`
failing at the root, `cd assets && node build.js` passing). Stored rows ran where they failed.
A `pending_jobs` row asks the worker to derive memory again: to find those, and to read a
bundler's own error line (`✘ [ERROR] Could not resolve …`) rather than the stack after it.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("substitutions") as batch:
        batch.add_column(sa.Column("substitute_directory", sa.Text))
    op.get_bind().execute(sa.text("UPDATE substitutions SET substitute_directory = directory"))
    with op.batch_alter_table("substitutions") as batch:
        batch.alter_column("substitute_directory", existing_type=sa.Text, nullable=False)
    op.get_bind().execute(
        sa.text(
            "INSERT INTO pending_jobs (name, reason, created_at) SELECT 'rebuild_procedures', "
            ":reason, :now WHERE EXISTS (SELECT 1 FROM captured_events WHERE kind = 'command' "
            "AND outcome = 'failure') AND NOT EXISTS "
            "(SELECT 1 FROM pending_jobs WHERE name = 'rebuild_procedures')"
        ),
        {
            "reason": "schema 0016 finds the command that passed in another directory",
            "now": time.time(),
        },
    )


def downgrade() -> None:
    with op.batch_alter_table("substitutions") as batch:
        batch.drop_column("substitute_directory")
