"""Same purpose (remem/shell/purpose.py) and the substitutions a session's runs make
(remem/procedures/substitutions.py): pure, no database."""

from __future__ import annotations

import pytest

from remem.procedures.steps import workflow_hash
from remem.procedures.substitutions import SessionRun, pair, sibling
from remem.shell.purpose import reduced, same_elsewhere, same_purpose

GO = "go test ./..."
GO_SANDBOXED = "GOCACHE=$(pwd)/.cache/go-build GOMODCACHE=$(pwd)/.cache/go-mod go test ./..."
VENV = ".venv/bin/python -m pytest"


@pytest.mark.parametrize(
    ("failed", "passed", "same"),
    [
        ("pytest", VENV, True),
        ("python -m pytest", "python3 -m pytest", True),
        ("python3.12 -m pytest -q", "pytest -q", True),
        ("pytest -x", "uv run pytest -q", True),
        (GO, GO_SANDBOXED, True),
        (GO, "env GOFLAGS=-mod=mod go test ./...", True),
        ("go test ./...", "go test -count=1 ./...", True),
        ("npx jest", "./node_modules/.bin/jest", True),
        ("python manage.py test", "python3 manage.py test", True),
        ("npm test", "git status", False),
        ("npm test", "npm run build", False),
        ("pytest tests/a.py", "pytest tests/b.py", False),
        ("mix test", "mix test test/cart_test.exs", False),
        ("go test ./...", "go test ./internal/...", False),
        ("pytest", "pytest", False),
        ("make test", "make lint", False),
        ("pytest | tee log", VENV, False),
    ],
)
def test_same_purpose(failed: str, passed: str, same: bool) -> None:
    assert same_purpose(failed, passed) is same


def test_a_tool_that_ran_and_failed_is_not_replaced_by_other_options() -> None:
    assert same_purpose("pytest -x", "pytest -q")
    assert not same_purpose("pytest -x", "pytest -q", failed_ran=True)
    # The same tool through another interpreter still is: a system Python without the
    # project's dependencies fails collection.
    assert same_purpose("python3 -m pytest", VENV, failed_ran=True)


def test_a_workflow_reduces_to_what_it_runs() -> None:
    assert reduced(VENV) == reduced("pytest") == ("pytest",)
    assert reduced(GO_SANDBOXED) == reduced(GO) == ("go", "test", "./...")
    assert reduced("make test && make lint") is None


def run(event_id: int, workflow: str, passed: bool, step: int = 0) -> SessionRun:
    return SessionRun(event_id, step, ".", workflow, workflow_hash(workflow), workflow, passed)


def pairs(runs: list[SessionRun], edits: tuple[int, ...] = ()) -> list[tuple[str, str]]:
    return [(p.failed.workflow, p.substitute.workflow) for p in pair(runs, edits)]


def test_every_failing_link_of_a_chain_gets_the_command_that_passed() -> None:
    runs = [
        run(1, "pytest", False),
        run(2, "python -m pytest", False),
        run(3, "python3 -m pytest", False),
        run(4, VENV, True),
        run(5, VENV, True),  # the first pass after each failure is its substitute
    ]
    assert pairs(runs) == [
        ("pytest", VENV),
        ("python -m pytest", VENV),
        ("python3 -m pytest", VENV),
    ]


def test_an_edit_in_between_is_no_substitution() -> None:
    runs = [run(1, "pytest", False), run(3, VENV, True)]
    assert pairs(runs, (2,)) == []
    assert pairs(runs, (4,)) == [("pytest", VENV)]  # an edit after the pass changes nothing


def test_a_failure_that_passes_itself_waits_no_more() -> None:
    runs = [run(1, "pytest", False), run(2, "pytest", True), run(3, VENV, True)]
    assert pairs(runs) == []


def test_another_directory_or_purpose_is_no_substitution() -> None:
    other = SessionRun(2, 0, "api", VENV, workflow_hash(VENV), VENV, True)
    assert pairs([run(1, "pytest", False), other]) == []
    assert pairs([run(1, "npm test", False), run(2, "npm run build", True)]) == []


@pytest.mark.parametrize(
    ("failed", "failed_in", "passed", "passed_in", "failed_ran", "same"),
    [
        # The same script, named from where each ran: red or not, it says where to run it.
        ("node assets/build.js", ".", "node build.js", "assets", True, True),
        ("./run.sh", "scripts", "scripts/run.sh", ".", True, True),
        ("python tools/gen.py --all", ".", "python gen.py --all", "tools", False, True),
        # The same command in another directory: only when it could not run where it failed.
        ("npm test", ".", "npm test", "web", False, True),
        ("npm test", ".", "npm test", "web", True, False),
        ("mix test", ".", "mix test", "apps/cart", True, False),
        # Another command, or other files, from another directory.
        ("pytest", ".", VENV, "api", False, False),
        ("node assets/build.js", ".", "node build.js", "web", True, False),
        ("node build.js", ".", "node build.js", "assets", True, False),
        ("npm test", ".", "npm run build", "web", False, False),
        ("make test && make lint", ".", "make test && make lint", "api", False, False),
    ],
)
def test_the_same_command_from_another_directory(
    failed: str, failed_in: str, passed: str, passed_in: str, failed_ran: bool, same: bool
) -> None:
    assert same_elsewhere(failed, failed_in, passed, passed_in, failed_ran) is same


def test_a_failure_gets_the_same_command_that_passed_in_another_directory() -> None:
    failed = SessionRun(
        1, 0, ".", "node assets/build.js", "h1", "node assets/build.js", False, True
    )
    moved = SessionRun(3, 0, "assets", "node build.js", "h2", "node build.js 2>&1", True)
    assert pairs([failed, moved]) == [("node assets/build.js", "node build.js")]
    assert pairs([failed, moved], (2,)) == []  # an edit before it: it may owe to the edit


def test_another_file_passing_elsewhere_is_no_substitution() -> None:
    """Runs of a tool on files share a workflow with a placeholder: the files are in their
    commands, and another test passing in another directory replaces nothing."""
    family = "pytest <test file>"
    missing = SessionRun(1, 0, ".", family, "h1", "pytest tests/test_a.py", False)
    other = SessionRun(2, 0, "web", family, "h2", "pytest test_b.py", True)
    same = SessionRun(3, 0, "tests", family, "h3", "pytest test_a.py", True)
    assert pairs([missing, other]) == []
    assert [(p.failed.command, p.substitute.command) for p in pair([missing, same], ())] == [
        ("pytest tests/test_a.py", "pytest test_a.py")
    ]


def test_steps_of_one_command_pair_in_order() -> None:
    runs = [run(1, GO, False, step=0), run(1, GO_SANDBOXED, True, step=1)]
    assert pairs(runs) == [(GO, GO_SANDBOXED)]


def test_a_failure_whose_tool_ran_is_not_replaced_by_other_options() -> None:
    ran = SessionRun(1, 0, ".", "pytest -x", workflow_hash("pytest -x"), "pytest -x", False, True)
    assert pairs([ran, run(2, "pytest -q", True)]) == []
    assert pairs([run(1, "pytest -x", False), run(2, "pytest -q", True)]) == [
        ("pytest -x", "pytest -q")
    ]


def wrapped(event_id: int, command: str, passed: bool, ran: bool = False) -> SessionRun:
    """A run of `bun run test` as `command` ran it (`rtk bun run test`)."""
    workflow = "bun run test"
    return SessionRun(event_id, 0, ".", workflow, workflow_hash(workflow), command, passed, ran)


def test_a_wrapper_that_cannot_run_pairs_with_its_workflow_run_plainly() -> None:
    failed, plain = wrapped(1, "rtk bun run test", False), wrapped(2, "bun run test", True)
    assert (failed.form, plain.form) == ("rtk bun run test", "bun run test")
    assert [(p.failed.command, p.substitute.command) for p in pair([failed, plain], ())] == [
        ("rtk bun run test", "bun run test")
    ]
    # Red through the wrapper, the wrapper ran: no substitution; nor for the same form.
    assert pair([wrapped(1, "rtk bun run test", False, True), plain], ()) == []
    assert pair([failed, wrapped(2, "rtk bun run test 2>&1 | tail -5", True)], ()) == []


@pytest.mark.parametrize(
    ("failed", "other", "is_sibling"),
    [
        # Could not run, then another form ran: passed, or red (a test failing still ran).
        (run(1, "pytest", False), run(5, VENV, True), True),
        (run(1, "pytest", False), SessionRun(5, 0, ".", VENV, "h", VENV, False, True), True),
        (wrapped(1, "rtk bun run test", False), wrapped(5, "bun run test", False, True), True),
        # What failed red is never replaced; what could not run replaces nothing.
        (SessionRun(1, 0, ".", "pytest", "h", "pytest", False, True), run(5, VENV, True), False),
        (run(1, "pytest", False), run(5, VENV, False), False),
        # The same form, or another purpose.
        (wrapped(1, "rtk bun run test", False), wrapped(5, "rtk bun run test", True), False),
        (run(1, "npm test", False), run(5, "npm run build", True), False),
    ],
)
def test_a_sibling_runs_what_could_not_run(
    failed: SessionRun, other: SessionRun, is_sibling: bool
) -> None:
    assert sibling(failed, other) is is_sibling
