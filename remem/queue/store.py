"""Running the queue statements through SQLAlchemy; every function is named after its statement
and logs that name as its action. Claiming and completing, which a draining worker does for
every window, run on the driver (remem.db.driver), each statement built once."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Engine, TextClause, select, text

from remem.db.driver import Driver, with_ids
from remem.db.engine import READ_ONLY, row_lock
from remem.db.schema import extraction_tasks
from remem.faults import crash_point
from remem.queue import policy
from remem.queue import statements as sql

log = logging.getLogger("remem.queue")


class LeaseLost(Exception):
    """The task is no longer ours (reaped or reclaimed); whatever we applied must roll back."""


@dataclass(frozen=True)
class ClaimedTask:
    id: int
    session_id: int
    kind: str
    cursor_event_id: int
    watermark_event_id: int
    attempts: int
    owner: str


@dataclass(frozen=True)
class TaskRow:
    id: int
    session_id: int
    kind: str
    status: str
    attempts: int
    lease_expiries: int
    cursor_event_id: int
    high_watermark_event_id: int
    run_after: float
    lease_owner: str | None
    lease_expires_at: float | None
    last_error: str | None
    updated_at: float


def _claim_sql(engine: Engine, in_project: bool = False) -> str:
    scope = sql.CLAIM_IN_PROJECT if in_project else ""
    return sql.CLAIM_NEXT.format(lock_clause=row_lock(engine, skip_locked=True), scope=scope)


@lru_cache(maxsize=16)  # a handful: claim (two forms), look, complete
def _statement(sql_text: str) -> TextClause:
    """One statement object per SQL text, so the driver compiles each once."""
    return text(sql_text)


def has_due_task(engine: Engine, now: float) -> bool:
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        found = Driver(connection).execute(_statement(sql.HAS_DUE_TASK), {"now": now}).first()
        return found is not None


def claim_next(
    engine: Engine,
    owner: str,
    now: float,
    lease_s: float,
    project_id: int | None = None,
    look_first: bool = True,
) -> ClaimedTask | None:
    """The first due task, of one project's sessions when project_id is given. `look_first`
    reads whether one is due before taking the write lock, which an idle poll then never
    takes; a worker draining a backlog skips that read."""
    if look_first and not has_due_task(engine, now):
        return None
    with engine.begin() as connection:
        task = claim_in(connection, owner, now, lease_s, project_id)
    if task is not None:
        claimed(task)
    return task


def claim_in(
    connection: Connection, owner: str, now: float, lease_s: float, project_id: int | None = None
) -> ClaimedTask | None:
    """claim_next inside the caller's write transaction: a draining worker claims its next
    task in the transaction that completes the one before, and the claim commits with it.
    The caller logs it (`claimed`) once that transaction has committed."""
    params = {
        "owner": owner,
        "now": now,
        "lease_expires_at": policy.lease_expires_at(now, lease_s),
        "project_id": project_id,
    }
    statement = _statement(_claim_sql(connection.engine, project_id is not None))
    row = Driver(connection).execute(statement, params).first()
    crash_point("claim")
    if row is None:
        return None
    return ClaimedTask(
        row.id,
        row.session_id,
        row.kind,
        row.cursor_event_id,
        row.high_watermark_event_id,
        row.attempts,
        owner,
    )


def claimed(task: ClaimedTask) -> None:
    log.info("claimed task %s", task.id, extra={"action": "claim_next", "task_id": task.id})


def complete(connection: Connection, task: ClaimedTask, now: float) -> None:
    """Inside the caller's transaction, so the window and the cursor commit together (the
    caller logs the completion once that transaction has committed)."""
    params = {"id": task.id, "owner": task.owner, "watermark": task.watermark_event_id, "now": now}
    if Driver(connection).execute(_statement(sql.COMPLETE), params).rowcount != 1:
        raise LeaseLost(f"task {task.id} is no longer leased to {task.owner}")


def retry_or_fail(
    engine: Engine,
    task: ClaimedTask,
    error: str,
    now: float,
    max_attempts: int,
    permanent: bool = False,
) -> str:
    """Record a failed attempt: 'retried' with backoff, or 'failed' once the budget is spent or
    the error is permanent; 'lost' if the lease had already gone."""
    attempts = task.attempts + 1
    params: dict[str, Any] = {
        "id": task.id,
        "owner": task.owner,
        "now": now,
        "attempts": attempts,
        # PostgreSQL text holds no NUL character, which an error may quote: shown as U+FFFD.
        "error": error.replace("\x00", "\ufffd")[:2000],
    }
    if permanent or policy.is_exhausted(attempts, max_attempts):
        statement, outcome = sql.FAIL, "failed"
    else:
        statement, outcome = sql.RETRY, "retried"
        params["run_after"] = policy.next_run_at(attempts, now)
    with engine.begin() as connection:
        if connection.execute(text(statement), params).rowcount != 1:
            return "lost"
    action = "fail" if outcome == "failed" else "retry"
    log.warning(
        "task %s %s after attempt %s: %s",
        task.id,
        outcome,
        attempts,
        error[:200],
        extra={"action": action, "task_id": task.id},
    )
    return outcome


def renew_lease(engine: Engine, task: ClaimedTask, now: float, lease_s: float) -> bool:
    params = {
        "id": task.id,
        "owner": task.owner,
        "now": now,
        "lease_expires_at": policy.lease_expires_at(now, lease_s),
    }
    with engine.begin() as connection:
        return bool(connection.execute(text(sql.RENEW_LEASE), params).rowcount == 1)


def release(engine: Engine, task: ClaimedTask, now: float) -> bool:
    with engine.begin() as connection:
        released = connection.execute(
            text(sql.RELEASE), {"id": task.id, "owner": task.owner, "now": now}
        ).rowcount
    log.info("released task %s", task.id, extra={"action": "release", "task_id": task.id})
    return bool(released == 1)


def release_owned(engine: Engine, owner: str, now: float) -> int:
    """Put back every task `owner` holds: for a worker that knows it holds none in hand (its
    database failed under it); other workers' tasks wait for their leases to run out."""
    with engine.begin() as connection:
        released = connection.execute(
            text(sql.RELEASE_OWNED), {"owner": owner, "now": now}
        ).rowcount
    if released:
        log.info("released %s task(s) left in hand", released, extra={"action": "release"})
    return int(released)


def reap_expired_leases(engine: Engine, now: float, max_attempts: int) -> list[int]:
    """Return tasks whose lease ran out to pending, or fail those whose workers keep dying
    (policy.after_lease_expiry); the ids of all of them."""
    select_sql = sql.SELECT_EXPIRED_LEASES.format(lock_clause=row_lock(engine, skip_locked=True))
    reaped: dict[str, list[int]] = {"pending": [], "failed": []}
    with engine.begin() as connection:
        for row in connection.execute(text(select_sql), {"now": now}).all():
            status, attempts, expiries = policy.after_lease_expiry(
                row.attempts, row.lease_expiries, max_attempts
            )
            params = {
                "id": row.id,
                "owner": row.lease_owner,
                "now": now,
                "status": status,
                "attempts": attempts,
                "lease_expiries": expiries,
                "error": policy.lease_expiry_error(row.lease_owner, status, expiries),
            }
            if connection.execute(text(sql.REAP_EXPIRED_LEASE), params).rowcount == 1:
                reaped[status].append(row.id)
    if reaped["pending"]:
        log.warning(
            "returned %d task(s) with expired leases to pending",
            len(reaped["pending"]),
            extra={"action": "reap_expired_leases", "task_ids": reaped["pending"]},
        )
    for task_id in reaped["failed"]:
        log.error(
            "task %s failed: its workers kept dying while processing it",
            task_id,
            extra={"action": "reap_expired_leases", "task_id": task_id},
        )
    return sorted(reaped["pending"] + reaped["failed"])


def retry_task(engine: Engine, task_id: int, now: float) -> bool:
    with engine.begin() as connection:
        found = connection.execute(text(sql.RETRY_NOW), {"id": task_id, "now": now}).first()
    return found is not None


def list_tasks(engine: Engine, status: str | None = None, limit: int = 100) -> list[TaskRow]:
    query = (
        select(*(extraction_tasks.c[name] for name in TaskRow.__dataclass_fields__))
        .order_by(extraction_tasks.c.id.desc())
        .limit(limit)
    )
    if status:
        query = query.where(extraction_tasks.c.status == status)
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        return [TaskRow(*row) for row in connection.execute(query)]


def due_projects(connection: Connection, now: float, limit: int) -> list[int]:
    """Projects with due tasks, oldest task first (for team workers, who drain one project at
    a time); on the caller's connection, which holds the projects' locks."""
    rows = connection.execute(text(sql.DUE_PROJECTS), {"now": now, "limit": limit})
    return [int(project_id) for project_id in rows.scalars()]


def rewind_promote_tasks(connection: Connection, now: float) -> int:
    """Inside the caller's transaction (a rebuild's): every promote task back to its session's
    first event. Returns how many were rewound."""
    rewound = int(connection.execute(text(sql.REWIND_PROMOTE_TASKS), {"now": now}).rowcount)
    log.info("rewound %s promote task(s)", rewound, extra={"action": "rewind_promote_tasks"})
    return rewound


def tasks_with_errors(connection: Connection) -> list[tuple[int, str]]:
    """(id, last error) of every task that keeps one."""
    rows = connection.execute(text(sql.TASKS_WITH_ERRORS))
    return [(int(task_id), str(error)) for task_id, error in rows]


def clear_errors(connection: Connection, task_ids: list[int]) -> int:
    """Inside the caller's transaction: the tasks stay, their last errors go (forget)."""
    if not task_ids:
        return 0
    cleared = int(connection.execute(with_ids(sql.CLEAR_ERRORS), {"ids": task_ids}).rowcount)
    log.info(
        "cleared the last error of %s task(s)",
        cleared,
        extra={"action": "clear_errors", "task_ids": task_ids},
    )
    return cleared


def delete_session_tasks(connection: Connection, session_ids: list[int]) -> int:
    """Inside the caller's transaction: the tasks of sessions about to be deleted (forget)."""
    if not session_ids:
        return 0
    deleted = int(
        connection.execute(with_ids(sql.DELETE_SESSION_TASKS), {"ids": session_ids}).rowcount
    )
    log.info(
        "deleted %s task(s) of %s session(s)",
        deleted,
        len(session_ids),
        extra={"action": "delete_session_tasks", "session_ids": session_ids},
    )
    return deleted
