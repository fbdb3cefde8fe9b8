"""Retry and lease arithmetic: pure functions of plain numbers and `now`."""

from __future__ import annotations

BACKOFF_S = (5.0, 15.0, 45.0, 120.0, 300.0)


def backoff_s(failures: int) -> float:
    """Delay before the next try after `failures` failed attempts (1 -> 5 s … 5+ -> 300 s)."""
    return BACKOFF_S[min(max(failures, 1), len(BACKOFF_S)) - 1]


def next_run_at(failures: int, now: float) -> float:
    return now + backoff_s(failures)


def lease_expires_at(now: float, lease_s: float) -> float:
    return now + lease_s


def is_exhausted(failures: int, max_attempts: int) -> bool:
    return failures >= max_attempts


def after_lease_expiry(
    attempts: int, lease_expiries: int, max_attempts: int
) -> tuple[str, int, int]:
    """What the reaper makes of a task whose lease ran out: (status, attempts, lease_expiries).

    The first expiry costs no attempt, since a worker may die for reasons of its own; every
    later one does, so a task that kills each worker that takes it ends `failed` once its
    budget is spent instead of returning to pending for ever.
    """
    lease_expiries += 1
    if lease_expiries > 1:
        attempts += 1
    status = "failed" if is_exhausted(attempts, max_attempts) else "pending"
    return status, attempts, lease_expiries


def lease_expiry_error(owner: str, status: str, lease_expiries: int) -> str:
    if status == "failed":
        return f"worker died while processing (lease expired {lease_expiries} times)"
    return f"lease of {owner} expired; returned to pending"
