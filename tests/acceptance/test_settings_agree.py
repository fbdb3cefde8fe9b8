"""The hook and the other processes read one config.toml alike (DESIGN.md §8): a setting written
in any TOML spelling moves the real `remem-hook` exactly as it moves the worker and the CLI."""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.conftest import Home, load_fixture

_ids = itertools.count(1)


def repository(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return path


def bash(cwd: Path, command: str) -> dict[str, Any]:
    """A Claude Code PostToolUse for a command that passed."""
    return {
        "session_id": "s1",
        "transcript_path": "/home/dev/.claude/projects/x/s1.jsonl",
        "cwd": str(cwd),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": f"toolu_{next(_ids):06d}",
        "tool_input": {"command": command},
        "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
    }


def session_start(project: Path) -> dict[str, Any]:
    payload = load_fixture("claude-code/session_start.json")
    payload.update(cwd=str(project), session_id=f"start-{next(_ids)}")
    return payload


def post(home: Home, payload: dict[str, Any]) -> bytes:
    result = home.hook(payload, "--host", "claude-code")
    assert (result.returncode, result.stderr) == (0, b""), result.stderr
    return result.stdout


def status(home: Home) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(home.remem("status", "--json").stdout)
    return report


def configure(home: Home, line: str) -> None:
    """A line after the comments `remem init` wrote, as a user adds one."""
    with (home.path / "config.toml").open("a", encoding="utf-8") as config:
        config.write(f"\n{line}\n")


def pages(home: Home, project: Path) -> list[str]:
    found = []
    for number in itertools.count(1):
        result = home.remem("context", "--cwd", str(project), "--page", str(number), check=False)
        if result.returncode != 0:
            assert "page(s)" in result.stderr, result.stderr
            return found
        found.append(result.stdout)
    raise AssertionError("unreachable")


def test_a_dotted_database_url_sends_the_hook_where_the_worker_reads(
    home: Home, tmp_path: Path
) -> None:
    other = tmp_path / "other.db"
    configure(home, f'database.url = "sqlite:///{other}"')
    created = json.loads(home.remem("init", "--no-hooks", "--json").stdout)
    assert created["database"] == f"sqlite:///{other}"
    assert other.is_file()
    project = repository(tmp_path / "shop")

    for _ in range(2):
        post(home, bash(project, "make test"))

    report = status(home)
    assert report["database"] == f"sqlite:///{other}"
    assert (report["events"], report["spool"]["pending"]) == (2, 0)
    home.env["REMEM_DATABASE_URL"] = f"sqlite:///{home.db}"  # the home's own file: untouched
    assert status(home)["events"] == 0
    del home.env["REMEM_DATABASE_URL"]

    burst = home.remem("worker", "--burst")
    assert burst.returncode == 0, burst.stderr
    report = status(home)
    assert report["tasks"]["pending"] == report["tasks"]["failed"] == 0
    assert report["procedures"]["active"] == 1
    digest = home.remem("context", "--cwd", str(project)).stdout
    assert "`make test`" in digest
    assert post(home, session_start(project)) == digest.encode("utf-8")


def test_a_dotted_page_budget_pages_the_hook_as_it_pages_context(
    home: Home, tmp_path: Path
) -> None:
    project = repository(tmp_path / "shop")
    for index in range(12):
        command = f"make target-{index:02d} VERBOSE=1 " + "--flag " * 20
        for _ in range(2):
            post(home, bash(project, command))
    home.remem("worker", "--burst")
    default_pages = pages(home, project)
    assert len(default_pages[0]) > 1000

    configure(home, "context.max_chars = 1000")
    budgeted = pages(home, project)
    assert len(budgeted) > len(default_pages)
    assert all(len(page) <= 1000 for page in budgeted)
    assert post(home, session_start(project)) == budgeted[0].encode("utf-8")

    home.env["REMEM_CONTEXT_MAX_CHARS"] = "1500"  # the environment wins for both alike
    overridden = pages(home, project)
    assert max(len(page) for page in overridden) > 1000
    assert all(len(page) <= 1500 for page in overridden)
    assert post(home, session_start(project)) == overridden[0].encode("utf-8")


def test_a_broken_database_setting_spools_the_event_until_it_is_fixed(
    home: Home, tmp_path: Path
) -> None:
    """The database the events belong to is in doubt: they wait in the spool rather than start
    a second memory, and the hook says why on every call, and atop the digest."""
    project = repository(tmp_path / "shop")
    configure(home, "database.url = 5")
    notice = (
        "remem: config.toml: `database.url` must be a string — using defaults; run remem doctor"
    )
    for payload in (bash(project, "make test"), session_start(project)):
        result = home.hook(payload, "--host", "claude-code")
        assert result.returncode == 0
        assert result.stderr.decode() == notice + "\n"
    assert result.stdout.decode() == notice + "\n"  # the SessionStart: nothing known but that
    spooled = [json.loads(line) for line in (home.spool / "events.jsonl").read_text().splitlines()]
    assert len(spooled) == 2
    assert all("database.url" in record["spool_reason"] for record in spooled)
    assert home.remem("status", check=False).returncode == 1  # the worker refuses it too

    config = home.path / "config.toml"
    config.write_text(config.read_text().replace("database.url = 5", ""))
    home.remem("worker", "--burst")
    report = status(home)
    assert (report["events"], report["spool"]["pending"]) == (2, 0)


def test_a_broken_setting_the_hook_does_not_need_costs_it_nothing(
    home: Home, tmp_path: Path
) -> None:
    project = repository(tmp_path / "shop")
    configure(home, 'worker.poll_interval = "soon"')
    result = home.hook(bash(project, "make test"), "--host", "claude-code")
    assert result.returncode == 0 and b"worker.poll_interval" in result.stderr
    assert not (home.spool / "events.jsonl").exists()  # stored, not spooled
    connection = sqlite3.connect(home.db)
    try:
        (stored,) = connection.execute("SELECT count(*) FROM captured_events").fetchone()
    finally:
        connection.close()
    assert stored == 1
