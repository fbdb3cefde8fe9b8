"""No clock can pin a procedure, no data can blow the digest's budget, and a branch's own
verdict holds over the default branch's (real capture, a real database, a worker with a clock)."""

from __future__ import annotations

from typing import Any

import pytest

from remem.agent import digest
from remem.agent.context import read_entries
from remem.agent.known import digest_known_errors
from remem.procedures.promote import archive
from tests.integration.conftest import DAY, World
from tests.oracles import paginate


@pytest.mark.parametrize(
    "timestamp",
    [float("nan"), float("inf"), -float("inf"), 1e12, -5.0, "future"],
)
def test_an_unusable_time_cannot_keep_a_procedure_active(world: World, timestamp: Any) -> None:
    claimed = world.now + 365 * DAY if timestamp == "future" else timestamp
    world.post("make test", at=claimed)
    world.now += 60
    world.post("make test")
    for _ in range(3):
        world.now += 60
        world.post("make test", 127)
    stats = world.burst()

    assert stats.get("tasks_failed", 0) == 0 and stats.get("tasks_retried", 0) == 0
    status, last_verified = world.one("status", "last_verified_at")
    assert status == "broken"
    assert last_verified <= world.now
    reported = world.execute(
        "SELECT event_at_reported FROM captured_events WHERE event_at_reported IS NOT NULL", {}
    )
    assert len(reported) == 1


def test_a_procedure_whose_runs_are_all_clamped_goes_stale_in_time(world: World) -> None:
    for _ in range(2):
        world.post("make test", at=world.now + 365 * DAY)
    world.burst()
    assert world.one("status")[0] == "active"

    world.now += 15 * DAY
    world.burst()

    assert world.one("status")[0] == "stale"


def test_huge_fix_streaks_keep_every_page_within_the_budget(world: World) -> None:
    """Three streaks that each touched 300 files once made a 49,252-character page."""
    for streak in range(3):
        world.post("make test", 2, output="error: boom " + "x" * 3000)
        world.edit(*(f"src/streak{streak}/file_{n:03d}.py" for n in range(300)))
        world.post("make test")
        world.now += 60
    world.burst()

    entries = read_entries(world.execute, "/p/shop", "main")
    errors = digest_known_errors(world.execute, "/p/shop")
    for max_chars, max_lines in ((4000, 200), (1500, 200), (1500, 8)):
        pages = paginate(
            entries, digest.header_for("/p/shop", "main"), max_chars, max_lines, errors
        )
        assert pages
        assert all(len(page) <= max_chars for page in pages), [len(p) for p in pages]
        assert all(page.count("\n") <= max_lines for page in pages)
    (entry,) = entries
    assert len(entry.files) <= 5


@pytest.mark.parametrize("verdict", ["broken", "stale", "archived"])
def test_a_branch_s_own_verdict_hides_the_default_branch_s_procedure(
    world: World, verdict: str
) -> None:
    world.post("make test", branch="main")
    world.post("make test", branch="main", session="s2")
    world.post("make test", branch="feature", session="s3")
    world.post("make test", branch="feature", session="s3")
    world.burst()
    # Verified on two branches: the project-wide procedure is what the feature branch sees.
    assert [e.scope for e in read_entries(world.execute, "/p/shop", "feature")] == ["project"]
    if verdict == "broken":
        for _ in range(2):
            world.now += 60
            world.post("make test", 127, branch="feature", session="s3")  # cannot run there
    elif verdict == "stale":
        world.now += 15 * DAY
        world.post("make test", branch="main", session="s4")  # main stays fresh
    else:
        (feature_id,) = [i for i, b in world.procedures("id", "branch") if b == "feature"]
        archive(world.engine, feature_id, world.now)
    world.burst()

    statuses = {b: s for scope, b, s in world.procedures("scope", "branch", "status") if b}
    assert statuses == {"feature": verdict, "main": "active"}
    assert read_entries(world.execute, "/p/shop", "feature") == []
    assert [e.branch for e in read_entries(world.execute, "/p/shop", "main")] != []
