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


def is_lease_expired(lease_expires_at: float | None, now: float) -> bool:
    return lease_expires_at is not None and lease_expires_at <= now
