"""One line per thing in the digest (issue 43, item 8), as real processes: sessions through the
real `remem-hook`, a `remem worker --burst`, then what `remem context` and `remem procedures`
say. A procedure shows as it runs and what many sessions ran comes first; a project-wide
procedure and its branch row are one entry; a pitfall is said once, and not again among the
known errors; a state that is no error (`nothing to commit`) is no known error; the known
errors an agent can act on come before those fixed in the code at hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.acceptance.test_context import context, make_project, set_branch
from tests.acceptance.test_known_errors import KNOWN_TITLE, known_lines
from tests.acceptance.test_truthful_digest import Agent
from tests.conftest import Home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def procedure_lines(digest: str) -> list[str]:
    return [line for line in digest.splitlines() if line.startswith("- `")]


def test_a_procedure_shows_the_command_it_runs_not_one_run_s_spelling(
    home: Home, project: Path
) -> None:
    agent = Agent(home, project)
    for session in ("s1", "s2"):
        agent.ran("make lint 2>&1", session)
        agent.ran("timeout 120 make lint", session)
    home.remem("worker", "--burst")

    (line,) = procedure_lines(context(home, project).stdout)
    assert line.startswith("- `make lint`  ("), line
    (listed,) = json.loads(home.remem("procedures", "list", "--json").stdout)
    assert listed["command"] == "make lint"
    spelt = {variant["command"] for variant in listed["variants"]}
    assert spelt == {"make lint 2>&1", "timeout 120 make lint"}  # kept as its variants


def test_what_many_sessions_ran_comes_before_a_newer_one_off(home: Home, project: Path) -> None:
    agent = Agent(home, project)
    for session in ("s1", "s2", "s3"):
        agent.ran("make test", session)
    agent.ran("make release-notes", "s4")  # newest, twice, in one session
    agent.ran("make release-notes", "s4")
    home.remem("worker", "--burst")

    lines = procedure_lines(context(home, project).stdout)
    assert [line.split("`")[1] for line in lines] == ["make test", "make release-notes"]


def test_a_project_wide_procedure_and_its_branch_row_are_one_entry(
    home: Home, project: Path
) -> None:
    agent = Agent(home, project)
    for branch, session in (("feature-a", "s1"), ("feature-b", "s2")):
        set_branch(project, branch)
        agent.ran("make test", session)
        agent.ran("make test", session)
    home.remem("worker", "--burst")

    every = json.loads(home.remem("procedures", "list", "--all", "--json").stdout)
    assert sorted(p["scope"] for p in every) == ["branch", "branch", "project"]
    listed = json.loads(
        home.remem(
            "procedures", "list", "--project", str(project), "--branch", "feature-a", "--json"
        ).stdout
    )
    assert [(p["command"], p["scope"]) for p in listed] == [("make test", "project")]
    lines = procedure_lines(context(home, project).stdout)
    assert len(lines) == 1 and "verified on 2 branches" in lines[0]


def _failed_then_passed(agent: Agent, session: str, error: str, failures: int) -> None:
    for _ in range(failures):
        agent.failed("make test", session, error)
    agent.ran("make test", session)


def test_one_pitfall_per_error_and_not_again_among_the_known_errors(
    home: Home, project: Path
) -> None:
    agent = Agent(home, project)
    error = "Exit code 2\nE   KeyError: 'total'\n1 failed in 0.12s"
    _failed_then_passed(agent, "s1", error, 1)
    _failed_then_passed(agent, "s2", error, 2)  # the same error: another count, one pitfall
    home.remem("worker", "--burst")

    digest = context(home, project).stdout
    pitfalls = [line for line in digest.splitlines() if line.startswith("  pitfall:")]
    assert len(pitfalls) == 1 and "KeyError: 'total'" in pitfalls[0], digest
    assert digest.count("KeyError: 'total'") == 1, digest
    assert KNOWN_TITLE not in digest
    # Every known error stays listed where they are asked for.
    errors = home.json("procedures", "errors", "--project", str(project))
    assert [e["error"] for e in errors if e["error"]] == ["E   KeyError: 'total'"] * 2


@pytest.mark.parametrize(
    ("command", "output"),
    [
        ('git commit -m "Tidy"', "On branch main\nnothing to commit, working tree clean"),
        (
            'git commit -m "Tidy"',
            "On branch main\nUntracked files:\n  notes.md\n\n"
            'nothing added to commit but untracked files present (use "git add" to track)',
        ),
        ("git pull --ff-only", "Already up to date."),
        ("git push", "Everything up-to-date"),
    ],
)
def test_a_state_that_is_no_error_is_no_known_error(
    home: Home, project: Path, command: str, output: str
) -> None:
    agent = Agent(home, project)
    agent.failed("make test", "s1", "Exit code 2\nE   KeyError: 'total'\n1 failed in 0.12s")
    agent.ran("make test", "s1")
    agent.failed(command, "s2", f"Exit code 1\n{output}")
    agent.ran("make build", "s2")
    agent.ran(command, "s2")
    home.remem("worker", "--burst")

    errors = home.json("procedures", "errors", "--project", str(project))
    assert [e["error"] for e in errors if e["error"]] == ["E   KeyError: 'total'"], errors
    digest = context(home, project).stdout
    assert output.splitlines()[-1] not in digest, digest


def test_known_errors_an_agent_can_act_on_come_first(home: Home, project: Path) -> None:
    agent = Agent(home, project)
    # Oldest: fixed by running a command. Newest: fixed by editing the test the run named.
    agent.failed(
        "pytest -q",
        "s1",
        "Exit code 2\nE   ModuleNotFoundError: No module named 'pkg'\n1 error in 0.31s",
    )
    agent.ran(".venv/bin/pip install -e .", "s1")
    agent.ran("pytest -q", "s1")
    agent.failed(
        "pytest -q tests/test_cart.py",
        "s2",
        "Exit code 1\ntests/test_cart.py:4: in test_total\nE   assert 3 == 4\n1 failed in 0.1s",
    )
    agent.edited("tests/test_cart.py", "s2", "assert total() == 3")
    agent.ran("pytest -q tests/test_cart.py", "s2")
    home.remem("worker", "--burst")

    found = list(known_lines(context(home, project).stdout))
    assert found == ["E   ModuleNotFoundError: No module named 'pkg'", "E   assert 3 == 4"], found
