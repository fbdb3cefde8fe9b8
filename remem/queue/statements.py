"""Queue SQL, named after the operations that run it. Plain strings with :named parameters, so
that the stdlib hook (sqlite3) and the SQLAlchemy side (text()) run the very same statements on
SQLite and PostgreSQL. Stdlib only: the hook imports this."""

from __future__ import annotations

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
    run_after = CASE WHEN extraction_tasks.status IN ('done', 'failed')
        THEN excluded.run_after ELSE extraction_tasks.run_after END,
    last_error = CASE WHEN extraction_tasks.status IN ('done', 'failed')
        THEN NULL ELSE extraction_tasks.last_error END,
    updated_at = excluded.updated_at
"""


def task_key(session_id: int, kind: str) -> str:
    return f"{session_id}:{kind}"
