"""A captured run -> the runs of its steps, verified, failed or unverified (DESIGN.md §5)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.config import DEFAULT_IGNORE_COMMANDS
from remem.procedures.steps import FAILED, UNVERIFIED, VERIFIED, StepRun, classify

ROOT = "/home/dev/shop"

EXUNIT_PASSED = """\
Running ExUnit with seed: 0, max_cases: 32

.................................................
Finished in 1.0 seconds (1.0s async, 0.00s sync)
297 tests, 0 failures"""

EXUNIT_FAILED = """\
  1) test total adds line items (Shop.CartTest)
     test/shop/cart_test.exs:12
     Assertion with == failed
     code:  assert Cart.total(cart) == 10
     left:  9
     right: 10
     stacktrace:
       test/shop/cart_test.exs:14: (test)

Finished in 3.2 seconds (1.1s async, 2.1s sync)
297 tests, 11 failures"""

EXUNIT_SUMMARY_ONLY = "Finished in 3.2 seconds (1.1s async, 2.1s sync)\n297 tests, 11 failures"

PYTEST_FAILED = """\
Exit code 1
..F.
=================================== FAILURES ===================================
_________________________________ test_total __________________________________
    def test_total():
>       assert total([3, 3, 3]) == 10
E       assert 9 == 10
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_total - assert 9 == 10
1 failed, 3 passed in 0.44s"""

PYTEST_PASSED = "....\n4 passed in 0.41s"
MAKE_FAILED = "Exit code 2\nmake: *** [Makefile:9: test] Error 2"
GIT_IGNORED = """\
Exit code 1
The following paths are ignored by one of your .gitignore files:
notes/draft.md
hint: Use -f if you really want to add them."""
GIT_NO_UPSTREAM = """\
fatal: The current branch feat-a has no upstream branch.
To push the current branch and set the remote as upstream, use

    git push --set-upstream origin feat-a
"""


def verdicts(
    command: str,
    succeeded: bool,
    output: str | None,
    cwd: str = ROOT,
    directory: str = ".",
) -> list[tuple[str, str, str]]:
    runs = classify(command, succeeded, output, cwd, directory, DEFAULT_IGNORE_COMMANDS)
    return [(run.directory, run.workflow, run.verdict) for run in runs]


# (command, exit 0?, output, cwd, directory it ran in, each run's (directory, workflow, verdict))
CASES = [
    # An unmasked exit status speaks for itself.
    ("make test", True, None, ROOT, ".", [(".", "make test", VERIFIED)]),
    ("make test", False, None, ROOT, ".", [(".", "make test", FAILED)]),
    ("python -m pytest", False, PYTEST_PASSED, ROOT, ".", [(".", "python -m pytest", FAILED)]),
    ("MIX_ENV=test mix test", True, None, ROOT, ".", [(".", "MIX_ENV=test mix test", VERIFIED)]),
    # A masked status counts only by what the output shows.
    (
        "mix test 2>&1 | tail -5",
        True,
        EXUNIT_PASSED,
        ROOT,
        ".",
        [(".", "mix test", VERIFIED)],
    ),
    (
        "mix test --seed 0 2>&1 | tail -30",
        True,
        EXUNIT_FAILED,
        ROOT,
        ".",
        [(".", "mix test --seed 0", FAILED)],
    ),
    (
        "mix test --seed 0 2>&1 | tail -30",
        True,
        EXUNIT_SUMMARY_ONLY,
        ROOT,
        ".",
        [(".", "mix test --seed 0", FAILED)],
    ),
    (
        "mix test 2>&1 | tail -5",
        True,
        "Compiling 3 files (.ex)",
        ROOT,
        ".",
        [(".", "mix test", UNVERIFIED)],
    ),
    ("mix test 2>&1 | tail -5", True, None, ROOT, ".", [(".", "mix test", UNVERIFIED)]),
    (
        "python -m pytest || true",
        True,
        PYTEST_FAILED,
        ROOT,
        ".",
        [(".", "python -m pytest", FAILED)],
    ),
    (
        "python -m pytest || true",
        True,
        PYTEST_PASSED,
        ROOT,
        ".",
        [(".", "python -m pytest", VERIFIED)],
    ),
    ("make test; exit 0", True, "done", ROOT, ".", [(".", "make test", UNVERIFIED)]),
    # A step before `;` is not what the exit status speaks for either.
    ("make test; echo done", True, PYTEST_PASSED, ROOT, ".", [(".", "make test", VERIFIED)]),
    (
        "make build; make test",
        True,
        None,
        ROOT,
        ".",
        [(".", "make build", UNVERIFIED), (".", "make test", VERIFIED)],
    ),
    # A failed command: which of its decisive steps failed.
    (
        "cd frontend && npm test",
        False,
        "Exit code 1",
        ROOT,
        ".",
        [("frontend", "npm test", FAILED)],
    ),
    (
        "make build && make test",
        False,
        MAKE_FAILED,
        ROOT,
        ".",
        [(".", "make build", UNVERIFIED), (".", "make test", UNVERIFIED)],
    ),
    (
        "make lint && python -m pytest",
        False,
        PYTEST_FAILED,
        ROOT,
        ".",
        [(".", "make lint", UNVERIFIED), (".", "python -m pytest", FAILED)],
    ),
    (
        "make build && make test",
        True,
        None,
        ROOT,
        ".",
        [(".", "make build", VERIFIED), (".", "make test", VERIFIED)],
    ),
    # The step whose own failure the output shows failed; the steps after it never ran.
    (
        "git add notes/draft.md && git commit -m 'Cart: totals'",
        False,
        GIT_IGNORED,
        ROOT,
        ".",
        # `git add` is read-only: its failure is a run (a known error's), never a pass; the
        # commit never ran.
        [(".", "git add notes/draft.md", FAILED)],
    ),
    (
        "git add src/cartt.py && git commit -m 'Cart: totals'",
        False,
        "Exit code 128\nfatal: pathspec 'src/cartt.py' did not match any files",
        ROOT,
        ".",
        [(".", "git add src/cartt.py", FAILED)],
    ),
    # The output names the step that failed by its program: the steps after it never ran.
    (
        "cat missing.txt && make test",
        False,
        "Exit code 1\ncat: missing.txt: No such file or directory",
        ROOT,
        ".",
        [(".", "cat missing.txt", FAILED)],
    ),
    (
        "ls build && npm test",
        False,
        "ls: cannot access 'build': No such file or directory",
        ROOT,
        ".",
        [(".", "ls build", FAILED)],
    ),
    (
        "make build && ./scripts/smoke.sh",
        False,
        "make: *** No rule to make target 'build'.  Stop.",
        ROOT,
        ".",
        [(".", "make build", FAILED)],
    ),
    (
        "pytets -q && make build",
        False,
        "Exit code 127\nbash: line 1: pytets: command not found",
        ROOT,
        ".",
        [(".", "pytets -q", FAILED)],
    ),
    # A program's progress notes under its name say nothing of a failure.
    (
        "make -C api build && ./scripts/smoke.sh",
        False,
        "make: Entering directory '/home/dev/shop/api'\nmake: Leaving directory\nsmoke: boom",
        ROOT,
        ".",
        [(".", "make -C api build", UNVERIFIED), (".", "./scripts/smoke.sh", UNVERIFIED)],
    ),
    (
        "git add -A && git commit -m 'Cart: totals' && git push",
        False,
        "Exit code 1\nOn branch main\nnothing to commit, working tree clean",
        ROOT,
        ".",
        [],  # nothing to commit is no error: the commit step neither failed nor passed
    ),
    (
        "git commit -am 'Cart: totals' && git push",
        False,
        "[feat-a 5d889b0] Cart: totals\n 1 file changed\n" + GIT_NO_UPSTREAM,
        ROOT,
        ".",
        [(".", "git push", FAILED)],  # bookkeeping that did not fail is no run
    ),
    (
        "git pull && make test",
        False,
        "Auto-merging src/cart.py\nCONFLICT (content): Merge conflict in src/cart.py\n"
        "Automatic merge failed; fix conflicts and then commit the result.",
        ROOT,
        ".",
        [(".", "git pull", FAILED)],
    ),
    # Read-only and navigation steps are no runs.
    ("git status && git diff", True, None, ROOT, ".", []),
    ("ls | wc -l", True, "12", ROOT, ".", []),
    ("cd frontend && ls", True, None, ROOT, ".", []),
    ('grep -E "a|b" src', False, None, ROOT, ".", []),
    ("git diff --exit-code", False, "diff --git a/src/cart.py b/src/cart.py", ROOT, ".", []),
    # A read's failure its output shows is a run of the read as it ran: no family.
    (
        "sed -n '1,20p' src/cart.py",
        False,
        "sed: can't read src/cart.py: No such file or directory",
        ROOT,
        ".",
        [(".", "sed -n '1,20p' src/cart.py", FAILED)],
    ),
    # Where a step ran: relative to the work tree, and only inside it.
    ("cd .. && make", True, None, ROOT, ".", []),
    ("cd $HOME && make", True, None, ROOT, ".", []),
    ("cd /etc && make", True, None, ROOT, ".", []),
    (
        "cd ../backend && make",
        True,
        None,
        f"{ROOT}/frontend",
        "frontend",
        [("backend", "make", VERIFIED)],
    ),
    ("cd .. && make", True, None, f"{ROOT}/frontend", "frontend", [(".", "make", VERIFIED)]),
    ("cd api && make", True, None, f"{ROOT}/web", "web", [("web/api", "make", VERIFIED)]),
    ("cd /home/dev/shop/api && make", True, None, ROOT, ".", [("api", "make", VERIFIED)]),
    ("make", True, None, f"{ROOT}/web/ui", "web/ui", [("web/ui", "make", VERIFIED)]),
]


@pytest.mark.parametrize(
    ("command", "succeeded", "output", "cwd", "directory", "expected"),
    CASES,
    ids=[f"{c[0]}-{'ok' if c[1] else 'failed'}-{c[4]}" for c in CASES],
)
def test_classify(
    command: str,
    succeeded: bool,
    output: str | None,
    cwd: str,
    directory: str,
    expected: list[tuple[str, str, str]],
) -> None:
    assert verdicts(command, succeeded, output, cwd, directory) == expected


def test_a_masked_failure_names_its_salient_error() -> None:
    (run,) = classify("mix test --seed 0 2>&1 | tail -30", True, EXUNIT_FAILED, ROOT, ".")

    assert run == StepRun(
        step=0,
        directory=".",
        workflow="mix test --seed 0",
        workflow_hash=hashlib.sha256(b"mix test --seed 0").hexdigest(),
        command="mix test --seed 0 2>&1 | tail -30",
        masked=True,
        verdict=FAILED,
        salient_error="Assertion with == failed",
    )


def test_the_failing_pytest_step_names_its_failed_test() -> None:
    runs = classify("make lint && python -m pytest", False, PYTEST_FAILED, ROOT, ".")

    failed = [run for run in runs if run.verdict == FAILED]
    assert [(run.workflow, run.salient_error) for run in failed] == [
        ("python -m pytest", "FAILED tests/test_cart.py::test_total - assert 9 == 10")
    ]


def test_the_failed_git_step_names_its_own_error() -> None:
    runs = classify("git commit -am 'x' && git push", False, GIT_NO_UPSTREAM, ROOT, ".")
    assert [(run.workflow, run.verdict, run.salient_error) for run in runs] == [
        ("git push", FAILED, "fatal: The current branch feat-a has no upstream branch."),
    ]
    clean = "On branch main\nnothing to commit, working tree clean"
    assert classify("git commit -m 'x' && git push", False, clean, ROOT, ".") == []


def test_only_failed_runs_have_a_salient_error() -> None:
    for succeeded, output in ((True, PYTEST_PASSED), (True, None), (False, MAKE_FAILED)):
        for run in classify("make build && python -m pytest", succeeded, output, ROOT, "."):
            if run.verdict != FAILED:
                assert run.salient_error is None


def test_a_failed_run_without_an_error_line_has_no_salient_error() -> None:
    (run,) = classify("cd frontend && npm test", False, "Exit code 1", ROOT, ".")

    assert (run.step, run.directory, run.verdict, run.salient_error) == (
        1,
        "frontend",
        FAILED,
        None,
    )


def test_variants_of_one_workflow_share_its_hash_and_keep_their_text() -> None:
    runs = [
        classify(command, True, None, ROOT, ".")[0]
        for command in ("make test", "make   test", "make test 2>&1", "make \\\n  test")
    ]

    assert {run.workflow_hash for run in runs} == {hashlib.sha256(b"make test").hexdigest()}
    assert [run.command for run in runs] == [
        "make test",
        "make   test",
        "make test 2>&1",
        "make \\\n  test",
    ]
    assert all(run.verdict == VERIFIED and not run.masked for run in runs)


def test_a_step_keeps_its_index_in_the_command() -> None:
    runs = classify("cd web && make build && make test", True, None, ROOT, ".")

    assert [(run.step, run.directory, run.workflow) for run in runs] == [
        (1, "web", "make build"),
        (2, "web", "make test"),
    ]


@settings(max_examples=300, deadline=None)
@given(
    command=st.text(max_size=300),
    succeeded=st.booleans(),
    output=st.none() | st.text(max_size=300),
)
def test_no_command_or_output_makes_classify_raise(
    command: str, succeeded: bool, output: str | None
) -> None:
    for run in classify(command, succeeded, output, "/home/dev/shop", "."):
        assert run.verdict in ("verified", "failed", "unverified")
        # Its text, or that text with a message it holds elided (`jj new -m0` -> `jj new -m…`).
        assert run.command in command or "\n" in run.command or run.messages
