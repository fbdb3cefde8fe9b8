"""What the worker keeps out of the time it holds the write lock."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from remem.procedures import promote
from tests.integration.conftest import World

TEST = "make test"


@pytest.fixture
def eager_collector() -> Iterator[None]:
    """A cycle collector that would run at nearly every allocation."""
    threshold = gc.get_threshold()
    gc.set_threshold(1, 1, 1)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


def test_the_cycle_collector_never_runs_while_a_window_holds_the_write_lock(
    world: World, eager_collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for session in ("s1", "s2", "s3"):
        world.post(TEST, session=session)
        world.post(TEST, 1, session=session, output="FAILED tests/test_app.py::test_total")
        world.post(TEST, session=session)
    holding = [False]
    collections = {"inside": 0, "outside": 0}
    apply = promote.apply

    def applying(*args: Any) -> Any:  # the window's writes, all under the lock
        holding[0] = True
        try:
            return apply(*args)
        finally:
            holding[0] = False

    def collected(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            collections["inside" if holding[0] else "outside"] += 1

    monkeypatch.setattr(promote, "apply", applying)
    gc.callbacks.append(collected)
    try:
        stats = world.burst()
    finally:
        gc.callbacks.remove(collected)
    assert stats["tasks_done"] == 3
    assert collections["outside"] > 0  # it ran, between the transactions
    assert collections["inside"] == 0
    assert gc.isenabled()
