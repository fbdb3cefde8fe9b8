"""Group tallies and evidence rows through the real worker: bursts window by window give the
state a rebuild derives from the events, maintenance ages tallies in batches, and `show`
pages the evidence."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from remem.config import load_settings
from remem.db import driver, migrate
from remem.db.engine import make_engine
from remem.procedures import journal, known, rebuild, tallies
from remem.procedures.groups import Group
from remem.procedures.promote import archive, mark_stale
from remem.procedures.tally import Tally
from remem.queue import store as queue
from remem.team.ship import ship
from tests import oracles
from tests.integration.conftest import DAY, NOW, World, make_repository
from tests.pg_server import DatabaseCopies
from workers.handlers import PromoteHandler
from workers.runner import Worker
from workers.team import TeamPromoter

MIX_PASSED = "Finished in 1.0 seconds (1.0s async, 0.00s sync)\n49 tests, 0 failures"

DERIVED = {
    "procedures": (
        "id, project_id, scope, branch, directory, workflow_hash, command, variants, status, "
        "confidence, verified_runs, distinct_sessions, branches, evidence_event_ids, files, "
        "files_more, first_verified_at, last_verified_at, body"
    ),
    "procedure_evidence": "procedure_id, event_id, verified_at",
    "lessons": (
        "project_id, branch, directory, workflow_hash, resolved_by_event_id, failed_attempts, "
        "fix_files, repeats, body, resolved_at"
    ),
    "attempts": "event_id, step, attempt_number, duplicate_of, resolved_by_event_id",
    "known_errors": (
        "project_id, branch, directory, workflow, workflow_hash, error_key, error, "
        "first_event_id, last_event_id, session_id, first_seen_at, last_seen_at, times_seen, "
        "sessions, resolved_by_event_id, resolved_at, fix_files, fix_commands"
    ),
}


def stored_tallies(engine: Engine) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Each group's tally, without the cutoff it was last brought up to date at (a group no
    window touched lately keeps an older one, with the same counts)."""
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT project_id, scope, branch, directory, workflow_hash, tally, "
                "oldest_fresh_at FROM group_states"
            )
        ).all()
    found = {}
    for *key, encoded, oldest in rows:
        tally = Tally.from_json(encoded)
        assert tally.oldest_fresh_at == oldest
        data = dict(tally.__dict__)
        del data["cutoff"]
        found[tuple(key)] = data
    return found


def derived(world: World, engine: Engine | None = None) -> dict[str, Any]:
    """What the world's database (or `engine`'s) derived from the events."""
    engine = engine or world.engine
    with engine.connect() as connection:
        state: dict[str, Any] = {
            table: sorted(
                (tuple(r) for r in connection.execute(text(f"SELECT {columns} FROM {table}"))),
                key=repr,
            )
            for table, columns in DERIVED.items()
        }
    state["group_states"] = stored_tallies(engine)
    return state


def assert_full_derivation_agrees(world: World) -> None:
    """Each tally equals one derived from all of its group's runs at the time it was brought
    up to date, and the journal equals one derived from scratch from all of its runs."""
    before = derived(world)
    rules = world.settings
    with world.engine.connect() as connection:
        transaction = connection.begin()
        connection.execute(text("DELETE FROM lessons"))
        connection.execute(text("DELETE FROM known_errors"))
        connection.execute(
            text(
                "UPDATE attempts SET attempt_number = 1, duplicate_of = NULL, "
                "resolved_by_event_id = NULL"
            )
        )
        rows = connection.execute(
            text(
                "SELECT project_id, scope, branch, directory, workflow, workflow_hash, tally "
                "FROM group_states"
            )
        ).all()
        for *key, encoded in rows:
            group = Group(*key)
            stored = Tally.from_json(encoded)
            now = stored.cutoff + rules.max_age_s
            derived_rules = promote_rules(world)
            found, lasts = tallies.rederive(connection, group, derived_rules, now)
            assert found == stored, group
            kept = connection.execute(
                text(
                    "SELECT s.session_id, s.last_verified_at FROM group_sessions s "
                    "JOIN group_states g ON g.id = s.group_id WHERE g.project_id = :project_id "
                    "AND g.scope = :scope AND g.branch = :branch AND g.directory = :directory "
                    "AND g.workflow_hash = :workflow_hash"
                ),
                group.key(),
            ).all()
            assert dict(kept) == lasts, group
            if group.scope == "branch":
                params = group.params()
                history = oracles.load_history(connection, params)
                driver.run(journal.rebuild(connection, params, history, world.now))
                around = known.Surroundings(world.settings.ignore_commands)
                driver.run(known.rederive(connection, params, history, world.now, around=around))
        after = {
            table: sorted(
                (tuple(r) for r in connection.execute(text(f"SELECT {columns} FROM {table}"))),
                key=repr,
            )
            for table, columns in DERIVED.items()
        }
        transaction.rollback()
    assert after == {table: before[table] for table in DERIVED}


def promote_rules(world: World) -> Any:
    from remem.procedures.promote import rules_of

    return rules_of(world.settings)


def _interleaved_history(world: World, root: str, archived: bool = True) -> None:
    """Three sessions on two branches over five weeks, bursts between them, runs arriving
    out of time order, failure streaks closed by a pass, an archived procedure (unless not
    `archived`), and a gap long enough for runs to age out."""
    for week in range(5):
        base = NOW - (34 - 7 * week) * DAY
        world.now = base
        world.post("make test", 2, project=root, output="FAILED test_cart", session=f"a{week}")
        world.edit("src/cart.py", project=root, session=f"a{week}")
        world.post("make test", 2, project=root, output="FAILED test_cart", session=f"a{week}")
        world.edit("src/cart.py", project=root, session=f"a{week}")
        world.post("make test 2>&1", project=root, session=f"a{week}")
        world.post("make lint", project=root, branch="dev", session=f"b{week}")
        world.post("cd api && mix test", project=root, session=f"b{week}", output=MIX_PASSED)
        world.burst()
        # A session whose events carry times from before those already applied.
        world.post("make test", at=base - 3 * DAY, project=root, branch="dev", session=f"c{week}")
        world.post("make lint", 1, at=base - 2 * DAY, project=root, session=f"c{week}")
        world.post("make lint", at=base - 2 * DAY + 60, project=root, session=f"c{week}")
        world.now = base + 60
        world.burst()
        if week == 1 and archived:
            lint = world.execute(
                "SELECT id FROM procedures WHERE workflow = 'make lint' AND scope = 'branch' "
                "AND branch = 'dev'",
                {},
            )
            archive(world.engine, lint[0][0], world.now)
    world.now = NOW
    world.burst()


def test_bursts_window_by_window_equal_a_rebuild_from_the_events(
    world: World, tmp_path: Path
) -> None:
    root = make_repository(tmp_path / "shop")
    (tmp_path / "shop" / "api").mkdir()
    _interleaved_history(world, root)
    before = derived(world)
    statuses = {row[8] for row in before["procedures"]}
    assert {"active", "archived"} <= statuses
    assert {row[2] for row in before["procedures"]} == {"branch", "project"}
    assert before["lessons"] and before["procedure_evidence"]
    assert_full_derivation_agrees(world)

    world.now += 60
    rebuild.rebuild(world.engine, world.now, world.settings.ignore_commands)
    assert world.burst()["tasks_done"] == 15
    assert derived(world) == before


@pytest.mark.sqlite_only(
    "the local side is the SQLite file a machine keeps; the team side is PostgreSQL's own"
)
def test_team_workers_promote_shipped_events_to_the_state_a_local_burst_derives(
    world: World, tmp_path: Path, pg_copies: DatabaseCopies
) -> None:
    """The same events, promoted window by window on this machine and promoted by two team
    workers (each taking a project's windows in turn, statements pipelined) after a ship
    of them all: the same procedures, evidence, tallies, journal, lessons and known errors."""
    root = make_repository(tmp_path / "shop")
    (Path(root) / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/shop.git\n'
    )
    (tmp_path / "shop" / "api").mkdir()
    _interleaved_history(world, root, archived=False)
    local = derived(world)
    assert local["lessons"] and local["known_errors"] and local["procedure_evidence"]

    url = pg_copies.server.url(pg_copies.take())
    settings = load_settings(
        {
            **world.home.env,
            "REMEM_TEAM_DATABASE_URL": url,
            "REMEM_TEAM_MACHINE": "m1",
            "REMEM_TEAM_SHARE": "github.com/acme/*",
            "REMEM_TEAM_PROMOTE": "true",
        }
    )
    team = make_engine(url)
    try:
        shipped = ship(world.engine, team, settings, world.now)
        assert shipped.events == world.scalar("SELECT count(*) FROM captured_events")
        # Shipped in capture order into an empty database: the same ids for events, sessions
        # and the project, so that the states compare as they are.
        keys = "SELECT id, idempotency_key, session_id, project_id FROM captured_events ORDER BY id"
        with team.connect() as connection:
            there = [
                (i, k.removeprefix("m1/"), s, p) for i, k, s, p in connection.execute(text(keys))
            ]
        assert there == world.execute(keys)

        workers = [
            Worker(team, settings, f"m1:team:{n}", clock=lambda: world.now, queue_name="team ")
            for n in range(2)
        ]
        threads = [threading.Thread(target=TeamPromoter(team, w).drain) for w in workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in threads)
        assert sum(w.stats["tasks_done"] for w in workers) == len(world.tasks())
        assert not any(w.stats["tasks_retried"] or w.stats["tasks_failed"] for w in workers)
        # The team names the place by its key where this machine names it by its path.
        local["procedures"] = [
            (*row[:-1], row[-1].replace(root, "github.com/acme/shop"))
            for row in local["procedures"]
        ]
        assert derived(world, team) == local
    finally:
        team.dispose()


def test_maintenance_ages_tallies_in_batches_to_what_a_rebuild_derives(
    world: World, tmp_path: Path
) -> None:
    root = make_repository(tmp_path / "shop")
    for n in range(7):
        for session in ("s1", "s2"):
            world.post(f"make test-{n}", project=root, session=session)
    world.now += DAY
    world.post("make test-0", project=root, session="s3")
    world.burst()
    assert {row[1] for row in world.procedures()} == {"active"}

    world.now += 14 * DAY - 60  # the first runs aged out; the last one of test-0 did not
    stats = mark_stale(world.engine, world.settings, world.now, batch_size=2)
    assert stats["stale"] == 6 and stats["aged_groups"] == 14
    rows = world.procedures("workflow", "status", "verified_runs", "confidence")
    assert ("make test-0", "active", 1, 0.78) in rows
    assert sorted(status for _w, status, *_ in rows) == ["active"] + ["stale"] * 6
    assert mark_stale(world.engine, world.settings, world.now)["aged_groups"] == 0

    assert_full_derivation_agrees(world)
    before = derived(world)
    rebuild.rebuild(world.engine, world.now, world.settings.ignore_commands)
    world.burst()
    assert derived(world) == before


def test_show_pages_the_evidence_newest_first(world: World, tmp_path: Path) -> None:
    root = make_repository(tmp_path / "shop")
    for n in range(60):
        world.now = NOW + n * 60
        world.post("make test", project=root, session=f"s{n % 3}")
    world.burst()
    (procedure_id, listed) = world.one("id", "evidence_event_ids")
    assert len(json.loads(listed)) == 20  # the newest; every one is in procedure_evidence

    first = json.loads(world.home.remem("procedures", "show", str(procedure_id), "--json").stdout)
    second = json.loads(
        world.home.remem(
            "procedures", "show", str(procedure_id), "--json", "--evidence-page", "2"
        ).stdout
    )
    assert (first["evidence_page"], first["evidence_pages"], first["evidence_runs"]) == (1, 2, 60)
    assert len(first["evidence"]) == 50 and len(second["evidence"]) == 10
    newest = [run["event_id"] for run in first["evidence"]]
    oldest = [run["event_id"] for run in second["evidence"]]
    # Newest first on every page, as the README and the MCP `procedure` tool say.
    assert newest == sorted(newest, reverse=True) and oldest == sorted(oldest, reverse=True)
    times = [run["at"] for run in first["evidence"] + second["evidence"]]
    assert times == sorted(times, reverse=True)
    assert sorted(newest[:20]) == json.loads(listed)
    assert max(oldest) < min(newest) and len(set(oldest + newest)) == 60

    shown = world.home.remem("procedures", "show", str(procedure_id)).stdout
    assert "Evidence (newest first; page 1 of 2, 60 runs; --evidence-page 2 for older):" in shown
    lines = shown.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("Evidence ")))
    shown_ids = [int(line.split()[1]) for line in lines[start + 1 : start + 51]]
    assert shown_ids == newest
    refused = world.home.remem("procedures", "show", str(procedure_id), "--evidence-page", "3",
                               check=False)  # fmt: skip
    assert refused.returncode != 0 and "1 to 2" in refused.stderr


def test_migration_0007_moves_evidence_into_rows_and_asks_for_a_rebuild(
    world: World, tmp_path: Path
) -> None:
    root = make_repository(tmp_path / "shop")
    world.post("make test", project=root)
    world.post("make test", project=root, session="s2")
    world.burst()
    events = [row[0] for row in world.execute("SELECT id FROM captured_events ORDER BY id", {})]

    migrate.downgrade(world.engine, "0006")
    listed = world.execute("SELECT evidence_event_ids FROM procedures", {})
    assert [json.loads(row[0]) for row in listed] == [events]
    migrate.upgrade(world.engine)
    rows = world.execute("SELECT event_id, verified_at FROM procedure_evidence ORDER BY 1", {})
    assert [row[0] for row in rows] == events
    jobs = world.execute("SELECT name FROM pending_jobs", {})
    assert jobs == [(rebuild.REBUILD_JOB,)]
    assert world.burst()["rebuilds"] == 1
    assert world.one("status", "verified_runs") == ("active", 2)


def test_a_window_prepared_before_another_was_applied_is_derived_again(
    world: World, tmp_path: Path
) -> None:
    """Workers on one group: each window's reads were taken before the others were applied,
    so their tally updates are refused and tallies derived again under the lock, and the fix
    journal does not trust what those reads said of its streaks."""
    root = make_repository(tmp_path / "shop")
    world.post("make test", project=root, session="s1")
    world.post("make test", project=root, session="s1")
    world.burst()
    world.post("make test", 1, project=root, session="s2", output="FAILED test_cart")
    world.post("make test", 1, project=root, session="s3", output="FAILED test_cart")
    world.post("make test", project=root, session="s4")
    handler = PromoteHandler()
    tasks = [queue.claim_next(world.engine, f"worker-{n}", world.now, 60) for n in range(3)]
    prepared = [handler.prepare(world.engine, task, world.settings) for task in tasks if task]
    assert len(prepared) == 3
    for task, window in zip(tasks, prepared, strict=True):
        assert task is not None
        with world.engine.begin() as connection:
            handler.apply(connection, task, window, world.settings, world.now)
            queue.complete(connection, task, world.now)
    assert world.one("status", "verified_runs", "confidence") == ("active", 3, 0.94)
    assert world.execute("SELECT failed_attempts FROM lessons", {}) == [(2,)]
    assert_full_derivation_agrees(world)


def test_more_runs_at_one_instant_than_a_neighbour_read_holds_agree_with_a_rebuild(
    world: World, tmp_path: Path
) -> None:
    """The journal reads the runs around a window 8 rows at a time from their time: with more
    runs than that sharing one instant, windows still give what a rebuild derives."""
    root = make_repository(tmp_path / "shop")
    instant = NOW - DAY
    for run in range(12):
        world.post("make test", project=root, at=instant, session=f"s{run % 3}")
    world.burst()
    world.post("make test", 2, project=root, at=instant, output="FAILED test_cart", session="late")
    world.edit("src/cart.py", project=root, session="late")
    world.post("make test", project=root, at=instant, session="late")
    world.burst()
    for run in range(10):
        world.post("make test", project=root, at=instant, session=f"t{run % 2}")
    world.burst()

    state = derived(world)
    assert state["lessons"] and len(state["procedure_evidence"]) == 23
    assert_full_derivation_agrees(world)
