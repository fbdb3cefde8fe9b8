"""Red is not broken, and old history is truthful, on a real database: failed attempts record
whether their command could not run, only those break a procedure, a stale procedure keeps its
real runs, and migration 0010 re-derives a database under these rules."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect

from remem.db import migrate
from remem.json_contract import date
from remem.procedures import rebuild
from remem.procedures.promote import mark_stale
from tests.integration.conftest import DAY, NOW, World, make_repository

PYTEST_RED = "tests/test_cart.py::test_total FAILED\n==== 1 failed, 3 passed in 0.21s ===="
NOT_INSTALLED = "/usr/bin/python3: No module named pytest"
TEST = "python3 -m pytest -q"


def _columns(world: World, table: str) -> set[str]:
    return {column["name"] for column in inspect(world.engine).get_columns(table)}


def _verified(world: World, root: str) -> None:
    for session in ("s1", "s2"):
        world.now += 60
        world.post(TEST, project=root, session=session, output="4 passed in 0.20s")


def test_red_runs_are_attempts_that_never_break_and_those_that_cannot_run_do(
    world: World, tmp_path: Path
) -> None:
    root = make_repository(tmp_path / "shop")
    _verified(world, root)
    for _ in range(3):
        world.now += 60
        world.post(TEST, 1, project=root, session="s3", output=PYTEST_RED)
    world.burst()
    assert world.one("status", "confidence") == ("active", 0.86)

    for _ in range(2):
        world.now += 60
        world.post(TEST, 1, project=root, session="s4", output=NOT_INSTALLED)
    assert world.burst()["broken"] == 1
    assert world.one("status", "confidence") == ("broken", 0.66)
    flags = world.execute("SELECT cannot_run FROM attempts ORDER BY event_id", {})
    assert [flag for (flag,) in flags] == [0, 0, 0, 1, 1]


def test_a_stale_procedure_keeps_its_real_runs_and_sessions(world: World, tmp_path: Path) -> None:
    root = make_repository(tmp_path / "shop")
    _verified(world, root)
    world.now += 60
    world.post(TEST, project=root, session="s2", output="4 passed in 0.20s")
    world.burst()
    first, last = world.one("first_verified_at", "last_verified_at")

    world.now += 15 * DAY
    assert mark_stale(world.engine, world.settings, world.now)["stale"] == 1
    status, runs, sessions, body = world.one("status", "verified_runs", "distinct_sessions", "body")
    assert (status, runs, sessions) == ("stale", 3, 2)
    assert world.one("first_verified_at", "last_verified_at") == (first, last)
    assert "No recent successful run: verified by 3 successful runs in 2 sessions" in body


def test_list_shows_stale_procedures_in_their_own_section_beside_the_active_ones(
    world: World, tmp_path: Path
) -> None:
    root = make_repository(tmp_path / "shop")
    _verified(world, root)  # aged out below
    world.burst()
    world.now += 15 * DAY
    for session in ("s3", "s4"):
        world.now += 60
        world.post("make lint", project=root, session=session)
    world.burst()
    mark_stale(world.engine, world.settings, world.now)  # the burst may have aged it already

    listed = world.home.remem("procedures", "list").stdout
    active, _, stale = listed.partition("Stale procedures (1), last verified ")
    assert active.startswith("Procedures\n") and "make lint" in active and TEST not in active
    assert stale.startswith(f"{date(NOW + 120)}, older than promotion.max_age = 14d\n")
    (row,) = [line for line in stale.splitlines() if TEST in line]
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    assert cells[4:] == ["stale", "0.70", "2", "2", date(NOW + 120)]
    assert "2 stale" not in world.home.remem("status").stdout
    assert f"1 stale: last verified {date(NOW + 120)}" in world.home.remem("status").stdout
    # Asked for by status, or all of them: one table, as before.
    assert "Stale procedures" not in world.home.remem("procedures", "list", "--all").stdout
    only = world.home.remem("procedures", "list", "--status", "stale").stdout
    assert "Stale procedures" not in only and TEST in only and "make lint" not in only


def test_migration_0009_rederives_red_procedures_as_active(world: World, tmp_path: Path) -> None:
    root = make_repository(tmp_path / "shop")
    _verified(world, root)
    for _ in range(2):
        world.now += 60
        world.post(TEST, 1, project=root, session="s3", output=PYTEST_RED)
    world.burst()

    migrate.downgrade(world.engine, "0008")
    assert "cannot_run" not in _columns(world, "attempts")
    migrate.upgrade(world.engine)
    assert world.execute("SELECT name FROM pending_jobs", {}) == [(rebuild.REBUILD_JOB,)]
    assert world.burst()["rebuilds"] == 1
    assert world.one("status", "verified_runs", "confidence") == ("active", 2, 0.86)
    assert "cannot_run" in _columns(world, "attempts")
    assert world.execute("SELECT count(*) FROM attempts WHERE cannot_run = 0", {}) == [(2,)]
