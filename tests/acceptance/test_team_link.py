"""`remem status` and `remem doctor` show the team link (DESIGN.md §9): status reads what the
daemon recorded in the local database and never connects; doctor connects, briefly, to a real
PostgreSQL (tests/pg_server.py), and neither ever prints the password of the team's URL."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from remem.db.sqlite import schema_head
from remem.json_contract import rfc3339
from tests.conftest import Home
from tests.pg_server import free_port

PASSWORD = "pw-Zq81-never-printed"
NO_TEAM = "team  none (set [team] database_url to share memory)"
HOUR, DAY = 3600.0, 86400.0


def _with_password(url: str) -> str:
    """The test cluster's URL with a password: trust authentication never asks for it."""
    assert url.startswith("postgresql+psycopg://remem@")
    return url.replace("remem@", f"remem:{PASSWORD}@", 1)


def _configure_team(home: Home, url: str, share: str = "") -> None:
    (home.path / "config.toml").write_text(
        f'[team]\ndatabase_url = "{url}"\nmachine = "laptop-7"\n{share}'
    )


def _write(home: Home, sql: str, params: tuple[Any, ...] = ()) -> None:
    connection = sqlite3.connect(home.db, timeout=10)
    try:
        with connection:
            connection.execute(sql, params)
    finally:
        connection.close()


def _status(home: Home) -> tuple[str, dict[str, Any]]:
    return home.remem("status").stdout, json.loads(home.remem("status", "--json").stdout)


def _through_click(home: Home, *args: str) -> str:
    """The same command line run by the click group instead of the stdlib front door."""
    program = "import sys; from remem.cli.commands import cli; cli(sys.argv[1:], prog_name='remem')"
    result = subprocess.run(
        [sys.executable, "-c", program, *args],
        env=home.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _doctor(home: Home, timeout: float = 60) -> tuple[str, dict[str, dict[str, str]]]:
    text = home.remem("doctor", check=False, timeout=timeout)
    listed = home.remem("doctor", "--json", check=False, timeout=timeout)
    assert "Traceback" not in text.stderr + listed.stderr
    return text.stdout + text.stderr, {c["name"]: c for c in json.loads(listed.stdout)}


def _capture(home: Home, project: Path, commands: list[str]) -> int:
    """Commands run in a project, through the real hook; the project's id."""
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for number, command in enumerate(commands):
        payload = {"session_id": "s1", "cwd": str(project), "command": command, "exit_code": 0}
        result = home.hook({**payload, "event_id": f"run-{number}"}, "--host", "generic")
        assert result.returncode == 0, result.stderr
    root = os.path.realpath(project)
    return int(home.scalar("SELECT id FROM projects WHERE root = ?", (root,)))


# ---- status: the local record only --------------------------------------------------------------


def test_status_without_a_team_says_so_in_one_line(home: Home) -> None:
    text, report = _status(home)
    labels = [line[:17].strip() for line in text.splitlines()]
    assert [label for label in labels if label.startswith("team")] == ["team"]
    assert f"{'':>13}{NO_TEAM}\n" in text
    assert "team" in report and report["team"] is None


def test_status_with_a_team_never_contacted(home: Home) -> None:
    url = f"postgresql+psycopg://alice:{PASSWORD}@db.example:5432/remem"
    _configure_team(home, url, 'share = ["github.com/acme/*", "gitlab.com/ops/*"]\n')
    text, report = _status(home)
    assert PASSWORD not in text + json.dumps(report)
    lines = {line[:17].strip(): line[19:] for line in text.splitlines()}
    assert lines["team"] == "postgresql+psycopg://alice:[REDACTED]@db.example:5432/remem"
    assert lines["team machine"] == "laptop-7 (leaves the team's queue to others)"
    assert lines["team share"] == "github.com/acme/*, gitlab.com/ops/*"
    assert lines["team link"] == "not contacted yet (is the daemon running?)"
    assert lines["team schema"] == "not seen yet"
    assert lines["team shipping"] == "0 shared project(s) linked, 0 event(s) waiting to ship"
    assert (lines["last ship"], lines["last pull"]) == ("never", "never")
    team = report["team"]
    assert team["state"] == "not contacted" and team["machine"] == "laptop-7"
    assert team["share"] == ["github.com/acme/*", "gitlab.com/ops/*"] and team["promote"] is False
    assert (team["projects"], team["waiting"], team["contact_at"]) == (0, 0, None)

    # The environment alone configures a team too; no share is "nothing shared".
    (home.path / "config.toml").unlink()
    home.env["REMEM_TEAM_DATABASE_URL"] = f"postgresql://bob:{PASSWORD}@10.0.0.9/remem"
    home.env["REMEM_TEAM_PROMOTE"] = "true"
    text, report = _status(home)
    assert PASSWORD not in text + json.dumps(report)
    assert "team share  nothing shared: set [team] share\n" in text
    assert "(works the team's queue)" in text and report["team"]["promote"] is True
    assert report["team"]["database"] == "postgresql://bob:[REDACTED]@10.0.0.9/remem"


def test_status_reports_what_the_daemon_recorded(home: Home, tmp_path: Path) -> None:
    project_id = _capture(home, tmp_path / "shop", ["make build", "make test", "make lint"])
    ids = [hit["id"] for hit in home.commands().values()]  # one event each
    first, last = min(ids), max(ids)
    now = time.time()
    # As the daemon records a link: the first event shipped, the team answered 3 h ago at 0008,
    # the last ship ended 2 days ago and the last pull 5 minutes ago.
    _write(
        home,
        "INSERT INTO team_links (project_id, project_key, shipped_event_id, created_at) "
        "VALUES (?, 'github.com/acme/shop', ?, ?)",
        (project_id, first, now - 3 * DAY),
    )
    for name, value, at in (
        ("contact", schema_head(), now - 3 * HOUR - 600),
        ("ship", "1", now - 2 * DAY - 600),
        ("pull", "4", now - 5 * 60 - 20),
    ):
        _write(home, "INSERT INTO team_state VALUES (?, ?, ?)", (name, value, at))
    _configure_team(home, "postgresql+psycopg://alice@db.example/remem")

    text, report = _status(home)
    assert "        team link  reachable as of 3h ago\n" in text
    assert f"      team schema  {schema_head()} (head {schema_head()})\n" in text
    assert "    team shipping  1 shared project(s) linked, 2 event(s) waiting to ship\n" in text
    assert "        last ship  2d ago\n        last pull  5m ago\n" in text
    team = report["team"]
    assert (team["state"], team["revision"], team["projects"], team["waiting"]) == (
        "reachable",
        schema_head(),
        1,
        last - first,
    )
    assert team["contact_at"] == rfc3339(now - 3 * HOUR - 600)
    assert 3 * HOUR + 600 <= team["contact_age_s"] < 4 * HOUR

    # The daemon's next try failed; an error that names the URL never shows its password.
    error = f"connection to postgresql://alice:{PASSWORD}@db.example/remem failed: refused"
    _write(home, "INSERT INTO team_state VALUES ('error', ?, ?)", (error, now - 10 * 60 - 20))
    text, report = _status(home)
    assert PASSWORD not in text + json.dumps(report)
    link_line = next(line for line in text.splitlines() if "team link" in line)
    assert link_line.startswith("        team link  unreachable since 3h ago (last try 10m ago): ")
    assert link_line.endswith(
        "connection to postgresql://alice:[REDACTED]@db.example/remem failed: refused"
    )
    assert report["team"]["state"] == "unreachable"

    # Both doors give the same answer (the pending task's lag in seconds aside).
    def steady(output: str) -> list[str]:
        return [line for line in output.splitlines() if "oldest pending" not in line]

    assert steady(text) == steady(_through_click(home, "status"))
    clicked = json.loads(_through_click(home, "status", "--json"))["team"]
    assert {k: v for k, v in clicked.items() if not k.endswith("_age_s")} == {
        k: v for k, v in report["team"].items() if not k.endswith("_age_s")
    }


# ---- doctor: a real connection, briefly ---------------------------------------------------------


def test_doctor_reaches_a_migrated_team_database(home: Home, pg_url: str) -> None:
    url = _with_password(pg_url)
    home.env["REMEM_TEAM_DATABASE_URL"] = url
    home.remem("db", "upgrade", "--team")
    text, checks = _doctor(home)
    assert PASSWORD not in text + json.dumps(checks)
    assert checks["team"]["status"] == "ok", checks["team"]
    assert "reachable" in checks["team"]["detail"] and "[REDACTED]" in checks["team"]["detail"]
    assert checks["team schema"] == {
        "name": "team schema",
        "status": "ok",
        "detail": f"at head ({schema_head()})",
        "fix": "",
    }
    assert checks["team share"]["status"] == "warn"
    assert "nothing is shared" in checks["team share"]["detail"]
    assert "promote = false" in checks["team share"]["detail"]
    assert checks["team link"]["status"] == "warn"
    assert "has not reached the team database yet" in checks["team link"]["detail"]
    assert "0 event(s) waiting to ship" in checks["team link"]["detail"]

    # What the daemon recorded: the link facts, its last error redacted.
    now = time.time()
    error = f"connection to postgresql://alice:{PASSWORD}@db.example/remem failed: refused"
    for name, value, at in (
        ("contact", schema_head(), now - 2 * DAY - 600),
        ("error", error, now - 10 * 60 - 20),
        ("pull", "3", now - 2 * DAY - 600),
    ):
        _write(home, "INSERT INTO team_state VALUES (?, ?, ?)", (name, value, at))
    text, checks = _doctor(home)
    assert PASSWORD not in text + json.dumps(checks)
    link = checks["team link"]
    assert link["status"] == "warn" and "tries again" in link["fix"]
    assert link["detail"] == (
        "the daemon's last try failed 10m ago: connection to "
        "postgresql://alice:[REDACTED]@db.example/remem failed: refused; 0 shared project(s) "
        "linked, 0 event(s) waiting to ship, last ship never, last pull 2d ago"
    )
    status_text, report = _status(home)
    assert PASSWORD not in status_text + json.dumps(report)


def test_doctor_says_an_unmigrated_team_database_is_behind(home: Home, pg_url: str) -> None:
    _configure_team(home, pg_url, 'share = ["github.com/acme/*"]\npromote = true\n')
    _text, checks = _doctor(home)
    assert checks["team"]["status"] == "ok"
    assert checks["team schema"]["status"] == "fail"
    assert checks["team schema"]["detail"] == f"at none, needs {schema_head()}"
    assert "remem db upgrade --team" in checks["team schema"]["fix"]
    assert checks["team share"]["status"] == "ok"
    assert checks["team share"]["detail"] == (
        "shares github.com/acme/*; this machine works the team's queue (promote = true)"
    )


def test_doctor_warns_of_an_unreachable_team_database_without_its_password(home: Home) -> None:
    url = f"postgresql+psycopg://alice:{PASSWORD}@127.0.0.1:{free_port()}/remem"
    _configure_team(home, url)
    # Refused at once or timed out after doctor's 3 s: either way well inside this bound.
    text, checks = _doctor(home, timeout=30)
    assert PASSWORD not in text + json.dumps(checks)
    team = checks["team"]
    assert team["status"] == "warn", team
    assert team["detail"].startswith("postgresql+psycopg://alice:[REDACTED]@127.0.0.1:")
    assert "is unreachable: " in team["detail"]
    assert "check that the server is up" in team["fix"]
    assert "team schema" not in checks
    assert "warn  team " in text and "fix: check that the server is up" in text
    status_text, report = _status(home)
    assert PASSWORD not in status_text + json.dumps(report)


def test_doctor_gives_up_on_a_silent_server_in_its_own_short_time(home: Home) -> None:
    """A server that accepts the connection and never answers: doctor waits its 3 s, not the
    10 s of every other team connection, nor the minute the URL asks for."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        _configure_team(home, f"postgresql://alice@127.0.0.1:{port}/remem?connect_timeout=60")
        _text, checks = _doctor(home, timeout=9)
    assert checks["team"]["status"] == "warn"
    assert checks["team"]["detail"].endswith("is unreachable: connection timeout expired")


def test_doctor_without_a_team_says_so(home: Home) -> None:
    _text, checks = _doctor(home)
    assert checks["team"] == {
        "name": "team",
        "status": "ok",
        "detail": "none (set [team] database_url to share memory)",
        "fix": "",
    }
    assert not {"team schema", "team share", "team link"} & set(checks)
