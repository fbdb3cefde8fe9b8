"""Table definitions. Timestamps are UTC epoch seconds (REAL) named *_at, in every table."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from remem.db import columns
from remem.db.vocabulary import (
    ADVICE_KINDS,
    EXPORT_FORMATS,
    LEDGER_KINDS,
    PROCEDURE_STATUSES,
    TASK_STATUSES,
)

metadata = MetaData()

OUTCOMES = ("success", "failure", "interrupted", "backgrounded", "unknown")
EVENT_KINDS = ("command", "edit", "session_start")


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


projects = Table(
    "projects",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("root", Text, nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    # The machine-independent name of the project (remem/team/keys.py), once shipping has read
    # it; in the team database, root is that key too.
    Column("project_key", Text),
    Index("ix_projects_key", "project_key"),
)

sessions = Table(
    "sessions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("host", Text, nullable=False),
    Column("session_key", Text, nullable=False),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("started_at", Float, nullable=False),
    Column("last_event_at", Float, nullable=False),
    # In the team database, the machine the session ran on (NULL in a local database).
    Column("machine", Text),
    UniqueConstraint("host", "session_key", name="uq_sessions_host_key"),
)

# What a column of an event holds (remem/db/columns.py), as a column type.
_TYPES = {
    columns.TEXT: Text,
    columns.INTEGER: Integer,
    columns.REAL: Float,
    columns.JSON_LIST: Text,
}
_EVENT_COLUMN_OPTIONS: dict[str, tuple[Any, ...]] = {
    "session_id": (ForeignKey("sessions.id"),),
    "project_id": (ForeignKey("projects.id"),),
}


def _event_columns() -> list[Column[Any]]:
    return [
        Column(
            name,
            _TYPES[kind],
            *_EVENT_COLUMN_OPTIONS.get(name, ()),
            nullable=not required,
            unique=True if name == "idempotency_key" else None,
        )
        for name, (kind, required) in columns.EVENT_COLUMN_KINDS.items()
    ]


captured_events = Table(
    "captured_events",
    metadata,
    Column("id", Integer, primary_key=True),
    *_event_columns(),
    # In the team database: the fingerprints of what the event's verified steps ran, read by
    # the machine that shipped it (remem/team/ship.py), as its team has no files to read.
    Column("inputs", Text),
    CheckConstraint(_one_of("kind", EVENT_KINDS), name="ck_captured_events_kind"),
    CheckConstraint(
        "outcome IS NULL OR " + _one_of("outcome", OUTCOMES), name="ck_captured_events_outcome"
    ),
    Index("ix_captured_events_session", "session_id", "id"),
    # What a shared project has not shipped yet: its events past the cursor.
    Index("ix_captured_events_project", "project_id", "id"),
    # A run is its tool call: a resumed session's file repeats the calls it copied from the
    # session it resumed, under its own session id (remem/capture/store.py).
    Index(
        "ix_captured_events_tool_use",
        "tool_use_id",
        sqlite_where=text("tool_use_id IS NOT NULL"),
        postgresql_where=text("tool_use_id IS NOT NULL"),
    ),
    # A session's failing calls, which the report counts per session (remem/admin/report.py).
    Index(
        "ix_captured_events_failing",
        "session_id",
        sqlite_where=text("kind = 'command' AND outcome = 'failure'"),
        postgresql_where=text("kind = 'command' AND outcome = 'failure'"),
    ),
    sqlite_autoincrement=True,
)

extraction_tasks = Table(
    "extraction_tasks",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("idempotency_key", Text, nullable=False, unique=True),
    Column("session_id", Integer, ForeignKey("sessions.id"), nullable=False),
    Column("kind", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("priority", Integer, nullable=False, server_default=text("0")),
    Column("high_watermark_event_id", Integer, nullable=False),
    Column("cursor_event_id", Integer, nullable=False, server_default=text("0")),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    # Leases that ran out while the task was processing: a task that kills its worker every
    # time must not be retried for ever.
    Column("lease_expiries", Integer, nullable=False, server_default=text("0")),
    Column("run_after", Float, nullable=False),
    Column("lease_owner", Text),
    Column("lease_expires_at", Float),
    Column("last_error", Text),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    CheckConstraint(_one_of("status", TASK_STATUSES), name="ck_extraction_tasks_status"),
    # Only pending rows are in the claim index, so claiming costs the same with a million done
    # tasks as with none.
    Index(
        "ix_extraction_tasks_claim",
        "priority",
        "id",
        sqlite_where=text("status = 'pending'"),
        postgresql_where=text("status = 'pending'"),
    ),
    Index(
        "ix_extraction_tasks_lease",
        "lease_expires_at",
        sqlite_where=text("status = 'processing'"),
        postgresql_where=text("status = 'processing'"),
    ),
)

dropped_payloads = Table(
    "dropped_payloads",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("idempotency_key", Text, nullable=False, unique=True),
    Column("reason", Text, nullable=False),
    Column("host", Text),
    Column("hook_event", Text),
    Column("size_bytes", Integer, nullable=False),
    Column("payload_sha256", Text, nullable=False),
    Column("detail", Text),
    Column("excerpt", Text),
    Column("dropped_at", Float, nullable=False),
)

# Texts `remem forget` forgot, never the text itself (remem/record/forgotten.py): what the
# hook, import and spool ingestion mask from then on, and, in the team database, what a
# machine's copy shipped later is masked of on arrival. Each record names the machine and the
# forget that made it; pulled_at is set on a record pulled from the team database, which the
# next pull deletes when the team no longer holds it. The hook reads records by bucket.
forgotten_texts = Table(
    "forgotten_texts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("bucket", Integer, nullable=False),
    Column("salt", Text, nullable=False),
    Column("digest", Text, nullable=False, unique=True),
    Column("forgotten_at", Float, nullable=False),
    Column("machine", Text),
    Column("forget_key", Text),
    Column("pulled_at", Float),
    Index("ix_forgotten_texts_bucket", "bucket"),
)

worker_heartbeats = Table(
    "worker_heartbeats",
    metadata,
    Column("worker_id", Text, primary_key=True),
    Column("pid", Integer, nullable=False),
    Column("hostname", Text, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("heartbeat_at", Float, nullable=False),
    Column("current_task_id", Integer),
)


SCOPES = ("branch", "project")

# Marks in a table's info (tables_marked() finds them):
#   derived: every row is derived from the captured events; a rebuild clears the table and the
#     worker derives it again. Procedures and their evidence are derived too, but an archived
#     procedure is the user's verdict and keeps its rows: they are cleared by rule, not whole.
#   runs: the runs of a workflow (verified, failed, unverified) a group's procedure is made of.
#   pulled: the team's memory pulled into a local database; never derived here.


# A command's steps (DESIGN.md §5), one row per (event, step): verified runs are the evidence
# procedures are built from, failed runs become attempts, and runs whose status is hidden (a
# masked pipeline whose output shows no summary) are kept as unverified. branch is '' when the
# work tree had none (detached HEAD, no repository), so that the keys below treat "no branch"
# as one value. command is the step's original text (a variant); workflow is what groups it.
def _run_columns() -> list[Column[Any]]:
    """What a verification, an attempt and an unverified run all record of the step."""
    return [
        Column("id", Integer, primary_key=True),
        Column("event_id", Integer, ForeignKey("captured_events.id"), nullable=False),
        Column("step", Integer, nullable=False),
        Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
        Column("branch", Text, nullable=False),
        Column("directory", Text, nullable=False),
        Column("workflow", Text, nullable=False),
        Column("workflow_hash", Text, nullable=False),
        Column("command", Text, nullable=False),
        Column("masked", Integer, nullable=False),
        Column("session_id", Integer, ForeignKey("sessions.id"), nullable=False),
        Column("host", Text, nullable=False),
    ]


def _run_indexes(table: str, at: str) -> list[Any]:
    return [
        UniqueConstraint("event_id", "step", name=f"uq_{table}_step"),
        Index(f"ix_{table}_group", "project_id", "branch", "directory", "workflow_hash", at),
        Index(f"ix_{table}_workflow", "project_id", "directory", "workflow_hash", at),
    ]


verifications = Table(
    "verifications",
    metadata,
    *_run_columns(),
    Column("verified_at", Float, nullable=False),
    *_run_indexes("verifications", "verified_at"),
    info={"derived": True, "runs": True},
)

# Failed runs of a workflow: they become lessons; those that could not run at all (not found,
# not installed, timed out, misconfigured: remem/shell/runnable.py) lower confidence and break
# procedures, while the others only say the code is red on their branch.
attempts = Table(
    "attempts",
    metadata,
    *_run_columns(),
    Column("exit_code", Integer),
    Column("error_excerpt", Text),
    Column("salient_error", Text),
    Column("failed_at", Float, nullable=False),
    # The fix journal (DESIGN.md §6): what changed before this attempt, and whether it was the
    # same change as an earlier attempt of the streak; the success that closed the streak.
    Column("attempt_number", Integer, nullable=False, server_default=text("1")),
    Column("files", Text),
    Column("change_hash", Text),
    Column("duplicate_of", Integer),
    Column("resolved_by_event_id", Integer, ForeignKey("captured_events.id")),
    Column("cannot_run", Integer, nullable=False, server_default=text("0")),
    *_run_indexes("attempts", "failed_at"),
    info={"derived": True, "runs": True},
)

unverified_runs = Table(
    "unverified_runs",
    metadata,
    *_run_columns(),
    Column("ran_at", Float, nullable=False),
    *_run_indexes("unverified_runs", "ran_at"),
    info={"derived": True, "runs": True},
)

lessons = Table(
    "lessons",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("branch", Text, nullable=False),
    Column("directory", Text, nullable=False),
    Column("workflow_hash", Text, nullable=False),
    Column("resolved_by_event_id", Integer, ForeignKey("captured_events.id"), nullable=False),
    Column("failed_attempts", Integer, nullable=False),
    Column("first_error", Text),
    Column("last_error", Text),
    # The salient line of the last error, normalised: the same error under another command or
    # on another branch has the same key (DESIGN.md §6).
    Column("error_key", Text),
    Column("fix_files", Text, nullable=False),
    Column("repeats", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("pitfall", Text, nullable=False),
    Column("resolved_at", Float, nullable=False),
    Column("created_at", Float, nullable=False),
    UniqueConstraint(
        "project_id",
        "branch",
        "directory",
        "workflow_hash",
        "resolved_by_event_id",
        name="uq_lessons_streak",
    ),
    Index("ix_lessons_group", "project_id", "branch", "directory", "workflow_hash", "resolved_at"),
    Index("ix_lessons_workflow", "project_id", "directory", "workflow_hash", "resolved_at"),
    Index("ix_lessons_error", "project_id", "error_key", "resolved_at"),
    info={"derived": True},
)

# "Instead of A, B worked here" (DESIGN.md §6): a failed run of a workflow and the first run
# of another workflow for the same purpose that passed after it in the same session, with no
# edit in between. One row per failed run; found by the failing workflow or by its error's key
# (the salient line, normalised as a lesson's), each one indexed lookup per project.
substitutions = Table(
    "substitutions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("session_id", Integer, ForeignKey("sessions.id"), nullable=False),
    Column("branch", Text, nullable=False),
    Column("directory", Text, nullable=False),
    Column("failed_event_id", Integer, ForeignKey("captured_events.id"), nullable=False),
    Column("failed_step", Integer, nullable=False),
    Column("failed_workflow", Text, nullable=False),
    Column("failed_workflow_hash", Text, nullable=False),
    Column("error", Text),
    Column("error_key", Text),
    Column("substitute_event_id", Integer, ForeignKey("captured_events.id"), nullable=False),
    Column("substitute_workflow", Text, nullable=False),
    Column("substitute_workflow_hash", Text, nullable=False),
    Column("substitute_command", Text, nullable=False),
    # Where the substitute ran: the failed run's directory, or another where the same command
    # passed (remem/shell/purpose.py, same_elsewhere).
    Column("substitute_directory", Text, nullable=False),
    Column("failed_at", Float, nullable=False),
    Column("found_at", Float, nullable=False),
    UniqueConstraint("failed_event_id", "failed_step", name="uq_substitutions_failed"),
    Index("ix_substitutions_session", "session_id", "failed_event_id"),
    Index("ix_substitutions_workflow", "project_id", "failed_workflow_hash", "found_at"),
    Index("ix_substitutions_error", "project_id", "error_key", "found_at"),
    info={"derived": True},
)

# Each distinct error of a workflow's failing attempts, from its first sighting to the first later
# run that no longer shows it (DESIGN.md §6): one row per stretch of attempts showing it. The fix
# is what came between: files edited and commands that passed (JSON lists). Open while
# resolved_by_event_id is NULL. error and fix_commands have the branch's name masked.
known_errors = Table(
    "known_errors",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("branch", Text, nullable=False),
    Column("directory", Text, nullable=False),
    Column("workflow", Text, nullable=False),
    Column("workflow_hash", Text, nullable=False),
    Column("error_key", Text, nullable=False),
    Column("error", Text, nullable=False),
    Column("first_event_id", Integer, ForeignKey("captured_events.id"), nullable=False),
    Column("last_event_id", Integer, ForeignKey("captured_events.id"), nullable=False),
    Column("session_id", Integer, nullable=False),  # the last sighting's
    Column("first_seen_at", Float, nullable=False),
    Column("last_seen_at", Float, nullable=False),
    Column("times_seen", Integer, nullable=False),
    Column("sessions", Integer, nullable=False),
    Column("resolved_by_event_id", Integer, ForeignKey("captured_events.id")),
    Column("resolved_at", Float),
    Column("fix_files", Text, nullable=False),
    Column("fix_commands", Text, nullable=False),
    # Fixed only by editing files its failing runs named (a test being written): told last.
    Column("fix_in_command", Integer, nullable=False, server_default=text("0")),
    Column("updated_at", Float, nullable=False),
    UniqueConstraint(
        "project_id",
        "branch",
        "directory",
        "workflow_hash",
        "first_event_id",
        name="uq_known_errors_sighting",
    ),
    Index(
        "ix_known_errors_group",
        "project_id",
        "branch",
        "directory",
        "workflow_hash",
        "first_seen_at",
    ),
    Index("ix_known_errors_recent", "project_id", "last_seen_at"),
    Index("ix_known_errors_open", "session_id", "resolved_by_event_id"),
    # The hook's advice after a failure: the fixed errors of a project with a key (0010).
    Index("ix_known_errors_error", "project_id", "error_key", "resolved_at"),
    info={"derived": True},
)

# What the hook told each session (remem.agent.advice), at most once per (kind, key): a record,
# not derived, so a rebuild keeps it; `remem forget` erases it with its event or its session.
# The key names what was said by hashes, never by recorded text.
advice_given = Table(
    "advice_given",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("session_id", Integer, ForeignKey("sessions.id"), nullable=False),
    Column("event_id", Integer, ForeignKey("captured_events.id")),  # None: before a command ran
    Column("kind", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("given_at", Float, nullable=False),
    # The workflow hashes whose run follows the advice (a fix's commands, the substitute), as
    # a JSON list: what the session's ledger looks for in the calls after it (0011).
    Column("follow", Text),
    CheckConstraint(_one_of("kind", ADVICE_KINDS), name="ck_advice_given_kind"),
    UniqueConstraint("session_id", "kind", "key", name="uq_advice_given_once"),
    Index("ix_advice_given_event", "event_id"),
    info={"record": True},
)

# What the page of the digest the SessionStart hook printed held (remem.agent.usage), one row
# per page printed: a record, like advice_given. Procedures as a JSON list of [id, directory,
# workflow hash] (a rebuild gives ids back, a workflow stays); known errors as a JSON list of
# hashes of their keys, never recorded text. One row, so the hook's write stays one insert.
digest_shown = Table(
    "digest_shown",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("session_id", Integer, ForeignKey("sessions.id"), nullable=False),
    Column("event_id", Integer, ForeignKey("captured_events.id"), nullable=False),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("page", Integer, nullable=False),
    Column("procedures", Text, nullable=False),
    Column("known_errors", Text, nullable=False),
    Column("shown_at", Float, nullable=False),
    Index("ix_digest_shown_session", "session_id"),
    Index("ix_digest_shown_event", "event_id"),
    Index("ix_digest_shown_project", "project_id", "shown_at"),
    info={"record": True},
)

# Per session, what became of each thing shown or advised (remem/procedures/ledger.py): a
# procedure used, and passing; a known error met again; advice followed, and then failing.
session_ledger = Table(
    "session_ledger",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("session_id", Integer, ForeignKey("sessions.id"), nullable=False),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("kind", Text, nullable=False),
    Column("procedure_id", Integer),
    Column("directory", Text),
    Column("workflow_hash", Text),
    Column("item_key", Text),  # a known error's key hash; advice's kind and key
    Column("used", Integer, nullable=False),
    Column("passed", Integer, nullable=False),
    Column("repeated", Integer, nullable=False),
    Column("followed", Integer, nullable=False),
    Column("failed_after", Integer, nullable=False),
    Column("failed_at", Float),  # when what was used or followed failed last
    Column("at", Float, nullable=False),  # when it was shown or given
    CheckConstraint(_one_of("kind", LEDGER_KINDS), name="ck_session_ledger_kind"),
    Index("ix_session_ledger_session", "session_id"),
    Index("ix_session_ledger_workflow", "project_id", "directory", "workflow_hash"),
    Index("ix_session_ledger_time", "project_id", "at"),
    info={"derived": True},
)

# The ledger summed per workflow (remem/procedures/ledger_rows.py), what the digest ranks by:
# one row per workflow a session was shown or followed, read by the SessionStart hook in one
# lookup per project however many sessions the ledger holds.
workflow_use = Table(
    "workflow_use",
    metadata,
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("directory", Text, nullable=False),
    Column("workflow_hash", Text, nullable=False),
    Column("shown_sessions", Integer, nullable=False),
    Column("used_sessions", Integer, nullable=False),
    Column("passed_sessions", Integer, nullable=False),
    Column("failed_at", Float),  # the latest run that failed when followed
    Column("updated_at", Float, nullable=False),
    PrimaryKeyConstraint("project_id", "directory", "workflow_hash", name="pk_workflow_use"),
    info={"derived": True},
)

# A branch procedure is a workflow proven on one branch; a project procedure (branch '') the
# same workflow proven across branches of the project, shown on all of them.
procedures = Table(
    "procedures",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("scope", Text, nullable=False),
    Column("branch", Text, nullable=False),
    Column("directory", Text, nullable=False),
    Column("workflow", Text, nullable=False),
    Column("workflow_hash", Text, nullable=False),
    Column("command", Text, nullable=False),
    Column("variants", Text, nullable=False),
    Column("topic_key", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("verified_runs", Integer, nullable=False),
    Column("distinct_sessions", Integer, nullable=False),
    Column("branches", Text, nullable=False),
    Column("evidence_event_ids", Text, nullable=False),
    Column("files", Text, nullable=False),
    Column("files_more", Integer, nullable=False),
    Column("first_verified_at", Float, nullable=False),
    Column("last_verified_at", Float, nullable=False),
    Column("body", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    # Fingerprints of what its command runs (remem/record/inputs.py), a JSON list, read when a
    # run verified it (or by a rebuild) at inputs_read_at: readers compare them with the files.
    Column("inputs", Text, nullable=False, server_default=text("'[]'")),
    Column("inputs_read_at", Float),
    CheckConstraint(_one_of("status", PROCEDURE_STATUSES), name="ck_procedures_status"),
    CheckConstraint(_one_of("scope", SCOPES), name="ck_procedures_scope"),
    UniqueConstraint(
        "project_id", "scope", "branch", "directory", "workflow_hash", name="uq_procedures_group"
    ),
    Index("ix_procedures_listing", "project_id", "branch", "status"),
    # Ids are never reused: a rebuild gives a re-derived procedure its old id back.
    sqlite_autoincrement=True,
)

# The id and creation time of each procedure a rebuild cleared, by its group: when the
# re-derivation promotes the group again, the procedure gets its id back, and the
# fingerprints of its inputs the rebuild read from the files.
procedure_identities = Table(
    "procedure_identities",
    metadata,
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("scope", Text, nullable=False),
    Column("branch", Text, nullable=False),
    Column("directory", Text, nullable=False),
    Column("workflow_hash", Text, nullable=False),
    Column("procedure_id", Integer, nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    Column("inputs", Text, nullable=False, server_default=text("'[]'")),
    Column("inputs_read_at", Float),
    PrimaryKeyConstraint(
        "project_id",
        "scope",
        "branch",
        "directory",
        "workflow_hash",
        name="pk_procedure_identities",
    ),
)

# Work the worker owes the database as a whole, such as re-deriving procedures after a
# migration changed how they are derived.
pending_jobs = Table(
    "pending_jobs",
    metadata,
    Column("name", Text, primary_key=True),
    Column("reason", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)

# Drafts `remem procedures export` wrote, by the path of the file: a draft whose content no
# longer has the digest written is a person's edit and is never overwritten, and `remem doctor`
# reports drafts whose procedure changed since. No foreign key: a rebuild clears procedures and
# gives them their ids back.
exports = Table(
    "exports",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("procedure_id", Integer, nullable=False),
    Column("format", Text, nullable=False),
    Column("path", Text, nullable=False, unique=True),
    Column("draft_sha256", Text, nullable=False),
    # What of the procedure the draft says (command, where, pitfalls), hashed at export.
    Column("procedure_sha256", Text, nullable=False),
    Column("exported_at", Float, nullable=False),
    CheckConstraint(_one_of("format", EXPORT_FORMATS), name="ck_exports_format"),
    Index("ix_exports_procedure", "procedure_id"),
)

# Each workflow group's tally (remem/procedures/tally.py): what the promotion rules need, kept
# up to date from each window's runs. Maintenance finds the tallies whose oldest fresh run aged
# out of max_age by the index on oldest_fresh_at, never by reading the runs.
group_states = Table(
    "group_states",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("scope", Text, nullable=False),
    Column("branch", Text, nullable=False),
    Column("directory", Text, nullable=False),
    Column("workflow", Text, nullable=False),
    Column("workflow_hash", Text, nullable=False),
    Column("tally", Text, nullable=False),
    Column("oldest_fresh_at", Float),
    Column("version", Integer, nullable=False),
    Column("updated_at", Float, nullable=False),
    UniqueConstraint(
        "project_id", "scope", "branch", "directory", "workflow_hash", name="uq_group_states_group"
    ),
    Index("ix_group_states_aging", "oldest_fresh_at", "id"),
    Index("ix_group_states_workflow", "project_id", "workflow_hash"),
    info={"derived": True},
)

# Each session's latest verified run of a group, beside its tally: how many sessions are fresh
# is kept as a count, and the sessions that age out are counted by the index on time.
group_sessions = Table(
    "group_sessions",
    metadata,
    Column("group_id", Integer, ForeignKey("group_states.id"), nullable=False),
    Column("session_id", Integer, nullable=False),
    Column("last_verified_at", Float, nullable=False),
    PrimaryKeyConstraint("group_id", "session_id", name="pk_group_sessions"),
    Index("ix_group_sessions_time", "group_id", "last_verified_at"),
    info={"derived": True},
)

# A procedure's evidence: every verified run of its group; the newest `verified_runs` of them
# (all of them when none is fresh) are what it cites. No foreign keys: a rebuild gives
# procedures their ids back, and forgetting an event deletes its rows here first.
procedure_evidence = Table(
    "procedure_evidence",
    metadata,
    Column("procedure_id", Integer, nullable=False),
    Column("event_id", Integer, nullable=False),
    Column("verified_at", Float, nullable=False),
    PrimaryKeyConstraint("procedure_id", "event_id", name="pk_procedure_evidence"),
    Index("ix_procedure_evidence_time", "procedure_id", "verified_at", "event_id"),
    Index("ix_procedure_evidence_event", "event_id"),
)


# ---- The team (DESIGN.md §9): local tables of a machine that shares projects ---------------------


def _same_as(table: Table, names: str) -> list[Column[Any]]:
    """New columns defined as `table`'s of the same (space-separated) names: a pulled copy of
    the team's rows holds what the local rows hold, typed alike."""
    return [
        Column(
            column.name,
            column.type,
            *(ForeignKey(key.target_fullname) for key in column.foreign_keys),
            nullable=column.nullable,
        )
        for column in (table.c[name] for name in names.split())
    ]


# Each shared project's link to the team database: the newest local event shipped (a crash
# between shipping and moving this cursor ships the same events again, which the team ignores).
team_links = Table(
    "team_links",
    metadata,
    Column("project_id", Integer, ForeignKey("projects.id"), primary_key=True),
    Column("project_key", Text, nullable=False),
    Column("shipped_event_id", Integer, nullable=False, server_default=text("0")),
    Column("shipped_at", Float),
    Column("pulled_at", Float),
    Column("created_at", Float, nullable=False),
)

# What the daemon last heard from the team database, for `remem status` (which never connects):
# last_contact, last_error, team_revision, last_ship, last_pull; value is text, updated_at when.
team_state = Table(
    "team_state",
    metadata,
    Column("name", Text, primary_key=True),
    Column("value", Text),
    Column("updated_at", Float, nullable=False),
)

# The team's procedures of the shared projects, pulled into the local database so the digest
# stays a local read and works offline. Ids are the team database's; evidence stays there.
team_procedures = Table(
    "team_procedures",
    metadata,
    Column("id", Integer, primary_key=True),
    *_same_as(procedures, "project_id"),
    Column("team_procedure_id", Integer, nullable=False),
    *_same_as(procedures, "scope branch directory workflow workflow_hash command status"),
    *_same_as(procedures, "confidence verified_runs distinct_sessions"),
    Column("machines", Integer, nullable=False),
    *_same_as(procedures, "branches files files_more first_verified_at last_verified_at body"),
    Column("pulled_at", Float, nullable=False),
    # The fingerprints a machine of the team read (remem/team/ship.py): compared here with
    # this checkout's files.
    Column("inputs", Text, nullable=False, server_default=text("'[]'")),
    UniqueConstraint("project_id", "team_procedure_id", name="uq_team_procedures_team_id"),
    info={"pulled": True},
)

# The team's lessons of the shared projects, pulled beside their procedures (their pitfalls).
team_lessons = Table(
    "team_lessons",
    metadata,
    Column("id", Integer, primary_key=True),
    *_same_as(lessons, "project_id"),
    Column("team_lesson_id", Integer, nullable=False),
    *_same_as(lessons, "branch directory workflow_hash failed_attempts last_error error_key"),
    *_same_as(lessons, "repeats fix_files resolved_at"),
    Column("pulled_at", Float, nullable=False),
    UniqueConstraint("project_id", "team_lesson_id", name="uq_team_lessons_team_id"),
    Index("ix_team_lessons_workflow", "project_id", "directory", "workflow_hash"),
    info={"pulled": True},
)


def tables_marked(mark: str) -> tuple[Table, ...]:
    """The tables whose info carries `mark` ("derived", "runs", "pulled", "record"), in
    declaration order."""
    return tuple(table for table in metadata.tables.values() if table.info.get(mark))
