"""What the worker keeps out of the time it holds the write lock."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

import pytest

from remem.db.driver import Driver
from remem.procedures import evidence, journal, promote
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


def _statements_under_the_lock(world: World, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL each window ran while it held the write lock (spied, not replaced)."""
    holding, ran = [False], []
    apply, execute = promote.apply, Driver.execute

    def applying(*args: Any) -> Any:
        holding[0] = True
        try:
            return apply(*args)
        finally:
            holding[0] = False

    def executing(self: Driver, statement: Any, *args: Any) -> Any:
        if holding[0]:
            ran.append(str(statement))
        return execute(self, statement, *args)

    monkeypatch.setattr(promote, "apply", applying)
    monkeypatch.setattr(Driver, "execute", executing)
    return ran


def test_a_window_reads_its_procedure_s_evidence_and_streaks_before_the_lock(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    for session in ("s1", "s2"):
        world.edit("src/app.py", session=session)
        world.post(TEST, session=session)
    world.burst()
    [(procedure_id, listed)] = world.procedures("id", "evidence_event_ids")
    # A failure and the fix that closes it, in a session of its own.
    world.post(TEST, 1, session="s3", output="FAILED tests/test_app.py::test_total")
    world.edit("src/total.py", session="s3")
    world.post(TEST, session="s3")
    ran = _statements_under_the_lock(world, monkeypatch)
    assert world.burst()["tasks_done"] == 1

    assert ran  # the window's writes
    prepared = {
        str(evidence.LATEST_EVIDENCE),
        str(journal.FIRST_SUCCESS_AFTER),
        str(journal.LAST_SUCCESS_BEFORE),
    }
    assert not prepared & set(ran)
    assert not [sql for sql in ran if "AS run, e.files" in sql]  # the files before each run
    # What was read before the lock is what the procedure and the lesson show.
    [(same_id, now_listed, files)] = world.procedures("id", "evidence_event_ids", "files")
    assert same_id == procedure_id and len(json.loads(now_listed)) == len(json.loads(listed)) + 1
    assert sorted(json.loads(files)) == ["src/app.py", "src/total.py"]
    [(fix_files,)] = world.execute("SELECT fix_files FROM lessons", {})
    assert json.loads(fix_files) == ["src/total.py"]


def test_a_window_reads_before_the_lock_the_files_of_the_runs_its_own_leave_listed(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # More runs than a procedure takes its files from, each after an edit of its own file.
    older = evidence.FILES_FROM_LAST_RUNS + 1
    for n in range(older):
        world.edit(f"src/m{n:02}.py", session=f"s{n}")
        world.post(TEST, session=f"s{n}")
    world.burst()
    # Two more verified runs: the newest ten are theirs and eight stored ones.
    for session in ("t1", "t2"):
        world.edit(f"src/{session}.py", session=session)
        world.post(TEST, session=session)
    ran = _statements_under_the_lock(world, monkeypatch)
    assert world.burst()["tasks_done"] == 2

    assert not [sql for sql in ran if "AS run, e.files" in sql]
    [(listed, files, files_more)] = world.procedures("evidence_event_ids", "files", "files_more")
    assert len(json.loads(listed)) == older + 2
    shown = json.loads(files)
    assert len(shown) + files_more == evidence.FILES_FROM_LAST_RUNS
    assert not {"src/m00.py", "src/m01.py", "src/m02.py"} & set(shown)
