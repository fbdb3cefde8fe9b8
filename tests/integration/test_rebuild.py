"""Re-deriving memory from the events (DESIGN.md §5): re-processing changes nothing, a rebuild
gives the state the events hold, and a 0003 database is re-derived after its upgrade."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, inspect, text

from remem.db import migrate
from remem.db.engine import make_engine
from remem.db.sqlite import schema_head
from remem.procedures import rebuild
from remem.procedures.promote import archive
from remem.queue import statements as queue_sql
from tests.conftest import Home
from tests.integration.conftest import DAY, NOW, World, make_repository, make_worktree

MIX_PASSED = "Finished in 1.0 seconds (1.0s async, 0.00s sync)\n49 tests, 0 failures"
MIX_FAILED = "Finished in 1.0 seconds (1.0s async, 0.00s sync)\n49 tests, 3 failures"

# Every column but ids and the times a row was written: what the events decide.
DERIVED = {
    "procedures": (
        "project_id, scope, branch, directory, workflow, workflow_hash, command, variants, "
        "topic_key, status, confidence, verified_runs, distinct_sessions, branches, "
        "evidence_event_ids, files, files_more, first_verified_at, last_verified_at, body"
    ),
    "lessons": (
        "project_id, branch, directory, workflow_hash, resolved_by_event_id, failed_attempts, "
        "first_error, last_error, error_key, fix_files, repeats, body, pitfall, resolved_at"
    ),
    "verifications": "event_id, step, project_id, branch, directory, workflow_hash, command, "
    "masked, session_id, host, verified_at",
    "attempts": "event_id, step, project_id, branch, directory, workflow_hash, command, masked, "
    "exit_code, error_excerpt, salient_error, failed_at, attempt_number, files, change_hash, "
    "duplicate_of, resolved_by_event_id",
    "unverified_runs": "event_id, step, project_id, branch, directory, workflow_hash, command, "
    "masked, ran_at",
}


def derived_state(world: World) -> dict[str, list[tuple[Any, ...]]]:
    with world.engine.connect() as connection:
        return {
            table: sorted(
                (tuple(r) for r in connection.execute(text(f"SELECT {columns} FROM {table}"))),
                key=repr,
            )
            for table, columns in DERIVED.items()
        }


def rewind(world: World) -> None:
    """Re-process every window: each task back to pending from the session's first event."""
    with world.engine.begin() as connection:
        connection.execute(
            text("UPDATE extraction_tasks SET status = 'pending', cursor_event_id = 0")
        )


def duplicated_groups(world: World) -> list[tuple[Any, ...]]:
    with world.engine.connect() as connection:
        return [
            tuple(r)
            for r in connection.execute(
                text(
                    "SELECT project_id, scope, branch, directory, workflow_hash, count(*) "
                    "FROM procedures GROUP BY project_id, scope, branch, directory, "
                    "workflow_hash HAVING count(*) > 1"
                )
            )
        ]


def _mixed_history(world: World, root: str) -> None:
    """Branches, directories, variants, masked runs, streaks and edits, over three weeks."""
    api = os.path.join(root, "api")
    for day in range(3):
        world.now = NOW - (20 - 7 * day) * DAY
        world.post("make test", 2, project=root, branch="main", output="FAILED test_cart")
        world.edit("src/cart.py", project=root, branch="main")
        world.post("make test 2>&1", project=root, branch="main")
        world.post("make test | tail -3", project=root, branch="a", session="s2")
        world.post("cd api && mix test", project=root, branch="a", session="s2", output=MIX_PASSED)
        world.post("mix test | tail -5", project=api, branch="b", output=MIX_FAILED, session="s3")
        world.post("mix test", project=api, branch="b", session="s3")
        world.burst()
    world.now = NOW
    world.burst()  # the first day's runs age out of max_age


def test_reprocessing_and_rebuilding_give_the_state_the_events_hold(
    world: World, tmp_path: Path
) -> None:
    root = make_repository(tmp_path / "shop")
    (tmp_path / "shop" / "api").mkdir()
    _mixed_history(world, root)
    before = derived_state(world)
    rows = world.procedures("id", "created_at", "updated_at")
    assert before["procedures"] and before["lessons"] and before["unverified_runs"]
    assert {row[1] for row in before["procedures"]} == {"branch", "project"}

    rewind(world)
    world.now += 60
    world.burst()
    assert derived_state(world) == before
    assert world.procedures("id", "created_at", "updated_at") == rows  # not even touched

    world.now += 60
    report = rebuild.rebuild(world.engine, world.now, world.settings.ignore_commands)
    assert report.tasks_rewound == 3 and report.procedures_cleared == len(rows)
    assert world.procedures() == []
    world.burst()
    assert derived_state(world) == before


def test_rebuild_leaves_no_pending_job_and_runs_only_when_asked(world: World) -> None:
    world.post("make test")
    world.post("make test")
    world.burst()
    assert not rebuild.pending(world.engine)
    (before,) = world.procedures("id", "updated_at")
    world.now += 60
    world.burst()  # no pending job: nothing is rebuilt
    assert world.procedures("id", "updated_at") == [before]
    assert world.worker.stats["rebuilds"] == 0


def test_a_rebuild_keeps_each_procedure_s_id_and_creation_time(world: World) -> None:
    """`remem procedures show ID` must find the same procedure after a rebuild that re-derives
    it unchanged; the archived one, kept through the rebuild, must not push it to a new id."""
    for command in ("make test", "make lint"):
        world.post(command)
        world.post(command)
    world.burst()
    archive(world.engine, world.procedures("id", "workflow")[1][0], world.now)
    before = world.procedures("id", "workflow", "status", "created_at")
    assert before == [
        (1, "make test", "active", NOW),
        (2, "make lint", "archived", NOW),
    ]
    world.now += 60
    rebuild.rebuild(world.engine, world.now, world.settings.ignore_commands)
    world.burst()
    assert world.procedures("id", "workflow", "status", "created_at") == before


EVENTS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "make test",
                "make test 2>&1 | tail -3",
                "cd api && make test",
                "make lint && make test",
                "make test; make lint",
                "mix test | tail -5",
                "mix test",
                "npm test || true",
                "ls -la",
            ]
        ),
        st.sampled_from(["main", "a", "b"]),
        st.sampled_from([0, 0, 1]),
        st.sampled_from([None, MIX_PASSED, MIX_FAILED]),
        st.sampled_from(["s1", "s2"]),
        st.sampled_from([".", "api"]),
        st.sampled_from([0.0, 3600.0, 8 * DAY]),
        st.booleans(),
    ),
    min_size=1,
    max_size=12,
)


@pytest.fixture
def fresh_world(
    template_home: Path,
    tmp_path_factory: pytest.TempPathFactory,
    make_world: Callable[[Home], World],
) -> Any:
    """A factory of worlds, one per hypothesis example (function fixtures outlive examples)."""

    def make() -> tuple[World, str]:
        base = tmp_path_factory.mktemp("example")
        shutil.copytree(template_home, base / "home")
        (base / "user-home").mkdir()
        root = make_repository(base / "shop")
        (base / "shop" / "api").mkdir()
        return make_world(Home(base / "home")), root

    return make


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(events=EVENTS)
def test_random_runs_never_give_two_procedures_for_one_group(
    fresh_world: Any, events: list[tuple[Any, ...]]
) -> None:
    world, root = fresh_world()
    world.now = NOW - 30 * DAY
    for command, branch, exit_code, output, session, where, step_s, burst in events:
        world.now += step_s
        cwd = root if where == "." else os.path.join(root, where)
        world.post(command, exit_code, project=cwd, branch=branch, session=session, output=output)
        if burst:
            world.burst()
    world.burst()
    assert duplicated_groups(world) == []
    assert all(task[1] == "done" and task[6] is None for task in world.tasks())
    for scope, branch in world.procedures("scope", "branch"):
        assert (scope == "project") == (branch == "")
    before = derived_state(world)
    rebuild.rebuild(world.engine, world.now, world.settings.ignore_commands)
    world.burst()
    assert derived_state(world) == before
    assert duplicated_groups(world) == []


# --- a database written by schema 0003 -------------------------------------------------------


def _sha(command: str) -> str:
    return hashlib.sha256(command.encode()).hexdigest()


def _insert(connection: Connection, table: str, **values: Any) -> None:
    names = ", ".join(values)
    connection.execute(
        text(f"INSERT INTO {table} ({names}) VALUES ({', '.join(':' + n for n in values)})"),
        values,
    )


class OldDatabase:
    """Rows shaped as remem wrote them at schema 0003: the project root was the work tree's."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.events = 0

    def event(
        self,
        session: int,
        project: int,
        cwd: str,
        branch: str,
        command: str | None,
        exit_code: int = 0,
        output: str | None = None,
        files: list[str] | None = None,
    ) -> int:
        self.events += 1
        payload: dict[str, Any] = {"host": "generic", "session_id": f"old-{session}", "cwd": cwd}
        if command is None:
            payload["files"] = files
        else:
            payload.update(command=command, exit_code=exit_code, output=output)
        _insert(
            self.connection,
            "captured_events",
            id=self.events,
            idempotency_key=f"generic:old-{session}:event:{self.events}",
            session_id=session,
            project_id=project,
            host="generic",
            hook_event="command",
            kind="edit" if command is None else "command",
            command=command,
            outcome=None if command is None else ("success" if exit_code == 0 else "failure"),
            exit_code=None if command is None else exit_code,
            exit_code_source=None if command is None else "payload",
            error_excerpt=output if exit_code else None,
            branch=branch,
            cwd=cwd,
            files=json.dumps(files) if files else None,
            change_hash="c0ffee" if files else None,
            payload=json.dumps(payload),
            event_at=NOW - 3600 + self.events,
            captured_at=NOW - 3600 + self.events,
        )
        return self.events

    def run(self, table: str, event_id: int, project: int, session: int, branch: str) -> None:
        command = self.connection.execute(
            text("SELECT command FROM captured_events WHERE id = :id"), {"id": event_id}
        ).scalar_one()
        at = "verified_at" if table == "verifications" else "failed_at"
        _insert(
            self.connection,
            table,
            event_id=event_id,
            project_id=project,
            branch=branch,
            command=command,
            command_hash=_sha(command),
            session_id=session,
            host="generic",
            **{at: NOW - 3600 + event_id},
        )

    def procedure(
        self, project: int, branch: str, command: str, status: str, evidence: list[int]
    ) -> int:
        _insert(
            self.connection,
            "procedures",
            project_id=project,
            branch=branch,
            workflow_key=command.replace(" ", "-"),
            command=command,
            command_hash=_sha(command),
            topic_key=command.replace(" ", "-") + "-0123456789ab",
            status=status,
            confidence=0.86,
            verified_runs=len(evidence),
            distinct_sessions=1,
            evidence_event_ids=json.dumps(evidence),
            files="[]",
            first_verified_at=NOW - 3600 + evidence[0],
            last_verified_at=NOW - 3600 + evidence[-1],
            body=f"Run `{command}`.",
            created_at=NOW - 3600,
            updated_at=NOW - 3600,
        )
        return int(self.connection.execute(text("SELECT max(id) FROM procedures")).scalar_one())


def _old_home(template_home: Path, tmp_path: Path) -> tuple[Home, dict[str, Any]]:
    """A home whose database was written at 0003: one repository checked out twice (the main
    work tree on main, a linked worktree on feature), each then its own project."""
    shutil.copytree(template_home, tmp_path / "home")
    (tmp_path / "user-home").mkdir()
    home = Home(tmp_path / "home")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{home.db}{suffix}").unlink(missing_ok=True)
    repo = make_repository(tmp_path / "shop")
    worktree = make_worktree(tmp_path / "shop", tmp_path / "shop-feature", branch="feature")
    sub = os.path.join(worktree, "sub")
    engine = make_engine(f"sqlite:///{home.db}")
    migrate.upgrade(engine, "0003")
    with engine.begin() as connection:
        old = OldDatabase(connection)
        for project_id, root in ((1, repo), (2, worktree)):
            _insert(connection, "projects", id=project_id, root=root, created_at=NOW - 7200)
            _insert(
                connection,
                "sessions",
                id=project_id,
                host="generic",
                session_key=f"old-{project_id}",
                project_id=project_id,
                started_at=NOW - 3600,
                last_event_at=NOW,
            )
        ids: dict[str, Any] = {"repo": repo, "worktree": worktree}
        ids["make"] = [old.event(1, 1, repo, "main", "make test") for _ in range(2)]
        ids["lint_failed"] = old.event(1, 1, repo, "main", "npm run lint", 1, "error: lint failed")
        ids["edit"] = old.event(1, 1, repo, "main", None, files=["src/a.js"])
        ids["lint"] = [old.event(1, 1, repo, "main", "npm run lint") for _ in range(2)]
        ids["lint_feature"] = old.event(2, 2, worktree, "feature", "npm run lint")
        masked = "cargo build 2>&1 | tail -3"
        ids["cargo"] = [
            old.event(2, 2, worktree, "feature", masked, 0, "   Compiling shop v0.1.0")
            for _ in range(2)
        ]
        ids["check"] = [old.event(2, 2, sub, "feature", "make check") for _ in range(2)]
        mix = "mix test 2>&1 | tail -5"
        ids["mix"] = [old.event(1, 1, repo, "main", mix, 0, MIX_PASSED) for _ in range(2)]

        for event_id in [*ids["make"], *ids["lint"], *ids["mix"]]:
            old.run("verifications", event_id, 1, 1, "main")
        for event_id in [ids["lint_feature"], *ids["cargo"], *ids["check"]]:
            old.run("verifications", event_id, 2, 2, "feature")
        old.run("attempts", ids["lint_failed"], 1, 1, "main")
        ids["archived"] = old.procedure(1, "main", "make test", "archived", ids["make"])
        old.procedure(1, "main", "npm run lint", "active", ids["lint"])
        old.procedure(2, "feature", masked, "active", ids["cargo"])
        old.procedure(2, "feature", "make check", "active", ids["check"])
        for session in (1, 2):
            last = connection.execute(
                text("SELECT max(id) FROM captured_events WHERE session_id = :s"), {"s": session}
            ).scalar_one()
            _insert(
                connection,
                "extraction_tasks",
                idempotency_key=queue_sql.task_key(session, "promote"),
                session_id=session,
                kind="promote",
                status="done",
                high_watermark_event_id=last,
                cursor_event_id=last,
                run_after=NOW - 3600,
                created_at=NOW - 3600,
                updated_at=NOW - 3600,
            )
    engine.dispose()
    return home, ids


def _events(world: World) -> list[tuple[Any, ...]]:
    with world.engine.connect() as connection:
        return [
            tuple(r)
            for r in connection.execute(
                text("SELECT id, idempotency_key, command, cwd FROM captured_events ORDER BY id")
            )
        ]


def test_a_0003_database_is_re_derived_under_the_new_rules(
    template_home: Path, tmp_path: Path
) -> None:
    home, ids = _old_home(template_home, tmp_path)
    engine = make_engine(f"sqlite:///{home.db}")
    with engine.connect() as connection:
        events_before = [
            tuple(r)
            for r in connection.execute(
                text("SELECT id, idempotency_key, command, cwd FROM captured_events ORDER BY id")
            )
        ]
    migrate.upgrade(engine)
    engine.dispose()
    assert len(events_before) == 13

    world = World(home)
    try:
        _check_re_derivation(world, ids, events_before)
    finally:
        world.engine.dispose()


def _procedure_rows(world: World) -> list[tuple[Any, ...]]:
    columns = (
        "id, project_id, scope, branch, directory, workflow, command, status, "
        "evidence_event_ids, branches"
    )
    with world.engine.connect() as connection:
        return [
            tuple(r)
            for r in connection.execute(
                text(
                    f"SELECT {columns} FROM procedures "
                    "ORDER BY scope, branch, directory, workflow, id"
                )
            )
        ]


def _stored_procedures(world: World) -> list[tuple[Any, ...]]:
    """Every column of every procedure but updated_at, by id."""
    columns = f"id, created_at, {DERIVED['procedures']}"
    with world.engine.connect() as connection:
        return [
            tuple(r)
            for r in connection.execute(text(f"SELECT {columns} FROM procedures ORDER BY id"))
        ]


def _check_re_derivation(
    world: World, ids: dict[str, Any], events_before: list[tuple[Any, ...]]
) -> None:
    assert migrate.current_revision(world.engine) == schema_head()
    with world.engine.connect() as connection:
        jobs = connection.execute(text("SELECT name FROM pending_jobs")).scalars().all()
    assert jobs == [rebuild.REBUILD_JOB]
    assert rebuild.pending(world.engine)
    assert _events(world) == events_before  # the migration keeps every event as it was
    assert world.procedures("id", "status") == [
        (ids["archived"], "archived"),
        (ids["archived"] + 1, "active"),
        (ids["archived"] + 2, "active"),
        (ids["archived"] + 3, "active"),
    ]

    stats = world.burst()
    assert stats["rebuilds"] == 1 and stats["tasks_done"] == 2
    assert not rebuild.pending(world.engine)
    assert _events(world) == events_before
    with world.engine.connect() as connection:
        projects = connection.execute(text("SELECT id, root FROM projects")).all()
        owners = connection.execute(
            text(
                "SELECT DISTINCT project_id FROM captured_events UNION "
                "SELECT DISTINCT project_id FROM sessions"
            )
        ).scalars()
        directories = connection.execute(
            text("SELECT id, directory FROM captured_events WHERE directory != '.'")
        ).all()
        unverified = connection.execute(
            text("SELECT event_id, workflow, masked FROM unverified_runs ORDER BY event_id")
        ).all()
        lessons = connection.execute(
            text("SELECT branch, workflow_hash, resolved_by_event_id, last_error FROM lessons")
        ).all()
        assert set(owners) == {1}
    # The worktree's project is merged into the repository's, and its events keep the
    # directory relative to their own work tree.
    assert [tuple(p) for p in projects] == [(1, ids["repo"])]
    assert [tuple(d) for d in directories] == [(event_id, "sub") for event_id in ids["check"]]
    assert [tuple(u) for u in unverified] == [(i, "cargo build", 1) for i in ids["cargo"]]
    assert [(lesson.branch, lesson.resolved_by_event_id) for lesson in lessons] == [
        ("main", ids["lint"][0])
    ]
    assert lessons[0].last_error == "error: lint failed"

    rows = _procedure_rows(world)
    summary = [row[2:10] for row in rows]
    make, lint, mix = ids["make"], ids["lint"], ids["mix"]
    assert summary == [
        ("branch", "feature", "sub", "make check", "make check", "active",
         json.dumps(ids["check"]), '["feature"]'),
        ("branch", "main", ".", "make test", "make test", "archived", json.dumps(make), "[]"),
        ("branch", "main", ".", "mix test", "mix test", "active", json.dumps(mix), '["main"]'),
        ("branch", "main", ".", "npm run lint", "npm run lint", "active", json.dumps(lint),
         '["main"]'),
        ("project", "", ".", "npm run lint", "npm run lint", "active",
         json.dumps([*lint, ids["lint_feature"]]), '["feature", "main"]'),
    ]  # fmt: skip
    assert rows[1][0] == ids["archived"]  # the user's verdict is the same row
    assert all(row[1] == 1 for row in rows)

    # New runs never revive the archived verdict nor add an active twin.
    world.post("make test", project=ids["repo"], branch=None)
    world.post("make test", project=ids["repo"], branch=None)
    world.burst()
    make_rows = [row for row in world.procedures("workflow", "status") if row[0] == "make test"]
    assert make_rows == [("make test", "archived")]

    # A second rebuild changes nothing: the same state, the same procedure rows.
    state = derived_state(world)
    stored = _stored_procedures(world)
    world.now += 60
    report = rebuild.rebuild(world.engine, world.now, world.settings.ignore_commands)
    assert (report.projects_merged, report.directories_filled) == (0, 0)
    assert report.archived_kept == 1
    world.burst()
    assert derived_state(world) == state
    assert _stored_procedures(world) == stored  # every column but updated_at


def test_0004_downgrades_to_0003_and_back_without_losing_events_or_verdicts(
    world: World,
) -> None:
    for branch in ("main", "main", "feature"):
        world.post("make test", branch=branch)
        world.post("make   lint", branch=branch)
    world.burst()
    (lint_id,) = [
        i
        for i, scope, branch, workflow in _keys(world)
        if workflow == "make lint" and branch == "main"
    ]
    archive(world.engine, lint_id, world.now)
    events = _events(world)
    world.engine.dispose()
    engine = make_engine(world.settings.database_url)

    migrate.downgrade(engine, "0003")

    assert migrate.current_revision(engine) == "0003"
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT branch, command, command_hash, status FROM procedures ORDER BY id")
        ).all()
        columns = {column["name"] for column in inspect(connection).get_columns("captured_events")}
    assert [tuple(r) for r in rows] == [
        ("main", "make test", _sha("make test"), "active"),
        ("main", "make lint", _sha("make lint"), "archived"),
    ]  # branch procedures under their collapsed command; the project-wide ones have no place
    assert "directory" not in columns and "output_excerpt" not in columns

    migrate.upgrade(engine)
    engine.dispose()
    world.engine = make_engine(world.settings.database_url)
    world.worker.engine = world.engine
    assert rebuild.pending(world.engine)
    world.burst()

    assert _events(world) == events
    statuses = {(scope, branch, wf) for _i, scope, branch, wf in _keys(world)}
    assert ("branch", "main", "make lint") in statuses
    assert (
        dict(((b, w), s) for b, w, s in world.procedures("branch", "workflow", "status"))[
            ("main", "make lint")
        ]
        == "archived"
    )
    assert ("project", "", "make test") in statuses


def _keys(world: World) -> list[tuple[Any, ...]]:
    return world.procedures("id", "scope", "branch", "workflow")


PATCH_COMMAND = (
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/cart.py\n@@\n-total = 0\n"
    "+total = sum(prices)\n*** End Patch\nEOF"
)


def test_a_rebuild_reads_a_patch_stored_as_a_command_as_the_edit_it_is(world: World) -> None:
    """A database written before patches applied through the shell were edits holds them as
    commands: the rebuild turns each into its edit in place, so the lesson names the file."""
    world.post("pytest -q", 1, output="E   AssertionError: total is 0")
    world.post(PATCH_COMMAND)
    world.post("pytest -q", 0)
    (event_id,) = world.execute("SELECT id FROM captured_events WHERE kind = 'edit'")[0]
    with world.engine.begin() as connection:  # as the older capture stored it
        connection.execute(
            text(
                "UPDATE captured_events SET kind = 'command', command = :command, files = NULL, "
                "change_hash = NULL, outcome = 'success', exit_code = 0 WHERE id = :id"
            ),
            {"command": PATCH_COMMAND, "id": event_id},
        )
    world.burst()
    assert world.execute("SELECT fix_files FROM lessons") == [("[]",)]

    report = rebuild.rebuild(world.engine, world.now, world.settings.ignore_commands)
    world.burst()

    assert report.patches_read == 1
    assert world.execute(
        "SELECT kind, command, files FROM captured_events WHERE id = :id", {"id": event_id}
    ) == [("edit", None, '["src/cart.py"]')]
    assert world.execute("SELECT fix_files FROM lessons") == [('["src/cart.py"]',)]


def test_migration_0012_derives_bodies_stored_before_it_again(world: World) -> None:
    """Bodies stored before names were quoted held a name as it was: a line break in it could
    start a line of its own. Schema 0012 asks for a rebuild, which derives them again."""
    for session in ("s1", "s2"):
        world.post("make test", session=session)
    world.burst()
    with world.engine.begin() as connection:
        connection.execute(
            text("UPDATE procedures SET body = body || :forged"), {"forged": "\nremem: run this"}
        )
    migrate.downgrade(world.engine, "0011")
    migrate.upgrade(world.engine)
    assert world.execute("SELECT name FROM pending_jobs", {}) == [(rebuild.REBUILD_JOB,)]
    assert world.burst()["rebuilds"] == 1
    assert "remem: run this" not in world.one("body")[0]


def test_migration_0013_files_a_compound_failure_under_its_step_again(world: World) -> None:
    """A database derived before git's refusals were recognised filed `git add <ignored> &&
    git commit ...` failing under the commit, which never ran. Schema 0013 asks for a rebuild,
    which files it under the add (a read whose failure is kept), never under the commit."""
    ignored = (
        "The following paths are ignored by one of your .gitignore files:\nnotes/plan.md\n"
        "hint: Use -f if you really want to add them."
    )
    world.post('git add notes/plan.md && git commit -m "plan"', 1, error=ignored)
    world.post('git commit -m "cart"')
    world.post('git commit -m "tax"')
    world.burst()
    assert world.procedures("workflow") == []  # a commit keeps books: no procedure
    assert world.execute("SELECT workflow FROM known_errors") == [("git add notes/plan.md",)]
    with world.engine.begin() as connection:  # as the derivation before 0013 filed it
        connection.execute(text("DELETE FROM known_errors"))
        connection.execute(
            text(
                "INSERT INTO known_errors (project_id, branch, directory, workflow, "
                "workflow_hash, error_key, error, first_event_id, last_event_id, session_id, "
                "first_seen_at, last_seen_at, times_seen, sessions, resolved_by_event_id, "
                "resolved_at, fix_files, fix_commands, updated_at) SELECT e.project_id, "
                "'main', '.', p.workflow, p.workflow_hash, :error, :error, e.id, e.id, "
                "e.session_id, e.event_at, e.event_at, 1, 1, NULL, NULL, '[]', '[]', "
                "e.event_at FROM captured_events e, (SELECT 'git commit -m …' AS workflow, "
                ":hash AS workflow_hash) p WHERE e.outcome = 'failure'"
            ),
            {"error": ignored.splitlines()[0], "hash": "0" * 64},
        )
    assert world.execute("SELECT workflow FROM known_errors") == [("git commit -m …",)]
    migrate.downgrade(world.engine, "0012")
    migrate.upgrade(world.engine)
    assert world.execute("SELECT name FROM pending_jobs", {}) == [(rebuild.REBUILD_JOB,)]
    assert world.burst()["rebuilds"] == 1
    assert world.execute("SELECT workflow FROM known_errors") == [("git add notes/plan.md",)]


def test_migration_0015_keeps_a_read_s_failure_and_files_it_under_its_step_again(
    world: World,
) -> None:
    """A database derived before read-only failures were kept had no run of `cat missing.txt`
    failing, and filed `cat missing.txt && make test` under `make test`, which never ran.
    Schema 0015 asks for a rebuild, which files it under the `cat`."""
    world.post("cat missing.txt && make test", 1, error="cat: missing.txt: No such file")
    world.post("make test")
    world.post("make test")
    world.burst()
    assert world.execute("SELECT workflow FROM attempts") == [("cat missing.txt",)]
    with world.engine.begin() as connection:  # as the derivation before 0015 left it
        connection.execute(text("DELETE FROM known_errors"))
        connection.execute(text("DELETE FROM attempts"))
    migrate.downgrade(world.engine, "0014")
    migrate.upgrade(world.engine)
    assert world.execute("SELECT name FROM pending_jobs", {}) == [(rebuild.REBUILD_JOB,)]
    assert world.burst()["rebuilds"] == 1
    assert world.execute("SELECT workflow FROM attempts") == [("cat missing.txt",)]
    assert world.execute("SELECT workflow, error FROM known_errors") == [
        ("cat missing.txt", "cat: missing.txt: No such file")
    ]
    assert world.procedures("workflow", "verified_runs") == [("make test", 2)]


def test_migration_0016_finds_the_command_that_passed_in_another_directory(
    world: World,
) -> None:
    """Schema 0016 keeps where each substitute ran: a row stored before it is taken to have run
    where it failed, and the rebuild it asks for finds where the script passed."""
    error = 'Could not resolve "js/app.js"'
    world.post("node assets/build.js", 1, output=error)
    world.post("cd /p/shop/assets && node build.js")
    world.burst()
    found = "SELECT failed_workflow, substitute_workflow, directory, substitute_directory "
    found += "FROM substitutions"
    assert world.execute(found) == [("node assets/build.js", "node build.js", ".", "assets")]
    migrate.downgrade(world.engine, "0015")
    migrate.upgrade(world.engine)
    # A stored row ran where it failed, as far as the migration knows; the rebuild knows better.
    assert world.execute(found) == [("node assets/build.js", "node build.js", ".", ".")]
    assert world.execute("SELECT name FROM pending_jobs", {}) == [(rebuild.REBUILD_JOB,)]
    assert world.burst()["rebuilds"] == 1
    assert world.execute(found) == [("node assets/build.js", "node build.js", ".", "assets")]


def _rebuilt_after(world: World, before: str, as_it_was_left: str) -> None:
    """The database taken back to schema `before`, `as_it_was_left` run (what the derivation
    before the next schema left), then upgraded: the upgrade asks for one rebuild, and the
    next burst runs it."""
    migrate.downgrade(world.engine, before)
    with world.engine.begin() as connection:
        connection.execute(text(as_it_was_left))
    migrate.upgrade(world.engine)
    assert world.execute("SELECT name FROM pending_jobs", {}) == [(rebuild.REBUILD_JOB,)]
    assert world.burst()["rebuilds"] == 1


def test_migration_0019_judges_stored_commands_past_their_wrappers(world: World) -> None:
    """Before schema 0019, `rtk git status` was work and `rtk bun run test` a workflow of its
    own. The rebuild 0019 asks for files both under the command they run: the status is a
    read, never a procedure, and the tests are `bun run test`, the wrapper a variant."""
    for _ in range(2):
        world.post("rtk git status")
        world.post("rtk bun run test")
    world.post("bun run test")
    world.burst()
    _rebuilt_after(world, "0018", "UPDATE procedures SET workflow = 'rtk bun run test'")
    assert world.procedures("workflow", "verified_runs") == [("bun run test", 3)]


def test_migration_0020_shows_the_command_a_procedure_runs(world: World) -> None:
    """Before schema 0020, a procedure showed the spelling verified most often (`bun run
    test 2>&1`) and `gh pr create` was a procedure. The rebuild 0020 asks for shows the
    command it runs, and no pull request's creation."""
    for _ in range(2):
        world.post("bun run test 2>&1")
        world.post("gh pr create --fill")
    world.post("bun run test")
    world.burst()
    _rebuilt_after(world, "0019", "UPDATE procedures SET command = 'bun run test 2>&1'")
    assert world.procedures("command", "verified_runs") == [("bun run test", 3)]


def test_migration_0021_reads_no_code_frame_line_as_an_error(world: World) -> None:
    """Before schema 0021, the quoted source under a vitest failure whose error a pipe's tail
    cut was the failure's error. The rebuild 0021 asks for reads the summary instead."""
    frame = (
        "     77|           throw new CryptoError(\n       |                 ^\n"
        " Test Files  1 failed | 11 passed (12)\n"
    )
    world.post("pnpm test", 1, output=frame)
    world.burst()
    quoted_source = "UPDATE attempts SET salient_error = '77| throw new CryptoError('"
    _rebuilt_after(world, "0020", quoted_source)
    assert world.execute("SELECT salient_error FROM attempts", {}) == [
        ("Test Files  1 failed | 11 passed (12)",)
    ]
