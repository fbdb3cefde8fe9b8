"""Queue SQL, named after the operations that run it. Plain strings with :named parameters, so
that the stdlib hook (sqlite3) and the SQLAlchemy side (text()) run the very same statements on
SQLite and PostgreSQL. Stdlib only: the hook imports this."""

from __future__ import annotations

# The queue's table, for what names tables rather than run statements (forget's VACUUM FULL).
TASKS_TABLE = "extraction_tasks"

# One row per (session, kind). A new event raises the watermark; a done or failed task comes
# back to pending with a fresh retry budget; a task in processing only gets the new watermark
# (the worker sees it moved and puts the task back to pending when it completes).
# Every SET expression reads the row as it was before the update, on both databases.
COALESCE = """
INSERT INTO extraction_tasks (
    idempotency_key, session_id, kind, status, priority, high_watermark_event_id,
    cursor_event_id, attempts, run_after, created_at, updated_at
) VALUES (
    :idempotency_key, :session_id, :kind, 'pending', :priority, :event_id,
    0, 0, :now, :now, :now
)
ON CONFLICT (idempotency_key) DO UPDATE SET
    high_watermark_event_id = CASE
        WHEN excluded.high_watermark_event_id > extraction_tasks.high_watermark_event_id
        THEN excluded.high_watermark_event_id
        ELSE extraction_tasks.high_watermark_event_id END,
    status = CASE WHEN extraction_tasks.status IN ('done', 'failed')
        THEN 'pending' ELSE extraction_tasks.status END,
    attempts = CASE WHEN extraction_tasks.status IN ('done', 'failed')
        THEN 0 ELSE extraction_tasks.attempts END,
    lease_expiries = CASE WHEN extraction_tasks.status IN ('done', 'failed')
        THEN 0 ELSE extraction_tasks.lease_expiries END,
    run_after = CASE WHEN extraction_tasks.status IN ('done', 'failed')
        THEN excluded.run_after ELSE extraction_tasks.run_after END,
    last_error = CASE WHEN extraction_tasks.status IN ('done', 'failed')
        THEN NULL ELSE extraction_tasks.last_error END,
    updated_at = excluded.updated_at
"""


def task_key(session_id: int, kind: str) -> str:
    return f"{session_id}:{kind}"


# A read-only look before claiming, so an idle worker polls without taking the write lock.
HAS_DUE_TASK = """
SELECT 1 FROM extraction_tasks WHERE status = 'pending' AND run_after <= :now LIMIT 1
"""

# The first due pending task by priority then age becomes ours. One statement: on SQLite the
# engine's BEGIN IMMEDIATE serialises claimers; on PostgreSQL SKIP LOCKED lets them pass.
# {scope} may narrow it to one project's sessions (CLAIM_IN_PROJECT).
CLAIM_NEXT = """
UPDATE extraction_tasks SET
    status = 'processing', lease_owner = :owner, lease_expires_at = :lease_expires_at,
    updated_at = :now
WHERE id = (
    SELECT id FROM extraction_tasks
    WHERE status = 'pending' AND run_after <= :now{scope}
    ORDER BY priority, id
    LIMIT 1 {lock_clause}
)
RETURNING id, session_id, kind, cursor_event_id, high_watermark_event_id, attempts
"""
CLAIM_IN_PROJECT = " AND session_id IN (SELECT id FROM sessions WHERE project_id = :project_id)"

# Guarded by the lease: if a reaper or another worker took the task, nothing is updated and the
# caller rolls back the window it applied. A watermark that moved while we worked sends the task
# back to pending for the rest.
COMPLETE = """
UPDATE extraction_tasks SET
    cursor_event_id = :watermark,
    status = CASE WHEN high_watermark_event_id > :watermark THEN 'pending' ELSE 'done' END,
    attempts = 0, run_after = :now, lease_owner = NULL, lease_expires_at = NULL,
    last_error = NULL, updated_at = :now
WHERE id = :id AND status = 'processing' AND lease_owner = :owner
"""

RETRY = """
UPDATE extraction_tasks SET
    status = 'pending', attempts = :attempts, run_after = :run_after, last_error = :error,
    lease_owner = NULL, lease_expires_at = NULL, updated_at = :now
WHERE id = :id AND status = 'processing' AND lease_owner = :owner
"""

FAIL = """
UPDATE extraction_tasks SET
    status = 'failed', attempts = :attempts, last_error = :error,
    lease_owner = NULL, lease_expires_at = NULL, updated_at = :now
WHERE id = :id AND status = 'processing' AND lease_owner = :owner
"""

RENEW_LEASE = """
UPDATE extraction_tasks SET lease_expires_at = :lease_expires_at, updated_at = :now
WHERE id = :id AND status = 'processing' AND lease_owner = :owner
"""

RELEASE = """
UPDATE extraction_tasks SET
    status = 'pending', lease_owner = NULL, lease_expires_at = NULL, updated_at = :now
WHERE id = :id AND status = 'processing' AND lease_owner = :owner
"""

# Every task one worker holds, back to pending: a worker whose database went away in the middle
# of a task could not release it then, and takes it back once the database answers again.
RELEASE_OWNED = """
UPDATE extraction_tasks SET
    status = 'pending', lease_owner = NULL, lease_expires_at = NULL, updated_at = :now
WHERE status = 'processing' AND lease_owner = :owner
"""

# Tasks whose lease ran out, with what policy.after_lease_expiry needs to decide their fate.
# Read and updated in one transaction: BEGIN IMMEDIATE on SQLite; on PostgreSQL row locks, and
# rows another reaper holds are skipped.
SELECT_EXPIRED_LEASES = """
SELECT id, lease_owner, attempts, lease_expiries FROM extraction_tasks
WHERE status = 'processing' AND lease_expires_at <= :now
ORDER BY id {lock_clause}
"""

# Guarded like COMPLETE: a lease renewed or a task completed since the read is left alone.
REAP_EXPIRED_LEASE = """
UPDATE extraction_tasks SET
    status = :status, attempts = :attempts, lease_expiries = :lease_expiries,
    last_error = :error, lease_owner = NULL, lease_expires_at = NULL, run_after = :now,
    updated_at = :now
WHERE id = :id AND status = 'processing' AND lease_owner = :owner AND lease_expires_at <= :now
"""

RETRY_NOW = """
UPDATE extraction_tasks SET
    status = 'pending', attempts = 0, lease_expiries = 0, run_after = :now, last_error = NULL,
    updated_at = :now
WHERE id = :id AND status IN ('failed', 'pending')
RETURNING id
"""

# ---- Reads for status and doctor, and what rebuild, forget and the team worker do to tasks ----

COUNT_BY_STATUS = "SELECT status, count(*) FROM extraction_tasks GROUP BY status"

OLDEST_PENDING_AT = "SELECT min(updated_at) FROM extraction_tasks WHERE status = 'pending'"

LATEST_FAILED = """
SELECT id, last_error FROM extraction_tasks WHERE status = 'failed'
ORDER BY updated_at DESC, id DESC LIMIT 1
"""

# Projects with due tasks, oldest task first: where team workers look for a project to drain.
DUE_PROJECTS = """
SELECT s.project_id FROM extraction_tasks t JOIN sessions s ON s.id = t.session_id
WHERE t.status = 'pending' AND t.run_after <= :now GROUP BY s.project_id
ORDER BY min(t.id) LIMIT :limit
"""

# Every promote task back to its session's first event, with a fresh retry budget: a rebuild
# has cleared what the windows derived. A task some worker holds loses its lease, and that
# worker's completion then finds the task no longer its own.
REWIND_PROMOTE_TASKS = """
UPDATE extraction_tasks SET
    cursor_event_id = 0, status = 'pending', attempts = 0, run_after = :now,
    lease_owner = NULL, lease_expires_at = NULL, last_error = NULL, updated_at = :now
WHERE kind = 'promote'
"""

TASKS_WITH_ERRORS = "SELECT id, last_error FROM extraction_tasks WHERE last_error IS NOT NULL"

# :ids is a list (an expanding parameter).
CLEAR_ERRORS = "UPDATE extraction_tasks SET last_error = NULL WHERE id IN :ids"

DELETE_SESSION_TASKS = "DELETE FROM extraction_tasks WHERE session_id IN :ids"
