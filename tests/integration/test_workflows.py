"""Promotion by workflow (DESIGN.md §5-§7): variants, masked runs, directories, project-wide
procedures, known errors and files, over real captured events in a real database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import text

from remem.agent import digest, read
from remem.agent.context import read_entries
from remem.agent.known import digest_known_errors, read_known_errors
from tests.integration.conftest import World, make_repository, make_worktree
from tests.oracles import paginate

MIX = "mix test"
MIX_2 = "mix test 2>&1"
MIX_TAIL = "mix test 2>&1 | tail -5"
PASSED = "Finished in 4.2 seconds (1.1s async, 3.1s sync)\n297 tests, 0 failures"
FAILED = (
    "  1) test checkout (Shop.CartTest)\n"
    "     ** (MatchError) no match of right hand side value: :error\n"
    "Finished in 4.2 seconds (1.1s async, 3.1s sync)\n297 tests, 11 failures"
)
SECRET = "** (RuntimeError) no :secret_key_base configuration found in SpotterWeb.Endpoint."


def _runs(world: World, table: str) -> list[tuple[Any, ...]]:
    at = {"verifications": "verified_at", "attempts": "failed_at", "unverified_runs": "ran_at"}
    with world.engine.connect() as connection:
        return [
            tuple(r)
            for r in connection.execute(
                text(
                    f"SELECT event_id, step, directory, workflow, command, masked FROM {table} "
                    f"ORDER BY {at[table]}, event_id, step"
                )
            )
        ]


def test_mix_test_variants_are_one_procedure_recommending_the_unmasked_one(
    world: World,
) -> None:
    world.post(MIX_2)
    world.post(MIX_TAIL, output=PASSED)  # masked: verified by the summary tail left behind
    world.post(MIX)
    world.post(MIX)
    assert world.burst()["promoted"] == 1
    workflow, command, variants, runs, evidence, scope, directory = world.one(
        "workflow",
        "command",
        "variants",
        "verified_runs",
        "evidence_event_ids",
        "scope",
        "directory",
    )
    assert (workflow, command, runs, scope, directory) == (MIX, MIX, 4, "branch", ".")
    assert json.loads(variants) == [
        {"command": MIX, "runs": 2, "verified": 2},
        {"command": MIX_2, "runs": 1, "verified": 1},
        {"command": MIX_TAIL, "runs": 1, "verified": 1},
    ]
    assert json.loads(evidence) == [1, 2, 3, 4]
    with world.engine.connect() as connection:
        outputs = connection.execute(text("SELECT output_excerpt FROM captured_events ORDER BY id"))
        assert list(outputs.scalars()) == [None, PASSED, None, None]
    assert [r[4:] for r in _runs(world, "verifications")] == [
        (MIX_2, 0),
        (MIX_TAIL, 1),
        (MIX, 0),
        (MIX, 0),
    ]


def test_only_masked_runs_recommend_the_workflow_not_a_masked_command(world: World) -> None:
    world.post(MIX_TAIL, output=PASSED)
    world.post(MIX_TAIL, output=PASSED)
    world.burst()
    assert world.one("workflow", "command", "verified_runs") == (MIX, MIX, 2)


def test_masked_run_with_no_summary_is_unverified_not_evidence(world: World) -> None:
    world.post(MIX)
    world.post(MIX_TAIL, output="Compiling 3 files (.ex)\nGenerated shop app")
    world.post(MIX_TAIL)  # no output at all
    world.burst()
    assert world.procedures() == []  # two unverified runs and one verified run: not enough
    assert [r[0] for r in _runs(world, "unverified_runs")] == [2, 3]
    assert [r[0] for r in _runs(world, "verifications")] == [1]
    assert _runs(world, "attempts") == []
    world.post(MIX)
    world.burst()
    command, runs, evidence, variants = world.one(
        "command", "verified_runs", "evidence_event_ids", "variants"
    )
    assert (command, runs, json.loads(evidence)) == (MIX, 2, [1, 4])
    assert json.loads(variants) == [
        {"command": MIX, "runs": 2, "verified": 2},
        {"command": MIX_TAIL, "runs": 2, "verified": 0},  # no output: neither run verified
    ]
    (procedure,) = read.read_procedures(world.execute)
    assert procedure.evidence_event_ids == (1, 4)


def test_masked_run_whose_output_shows_failures_is_a_red_attempt(world: World) -> None:
    """The summary says tests failed: the command ran and the code is red. Attempts, never a
    broken procedure."""
    world.post(MIX)
    world.post(MIX)
    world.burst()
    assert world.one("status", "confidence") == ("active", 0.86)
    world.post(MIX_TAIL, output=FAILED)  # `| tail` exits 0; the summary says 11 failures
    world.burst()
    world.post(MIX_TAIL, output=FAILED)
    assert world.burst().get("broken", 0) == 0
    status, confidence, runs, evidence = world.one(
        "status", "confidence", "verified_runs", "evidence_event_ids"
    )
    assert (status, confidence, runs) == ("active", 0.86, 2)
    assert json.loads(evidence) == [1, 2]
    assert [(r[0], r[4], r[5]) for r in _runs(world, "attempts")] == [
        (3, MIX_TAIL, 1),
        (4, MIX_TAIL, 1),
    ]
    assert _runs(world, "unverified_runs") == []
    with world.engine.connect() as connection:
        salient = connection.execute(text("SELECT salient_error FROM attempts")).scalars().all()
    assert salient == ["** (MatchError) no match of right hand side value: :error"] * 2


def test_a_step_run_from_its_directory_or_through_cd_is_one_procedure(
    world: World, tmp_path: Path
) -> None:
    root = make_repository(tmp_path / "shop")
    (tmp_path / "shop" / "frontend").mkdir()
    frontend = str(tmp_path / "shop" / "frontend")
    world.post("cd frontend && npm test", project=root, branch=None)
    world.post("npm test", project=frontend, branch=None)
    world.post("npm test", project=root, branch=None)
    world.post("npm test", project=root, branch=None, session="s2")
    world.burst()
    rows = world.procedures(
        "directory", "workflow", "command", "branch", "evidence_event_ids", "variants"
    )
    assert [row[:4] for row in rows] == [
        ("frontend", "npm test", "npm test", "main"),
        (".", "npm test", "npm test", "main"),
    ]
    assert [json.loads(row[4]) for row in rows] == [[1, 2], [3, 4]]
    assert json.loads(rows[0][5]) == [{"command": "npm test", "runs": 2, "verified": 2}]
    with world.engine.connect() as connection:
        roots = connection.execute(text("SELECT root FROM projects")).scalars().all()
        directories = connection.execute(
            text("SELECT directory FROM captured_events ORDER BY id")
        ).scalars()
        assert list(directories) == [".", "frontend", ".", "."]
    assert roots == [root]
    # The digest of the frontend directory puts its own procedure first.
    entries = read_entries(world.execute, root, "main", directory="frontend")
    assert [e.directory for e in entries] == ["frontend", "."]


def _project_wide(world: World, tmp_path: Path) -> str:
    """make test verified once on branch a (the main checkout) and once on branch b (a linked
    worktree of the same repository)."""
    root = make_repository(tmp_path / "shop", branch="a")
    other = make_worktree(tmp_path / "shop", tmp_path / "shop-b", branch="b")
    world.post("make test", project=root, branch=None, session="s1")
    world.post("make test", project=other, branch=None, session="s2")
    world.burst()
    return root


def test_a_workflow_verified_on_two_branches_is_project_wide(world: World, tmp_path: Path) -> None:
    root = _project_wide(world, tmp_path)
    scope, branch, branches, runs, sessions, command = world.one(
        "scope", "branch", "branches", "verified_runs", "distinct_sessions", "command"
    )
    assert (scope, branch, json.loads(branches), runs, sessions) == (
        "project",
        "",
        ["a", "b"],
        2,
        2,
    )
    assert command == "make test"
    (procedure,) = read.read_procedures(world.execute, project=root, branch="c")
    assert (procedure.scope, procedure.branch, procedure.branches) == ("project", None, ("a", "b"))
    (entry,) = read_entries(world.execute, root, "c")
    assert (entry.command, entry.scope, entry.branches, entry.inherited) == (
        "make test",
        "project",
        ["a", "b"],
        False,
    )
    (page,) = paginate([entry], digest.header_for(root, "c"))
    assert "`make test`" in page and "verified on 2 branches" in page


def test_a_branch_s_own_broken_procedure_hides_the_project_wide_one(
    world: World, tmp_path: Path
) -> None:
    root = _project_wide(world, tmp_path)
    for exit_code in (0, 0, 127, 127):  # branch c proves it, then cannot run it
        world.now += 60
        world.post("make test", exit_code, project=root, branch="c", session="s3")
    world.now += 60
    world.post("make test", project=root, branch=None, session="s1")  # a passes again
    world.burst()
    rows = world.procedures("scope", "branch", "status")
    assert sorted(rows) == [
        ("branch", "a", "active"),
        ("branch", "c", "broken"),
        ("project", "", "active"),
    ]
    assert read_entries(world.execute, root, "c") == []
    (entry,) = read_entries(world.execute, root, "d")
    assert (entry.scope, entry.branches) == ("project", ["a", "b", "c"])
    assert [e.scope for e in read_entries(world.execute, root, "a")] == ["project"]


def test_a_fixed_error_is_a_known_error_of_the_whole_project(world: World) -> None:
    command = "mix test test/a_test.exs"
    output = (
        "Exit code 2\nRunning ExUnit with seed: 837521, max_cases: 32\n\n"
        "  1) test renders (SpotterWeb.SessionLiveTest)\n"
        "     test/spotter_web/live/session_live_test.exs:109\n"
        f"     {SECRET}\n"
        '     code: {:ok, _view, html} = live(build_conn(), "/sessions/1")\n\n'
        "Finished in 3.0 seconds (1.7s async, 1.3s sync)\n14 doctests, 127 tests, 12 failures"
    )
    world.post(command, 2, branch="a", output=output)
    world.edit("config/test.exs", branch="a")
    world.post(command, branch="a")
    world.burst()
    with world.engine.connect() as connection:
        lessons = connection.execute(
            text("SELECT branch, last_error, error_key, fix_files FROM lessons")
        ).all()
    (lesson,) = lessons
    assert lesson.last_error == SECRET  # the salient line, never "Exit code 2"
    assert lesson.branch == "a" and json.loads(lesson.fix_files) == ["config/test.exs"]
    assert lesson.error_key

    (known,) = digest_known_errors(world.execute, "/p/shop")
    assert (known.error, known.fix_files) == (SECRET, ("config/test.exs",))
    (sighting,) = read_known_errors(world.execute, project="/p/shop")
    # The workflow is the family of runs on any test file.
    assert (sighting.error, sighting.branch, sighting.workflow) == (
        SECRET,
        "a",
        "mix test <test file>",
    )
    assert read_known_errors(world.execute, error_keys=(lesson.error_key,)) == [sighting]
    assert read_known_errors(world.execute, project="/p/other") == []
    # Another branch with no procedure at all still gets the project's known errors.
    (page,) = paginate(
        read_entries(world.execute, "/p/shop", "b"),
        digest.header_for("/p/shop", "b"),
        known_errors=digest_known_errors(world.execute, "/p/shop"),
    )
    assert json.dumps(SECRET) in page and "config/test.exs" in page


def test_files_kept_are_the_five_most_often_edited_before_verified_runs(world: World) -> None:
    world.edit(*(f"src/{name}.py" for name in "abcdefgh"))
    world.post("make test")
    world.edit("src/h.py", "src/g.py")
    world.edit("src/f.py")
    world.post("make test")
    world.burst()
    files, files_more, body = world.one("files", "files_more", "body")
    assert json.loads(files) == ["src/f.py", "src/g.py", "src/h.py", "src/a.py", "src/b.py"]
    assert files_more == 3
    assert "+3 more" in body
    (entry,) = read_entries(world.execute, "/p/shop", "main")
    (page,) = paginate([entry], digest.header_for("/p/shop", "main"))
    assert "files: src/f.py, src/g.py, src/h.py, src/a.py, src/b.py +3 more" in page


def test_files_edited_in_another_session_are_not_the_run_s(world: World) -> None:
    world.edit("src/other.py", session="s2")
    world.edit("src/mine.py")
    world.post("make test")
    world.post("make test")
    world.burst()
    assert world.one("files", "files_more") == ('["src/mine.py"]', 0)
