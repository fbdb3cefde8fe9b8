"""The hook's reading of a plain command line agrees with the grammar's, or says nothing;
the workflow hash it keys advice by is the worker's."""

from __future__ import annotations

import pytest

from remem.agent.advice import plain_form_hash, plain_workflow_hash
from remem.procedures.steps import workflow_hash
from remem.shell.analysis import analyse
from remem.shell.plain import plain_form, plain_workflow
from remem.shell.purpose import form_of

PLAIN = [
    "pytest",
    "pytest -q",
    "  pytest   -q\ttests/test_a.py  ",
    ".venv/bin/python -m pytest -q",
    "python3 -m pytest tests/unit -k some_name",
    "go test ./...",
    "GOCACHE=/tmp/go-build GOMODCACHE=/tmp/go-mod go test ./...",
    "mix test test/app_test.exs:12",
    "cargo +nightly test --workspace",
    "npm run test:unit -- --runInBand",
    "make check",
    "uv run pytest -x",
    "./scripts/test.sh --fast",
    "git push --set-upstream origin feat-a",
    "npx vitest@1.2 run",
    "ruff check --select=E,F .",
    "rtk bun run test",
    "timeout 120 bun run lint",
    "env NODE_ENV=test nice -n 5 rtk bun test",
    "CI=1 rtk pytest -q",
]
NOT_PLAIN = [
    "pytest -q 2>&1 | tail -20",
    "cd app && pytest",
    "pytest; echo done",
    'git commit -m "a message"',
    "echo $HOME",
    "pytest -k 'a or b'",
    "pytest # a comment",
    "if true; then pytest; fi",
    "time pytest",
    "for x in a b; do echo $x; done",
    "pytest\nmix test",
    "python - <<'PY'\nprint(1)\nPY",
    "",
    "   ",
]


@pytest.mark.parametrize("command", PLAIN)
def test_a_plain_command_is_the_workflow_the_grammar_reads(command: str) -> None:
    steps = analyse(command).steps
    assert len(steps) == 1
    assert plain_workflow(command) == steps[0].workflow
    assert plain_workflow_hash(command) == workflow_hash(steps[0].workflow)


@pytest.mark.parametrize("command", NOT_PLAIN)
def test_anything_else_is_left_to_the_grammar(command: str) -> None:
    assert plain_workflow(command) is None
    assert plain_workflow_hash(command) is None


@pytest.mark.parametrize("command", PLAIN)
def test_a_plain_command_s_form_is_the_worker_s(command: str) -> None:
    """What cannot run is keyed by the workflow as its wrappers ran it: the hook's reading of
    a plain line and the worker's of its step agree."""
    (step,) = analyse(command).steps
    form = form_of(step.text, step.workflow)
    assert plain_form(command) == form
    assert plain_form_hash(command) == workflow_hash(form)


def test_a_form_keeps_its_wrappers_before_its_workflow() -> None:
    assert [plain_form(command) for command in PLAIN[-4:]] == [
        "rtk bun run test",
        "timeout 120 bun run lint",
        "env nice -n 5 rtk NODE_ENV=test bun test",
        "rtk CI=1 pytest -q",
    ]
    assert plain_form("pytest -q") == plain_workflow("pytest -q")
