"""Did the memory help: the session ledger, `remem report` and the digest ranked by use, as real
processes. Claude Code payloads through `remem-hook` (SessionStart prints the digest and
records what its page held), a `remem worker --burst` that judges each session, then the
report, the digest and `procedures show` read what it judged."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_advice import SECRET, VENV, Claude, context_of, learn_pytest_substitute
from tests.acceptance.test_context import make_project
from tests.conftest import Home

MODULE_ERROR = "Exit code 1\nE   ModuleNotFoundError: No module named 'cart'"
RED = "Exit code 1\nFAILED tests/test_cart.py::test_total - assert 2 == 3\n1 failed in 0.2s"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def start(agent: Claude, session: str) -> str:
    """The digest the SessionStart hook printed for a new session."""
    return agent.send("session_start", session).stdout.decode()


def learn(agent: Claude, runs: dict[str, int], session: str = "learn") -> None:
    for command, count in runs.items():
        for _ in range(count):
            agent.ran(command, session)
    agent.home.remem("worker", "--burst")


def ledger(home: Home, session: str) -> list[tuple[Any, ...]]:
    """(kind, used, passed, repeated, followed, failed_after) of each row of a session."""
    connection = sqlite3.connect(home.db)
    try:
        return connection.execute(
            "SELECT l.kind, l.used, l.passed, l.repeated, l.followed, l.failed_after "
            "FROM session_ledger l JOIN sessions s ON s.id = l.session_id "
            "WHERE s.session_key = ? ORDER BY l.id",
            (session,),
        ).fetchall()
    finally:
        connection.close()


def shown(home: Home, session: str) -> list[tuple[Any, ...]]:
    """(kind, the procedure's command or the known error's key hash, page) of what the pages
    printed to a session held."""
    connection = sqlite3.connect(home.db)
    try:
        found = []
        for procedures, errors, page in connection.execute(
            "SELECT d.procedures, d.known_errors, d.page FROM digest_shown d "
            "JOIN sessions s ON s.id = d.session_id WHERE s.session_key = ? ORDER BY d.id",
            (session,),
        ).fetchall():
            for procedure_id, _directory, _hash in json.loads(procedures):
                (command,) = connection.execute(
                    "SELECT command FROM procedures WHERE id = ?", (procedure_id,)
                ).fetchone()
                found.append(("procedure", command, page))
            found.extend(("known_error", error, page) for error in json.loads(errors))
        return found
    finally:
        connection.close()


def order(digest: str, *commands: str) -> list[str]:
    """The commands, in the order the digest lists them (those it does not, left out)."""
    lines = [line for line in digest.splitlines() if line.startswith("- ")]
    found = {c: i for i, line in enumerate(lines) for c in commands if f"`{c}`" in line}
    return sorted(found, key=found.__getitem__)


def test_a_session_shown_make_test_that_runs_it_counts_used_and_passed(
    home: Home, project: Path
) -> None:
    agent = Claude(home, project)
    learn(agent, {"make test": 2})
    assert "`make test`" in start(agent, "uses")
    agent.ran("make test", "uses")
    assert "`make test`" in start(agent, "ignores")
    agent.ran("ls", "ignores")
    home.remem("worker", "--burst")
    assert shown(home, "uses") == [("procedure", "make test", 1)]
    assert ledger(home, "uses") == [("procedure", 1, 1, 0, 0, 0)]
    assert ledger(home, "ignores") == [("procedure", 0, 0, 0, 0, 0)]
    report = home.json("report")
    (figures,) = report["projects"]
    assert figures["project"] == str(project.resolve())
    counts = {name: figures[name] for name in ("sessions", "shown", "used", "passed_when_used")}
    assert counts == {"sessions": 3, "shown": 2, "used": 1, "passed_when_used": 1}
    assert {name: report["total"][name] for name in counts} == counts
    assert figures["shown_never_used"] == []  # shown twice, used once
    # A rebuild re-derives the ledger; forgetting a session's events takes its records along.
    home.remem("procedures", "rebuild")
    assert ledger(home, "uses") == [("procedure", 1, 1, 0, 0, 0)]
    events = _events(home, "uses")
    home.remem("forget", *(f"--event={event}" for event in events), "--yes")
    assert shown(home, "uses") == [] and ledger(home, "uses") == []
    assert home.json("report")["total"]["used"] == 0


def _events(home: Home, session: str) -> list[int]:
    connection = sqlite3.connect(home.db)
    try:
        rows = connection.execute(
            "SELECT e.id FROM captured_events e JOIN sessions s ON s.id = e.session_id "
            "WHERE s.session_key = ?",
            (session,),
        ).fetchall()
    finally:
        connection.close()
    return [row[0] for row in rows]


def test_a_session_that_hits_a_shown_known_error_counts_a_repeat(home: Home, project: Path) -> None:
    agent = Claude(home, project)
    agent.failed("make test", "learn", MODULE_ERROR)
    agent.edited("cart.py", "learn")
    learn(agent, {"make test": 2})
    digest = start(agent, "again")
    assert "No module named 'cart'" in digest
    agent.failed("make test", "again", MODULE_ERROR)
    start(agent, "spared")
    agent.ran("make test", "spared")
    home.remem("worker", "--burst")
    assert ("known_error", 0, 0, 1, 0, 0) in ledger(home, "again")
    assert ("known_error", 0, 0, 0, 0, 0) in ledger(home, "spared")
    assert home.json("report")["total"]["repeats_after_shown"] == 1


def test_advice_followed_is_counted(home: Home, project: Path) -> None:
    agent = Claude(home, project)
    learn_pytest_substitute(agent)
    assert agent.failed("pytest", "follows")
    agent.ran(VENV, "follows")
    assert agent.failed("pytest", "ignores")
    agent.ran("ls", "ignores")
    home.remem("worker", "--burst")
    assert ledger(home, "follows") == [("advice", 0, 0, 0, 1, 0)]
    assert ledger(home, "ignores") == [("advice", 0, 0, 0, 0, 0)]
    total = home.json("report")["total"]
    assert (total["advice_given"], total["advice_followed"]) == (2, 1)


def test_six_sessions_that_ignore_one_procedure_and_use_another_reorder_the_digest(
    home: Home, project: Path
) -> None:
    with (home.path / "config.toml").open("a", encoding="utf-8") as config:
        config.write("\n[context]\nmax_lines = 4\n")  # two procedures a page
    agent = Claude(home, project)
    learn(agent, {"make lint": 4, "make test": 3, "make build": 2})
    first = start(agent, "s0")
    assert order(first, "make lint", "make test", "make build") == ["make lint", "make test"]
    for number in range(1, 7):
        start(agent, f"s{number}")
        agent.ran("make test", f"s{number}")
        home.remem("worker", "--burst")  # as the daemon would, between sessions
    digest = start(agent, "s7")
    # Used and passing first; shown in five sessions and never used: below what is used, and
    # below what was not shown yet, on the next page.
    assert order(digest, "make lint", "make test", "make build") == ["make test", "make build"]
    second = home.remem("context", "--cwd", str(project), "--page", "2").stdout
    assert order(second, "make lint") == ["make lint"]
    # The worker judged s1 to s5 by then (s0 ran nothing: no window, no judgement).
    assert shown(home, "s5") == [("procedure", "make test", 1), ("procedure", "make lint", 1)]
    assert shown(home, "s6") == [("procedure", "make test", 1), ("procedure", "make build", 1)]
    report = home.json("report")["total"]
    never = [(item["command"], item["sessions_shown"]) for item in report["shown_never_used"]]
    # s0 and s7 only opened: no tool call, so not among the sessions shown and not using.
    assert never == [("make lint", 5), ("make build", 1)]


def test_a_procedure_followed_then_failing_is_flagged_and_ranked_down_until_it_passes(
    home: Home, project: Path
) -> None:
    agent = Claude(home, project)
    learn(agent, {"make test": 3, "make lint": 2})
    assert order(start(agent, "s1"), "make test", "make lint") == ["make test", "make lint"]
    agent.failed("make test", "s1", RED)
    home.remem("worker", "--burst")
    assert ledger(home, "s1")[0] == ("procedure", 1, 0, 0, 0, 1)
    assert order(start(agent, "s2"), "make test", "make lint") == ["make lint", "make test"]
    test_id = _procedure_id(home, "make test")
    shown_text = home.remem("procedures", "show", str(test_id)).stdout
    assert "then failed on" in shown_text and "until it passes again" in shown_text
    assert home.json("procedures", "show", str(test_id))["followed_then_failed_at"]
    agent.ran("make test", "s2")
    home.remem("worker", "--burst")
    assert order(start(agent, "s3"), "make test", "make lint") == ["make test", "make lint"]
    detail = home.json("procedures", "show", str(test_id))
    assert detail["followed_then_failed_at"] is None


def _procedure_id(home: Home, command: str) -> int:
    listed = home.json("procedures", "list")
    return next(int(p["id"]) for p in listed if p["command"] == command)


def test_report_help_has_an_example(home: Home) -> None:
    text = home.remem("report", "--help").stdout
    assert "remem report --project" in text and "--since" in text
    assert json.loads(home.remem("report", "--json").stdout)["projects"] == []


def test_advice_whose_fix_command_runs_next_is_followed(home: Home, project: Path) -> None:
    agent = Claude(home, project)
    agent.failed("make test", "learn", MODULE_ERROR)
    agent.ran("pip install -e .", "learn")
    learn(agent, {"make test": 2})
    advice = agent.failed("make test", "k", MODULE_ERROR).decode()
    assert "pip install -e ." in advice
    agent.ran("pip install -e .", "k")
    home.remem("worker", "--burst")
    assert ("advice", 0, 0, 0, 1, 0) in ledger(home, "k")


def test_a_substitute_followed_then_failing_is_flagged_until_it_passes(
    home: Home, project: Path
) -> None:
    agent = Claude(home, project)
    learn_pytest_substitute(agent)
    assert agent.failed("pytest", "now")
    agent.failed(VENV, "now", RED)
    home.remem("worker", "--burst")
    assert ledger(home, "now") == [("advice", 0, 0, 0, 1, 1)]
    venv_id = _procedure_id(home, VENV)
    assert home.json("procedures", "show", str(venv_id))["followed_then_failed_at"]
    agent.ran(VENV, "now")
    home.remem("worker", "--burst")
    assert home.json("procedures", "show", str(venv_id))["followed_then_failed_at"] is None


def test_a_record_of_the_page_that_cannot_be_written_costs_the_digest_nothing(
    home: Home, project: Path
) -> None:
    """The record is written in the SessionStart event's own transaction: its failure costs
    neither the digest nor the event."""
    agent = Claude(home, project)
    learn(agent, {"make test": 2})
    connection = sqlite3.connect(home.db)
    try:
        connection.execute("DROP TABLE digest_shown")  # every write to it now fails
    finally:
        connection.close()
    assert "`make test`" in start(agent, "s1")
    connection = sqlite3.connect(home.db)
    try:
        started = connection.execute(
            "SELECT count(*) FROM captured_events e JOIN sessions s ON s.id = e.session_id "
            "WHERE e.kind = 'session_start' AND s.session_key = 's1'"
        ).fetchone()
    finally:
        connection.close()
    assert started == (1,)


def test_advice_is_followed_by_editing_the_file_it_named(home: Home, project: Path) -> None:
    agent = Claude(home, project)
    agent.failed("mix test", "learn", SECRET)
    agent.edited("config/test.exs", "learn")
    agent.ran("mix test", "learn")
    home.remem("worker", "--burst")
    assert "fixed after editing config/test.exs" in context_of(
        agent.failed("mix test", "follows", SECRET)
    )
    agent.edited("config/test.exs", "follows")
    assert context_of(agent.failed("mix test", "ignores", SECRET))
    agent.edited("lib/app_web/endpoint.ex", "ignores")
    home.remem("worker", "--burst")
    assert ledger(home, "follows") == [("advice", 0, 0, 0, 1, 0)]
    assert ledger(home, "ignores") == [("advice", 0, 0, 0, 0, 0)]
    total = home.json("report")["total"]
    assert (total["advice_given"], total["advice_followed"]) == (2, 1)


def test_a_session_that_only_opened_is_not_counted_as_shown(home: Home, project: Path) -> None:
    agent = Claude(home, project)
    learn(agent, {"make test": 2})
    assert "`make test`" in start(agent, "opened")  # and closed: no tool call
    assert "`make test`" in start(agent, "works")
    agent.ran("ls", "works")
    home.remem("worker", "--burst")
    total = home.json("report")["total"]
    counts = {name: total[name] for name in ("sessions", "sessions_shown", "shown", "used")}
    assert counts == {"sessions": 3, "sessions_shown": 1, "shown": 1, "used": 0}
    never = [(item["command"], item["sessions_shown"]) for item in total["shown_never_used"]]
    assert never == [("make test", 1)]


def test_the_report_explains_its_columns_under_the_table_and_in_its_help(
    home: Home, project: Path
) -> None:
    from remem.cli.report import LEGEND, legend

    agent = Claude(home, project)
    learn(agent, {"make test": 2})
    start(agent, "s1")
    agent.ran("make test", "s1")
    home.remem("worker", "--burst")
    text = home.remem("report").stdout
    header = next(line for line in text.splitlines() if "project" in line)
    for name, _meaning in LEGEND:
        assert name in header
    table_end = text.index("Failing calls per session")
    assert text[:table_end].endswith(legend() + "\n")
    helped = " ".join(home.remem("report", "--help").stdout.split())
    for name, meaning in LEGEND:
        assert f"{name} {meaning}" in helped
