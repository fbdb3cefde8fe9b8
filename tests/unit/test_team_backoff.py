"""The team link's backoff: a wait that doubles per outage, not per job that met it."""

from __future__ import annotations

from remem.team.link import FIRST_BACKOFF_S, MAX_BACKOFF_S, Backoff


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_failure_waits_then_doubles_up_to_the_cap() -> None:
    clock = Clock()
    backoff = Backoff(clock)
    assert backoff.ready()
    waits = []
    for _ in range(10):
        waits.append(backoff.failed())
        assert not backoff.ready()
        clock.now += waits[-1]
        assert backoff.ready()
    assert waits[:4] == [
        FIRST_BACKOFF_S,
        2 * FIRST_BACKOFF_S,
        4 * FIRST_BACKOFF_S,
        8 * FIRST_BACKOFF_S,
    ]
    assert waits[-1] == MAX_BACKOFF_S


def test_jobs_failing_in_one_outage_double_the_wait_once() -> None:
    clock = Clock()
    backoff = Backoff(clock)
    first = backoff.failed()
    clock.now += 1
    assert backoff.failed() == first - 1  # the pull that was already under way
    assert backoff.failed() == first - 1
    clock.now += first
    assert backoff.failed() == 2 * FIRST_BACKOFF_S


def test_a_success_ends_the_backoff() -> None:
    clock = Clock()
    backoff = Backoff(clock)
    backoff.failed()
    clock.now += FIRST_BACKOFF_S
    backoff.failed()
    backoff.succeeded()
    assert backoff.ready()
    assert backoff.failed() == FIRST_BACKOFF_S
