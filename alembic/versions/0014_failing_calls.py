"""the index that counts a session's failing calls: the report and `remem ui` read it per
session, where walking every event of every session was too slow on a large home

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_captured_events_failing",
        "captured_events",
        ["session_id"],
        sqlite_where=sa.text("kind = 'command' AND outcome = 'failure'"),
        postgresql_where=sa.text("kind = 'command' AND outcome = 'failure'"),
    )


def downgrade() -> None:
    op.drop_index("ix_captured_events_failing", "captured_events")
