"""Forgetting (remem/forgetting/) on a real database: what goes with an event, what stays,
the spool and log lines, and the bytes left in the file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from remem.admin.forget import forget_everywhere
from remem.capture import spool
from remem.capture.hosts import build_event
from remem.db.engine import Compacted, compact
from remem.errors import NotFound
from remem.forgetting import erase
from remem.forgetting.plan import plan
from remem.forgetting.selection import MASK, Plan, Selection
from remem.record import rewrite as files
from tests.integration.conftest import World

SECRET = "zq8Kp2Vx7Lm4Rt9Wb3Nc6Yh1Jd5Fg0Qs8Ue2Ia7Ox"


def run_forget(world: World, **selection: Any) -> erase.Forgotten:
    done = erase.forget(world.engine, world.settings, Selection(**selection), world.now)
    world.burst()
    return done


def count(world: World, sql: str) -> int:
    with world.engine.connect() as connection:
        return int(connection.execute(text(sql)).scalar_one())


def spooled(world: World, command: str, project: str, key: str, session: str = "s9") -> None:
    payload = {"host": "generic", "session_id": session, "cwd": project, "command": command,
               "exit_code": 0, "event_id": key}  # fmt: skip
    event = build_event(payload, "generic", world.now, lambda cwd: (cwd, "main", cwd, "."))
    record = {"type": "event", "event": event.as_dict(), "spooled_at": 1.0, "spool_reason": "t"}
    spool.append(world.settings.spool_dir, record)


def test_forgetting_a_failed_attempt_takes_its_lesson_and_keeps_the_procedure(
    world: World,
) -> None:
    world.post("make test", 2, output=f"FAILED: mode {SECRET} rejected")
    world.post("make test")
    world.post("make test")
    world.burst()
    assert world.one("confidence", "verified_runs") == (0.86, 2)
    assert count(world, "SELECT count(*) FROM lessons") == 1

    done = run_forget(world, pattern=SECRET)

    assert [event.id for event in done.plan.events] == [1]
    assert done.derived_rows_deleted["lessons"] == 1
    assert done.derived_rows_deleted["attempts"] == 1
    assert count(world, "SELECT count(*) FROM lessons") == 0
    assert count(world, "SELECT count(*) FROM attempts") == 0
    assert world.one("id", "status", "verified_runs") == (1, "active", 2)


def test_a_project_narrows_a_match_in_the_database_and_the_spool(world: World) -> None:
    for project in ("/p/shop", "/p/blog"):
        world.post(f"./deploy.sh --mode {SECRET}", project=project, session=project)
        world.post(f"./deploy.sh --mode {SECRET}", project=project, session=project)
        spooled(world, f"./deploy.sh --mode {SECRET}", project, f"spooled-{project}")
    world.burst()  # ingests the spool: hold two more back
    spooled(world, f"./deploy.sh --mode {SECRET}", "/p/shop", "late-shop")
    spooled(world, f"./deploy.sh --mode {SECRET}", "/p/blog", "late-blog")

    done = run_forget(world, pattern=SECRET, project="/p/shop")

    assert len(done.plan.events) == 3 and done.plan.spool_lines == {"events.jsonl": 1}
    sql = "SELECT DISTINCT p.root FROM captured_events e JOIN projects p ON p.id = e.project_id"
    with world.engine.connect() as connection:
        roots = connection.execute(text(sql)).scalars().all()
    assert roots == ["/p/blog"]
    assert world.procedures("verified_runs") == [(4,)]  # blog's, with the late spooled run
    assert done.sessions_deleted == 1  # shop's own; s9 still has blog's events


def test_an_unknown_project_or_id_is_refused_before_anything_changes(world: World) -> None:
    world.post("make build")
    selections: list[dict[str, Any]] = [
        {"pattern": "x", "project": "/p/none"},
        {"event_ids": (1, 7)},
        {"procedure_ids": (3,)},
    ]
    for selection in selections:
        with pytest.raises(NotFound):
            erase.forget(world.engine, world.settings, Selection(**selection), world.now)
    assert count(world, "SELECT count(*) FROM captured_events") == 1


def test_a_spooled_copy_of_a_forgotten_event_goes_with_it(world: World) -> None:
    world.post("make build")
    world.post("make build")
    world.burst()
    # Ingested but still on disk, as after a crash between commit and unlink.
    spooled(world, "make build", "/p/shop", "e1", session="s1")
    assert count(world, "SELECT count(*) FROM captured_events WHERE idempotency_key LIKE '%e1'")

    done = run_forget(world, event_ids=(1,))

    assert done.plan.spool_lines == {"events.jsonl": 1}
    assert count(world, "SELECT count(*) FROM captured_events") == 1  # not re-ingested


def test_spool_and_log_files_keep_other_lines_byte_for_byte(world: World) -> None:
    world.post(f"deploy {SECRET}")
    active = Path(world.settings.spool_dir) / spool.ACTIVE_FILE
    dead = Path(world.settings.spool_dir) / spool.DEAD_LETTER_FILE
    log = Path(world.settings.log_dir) / "worker.log"
    torn = b'{"type": "event", "event": {"cwd": "/p/sh'
    active.write_bytes(b'{"type": "drop"}\n{"x": "%s"}\n%s' % (SECRET.encode(), torn))
    dead.write_bytes(b'{"line": "x"}\n{"line": "{\\"c\\": \\"%s\\"}"}\n' % SECRET.encode())
    log.write_bytes(b"caf\xc3\xa9 \xff\n%s\r\nend" % SECRET.encode())
    for path in (active, dead, log):
        os.chmod(path, 0o644)

    done = erase.forget(world.engine, world.settings, Selection(pattern=SECRET), world.now)

    assert done.plan.spool_lines == {"dead-letter.jsonl": 1, "events.jsonl": 1}
    assert done.plan.log_lines == {"worker.log": 1}
    assert active.read_bytes() == b'{"type": "drop"}\n' + torn
    assert dead.read_bytes() == b'{"line": "x"}\n'
    assert log.read_bytes() == b"caf\xc3\xa9 \xff\nend"
    assert {path.stat().st_mode & 0o777 for path in (active, dead, log)} == {0o600}
    temporaries = [os.listdir(directory) for directory in (world.settings.spool_dir, log.parent)]
    assert [
        name for names in temporaries for name in names if name.startswith(files.TEMPORARY_PREFIX)
    ] == []


def test_a_match_in_a_task_error_clears_the_error_and_keeps_the_task(world: World) -> None:
    world.post("make build")
    world.burst()
    with world.engine.begin() as connection:
        connection.execute(text("UPDATE extraction_tasks SET last_error = :e"), {"e": SECRET})

    done = run_forget(world, pattern=SECRET)

    assert done.plan.task_errors == (1,) and not done.plan.events
    assert world.tasks()[0][6] is None


@pytest.mark.sqlite_only("compacts the SQLite file and reads its bytes and its WAL")
def test_matches_past_one_batch_of_ids_all_go_and_the_file_is_compacted(world: World) -> None:
    for number in range(1100):
        world.post(f"deploy --mode {SECRET} --run {number}", session=f"s{number % 3}")
    world.post("make build", session="keep")
    world.post("make build", session="keep")
    world.burst()

    done = run_forget(world, pattern=r"zq8K\w+")
    compacted = compact(world.engine)

    assert done.events_deleted == 1100 and done.sessions_deleted == 3
    assert compacted == Compacted(vacuumed=True, wal_truncated=True)
    assert count(world, "PRAGMA freelist_count") == 0
    wal = Path(f"{world.home.db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert SECRET.encode() not in world.home.db.read_bytes()
    assert world.procedures("command", "verified_runs") == [("make build", 2)]


@pytest.mark.sqlite_only("compares the bytes of the SQLite file before and after the plan")
def test_a_plan_changes_nothing_and_masks_the_match(world: World) -> None:
    world.post(f"./deploy.sh --mode {SECRET}")
    world.post(f"./deploy.sh --mode {SECRET}")
    world.burst()
    before = world.home.db.read_bytes()

    found = plan(world.engine, world.settings, Selection(pattern="zq8Kp2"))

    # The match goes with the word it began, and at most 4 characters either side are shown.
    shown = f"…ode {MASK}…"
    assert [event.command for event in found.events] == [shown, shown]
    assert "zq8Kp2" not in json.dumps(found.as_json())
    assert SECRET[6:12] not in json.dumps(found.as_json())
    assert world.home.db.read_bytes() == before
    assert found.rederived_procedure_ids == ()
    assert [p.id for p in found.procedures] == [1]


def test_a_forget_stopped_before_its_rebuild_leaves_the_rebuild_owed(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    for _ in range(3):
        world.post("make build")
    world.burst()

    def stopped(*_args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(erase.rebuild, "rebuild", stopped)
    with pytest.raises(KeyboardInterrupt):
        erase.forget(world.engine, world.settings, Selection(event_ids=(1,)), world.now)
    monkeypatch.undo()
    world.burst()

    assert world.one("id", "verified_runs", "evidence_event_ids") == (1, 2, "[2, 3]")


def test_forgetting_everywhere_plans_asks_then_forgets_and_rederives(world: World) -> None:
    world.post(f"./deploy.sh --mode {SECRET}")
    for _ in range(2):
        world.post("make build")
    world.burst()
    selection = Selection(pattern=SECRET)

    planned = forget_everywhere(world.engine, world.settings, selection, dry_run=True)
    assert not planned.applied and planned.forgotten is None and planned.team is None
    assert [event.id for event in planned.plan.events] == [1]
    assert planned.as_json()["dry_run"] is True

    class Refused(Exception):
        pass

    def refuse(found: Plan) -> None:
        assert [event.id for event in found.events] == [1]
        raise Refused

    with pytest.raises(Refused):
        forget_everywhere(world.engine, world.settings, selection, confirm=refuse)
    assert count(world, "SELECT count(*) FROM captured_events") == 3

    rederived: list[int] = []

    def rederive(engine: Any, _settings: Any) -> dict[str, int]:
        rederived.append(int(world.burst().get("promoted", 0)))
        return {"promoted": rederived[-1], "events": 0}

    done = forget_everywhere(world.engine, world.settings, selection, rederive=rederive)

    assert done.applied and done.complete() and done.forgotten is not None
    assert done.forgotten.events_deleted == 1
    assert rederived == [1]  # make build, promoted again from what remains
    assert done.compacted is not None
    assert done.compacted.vacuumed == (world.engine.dialect.name == "sqlite")
    summary = done.as_json()
    assert summary["dry_run"] is False and summary["rederived"] == {"promoted": 1, "events": 0}
    assert SECRET not in json.dumps(summary)
    assert count(world, "SELECT count(*) FROM captured_events") == 2


def test_forgetting_everywhere_what_is_not_there_changes_nothing(world: World) -> None:
    world.post("make build")
    world.burst()

    report = forget_everywhere(world.engine, world.settings, Selection(pattern=SECRET))

    assert not report.applied and report.plan.empty() and report.complete()
    assert count(world, "SELECT count(*) FROM captured_events") == 1
