"""The spool: durable appends, torn lines, dead letters and idempotent ingestion."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from remem.capture import spool
from remem.capture.hosts import build_event
from remem.capture.ingest import ingest_spool
from remem.db.engine import make_engine
from tests.conftest import Home, load_fixture


def _event_record(tool_use_id: str) -> dict[str, object]:
    payload = load_fixture("claude-code/post_tool_use_bash_success.json")
    payload["tool_use_id"] = tool_use_id
    event = build_event(payload, "claude-code", 1000.0, lambda cwd: (cwd, "main"))
    return {"type": "event", "event": event.as_dict(), "spooled_at": 1.0, "spool_reason": "test"}


def _ingest(home: Home) -> spool.IngestReport:
    engine = make_engine(f"sqlite:///{home.db}")
    try:
        return ingest_spool(engine, str(home.spool))
    finally:
        engine.dispose()


def _dead_letters(home: Home) -> list[dict[str, object]]:
    path = home.spool / spool.DEAD_LETTER_FILE
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_appended_file_is_private(home: Home) -> None:
    spool.append(str(home.spool), _event_record("a"))
    assert (home.spool / spool.ACTIVE_FILE).stat().st_mode & 0o777 == 0o600


def test_torn_last_line_does_not_corrupt_the_next_append(home: Home) -> None:
    spool.append(str(home.spool), _event_record("a"))
    with open(home.spool / spool.ACTIVE_FILE, "ab") as handle:
        handle.write(b'{"type": "event", "event": {"idempot')  # a writer killed mid-line
    spool.append(str(home.spool), _event_record("b"))

    report = _ingest(home)
    assert (report.events_stored, report.dead_lettered) == (2, {"unparsable line": 1})
    assert sorted(r[0] for r in home.query("SELECT tool_use_id FROM captured_events")) == ["a", "b"]


def test_torn_line_at_the_end_is_dead_lettered_not_counted(home: Home) -> None:
    spool.append(str(home.spool), _event_record("a"))
    with open(home.spool / spool.ACTIVE_FILE, "ab") as handle:
        handle.write(b'{"type": "ev')
    report = _ingest(home)
    assert report.events_stored == 1
    assert [d["reason"] for d in _dead_letters(home)] == ["torn line (writer stopped mid-append)"]


def test_garbage_and_wrong_shapes_go_to_dead_letter_with_reasons(home: Home) -> None:
    good = _event_record("good")
    wrong_fields = {"type": "event", "event": {"idempotency_key": "x"}}
    bad_types = json.loads(json.dumps(good))
    bad_types["event"]["event_at"] = "yesterday"
    lines = [
        b"garbage",
        json.dumps([1, 2]).encode(),
        json.dumps({"type": "mystery"}).encode(),
        json.dumps(wrong_fields).encode(),
        json.dumps(bad_types).encode(),
        json.dumps(good).encode(),
    ]
    home.spool.mkdir(exist_ok=True)
    (home.spool / spool.ACTIVE_FILE).write_bytes(b"\n".join(lines) + b"\n")
    report = _ingest(home)
    assert report.events_stored == 1
    assert report.dead_lettered == {
        "unparsable line": 1,
        "not a spool record": 2,
        "event with wrong fields": 1,
        "event with wrong field types": 1,
    }
    assert [d["line_number"] for d in _dead_letters(home)] == [1, 2, 3, 4, 5]


def test_same_event_spooled_twice_is_stored_once(home: Home) -> None:
    for _ in range(2):
        spool.append(str(home.spool), _event_record("twice"))
    report = _ingest(home)
    assert (report.events_stored, report.events_already_stored) == (1, 1)
    assert _ingest(home).files == 0


def test_left_over_ingesting_file_from_a_crash_is_reingested_idempotently(home: Home) -> None:
    spool.append(str(home.spool), _event_record("crash"))
    _ingest(home)
    # As if ingestion had committed and died before removing its renamed file.
    spool.append(str(home.spool), _event_record("crash"))
    os.rename(home.spool / spool.ACTIVE_FILE, home.spool / "ingesting-1-1.jsonl")
    report = _ingest(home)
    assert (report.events_stored, report.events_already_stored) == (0, 1)
    assert home.scalar("SELECT count(*) FROM captured_events") == 1
    assert not list(home.spool.glob("ingesting-*"))


def test_appends_during_ingestion_are_never_lost(home: Home) -> None:
    written: list[str] = []

    def writer() -> None:
        for i in range(200):
            spool.append(str(home.spool), _event_record(f"w{i}"))
            written.append(f"w{i}")

    thread = threading.Thread(target=writer)
    thread.start()
    while thread.is_alive():
        _ingest(home)
    thread.join()
    _ingest(home)
    stored = {r[0] for r in home.query("SELECT tool_use_id FROM captured_events")}
    assert stored == set(written) and len(written) == 200


def test_no_spool_directory_is_an_empty_report(tmp_path: Path) -> None:
    report = spool.ingest(str(tmp_path / "none"), lambda records: (0, 0, 0))
    assert report.as_dict()["files"] == 0
