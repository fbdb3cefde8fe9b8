"""commands are judged on the program they run: wrappers seen through, bookkeeping no procedure

`rtk git status` is a read and `rtk bun run test` is `bun run test` (remem/shell/wrappers.py);
`git add`, `git commit`, `gh pr list` keep books and are never procedures; a tool is read at
the program's position, so `pip install pytest` is a fix rather than a run of pytest; and a
runner's exit notice (`error: script "lint" exited with code 1`) is never an error's line
while the tool's own line is there. No table changes: a `pending_jobs` row asks the worker to
derive memory again under these rules.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from alembic import op

revision = "0019"
down_revision = "0018"
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
            "reason": "schema 0019 judges commands on the program they run, past wrappers",
            "now": time.time(),
        },
    )


def downgrade() -> None:
    pass  # the rows derived under these rules are derived again by the next rebuild
