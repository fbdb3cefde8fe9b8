"""a procedure keeps fingerprints of what its command runs

`procedures.inputs` holds, as a JSON list, the fingerprints (path, size, modification time,
hash of the task's own definition) of the script or the named task its command runs, read when
a run verified it (`inputs_read_at`); readers compare them with the files. A rebuild reads them
for the procedures it clears and keeps them in `procedure_identities` until the group is
promoted again. A shipped event carries, in the team database, the fingerprints the machine
that shipped it read (`captured_events.inputs`): the team's procedures take them, and the pulled
ones carry them to every machine, which compares them with its own checkout.
A `pending_jobs` row asks the worker to rebuild, which reads them for existing procedures.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def _inputs() -> sa.Column[str]:
    return sa.Column("inputs", sa.Text, nullable=False, server_default=sa.text("'[]'"))


def upgrade() -> None:
    # Plain ADD COLUMN on both backends: a batch would copy `procedures` into a new table on
    # SQLite, without its AUTOINCREMENT (ids are never reused: a rebuild gives them back).
    for table in ("procedures", "procedure_identities"):
        op.add_column(table, _inputs())
        op.add_column(table, sa.Column("inputs_read_at", sa.Float))
    op.add_column("team_procedures", _inputs())
    op.add_column("captured_events", sa.Column("inputs", sa.Text))
    op.get_bind().execute(
        sa.text(
            "INSERT INTO pending_jobs (name, reason, created_at) SELECT 'rebuild_procedures', "
            ":reason, :now WHERE EXISTS (SELECT 1 FROM procedures) AND NOT EXISTS "
            "(SELECT 1 FROM pending_jobs WHERE name = 'rebuild_procedures')"
        ),
        {"reason": "schema 0017 reads what procedures run", "now": time.time()},
    )


def downgrade() -> None:
    # SQLite drops a column in place since 3.35, keeping the table (and its AUTOINCREMENT).
    op.drop_column("captured_events", "inputs")
    op.drop_column("team_procedures", "inputs")
    for table in ("procedure_identities", "procedures"):
        op.drop_column(table, "inputs_read_at")
        op.drop_column(table, "inputs")
