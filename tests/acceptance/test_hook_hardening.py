"""Repeated runs are runs: payloads without an id of their own, through the real hook."""

from __future__ import annotations

import json
import sqlite3

from tests.conftest import Home, load_fixture


def test_identical_payloads_without_an_id_are_separate_runs(home: Home) -> None:
    generic = load_fixture("generic/command.json")
    del generic["event_id"]
    cursor = load_fixture("cursor/after_shell_execution.json")
    for payload, times in ((generic, 3), (cursor, 2)):
        for _ in range(times):
            assert home.hook(payload).returncode == 0

    runs = {command: hit["runs"] for command, hit in home.commands().items()}

    assert runs == {"make check": 3, "pnpm build": 2}
    assert home.status()["events"] == 5


def test_a_spooled_payload_without_an_id_is_stored_once_however_often_it_is_ingested(
    home: Home,
) -> None:
    generic = load_fixture("generic/command.json")
    del generic["event_id"]
    home.db.rename(home.path / "away.db")
    assert home.hook(generic).returncode == 0  # no database: spooled with its key
    (home.path / "away.db").rename(home.db)
    spooled = (home.spool / "events.jsonl").read_text()

    home.remem("spool", "ingest")
    (home.spool / "events.jsonl").write_text(spooled)  # the same line offered again
    home.remem("spool", "ingest")

    assert home.status()["events"] == 1


def test_doctor_and_status_count_codex_calls_never_resolved(home: Home) -> None:
    payload = load_fixture("codex/post_tool_use_bash.json")
    payload["transcript_path"] = str(home.path / "no-such-rollout.jsonl")
    assert home.hook(payload).returncode == 0
    home.remem("worker", "--burst")
    connection = sqlite3.connect(home.db)
    with connection:
        connection.execute("UPDATE captured_events SET captured_at = captured_at - 2 * 86400")
    connection.close()

    status = json.loads(home.remem("status", "--json").stdout)
    checks = json.loads(home.remem("doctor", "--json", check=False).stdout)

    assert status["unresolved_codex_events"] == 1
    (codex,) = [check for check in checks if check["name"] == "codex"]
    assert codex["status"] == "warn" and "1 Codex command" in codex["detail"]
