"""workflows: runs per command step, project-wide procedures, known errors, rebuild

Derived tables (verifications, attempts, lessons) are dropped and created anew: the worker
re-derives them from the captured events under the new rules (a `pending_jobs` row asks it to,
and `remem procedures rebuild` does it at once). Procedures keep their rows, so archived ones
stay archived; the rebuild re-keys them by workflow.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _run_table(name: str, at: str, *extra: sa.Column) -> None:  # type: ignore[type-arg]
    op.create_table(
        name,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("event_id", sa.Integer, sa.ForeignKey("captured_events.id"), nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("workflow", sa.Text, nullable=False),
        sa.Column("workflow_hash", sa.Text, nullable=False),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("masked", sa.Integer, nullable=False),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("host", sa.Text, nullable=False),
        *extra,
        sa.Column(at, sa.Float, nullable=False),
        sa.UniqueConstraint("event_id", "step", name=f"uq_{name}_step"),
    )
    op.create_index(
        f"ix_{name}_group", name, ["project_id", "branch", "directory", "workflow_hash", at]
    )
    op.create_index(f"ix_{name}_workflow", name, ["project_id", "directory", "workflow_hash", at])


def upgrade() -> None:
    with op.batch_alter_table("captured_events") as batch:
        batch.add_column(sa.Column("directory", sa.Text))
        batch.add_column(sa.Column("output_excerpt", sa.Text))
        batch.add_column(sa.Column("event_at_reported", sa.Text))
    with op.batch_alter_table("extraction_tasks") as batch:
        batch.add_column(
            sa.Column("lease_expiries", sa.Integer, nullable=False, server_default=sa.text("0"))
        )
    op.drop_table("lessons")
    op.drop_table("attempts")
    op.drop_table("verifications")
    _run_table("verifications", "verified_at")
    _run_table(
        "attempts",
        "failed_at",
        sa.Column("exit_code", sa.Integer),
        sa.Column("error_excerpt", sa.Text),
        sa.Column("salient_error", sa.Text),
        sa.Column("attempt_number", sa.Integer, nullable=False, server_default=sa.text("1")),
        sa.Column("files", sa.Text),
        sa.Column("change_hash", sa.Text),
        sa.Column("duplicate_of", sa.Integer),
        sa.Column("resolved_by_event_id", sa.Integer, sa.ForeignKey("captured_events.id")),
    )
    _run_table("unverified_runs", "ran_at")
    op.create_table(
        "lessons",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("workflow_hash", sa.Text, nullable=False),
        sa.Column(
            "resolved_by_event_id", sa.Integer, sa.ForeignKey("captured_events.id"), nullable=False
        ),
        sa.Column("failed_attempts", sa.Integer, nullable=False),
        sa.Column("first_error", sa.Text),
        sa.Column("last_error", sa.Text),
        sa.Column("error_key", sa.Text),
        sa.Column("fix_files", sa.Text, nullable=False),
        sa.Column("repeats", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("pitfall", sa.Text, nullable=False),
        sa.Column("resolved_at", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint(
            "project_id", "branch", "directory", "workflow_hash", "resolved_by_event_id",
            name="uq_lessons_streak",
        ),
    )
    op.create_index(
        "ix_lessons_group",
        "lessons",
        ["project_id", "branch", "directory", "workflow_hash", "resolved_at"],
    )
    op.create_index(
        "ix_lessons_workflow", "lessons", ["project_id", "directory", "workflow_hash", "resolved_at"]
    )
    op.create_index("ix_lessons_error", "lessons", ["project_id", "error_key", "resolved_at"])

    op.drop_index("ix_procedures_listing", "procedures")
    op.rename_table("procedures", "procedures_0003")
    _free_postgresql_names("procedures", "procedures_0003")
    op.create_table(
        "procedures",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("scope", sa.Text, nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("workflow", sa.Text, nullable=False),
        sa.Column("workflow_hash", sa.Text, nullable=False),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("variants", sa.Text, nullable=False),
        sa.Column("topic_key", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("verified_runs", sa.Integer, nullable=False),
        sa.Column("distinct_sessions", sa.Integer, nullable=False),
        sa.Column("branches", sa.Text, nullable=False),
        sa.Column("evidence_event_ids", sa.Text, nullable=False),
        sa.Column("files", sa.Text, nullable=False),
        sa.Column("files_more", sa.Integer, nullable=False),
        sa.Column("first_verified_at", sa.Float, nullable=False),
        sa.Column("last_verified_at", sa.Float, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.CheckConstraint(
            "status IN ('active', 'broken', 'stale', 'archived')", name="ck_procedures_status"
        ),
        sa.CheckConstraint("scope IN ('branch', 'project')", name="ck_procedures_scope"),
        sa.UniqueConstraint(
            "project_id", "scope", "branch", "directory", "workflow_hash",
            name="uq_procedures_group",
        ),
        sqlite_autoincrement=True,
    )
    # Until the rebuild re-keys them, old procedures keep their whole command as the workflow.
    op.execute(
        "INSERT INTO procedures (id, project_id, scope, branch, directory, workflow, "
        "workflow_hash, command, variants, topic_key, status, confidence, verified_runs, "
        "distinct_sessions, branches, evidence_event_ids, files, files_more, first_verified_at, "
        "last_verified_at, body, created_at, updated_at) "
        "SELECT id, project_id, 'branch', branch, '.', command, command_hash, command, '[]', "
        "topic_key, status, confidence, verified_runs, distinct_sessions, '[]', "
        "evidence_event_ids, files, 0, first_verified_at, last_verified_at, body, created_at, "
        "updated_at FROM procedures_0003"
    )
    _advance_postgresql_sequence("procedures", "procedures_0003_id_seq")
    op.drop_table("procedures_0003")
    op.create_index("ix_procedures_listing", "procedures", ["project_id", "branch", "status"])
    op.create_table(
        "procedure_identities",
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("scope", sa.Text, nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("workflow_hash", sa.Text, nullable=False),
        sa.Column("procedure_id", sa.Integer, nullable=False, unique=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint(
            "project_id", "scope", "branch", "directory", "workflow_hash",
            name="pk_procedure_identities",
        ),
    )
    op.create_table(
        "pending_jobs",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    # Only a database that holds events has memory to re-derive.
    op.get_bind().execute(
        sa.text(
            "INSERT INTO pending_jobs (name, reason, created_at) SELECT 'rebuild_procedures', "
            ":reason, :now WHERE EXISTS (SELECT 1 FROM captured_events)"
        ),
        {"reason": "schema 0004 derives procedures from workflows", "now": time.time()},
    )


def _free_postgresql_names(table: str, renamed: str) -> None:
    """PostgreSQL keeps a renamed table's primary key, its unique constraint (an index, named
    in the schema's namespace) and its id sequence under their old names, which the new table
    needs: they take the renamed table's name. SQLite's names live and die with their table."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"ALTER TABLE {renamed} RENAME CONSTRAINT {table}_pkey TO {renamed}_pkey")
    op.execute(
        f"ALTER TABLE {renamed} RENAME CONSTRAINT uq_{table}_group TO uq_{renamed}_group"
    )
    op.execute(f"ALTER SEQUENCE {table}_id_seq RENAME TO {renamed}_id_seq")


def _advance_postgresql_sequence(table: str, previous_sequence: str | None = None) -> None:
    """Rows copied with their ids leave PostgreSQL's sequence behind them: the next insert
    would take an id already used. It moves past them, and past any id the previous table's
    sequence handed out (ids are never reused)."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    high = bind.execute(sa.text(f"SELECT COALESCE(MAX(id), 0) FROM {table}")).scalar_one()
    if previous_sequence is not None:
        last, called = bind.execute(
            sa.text(f"SELECT last_value, is_called FROM {previous_sequence}")
        ).one()
        high = max(high, last if called else 0)
    if high > 0:
        bind.execute(
            sa.text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), :high)"),
            {"high": high},
        )


def _run_table_0003(name: str, at: str, *extra: sa.Column) -> None:  # type: ignore[type-arg]
    op.create_table(
        name,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "event_id", sa.Integer, sa.ForeignKey("captured_events.id"), nullable=False, unique=True
        ),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("command_hash", sa.Text, nullable=False),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("host", sa.Text, nullable=False),
        *extra,
        sa.Column(at, sa.Float, nullable=False),
    )
    op.create_index(f"ix_{name}_group", name, ["project_id", "branch", "command_hash", at])


def downgrade() -> None:
    """Back to 0003's shape. Events stay; the runs and lessons of 0004 have no place in it and
    go (0003 derives runs only from windows it has not processed yet); branch procedures stay
    under their command, project-wide ones go."""
    for table in ("pending_jobs", "procedure_identities", "unverified_runs", "lessons"):
        op.drop_table(table)
    op.drop_table("attempts")
    op.drop_table("verifications")
    _run_table_0003("verifications", "verified_at")
    _run_table_0003(
        "attempts",
        "failed_at",
        sa.Column("exit_code", sa.Integer),
        sa.Column("error_excerpt", sa.Text),
        sa.Column("attempt_number", sa.Integer, nullable=False, server_default=sa.text("1")),
        sa.Column("files", sa.Text),
        sa.Column("change_hash", sa.Text),
        sa.Column("duplicate_of", sa.Integer),
        sa.Column(
            "resolved_by_event_id",
            sa.Integer,
            sa.ForeignKey("captured_events.id", name="fk_attempts_resolved_by"),
        ),
    )
    op.create_table(
        "lessons",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("command_hash", sa.Text, nullable=False),
        sa.Column(
            "resolved_by_event_id",
            sa.Integer,
            sa.ForeignKey("captured_events.id"),
            nullable=False,
            unique=True,
        ),
        sa.Column("failed_attempts", sa.Integer, nullable=False),
        sa.Column("first_error", sa.Text),
        sa.Column("last_error", sa.Text),
        sa.Column("fix_files", sa.Text, nullable=False),
        sa.Column("repeats", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("pitfall", sa.Text, nullable=False),
        sa.Column("resolved_at", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index(
        "ix_lessons_group", "lessons", ["project_id", "branch", "command_hash", "resolved_at"]
    )
    _procedures_0003()
    with op.batch_alter_table("extraction_tasks") as batch:
        batch.drop_column("lease_expiries")
    with op.batch_alter_table("captured_events") as batch:
        for column in ("event_at_reported", "output_excerpt", "directory"):
            batch.drop_column(column)


def _procedures_0003() -> None:
    """0003 keys a procedure by its whitespace-collapsed command."""
    import hashlib

    bind = op.get_bind()
    rows = bind.execute(
        sa.text(
            "SELECT id, project_id, branch, command, topic_key, status, confidence, "
            "verified_runs, distinct_sessions, evidence_event_ids, files, first_verified_at, "
            "last_verified_at, body, created_at, updated_at FROM procedures "
            "WHERE scope = 'branch' ORDER BY status = 'archived' DESC, id"
        )
    ).all()
    op.drop_index("ix_procedures_listing", "procedures")
    op.drop_table("procedures")
    procedures = op.create_table(
        "procedures",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("workflow_key", sa.Text, nullable=False),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("command_hash", sa.Text, nullable=False),
        sa.Column("topic_key", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("verified_runs", sa.Integer, nullable=False),
        sa.Column("distinct_sessions", sa.Integer, nullable=False),
        sa.Column("evidence_event_ids", sa.Text, nullable=False),
        sa.Column("files", sa.Text, nullable=False),
        sa.Column("first_verified_at", sa.Float, nullable=False),
        sa.Column("last_verified_at", sa.Float, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.CheckConstraint(
            "status IN ('active', 'broken', 'stale', 'archived')", name="ck_procedures_status"
        ),
        sa.UniqueConstraint("project_id", "branch", "command_hash", name="uq_procedures_group"),
    )
    op.create_index("ix_procedures_listing", "procedures", ["project_id", "branch", "status"])
    kept, seen = [], set()
    for row in rows:
        command = " ".join(row.command.split())
        digest = hashlib.sha256(command.encode("utf-8", "surrogatepass")).hexdigest()
        if (row.project_id, row.branch, digest) in seen:
            continue
        seen.add((row.project_id, row.branch, digest))
        slug = "-".join("".join(c if c.isalnum() else " " for c in command.lower()).split())
        kept.append(
            {
                **row._mapping,
                "command": command,
                "command_hash": digest,
                "workflow_key": slug[:64].rstrip("-") or "command",
            }
        )
    if kept:
        op.bulk_insert(procedures, kept)
    _advance_postgresql_sequence("procedures")
