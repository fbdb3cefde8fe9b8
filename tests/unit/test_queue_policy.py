from __future__ import annotations

import pytest

from remem.queue.policy import (
    after_lease_expiry,
    backoff_s,
    is_exhausted,
    lease_expires_at,
    lease_expiry_error,
    next_run_at,
)

NOW = 1_750_000_000.0


@pytest.mark.parametrize(
    ("failures", "expected"),
    [(1, 5.0), (2, 15.0), (3, 45.0), (4, 120.0), (5, 300.0)],
)
def test_backoff_follows_the_schedule(failures: int, expected: float) -> None:
    assert backoff_s(failures) == expected


@pytest.mark.parametrize("failures", [6, 7, 10, 100])
def test_backoff_stays_at_five_minutes_beyond_the_schedule(failures: int) -> None:
    assert backoff_s(failures) == 300.0


@pytest.mark.parametrize("failures", [1, 2, 3, 4, 5, 9])
def test_next_run_at_is_now_plus_backoff(failures: int) -> None:
    assert next_run_at(failures, NOW) == NOW + backoff_s(failures)


def test_next_run_at_is_in_the_future() -> None:
    assert next_run_at(1, NOW) == NOW + 5.0


@pytest.mark.parametrize("lease_s", [1.0, 300.0, 3600.0])
def test_lease_expires_at_is_now_plus_lease(lease_s: float) -> None:
    assert lease_expires_at(NOW, lease_s) == NOW + lease_s


@pytest.mark.parametrize(
    ("failures", "max_attempts", "exhausted"),
    [(5, 5, True), (4, 5, False), (6, 5, True), (0, 5, False), (1, 1, True)],
)
def test_is_exhausted(failures: int, max_attempts: int, exhausted: bool) -> None:
    assert is_exhausted(failures, max_attempts) is exhausted


@pytest.mark.parametrize(
    ("attempts", "lease_expiries", "max_attempts", "expected"),
    [
        (0, 0, 5, ("pending", 0, 1)),  # the first death is the worker's, not the task's
        (0, 1, 5, ("pending", 1, 2)),
        (3, 4, 5, ("pending", 4, 5)),
        (4, 5, 5, ("failed", 5, 6)),
        (2, 3, 3, ("failed", 3, 4)),
        (0, 0, 1, ("pending", 0, 1)),
        (0, 1, 1, ("failed", 1, 2)),
        (4, 0, 5, ("pending", 4, 1)),  # handler errors spent the budget, a first death does not
        (4, 1, 5, ("failed", 5, 2)),
    ],
)
def test_after_lease_expiry(
    attempts: int, lease_expiries: int, max_attempts: int, expected: tuple[str, int, int]
) -> None:
    assert after_lease_expiry(attempts, lease_expiries, max_attempts) == expected


def test_a_task_killing_every_worker_fails_after_one_forgiven_death_and_its_budget() -> None:
    attempts, expiries, deaths, status = 0, 0, 0, "pending"
    while status == "pending":
        status, attempts, expiries = after_lease_expiry(attempts, expiries, 5)
        deaths += 1
        assert deaths <= 6
    assert (status, attempts, deaths) == ("failed", 5, 6)


def test_lease_expiry_error_names_the_cause() -> None:
    assert lease_expiry_error("w1", "pending", 1) == "lease of w1 expired; returned to pending"
    assert (
        lease_expiry_error("w1", "failed", 6)
        == "worker died while processing (lease expired 6 times)"
    )
