"""team: project keys, the machine of a team session, and the local side of a team link

A local database gains a shipping cursor per shared project, what the daemon last heard from the
team database, and the team's procedures and lessons pulled from it. A team database uses
`projects.project_key` and `sessions.machine`; the other tables stay empty there.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTERs, also on SQLite: a batch copy of a table others refer to would break their
    # foreign keys.
    op.add_column("projects", sa.Column("project_key", sa.Text))
    op.create_index("ix_projects_key", "projects", ["project_key"])
    op.add_column("sessions", sa.Column("machine", sa.Text))
    op.create_index("ix_captured_events_project", "captured_events", ["project_id", "id"])
    op.create_table(
        "team_links",
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), primary_key=True),
        sa.Column("project_key", sa.Text, nullable=False),
        sa.Column("shipped_event_id", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("shipped_at", sa.Float),
        sa.Column("pulled_at", sa.Float),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "team_state",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("value", sa.Text),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_table(
        "team_procedures",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("team_procedure_id", sa.Integer, nullable=False),
        sa.Column("scope", sa.Text, nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("workflow", sa.Text, nullable=False),
        sa.Column("workflow_hash", sa.Text, nullable=False),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("verified_runs", sa.Integer, nullable=False),
        sa.Column("distinct_sessions", sa.Integer, nullable=False),
        sa.Column("machines", sa.Integer, nullable=False),
        sa.Column("branches", sa.Text, nullable=False),
        sa.Column("files", sa.Text, nullable=False),
        sa.Column("files_more", sa.Integer, nullable=False),
        sa.Column("first_verified_at", sa.Float, nullable=False),
        sa.Column("last_verified_at", sa.Float, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("pulled_at", sa.Float, nullable=False),
        sa.UniqueConstraint("project_id", "team_procedure_id", name="uq_team_procedures_team_id"),
    )
    op.create_table(
        "team_lessons",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("team_lesson_id", sa.Integer, nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("workflow_hash", sa.Text, nullable=False),
        sa.Column("failed_attempts", sa.Integer, nullable=False),
        sa.Column("last_error", sa.Text),
        sa.Column("error_key", sa.Text),
        sa.Column("repeats", sa.Text, nullable=False),
        sa.Column("fix_files", sa.Text, nullable=False),
        sa.Column("resolved_at", sa.Float, nullable=False),
        sa.Column("pulled_at", sa.Float, nullable=False),
        sa.UniqueConstraint("project_id", "team_lesson_id", name="uq_team_lessons_team_id"),
    )
    op.create_index(
        "ix_team_lessons_workflow", "team_lessons", ["project_id", "directory", "workflow_hash"]
    )


def downgrade() -> None:
    op.drop_index("ix_team_lessons_workflow", "team_lessons")
    op.drop_table("team_lessons")
    op.drop_table("team_procedures")
    op.drop_table("team_state")
    op.drop_table("team_links")
    op.drop_index("ix_captured_events_project", "captured_events")
    op.drop_column("sessions", "machine")
    op.drop_index("ix_projects_key", "projects")
    op.drop_column("projects", "project_key")
