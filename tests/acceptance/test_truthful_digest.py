"""Truthful digest lines, as real processes: Claude Code payloads through `remem-hook`, a
`remem worker --burst`, then what `remem context` tells the agent. A command whose credentials
were redacted is marked as needing them; a procedure names only the files edited right before
its own runs; a failure without output says so, and a lesson never claims what did not happen."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from remem.record.quote import NEEDS_CREDENTIALS
from tests.acceptance.test_context import context, make_project
from tests.conftest import REMEM, Home, end_codex_command, load_fixture

TEST = "python -m pytest -q tests/test_cart.py"
BUILD = "make build"
LINT = "npm run lint"
DEPLOY = (
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY ./deploy.sh --token "
    "tok_8f2d1c9a7b3e4f5a6d"
)
STORED_DEPLOY = "AWS_SECRET_ACCESS_KEY=[REDACTED] ./deploy.sh --token [REDACTED]"
MARKED = f"({NEEDS_CREDENTIALS})"


# One counter for every agent: a tool call's id names one run, in whatever session.
TOOL_CALL_IDS = count(1)


class Agent:
    """A Claude Code agent working in one project: each call is a real `remem-hook` process."""

    def __init__(self, home: Home, project: Path) -> None:
        self.home, self.project = home, project
        self.ids = TOOL_CALL_IDS

    def _send(self, fixture: str, session: str, **fields: Any) -> None:
        payload = load_fixture(f"claude-code/{fixture}.json")
        payload.update(session_id=session, cwd=str(self.project), **fields)
        payload["tool_use_id"] = f"toolu_{next(self.ids):04d}"
        result = self.home.hook(payload)
        assert (result.returncode, result.stderr) == (0, b""), result

    def ran(self, command: str, session: str) -> None:
        self._send(
            "post_tool_use_bash_success",
            session,
            tool_input={"command": command},
            tool_response={"stdout": "done", "stderr": "", "interrupted": False},
        )

    def failed(self, command: str, session: str, error: str) -> None:
        self._send(
            "post_tool_use_failure_bash_exit_code",
            session,
            tool_input={"command": command},
            error=error,
        )

    def edited(self, name: str, session: str, change: str) -> None:
        path = str(self.project / name)
        self._send(
            "post_tool_use_edit",
            session,
            tool_input={"file_path": path, "old_string": "pass", "new_string": change},
            tool_response={"filePath": path, "success": True},
        )


class Codex:
    """A Codex agent: each command is a real `remem-hook` process, its end written to the
    session's rollout file as Codex writes it."""

    calls = count(1)  # call ids stay distinct across every agent of a test

    def __init__(self, home: Home, cwd: Path, rollout: Path, session: str | None = None) -> None:
        self.home, self.cwd, self.rollout, self.session = home, cwd, rollout, session

    def ran(self, command: str, exit_code: int = 0, output: str = "ok") -> None:
        call_id = f"call_{next(self.calls):06d}"
        end_codex_command(self.rollout, call_id, exit_code, output)
        payload: dict[str, Any] = load_fixture("codex/post_tool_use_bash.json")
        payload.update(
            cwd=str(self.cwd),
            transcript_path=str(self.rollout),
            tool_use_id=call_id,
            tool_input={"command": command},
            tool_response=output,
        )
        if self.session is not None:
            payload["session_id"] = self.session
        result = self.home.hook(payload, "--host", "codex")
        assert (result.returncode, result.stderr) == (0, b""), result


def block_of(digest: str, command: str) -> list[str]:
    """The lines of one procedure: its command line and the indented lines under it."""
    lines = digest.splitlines()
    (start,) = [i for i, line in enumerate(lines) if line.startswith(f"- `{command}`")]
    end = start + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    return lines[start:end]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def test_redacted_credentials_are_marked_never_shown_as_ready(home: Home, project: Path) -> None:
    agent = Agent(home, project)
    for session in ("deploy-1", "deploy-2"):
        agent.ran(DEPLOY, session)
        agent.ran(BUILD, session)
    home.remem("worker", "--burst")

    digest = context(home, project).stdout
    (deploy_line,) = block_of(digest, STORED_DEPLOY)
    assert deploy_line.startswith(f"- `{STORED_DEPLOY}` {MARKED}  (2 runs in 2 sessions, ")
    assert "wJalr" not in digest and "tok_8f2d" not in digest
    (build_line,) = block_of(digest, BUILD)
    assert MARKED not in build_line

    shown = json.loads(context(home, project, "--json").stdout)["procedures"]
    flags = {p["command"]: p["needs_credentials"] for p in shown}
    assert flags == {STORED_DEPLOY: True, BUILD: False}
    listed = json.loads(home.remem("procedures", "list", "--json").stdout)
    assert {p["command"]: p["needs_credentials"] for p in listed} == flags
    (deploy,) = [p for p in listed if p["needs_credentials"]]
    # Wide enough that the table keeps each command on one line.
    table = subprocess.run(
        [REMEM, "procedures", "list"],
        env={**home.env, "COLUMNS": "400"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (deploy_row,) = [line for line in table.splitlines() if "deploy.sh" in line]
    assert f"{STORED_DEPLOY}  {MARKED}" in deploy_row
    (build_row,) = [line for line in table.splitlines() if BUILD in line]
    assert NEEDS_CREDENTIALS not in build_row
    body = home.remem("procedures", "show", str(deploy["id"])).stdout.splitlines()[1]
    assert body.startswith(f"Run `{STORED_DEPLOY}` {MARKED} in {project}")


def _work_on_the_cart(agent: Agent) -> None:
    """Session s1 fixes the cart, then builds; session s2 edits another file meanwhile."""
    agent.edited("src/cart.py", "s1", "return 1")
    agent.failed(TEST, "s1", "Exit code 1\nE   assert 0 == 3\n1 failed in 0.12s")
    agent.edited("src/cart.py", "s1", "return 3")
    agent.ran(TEST, "s1")
    agent.ran(BUILD, "s1")
    agent.edited("src/other.py", "s2", "return 2")
    agent.ran(BUILD, "s1")
    agent.ran(TEST, "s1")


def test_files_are_only_those_edited_right_before_the_runs_in_their_session(
    home: Home, project: Path
) -> None:
    _work_on_the_cart(Agent(home, project))
    home.remem("worker", "--burst")

    digest = context(home, project).stdout
    assert block_of(digest, TEST)[1:] == [
        "  files: src/cart.py",
        '  pitfall: failed 1 time before passing; last error "E   assert 0 == 3"; '
        "fixed after editing src/cart.py",
    ]
    # Built after the tests, never right after an edit of its own session: no files line, and
    # the other session's edit is not its.
    assert block_of(digest, BUILD)[1:] == []
    assert "src/other.py" not in digest


def test_a_failure_without_output_says_so_beside_a_files_line(home: Home, project: Path) -> None:
    agent = Agent(home, project)
    agent.failed(LINT, "s1", "Command exited with non-zero status code 2")
    agent.ran(LINT, "s1")
    agent.edited("src/app.js", "s2", "lint-clean")
    agent.ran(LINT, "s2")
    home.remem("worker", "--burst")

    digest = context(home, project).stdout
    assert block_of(digest, LINT)[1:] == [
        "  files: src/app.js",
        "  pitfall: failed 1 time before passing (no output recorded); "
        "passed again with no edit in between",
    ]
    assert 'last error ""' not in digest and "passed with no edit" not in digest

    (procedure,) = json.loads(home.remem("procedures", "list", "--json").stdout)
    shown = home.remem("procedures", "show", str(procedure["id"])).stdout
    assert "First attempt (exit 2): no output recorded." in shown
    assert "exit 2, no output recorded, no edit before it" in shown
    assert '""' not in shown


def test_a_rebuild_rewrites_rows_stored_the_old_way(home: Home, project: Path) -> None:
    agent = Agent(home, project)
    _work_on_the_cart(agent)
    agent.failed(LINT, "s3", "Command exited with non-zero status code 2")
    agent.ran(LINT, "s3")
    agent.ran(LINT, "s3")
    home.remem("worker", "--burst")
    new_form = context(home, project).stdout

    # What the older rules stored: files from long before on a build that never failed, and a
    # lesson quoting an empty error beside "passed with no edit".
    connection = sqlite3.connect(home.db)
    with connection:
        connection.execute(
            "UPDATE procedures SET files = '[\"src/cart.py\"]' WHERE command = ?", (BUILD,)
        )
        connection.execute(
            "UPDATE lessons SET last_error = '', pitfall = ? WHERE last_error IS NULL",
            ('failed 1 time before passing; last error ""; passed with no edit',),
        )
    connection.close()
    old_rows = context(home, project).stdout
    # The digest copes: pitfalls are told from the lesson's fields, whatever text was stored.
    assert 'last error ""' not in old_rows and "passed with no edit" not in old_rows
    assert block_of(old_rows, BUILD)[1:] == ["  files: src/cart.py"]

    home.remem("procedures", "rebuild")
    assert context(home, project).stdout == new_form
    assert block_of(new_form, BUILD)[1:] == []
    lessons = [
        lesson
        for listed in home.procedures()
        for lesson in home.json("procedures", "show", str(listed["id"]))["lessons"]
    ]
    assert lessons != []
    assert all(lesson["last_error"] != "" for lesson in lessons), lessons
    assert not any('last error ""' in lesson["pitfall"] for lesson in lessons), lessons


def test_a_fix_made_in_the_failing_session_is_named_when_another_session_passes(
    home: Home, project: Path
) -> None:
    agent = Agent(home, project)
    agent.failed(TEST, "s1", "Exit code 1\nE   assert 0 == 3\n1 failed in 0.12s")
    agent.edited("src/cart.py", "s1", "return 3")
    agent.ran(TEST, "s2")
    agent.ran(TEST, "s2")
    home.remem("worker", "--burst")

    (pitfall,) = [
        line for line in block_of(context(home, project).stdout, TEST) if "pitfall" in line
    ]
    assert pitfall.endswith("; fixed after editing src/cart.py"), pitfall


def test_an_attempt_made_after_an_edit_names_the_edit_once(home: Home, project: Path) -> None:
    agent = Agent(home, project)
    agent.edited("src/app.js", "s1", "first try")
    agent.failed(LINT, "s1", "src/app.js: 1 problem")
    agent.edited("src/app.js", "s1", "second try")
    agent.ran(LINT, "s1")
    agent.ran(LINT, "s2")
    home.remem("worker", "--burst")

    (procedure,) = json.loads(home.remem("procedures", "list", "--json").stdout)
    shown = home.remem("procedures", "show", str(procedure["id"])).stdout
    (attempt,) = [line for line in shown.splitlines() if line.strip().startswith("attempt 1:")]
    assert attempt.endswith(", after editing src/app.js"), attempt


def test_a_pitfall_two_streaks_teach_alike_is_printed_once(home: Home, project: Path) -> None:
    agent = Agent(home, project)
    error = "Exit code 1\nE   TypeError: unsupported operand\n1 failed in 0.12s"
    for session in ("s1", "s2"):  # the same failure, then a pass, in two sessions
        agent.failed(TEST, session, error)
        agent.ran(TEST, session)
    home.remem("worker", "--burst")
    (procedure,) = json.loads(home.remem("procedures", "list", "--json").stdout)
    shown = json.loads(home.remem("procedures", "show", str(procedure["id"]), "--json").stdout)
    assert len(shown["lessons"]) == 2
    assert shown["lessons"][0]["pitfall"] == shown["lessons"][1]["pitfall"]

    pitfalls = [line for line in block_of(context(home, project).stdout, TEST) if "pitfall" in line]
    assert pitfalls == [f"  pitfall: {shown['lessons'][0]['pitfall']}"]
    (entry,) = json.loads(context(home, project, "--json").stdout)["procedures"]
    assert entry["pitfalls"] == [shown["lessons"][0]["pitfall"]]
