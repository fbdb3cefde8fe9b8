"""The fix journal and its lessons (DESIGN.md §6), over real captured events."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import text

from remem.agent.read import read_lessons
from remem.db.driver import Driver
from remem.procedures import journal
from tests import oracles
from tests.conftest import load_fixture
from tests.integration.conftest import World
from tests.integration.test_group_state import assert_full_derivation_agrees

CART = "python -m pytest -q tests/test_cart.py"


class Claude:
    """Claude Code payloads from the fixtures, one session, each with its own tool-use id."""

    def __init__(self, world: World, session: str) -> None:
        self.world, self.session, self.count = world, session, 0

    def _send(self, fixture: str, **changes: Any) -> None:
        self.count += 1
        payload = load_fixture(fixture)
        payload.update(
            session_id=self.session,
            cwd="/p/shop",
            tool_use_id=f"toolu_{self.session}_{self.count}",
            **changes,
        )
        self.world.post_payload(payload)

    def edit(self, new_string: str, path: str = "/p/shop/src/cart.py") -> None:
        self._send(
            "claude-code/post_tool_use_edit.json",
            tool_input={"file_path": path, "old_string": "return 0", "new_string": new_string},
        )

    def fail(self, error: str = "Exit code 1\nFAILED tests/test_cart.py::test_total") -> None:
        self._send("claude-code/post_tool_use_failure_bash_exit_code.json", error=error)

    def succeed(self) -> None:
        self._send("claude-code/post_tool_use_bash_success.json")

    def interrupted(self) -> None:
        self._send("claude-code/post_tool_use_bash_interrupted.json", tool_input={"command": CART})


def _attempts(world: World) -> list[tuple[Any, ...]]:
    with world.engine.connect() as connection:
        return [
            tuple(r)
            for r in connection.execute(
                text(
                    "SELECT attempt_number, files, change_hash IS NOT NULL, duplicate_of, "
                    "resolved_by_event_id FROM attempts ORDER BY failed_at, event_id"
                )
            )
        ]


def _lessons(world: World) -> list[tuple[Any, ...]]:
    with world.engine.connect() as connection:
        return [
            tuple(r)
            for r in connection.execute(
                text(
                    "SELECT failed_attempts, repeats, fix_files, resolved_by_event_id FROM lessons "
                    "ORDER BY resolved_at"
                )
            )
        ]


def test_repeated_fix_then_real_fix_gives_one_lesson(world: World) -> None:
    first = Claude(world, "s1")
    first.edit("return sum(prices)")  # edit A
    first.fail()
    first.edit("return   sum(prices)")  # edit A again, whitespace aside
    first.fail()
    first.edit("return sum(p * q for p, q in items)")  # edit B
    first.succeed()
    Claude(world, "s2").succeed()
    world.burst()

    (procedure,) = world.procedures("id", "command", "status")
    assert procedure[1:] == (CART, "active")
    assert _attempts(world) == [
        (1, '["src/cart.py"]', True, None, 6),
        (2, '["src/cart.py"]', True, 1, 6),
    ]
    assert _lessons(world) == [(2, "[[2, 1]]", '["src/cart.py"]', 6)]
    (lesson,) = read_lessons(world.execute, procedure_id=procedure[0])
    assert "Failed 2 times" in lesson.body
    assert "Attempt 2 repeated attempt 1's change." in lesson.body
    assert "Fixed after editing src/cart.py." in lesson.body
    assert "attempt 2 repeated attempt 1's change" in lesson.pitfall
    assert [a.attempt_number for a in lesson.attempts] == [1, 2]


def test_attempt_without_edits_has_no_hash_and_is_never_a_duplicate(world: World) -> None:
    claude = Claude(world, "s1")
    claude.fail()
    claude.fail()
    claude.succeed()
    world.burst()
    assert _attempts(world) == [(1, None, False, None, 3), (2, None, False, None, 3)]
    assert _lessons(world) == [(2, "[]", "[]", 3)]


def test_failure_with_no_success_yet_keeps_an_open_journal(world: World) -> None:
    claude = Claude(world, "s1")
    claude.fail()
    world.burst()
    assert _attempts(world) == [(1, None, False, None, None)]
    assert _lessons(world) == []


def test_streak_across_windows_and_sessions_with_an_interruption(world: World) -> None:
    first, second = Claude(world, "s1"), Claude(world, "s2")
    first.fail()
    world.burst()
    first.interrupted()  # neither a failure nor a success
    second.edit("return sum(prices)")
    second.fail()
    world.burst()
    second.edit("return sum(p * q for p, q in items)")
    second.succeed()
    world.burst()
    assert [row[0] for row in _attempts(world)] == [1, 2]
    assert _lessons(world)[0][0] == 2


def test_windows_processed_out_of_order_give_the_same_lessons(world: World) -> None:
    first, second = Claude(world, "s1"), Claude(world, "s2")
    first.fail()
    world.now += 10
    second.fail()
    world.now += 10
    second.succeed()
    with world.engine.begin() as connection:  # session s2's task runs first
        connection.execute(text("UPDATE extraction_tasks SET priority = -1 WHERE session_id = 2"))
    world.burst()
    assert [row[0] for row in _attempts(world)] == [1, 2]
    assert _lessons(world) == [(2, "[]", "[]", 3)]


def test_lesson_of_an_unpromoted_command_is_kept_and_shown_once_promoted(world: World) -> None:
    claude = Claude(world, "s1")
    claude.fail()
    claude.succeed()
    world.burst()
    assert world.procedures() == []
    assert len(_lessons(world)) == 1
    Claude(world, "s2").succeed()
    world.burst()
    (procedure_id,) = world.one("id")
    assert [
        lesson.failed_attempts for lesson in read_lessons(world.execute, procedure_id=procedure_id)
    ] == [1]


def test_a_procedure_keeps_its_newest_three_lessons_and_every_journal_row(world: World) -> None:
    claude = Claude(world, "s1")
    for streak in range(5):
        for _ in range(streak + 1):
            claude.fail()
        claude.succeed()
        world.burst()
    assert [row[0] for row in _lessons(world)] == [3, 4, 5]
    assert len(_attempts(world)) == 15


def test_reprocessing_the_journal_changes_nothing(world: World) -> None:
    claude = Claude(world, "s1")
    claude.edit("a")
    claude.fail()
    claude.edit("a")
    claude.fail()
    claude.succeed()
    world.burst()
    before = (_attempts(world), _lessons(world))
    with world.engine.begin() as connection:
        connection.execute(
            text("UPDATE extraction_tasks SET status = 'pending', cursor_event_id = 0")
        )
    world.burst()
    assert (_attempts(world), _lessons(world)) == before


def test_procedures_show_json_has_lessons_with_attempts(world: World) -> None:
    import subprocess

    from tests.conftest import REMEM

    claude = Claude(world, "s1")
    claude.edit("a")
    claude.fail("Exit code 2\nerror: boom")
    claude.succeed()
    Claude(world, "s2").succeed()
    world.burst()
    (procedure_id,) = world.one("id")
    shown = json.loads(
        subprocess.run(
            [REMEM, "procedures", "show", str(procedure_id), "--json"],
            env=world.home.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    (lesson,) = shown["lessons"]
    assert lesson["failed_attempts"] == 1
    assert lesson["attempts"][0]["exit_code"] == 2
    assert lesson["attempts"][0]["files"] == ["src/cart.py"]
    assert '"error: boom"' in lesson["pitfall"]


def _journal_edits(world: World, burst_after_each: bool) -> list[tuple[Any, ...]]:
    """Fail, edit, fail, edit twice, fail, pass, in one session: each attempt's files and
    change hash as stored, next to what the journal's own query finds for it afterwards."""
    steps: list[Any] = [
        lambda: world.post(CART, 1),
        lambda: world.edit("src/cart.py"),
        lambda: world.post(CART, 1),
        lambda: world.edit("src/cart.py"),
        lambda: world.edit("src/tax.py", "/tmp/plan.md"),
        lambda: world.post("ls", 0),
        lambda: world.post(CART, 1),
        lambda: world.post(CART, 0),
    ]
    for step in steps:
        step()
        if burst_after_each:
            world.burst()
    world.burst()
    found = []
    with world.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT event_id, session_id, project_id, branch, directory, workflow_hash, "
                "files, change_hash FROM attempts ORDER BY event_id"
            )
        ).all()
        for (
            event_id,
            session_id,
            project_id,
            branch,
            directory,
            workflow_hash,
            files,
            hashed,
        ) in rows:
            group = {
                "project_id": project_id,
                "branch": branch,
                "directory": directory,
                "workflow_hash": workflow_hash,
            }
            oracle = oracles.edits_before(Driver(connection), group, session_id, event_id)
            stored = (json.loads(files) if files else [], hashed)
            found.append((stored, oracle))
    return found


EXPECTED_EDITS = [[], ["src/cart.py"], ["/tmp/plan.md", "src/cart.py", "src/tax.py"]]


def test_an_attempts_edits_read_in_its_window_match_the_journals_query(world: World) -> None:
    in_window = _journal_edits(world, burst_after_each=False)
    assert all(stored == oracle for stored, oracle in in_window), in_window
    assert [stored[0] for stored, _oracle in in_window] == EXPECTED_EDITS


def test_an_attempts_edits_across_windows_match_the_journals_query(world: World) -> None:
    across = _journal_edits(world, burst_after_each=True)
    assert all(stored == oracle for stored, oracle in across), across
    assert [stored[0] for stored, _oracle in across] == EXPECTED_EDITS


def _fix_files(world: World) -> dict[str, list[str]]:
    rows = world.execute(
        "SELECT s.session_key, l.fix_files FROM lessons l "
        "JOIN captured_events c ON c.id = l.resolved_by_event_id "
        "JOIN sessions s ON s.id = c.session_id ORDER BY l.resolved_at"
    )
    return {session: json.loads(files) for session, files in rows}


def test_a_lessons_fix_files_read_by_its_window_are_those_the_journal_derives(
    world: World,
) -> None:
    """The files edited before the pass that closed a streak are read by the window that
    holds the pass (its first run of the workflow, or its first after a failure) or asked
    for when the lesson is written; either way they are what a derivation from every run
    finds. Each case on a branch of its own: a workflow keeps its newest lessons."""
    # One window: fail, edit, pass.
    world.post(CART, 1, session="one", branch="b1", output="FAILED tests/test_cart.py::test_total")
    world.edit("src/cart.py", session="one", branch="b1")
    world.post(CART, 0, session="one", branch="b1")
    # Across windows: the failure, then the edit and the pass in a later window.
    world.post(CART, 1, session="two", branch="b2", output="FAILED tests/test_cart.py::test_tax")
    world.burst()
    world.edit("src/tax.py", session="two", branch="b2")
    world.post(CART, 0, session="two", branch="b2")
    # Across sessions: another session's edit and pass close the streak.
    world.post(CART, 1, session="three", branch="b3", output="FAILED tests/test_cart.py::test_sum")
    world.edit("src/sum.py", session="four", branch="b3")
    world.post(CART, 0, session="four", branch="b3")
    world.burst()
    # A pass after its own session's pass closes another session's failure between them.
    world.post(CART, 0, session="five", branch="b4")
    world.post(CART, 1, session="six", branch="b4", output="FAILED tests/test_cart.py::test_cap")
    world.edit("src/cap.py", session="five", branch="b4")
    world.post(CART, 0, session="five", branch="b4")
    world.burst()

    assert _fix_files(world) == {
        "one": ["src/cart.py"],
        "two": ["src/tax.py"],
        "four": ["src/sum.py"],
        "five": ["src/cap.py"],
    }
    assert_full_derivation_agrees(world)


# --- known errors: every error its own, resolved by the first run that no longer shows it ---


def _story(world: World, branch: str, burst_after_each: bool) -> None:
    """A session meeting four errors on `branch`: two under `mix test` fixed by an edit and
    by an edit and a command, a push fixed by the push that sets its upstream, and one never
    fixed."""
    live = "mix test test/live_test.exs"
    steps: list[Any] = [
        (
            "mix test",
            1,
            "** (RuntimeError) no :secret_key_base configuration found in Shop.Endpoint.",
        ),
        ("config/test.exs",),
        (live, 1, "** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency."),
        ("mix.exs",),
        ("mix deps.get", 0, "Resolving Hex dependencies..."),
        (live, 1, "Assertion with =~ failed"),
        ("test/live_test.exs",),
        (live, 0, "3 tests, 0 failures"),
        ("mix test", 0, "12 tests, 0 failures"),
        ("git push", 128, f"fatal: The current branch {branch} has no upstream branch."),
        (f"git push --set-upstream origin {branch}", 0, "branch set up to track"),
        ("lib/late.ex",),
        ("make build", 2, "error: linker `cc` not found"),
    ]
    for step in steps:
        world.now += 1
        if len(step) == 1:
            world.edit(step[0], session=branch, branch=branch)
        else:
            command, code, output = step
            world.post(command, code, session=branch, branch=branch, output=output)
        if burst_after_each:
            world.burst()
    world.burst()


def _known(world: World, branch: str) -> list[tuple[Any, ...]]:
    rows = world.execute(
        "SELECT workflow, error, error_key, times_seen, resolved_at IS NOT NULL, fix_files, "
        "fix_commands FROM known_errors WHERE branch = :branch ORDER BY first_seen_at",
        {"branch": branch},
    )
    return [(*row[:4], bool(row[4]), json.loads(row[5]), json.loads(row[6])) for row in rows]


def test_each_error_is_its_own_known_error_with_its_own_fix(world: World) -> None:
    _story(world, "feat-1", burst_after_each=True)
    _story(world, "feat-2", burst_after_each=False)

    known = _known(world, "feat-1")
    assert [(row[1], row[4], row[5], row[6]) for row in known] == [
        (
            "** (RuntimeError) no :secret_key_base configuration found in Shop.Endpoint.",
            True,
            ["config/test.exs"],
            [],
        ),
        (
            "** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency.",
            True,
            ["mix.exs"],
            ["mix deps.get"],
        ),
        ("Assertion with =~ failed", True, ["test/live_test.exs"], []),
        (
            "fatal: The current branch <branch> has no upstream branch.",
            True,
            [],
            ["git push --set-upstream origin <branch>"],
        ),
        ("error: linker `cc` not found", False, [], []),
    ]
    # Window by window or all at once, on either branch: the same known errors.
    assert _known(world, "feat-2") == known
    assert_full_derivation_agrees(world)


PROBE = text("CREATE TABLE writes_probe (name TEXT PRIMARY KEY)")
PROBE_INSERT = text("INSERT INTO writes_probe (name) VALUES (:name)")
PROBE_DELETE = text("DELETE FROM writes_probe WHERE name = :name")
PROBE_NAMES = text("SELECT name FROM writes_probe ORDER BY name")


def test_gathered_writes_land_as_if_written_group_by_group(world: World) -> None:
    """A window's groups write their journals' rows together: nothing lands before `send`, and
    a delete run at once first sends the rows gathered before it, so it meets them as a group
    by group write would."""
    with world.engine.begin() as connection:
        connection.execute(PROBE)
        driver = Driver(connection)
        writes = journal.Writes(driver)
        writes.add(PROBE_INSERT, [{"name": "a"}, {"name": "c"}])
        assert driver.execute(PROBE_NAMES).all() == []
        writes.now(PROBE_DELETE, {"name": "a"}, after=PROBE_INSERT)
        writes.add(PROBE_INSERT, [{"name": "b"}])
        assert [row.name for row in driver.execute(PROBE_NAMES).all()] == ["c"]
        writes.send()
        assert [row.name for row in driver.execute(PROBE_NAMES).all()] == ["b", "c"]
        at_once = journal.Writes(driver, gather=False)
        at_once.add(PROBE_INSERT, [{"name": "d"}])
        assert [row.name for row in driver.execute(PROBE_NAMES).all()] == ["b", "c", "d"]


@pytest.mark.postgres_only("it counts waits on a server; SQLite answers in the process")
def test_a_window_of_four_groups_waits_on_the_server_as_often_as_one_of_one(world: World) -> None:
    """Each group's known error is fixed in a later window of its session: each reads the
    session's events after the error, stored by an earlier window, to learn what fixed it. The
    groups read side by side: one wait for all of them, not one per group."""
    workflows = ("make test", "make lint", "npm test", "cargo test")
    waits = []
    for project, used in (("/p/one", workflows[:1]), ("/p/four", workflows)):
        session = project.rsplit("/", 1)[-1]
        for workflow in used:
            world.post(
                workflow, 2, session=session, project=project, output=f"error: {workflow} broke"
            )
        world.burst()
        world.edit("src/app.py", session=session, project=project)
        for workflow in used:
            world.post(workflow, 0, session=session, project=project, output="ok")
        stats = world.burst()
        assert stats["tasks_done"] == 1
        waits.append(stats["server_waits"])
        fixed = world.execute(
            "SELECT k.fix_files FROM known_errors k JOIN projects p ON p.id = k.project_id "
            "WHERE p.root = :root AND k.resolved_by_event_id IS NOT NULL",
            {"root": project},
        )
        assert [json.loads(files) for (files,) in fixed] == [["src/app.py"]] * len(used)
    assert waits[0] > 0
    assert waits[1] == waits[0], waits
