"""A broken config.toml never switches the memory off in silence: the real `remem-hook` runs on
the defaults for what the file gets wrong, says so in one line at the top of the SessionStart
digest and once on stderr, and still answers a failure with what is known of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acceptance.test_advice import Claude, context_of, learn_pytest_substitute
from tests.acceptance.test_context import make_project
from tests.conftest import Home, load_fixture

TAIL = " — using defaults; run remem doctor"

# One row per kind of problem: the file's text, and what the notice says of it.
BROKEN = [
    ("syntax", '[worker]\npoll_interval = "5s"\n[capture\n', "config.toml line 3: not valid TOML"),
    (
        "wrong type",
        "[worker]\nmax_attempts = true\n",
        "config.toml line 2: `worker.max_attempts` must be a whole number",
    ),
    (
        "unknown duration",
        '[worker]\npoll_interval = "soon"\n',
        "config.toml line 2: `worker.poll_interval` must be a duration",
    ),
    (
        "duration without a unit",
        "[promotion]\nmax_age = 14\n",
        "config.toml line 2: `promotion.max_age` must be a duration",
    ),
    (
        "out of range",
        "\n[context]\nmax_chars = 20000\n",
        "config.toml line 3: `context.max_chars` must be at most 9,000",
    ),
    (
        "unknown setting",
        '[worker]\npoll_intervall = "5s"\n',
        "config.toml line 2: `worker.poll_intervall` is not a remem setting",
    ),
    (
        "not a section",
        "context = 5\n",
        "config.toml line 1: `context` must be a [section] table",
    ),
    (
        "two at once",
        '[worker]\nmax_attempts = 0\nlog_level = "loud"\n',
        "config.toml line 2: `worker.max_attempts` must be at least 1; "
        "config.toml line 3: `worker.log_level` must be one of",
    ),
]


def session_start(home: Home, project: Path, session: str) -> tuple[int, str, str]:
    payload = load_fixture("claude-code/session_start.json")
    payload.update(session_id=session, cwd=str(project))
    result = home.hook(payload)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


@pytest.mark.parametrize(("text", "said"), [row[1:] for row in BROKEN], ids=[r[0] for r in BROKEN])
def test_a_broken_config_is_said_atop_the_digest_and_advice_still_comes(
    home: Home, tmp_path: Path, text: str, said: str
) -> None:
    project = make_project(tmp_path)
    agent = Claude(home, project)
    learn_pytest_substitute(agent)
    _, healthy, _ = session_start(home, project, "before")
    assert healthy.startswith("remem: commands verified to work in"), healthy

    (home.path / "config.toml").write_text(text, encoding="utf-8")
    code, digest, stderr = session_start(home, project, "after")

    assert code == 0
    notice, *rest = digest.splitlines()
    assert notice.startswith(f"remem: {said}") and notice.endswith(TAIL), notice
    assert "\n".join(rest) + "\n" == healthy  # the digest itself, as before, below it
    assert stderr == notice + "\n"  # once, one line

    failed = agent.home.hook(
        {
            **load_fixture("claude-code/post_tool_use_failure_bash_exit_code.json"),
            "session_id": "after",
            "cwd": str(project),
            "tool_use_id": "toolu_after",
            "tool_input": {"command": "pytest"},
            "error": "Exit code 127\n/bin/bash: line 1: pytest: command not found",
        }
    )
    assert failed.returncode == 0
    assert "use `.venv/bin/python -m pytest`" in context_of(failed.stdout)
    assert failed.stderr.decode() == notice + "\n"


def test_a_broken_config_is_said_even_where_nothing_is_known_yet(
    home: Home, tmp_path: Path
) -> None:
    (home.path / "config.toml").write_text("[worker]\nmax_attempts = true\n", encoding="utf-8")
    code, digest, _ = session_start(home, make_project(tmp_path), "first")
    assert code == 0
    assert digest == (
        "remem: config.toml line 2: `worker.max_attempts` must be a whole number" + TAIL + "\n"
    )


def test_a_broken_environment_variable_is_said_as_well(home: Home, tmp_path: Path) -> None:
    home.env["REMEM_CONTEXT_MAX_LINES"] = "many"
    code, digest, stderr = session_start(home, make_project(tmp_path), "first")
    assert code == 0
    assert digest.startswith(
        "remem: environment variable REMEM_CONTEXT_MAX_LINES: `context.max_lines` must be"
    )
    assert stderr == digest


def test_a_file_that_is_not_toml_and_names_a_database_keeps_events_in_the_spool(
    home: Home, tmp_path: Path
) -> None:
    """Which database the file meant cannot be read: the events wait for the worker, which
    reads them once the file is fixed, rather than start a second memory."""
    config = home.path / "config.toml"
    config.write_text('[database]\nurl = "sqlite:////elsewhere/remem.db\n', encoding="utf-8")
    code, digest, stderr = session_start(home, make_project(tmp_path), "first")
    assert code == 0
    assert digest.startswith("remem: config.toml line 2: not valid TOML") and digest == stderr
    assert len((home.spool / "events.jsonl").read_text().splitlines()) == 1
