"""group state: each workflow group's tally and its sessions, and procedure evidence as rows

Evidence ids move from each procedure's JSON list into procedure_evidence; the list stays on
the procedure, capped to its newest ids. A `pending_jobs` row asks the worker to re-derive
memory, which fills the tallies.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

import json
import time

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "group_states",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("scope", sa.Text, nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("workflow", sa.Text, nullable=False),
        sa.Column("workflow_hash", sa.Text, nullable=False),
        sa.Column("tally", sa.Text, nullable=False),
        sa.Column("oldest_fresh_at", sa.Float),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.UniqueConstraint(
            "project_id", "scope", "branch", "directory", "workflow_hash",
            name="uq_group_states_group",
        ),
    )  # fmt: skip
    op.create_index("ix_group_states_aging", "group_states", ["oldest_fresh_at", "id"])
    op.create_index("ix_group_states_workflow", "group_states", ["project_id", "workflow_hash"])
    op.create_table(
        "group_sessions",
        sa.Column("group_id", sa.Integer, sa.ForeignKey("group_states.id"), nullable=False),
        sa.Column("session_id", sa.Integer, nullable=False),
        sa.Column("last_verified_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("group_id", "session_id", name="pk_group_sessions"),
    )
    op.create_index(
        "ix_group_sessions_time", "group_sessions", ["group_id", "last_verified_at"]
    )
    evidence = op.create_table(
        "procedure_evidence",
        sa.Column("procedure_id", sa.Integer, nullable=False),
        sa.Column("event_id", sa.Integer, nullable=False),
        sa.Column("verified_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("procedure_id", "event_id", name="pk_procedure_evidence"),
    )
    op.create_index(
        "ix_procedure_evidence_time",
        "procedure_evidence",
        ["procedure_id", "verified_at", "event_id"],
    )
    op.create_index("ix_procedure_evidence_event", "procedure_evidence", ["event_id"])
    bind = op.get_bind()
    times = dict(bind.execute(sa.text("SELECT id, event_at FROM captured_events")).all())
    rows = []
    for procedure_id, encoded in bind.execute(
        sa.text("SELECT id, evidence_event_ids FROM procedures")
    ).all():
        for event_id in sorted(set(json.loads(encoded or "[]"))):
            if int(event_id) in times:
                rows.append(
                    {
                        "procedure_id": procedure_id,
                        "event_id": int(event_id),
                        "verified_at": times[int(event_id)],
                    }
                )
    if rows:
        op.bulk_insert(evidence, rows)
    bind.execute(
        sa.text(
            "INSERT INTO pending_jobs (name, reason, created_at) SELECT 'rebuild_procedures', "
            ":reason, :now WHERE EXISTS (SELECT 1 FROM captured_events) AND NOT EXISTS "
            "(SELECT 1 FROM pending_jobs WHERE name = 'rebuild_procedures')"
        ),
        {"reason": "schema 0007 keeps a tally per workflow group", "now": time.time()},
    )


def downgrade() -> None:
    """Evidence goes back into each procedure's list, every id of it."""
    bind = op.get_bind()
    found: dict[int, list[int]] = {}
    for procedure_id, event_id in bind.execute(
        sa.text("SELECT procedure_id, event_id FROM procedure_evidence ORDER BY event_id")
    ).all():
        found.setdefault(procedure_id, []).append(int(event_id))
    for procedure_id, ids in found.items():
        bind.execute(
            sa.text("UPDATE procedures SET evidence_event_ids = :ids WHERE id = :id"),
            {"ids": json.dumps(ids), "id": procedure_id},
        )
    op.drop_index("ix_procedure_evidence_event", "procedure_evidence")
    op.drop_index("ix_procedure_evidence_time", "procedure_evidence")
    op.drop_table("procedure_evidence")
    op.drop_index("ix_group_sessions_time", "group_sessions")
    op.drop_table("group_sessions")
    op.drop_index("ix_group_states_workflow", "group_states")
    op.drop_index("ix_group_states_aging", "group_states")
    op.drop_table("group_states")
