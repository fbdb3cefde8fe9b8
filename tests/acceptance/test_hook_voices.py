"""What the hook tells its user: oversized runs kept with their output cut, numeric-text exit
codes, arguments it does not know, and the drop ledger through `remem drops` and `remem doctor`.
The installed remem-hook and remem, as real processes."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from remem.db import migrate
from remem.db.engine import make_engine
from tests.conftest import Home, load_fixture

MIB = 1024 * 1024
GITHUB_TOKEN = "ghp_4fK9sLm2Qx7Rt8Vw1Yz3Bc5Nd6Hj0PqAeUi"


def _drops_json(home: Home) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(home.remem("drops", "--json").stdout)
    return rows


def _huge(prefix: str) -> str:
    """About 2 MiB of output that starts with prefix and ends with a secret and a summary."""
    return prefix + "collecting ...\n" * (2 * MIB // 15) + f"token={GITHUB_TOKEN}\n3 passed in 0.4s"


@pytest.mark.parametrize(
    ("fixture", "field", "outcome", "exit_code"),
    [
        ("claude-code/post_tool_use_bash_success.json", "stdout", "success", 0),
        ("claude-code/post_tool_use_failure_bash_exit_code.json", "error", "failure", 1),
    ],
    ids=["stdout", "error"],
)
def test_oversized_run_keeps_its_command_and_outcome_with_the_cut_recorded(
    home: Home, fixture: str, field: str, outcome: str, exit_code: int
) -> None:
    payload = load_fixture(fixture)
    if field == "stdout":
        payload["tool_response"]["stdout"] = _huge("")
    else:
        payload["error"] = _huge("Exit code 1\n")
    data = json.dumps(payload).encode()
    assert len(data) > 2 * MIB

    result = home.hook(data)

    assert (result.returncode, result.stderr) == (0, b"")
    [hit] = home.commands().values()
    assert (hit["command"], hit["status"], hit["exit_code"], hit["runs"]) == (
        payload["tool_input"]["command"],
        outcome,
        exit_code,
        1,
    )
    # The excerpt kept of the output is shown by no command: the stored row is what is checked.
    stored = home.query("SELECT output_excerpt, error_excerpt, payload FROM captured_events")
    assert stored[0][0].endswith("token=[REDACTED]\n3 passed in 0.4s")
    assert "characters cut]" in stored[0][0]
    assert GITHUB_TOKEN not in json.dumps(stored)
    [note] = _drops_json(home)
    assert (note["reason"], note["size_bytes"], note["hook_event"]) == (
        "output_cut",
        len(data),
        payload["hook_event_name"],
    )
    assert "event kept" in note["detail"]
    status = json.loads(home.remem("status", "--json").stdout)
    assert (status["dropped_payloads"], status["outputs_cut"]) == (0, 1)
    assert "0; 1 kept with their output cut" in home.remem("status").stdout


def test_payload_past_the_read_bound_is_drained_and_dropped_as_too_large(home: Home) -> None:
    data = b'{"output": "' + b"x" * (64 * MIB) + b'"}'

    result = home.hook(data, timeout=120)

    assert (result.returncode, result.stderr) == (0, b"")
    assert [(drop["reason"], drop["size_bytes"]) for drop in _drops_json(home)] == [
        ("too_large", len(data))
    ]
    assert home.status()["events"] == 0


@pytest.mark.parametrize(
    ("exit_code", "outcome", "stored"),
    [("0", "success", 0), (" 2 ", "failure", 2), ("-1", "failure", -1), ("3.0", "failure", 3)],
)
def test_generic_exit_code_written_as_text_is_stored_as_a_number(
    home: Home, exit_code: str, outcome: str, stored: int
) -> None:
    payload = load_fixture("generic/command.json")
    payload["exit_code"] = exit_code

    result = home.hook(payload)

    assert (result.returncode, result.stderr) == (0, b"")
    assert [(hit["status"], hit["exit_code"]) for hit in home.commands().values()] == [
        (outcome, stored)
    ]
    assert home.drops() == []


def test_generic_exit_code_that_is_no_integer_is_dropped_for_it(home: Home) -> None:
    payload = load_fixture("generic/command.json")
    payload["exit_code"] = "1.5"

    assert home.hook(payload).returncode == 0

    assert [(drop["reason"], drop["detail"]) for drop in home.drops()] == [
        ("invalid_field", "exit_code is not an integer")
    ]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--host", "bogus"), "'bogus'"),
        (("--host=bogus",), "'bogus'"),
        (("--verbose",), "'--verbose'"),
        (("--host",), "''"),
    ],
    ids=["host", "host-equals", "flag", "host-without-value"],
)
def test_argument_the_hook_does_not_know_is_named_once_and_the_event_still_stored(
    home: Home, args: tuple[str, ...], named: str
) -> None:
    payload = load_fixture("claude-code/post_tool_use_bash_success.json")

    result = home.hook(payload, *args)

    assert result.returncode == 0
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert named in lines[0] and "claude-code" in lines[0] and "accepted" in lines[0]
    assert home.query("SELECT host, outcome FROM captured_events") == [("claude-code", "success")]


def test_known_host_and_flags_say_nothing(home: Home) -> None:
    payload = load_fixture("generic/command.json")

    result = home.hook(payload, "--host", "generic")

    assert (result.returncode, result.stderr) == (0, b"")
    assert home.query("SELECT host FROM captured_events") == [("generic",)]


def _send_malformed_with_secret(home: Home) -> bytes:
    data = (
        b'{"session_id": "s-1", "cwd": "/home/dev/shop", '
        b'"command": "deploy --token ' + GITHUB_TOKEN.encode() + b'", "exit_code": 0'
    )
    assert home.hook(data).returncode == 0
    return data


def test_drops_lists_a_malformed_payload_with_its_reason_and_a_redacted_excerpt(
    home: Home,
) -> None:
    data = _send_malformed_with_secret(home)

    table = home.remem("drops").stdout
    [row] = _drops_json(home)

    assert "not_json" in table and "[REDACTED]" in table and "deploy" in table
    assert GITHUB_TOKEN[:8] not in table
    assert (row["reason"], row["size_bytes"], row["detail"]) == (
        "not_json",
        len(data),
        "JSONDecodeError",
    )
    assert row["excerpt"].startswith('{"session_id": "s-1"')
    assert "[REDACTED]" in row["excerpt"] and GITHUB_TOKEN not in json.dumps(row)
    assert GITHUB_TOKEN not in json.dumps(home.query("SELECT * FROM dropped_payloads"))


def test_drops_show_bracketed_text_as_it_was_recorded(home: Home) -> None:
    """The table reads no markup: `[b]` in an excerpt is printed as it is, not escaped."""
    assert home.hook(b'{"session_id": "s-1", "note": "[b]bold[/b] [link=x]"').returncode == 0
    table = home.remem("drops").stdout
    assert "[b]bold[/b] [link=x]" in table and "\\[" not in table


def test_drops_are_newest_first_and_limited(home: Home) -> None:
    for text in (b"first", b"second", b"third"):
        assert home.hook(text).returncode == 0

    rows = json.loads(home.remem("drops", "--json", "--limit", "2").stdout)

    assert [row["excerpt"] for row in rows] == ["third", "second"]


def test_drops_says_so_when_there_are_none(home: Home) -> None:
    assert home.remem("drops").stdout.strip() == "No dropped payloads."
    assert _drops_json(home) == []


def test_doctor_warns_about_payloads_dropped_in_the_last_day(home: Home) -> None:
    _send_malformed_with_secret(home)
    assert home.hook(b"[1, 2]").returncode == 0
    assert home.hook(b"not json either").returncode == 0

    checks = json.loads(home.remem("doctor", "--json", check=False).stdout)

    [drops] = [check for check in checks if check["name"] == "drops"]
    assert drops["status"] == "warn"
    assert "3 payload(s)" in drops["detail"] and "not_json (2)" in drops["detail"]
    assert "remem drops" in drops["fix"]


def test_doctor_is_quiet_about_drops_that_lose_nothing(home: Home) -> None:
    payload = load_fixture("claude-code/post_tool_use_bash_success.json")
    payload["tool_name"] = "Read"
    assert home.hook(payload).returncode == 0

    checks = json.loads(home.remem("doctor", "--json", check=False).stdout)

    assert [drop["reason"] for drop in home.drops()] == ["ignored_tool"]
    assert [c["status"] for c in checks if c["name"] == "drops"] == ["ok"]


def test_drop_spooled_while_the_database_is_locked_keeps_its_excerpt(
    home: Home,
) -> None:
    locker = sqlite3.connect(home.db, isolation_level=None, timeout=1)
    locker.execute("BEGIN IMMEDIATE")
    try:
        assert home.hook(b"not json").returncode == 0
    finally:
        locker.execute("ROLLBACK")
        locker.close()

    report = json.loads(home.remem("spool", "ingest", "--json").stdout)

    assert report["drops_stored"] == 1
    assert [(r["reason"], r["excerpt"]) for r in _drops_json(home)] == [("not_json", "not json")]


def test_rows_from_before_excerpts_show_a_dash_and_the_migration_goes_both_ways(
    home: Home,
) -> None:
    assert home.hook(b"kept before").returncode == 0
    engine = make_engine(f"sqlite:///{home.db}")
    try:
        migrate.downgrade(engine, "0005")
        columns = [row[1] for row in home.query("PRAGMA table_info(dropped_payloads)")]
        assert "excerpt" not in columns
        assert home.scalar("SELECT reason FROM dropped_payloads") == "not_json"
        migrate.upgrade(engine)
    finally:
        engine.dispose()

    table = home.remem("drops").stdout

    [row] = [line for line in table.splitlines() if "not_json" in line]
    cells = [cell.strip() for cell in row.strip().strip("│").split("│")]
    assert (cells[4], cells[-1]) == ("not_json", "-")
    assert [row["excerpt"] for row in _drops_json(home)] == [None]
