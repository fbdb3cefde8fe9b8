"""The spool: durable appends, torn lines, dead letters and idempotent ingestion."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import cast

import pytest
from sqlalchemy.exc import OperationalError

from remem.capture import spool
from remem.capture.hosts import build_event
from remem.capture.ingest import ingest_spool
from remem.config import load_settings
from remem.db.engine import make_engine
from remem.errors import DatabaseVanished
from tests.conftest import Home, load_fixture
from workers.runner import Worker


def _event_record(tool_use_id: str) -> dict[str, object]:
    payload = load_fixture("claude-code/post_tool_use_bash_success.json")
    payload["tool_use_id"] = tool_use_id
    event = build_event(payload, "claude-code", 1000.0, lambda cwd: (cwd, "main", cwd, "."))
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


def test_event_spooled_by_an_older_remem_is_ingested_without_the_new_fields(home: Home) -> None:
    record = _event_record("old")
    event = cast(dict[str, object], record["event"])
    old = {name: value for name, value in event.items() if name not in spool.ADDED_EVENT_FIELDS}
    assert len(old) == len(event) - len(spool.ADDED_EVENT_FIELDS)
    spool.append(str(home.spool), {**record, "event": old})
    report = _ingest(home)
    assert (report.events_stored, report.dead_lettered) == (1, {})
    assert home.query("SELECT tool_use_id, directory, output_excerpt FROM captured_events") == [
        ("old", None, None)
    ]


def _poison(tool_use_id: str, **fields: object) -> dict[str, object]:
    """A spooled event that passes the spool's own checks but that the database refuses."""
    record = _event_record(tool_use_id)
    record["event"] = {**cast(dict[str, object], record["event"]), **fields}
    return record


def _write_spool(home: Home, records: list[dict[str, object]]) -> None:
    home.spool.mkdir(exist_ok=True)
    lines = [json.dumps(record).encode() for record in records]
    (home.spool / spool.ACTIVE_FILE).write_bytes(b"\n".join(lines) + b"\n")


def test_lines_the_database_refuses_are_dead_lettered_and_the_others_stored(home: Home) -> None:
    _write_spool(
        home,
        [
            _event_record("good"),
            _poison("bogus-kind", kind="bogus"),  # CHECK constraint
            _poison("nan-time", event_at=float("nan")),  # binds as NULL: NOT NULL constraint
            _event_record("also-good"),
        ],
    )
    report = _ingest(home)
    assert (report.files, report.events_stored) == (1, 2)
    stored = sorted(r[0] for r in home.query("SELECT tool_use_id FROM captured_events"))
    assert stored == ["also-good", "good"]
    letters = _dead_letters(home)
    assert [d["line_number"] for d in letters] == [2, 3]
    assert "CHECK constraint failed" in str(letters[0]["reason"])
    assert "NOT NULL constraint failed" in str(letters[1]["reason"])
    assert all(str(d["reason"]).startswith("refused by the database") for d in letters)
    assert '"bogus"' in str(letters[0]["line"])
    assert not list(home.spool.glob("ingesting-*"))
    assert _ingest(home).files == 0


def test_one_poison_line_among_two_hundred_leaves_the_other_199_stored(home: Home) -> None:
    records = [_event_record(f"e{i}") for i in range(200)]
    records[100] = _poison("poison", kind="bogus")
    _write_spool(home, records)
    report = _ingest(home)
    assert report.events_stored == 199
    assert home.scalar("SELECT count(*) FROM captured_events") == 199
    assert [d["line_number"] for d in _dead_letters(home)] == [101]


def test_poison_lines_in_several_batches_spoil_only_themselves(home: Home) -> None:
    count = spool.BATCH_RECORDS * 2 + 10
    records = [_event_record(f"e{i}") for i in range(count)]
    for index in (3, spool.BATCH_RECORDS + 7, count - 1):
        records[index] = _poison(f"p{index}", kind="bogus")
    _write_spool(home, records)
    assert _ingest(home).events_stored == count - 3
    assert [d["line_number"] for d in _dead_letters(home)] == [4, spool.BATCH_RECORDS + 8, count]


def test_a_locked_database_dead_letters_nothing_and_leaves_the_file(home: Home) -> None:
    _write_spool(home, [_event_record("good"), _poison("bogus-kind", kind="bogus")])
    locker = sqlite3.connect(home.db, isolation_level=None)
    engine = make_engine(f"sqlite:///{home.db}", busy_timeout_s=0.05)
    try:
        locker.execute("BEGIN IMMEDIATE")
        with pytest.raises(OperationalError, match="locked"):
            ingest_spool(engine, str(home.spool))
        locker.execute("ROLLBACK")
        assert _dead_letters(home) == []
        assert len(list(home.spool.glob("ingesting-*"))) == 1

        report = ingest_spool(engine, str(home.spool))
    finally:
        locker.close()
        engine.dispose()
    assert report.events_stored == 1
    assert [d["line_number"] for d in _dead_letters(home)] == [2]


def test_field_types_the_database_cannot_hold_are_dead_lettered_before_storing(
    home: Home,
) -> None:
    _write_spool(
        home,
        [
            _poison("huge", exit_code=10**30),
            _poison("dict", command={"a": 1}),
            _poison("files", files=[1, 2]),
            _event_record("good"),
        ],
    )
    report = _ingest(home)
    assert report.events_stored == 1
    assert report.dead_lettered == {"event with wrong field types": 3}


def test_drop_spooled_by_a_remem_from_before_excerpts_is_ingested_without_one(
    home: Home,
) -> None:
    old = {
        "idempotency_key": "old-drop",
        "reason": "not_json",
        "host": None,
        "hook_event": None,
        "size_bytes": 8,
        "payload_sha256": "0" * 64,
        "detail": "Expecting value",
        "dropped_at": 1.0,
    }
    assert set(old) | {"excerpt"} == spool.DROP_FIELDS
    spool.append(str(home.spool), {"type": "drop", "drop": old})
    report = _ingest(home)
    assert (report.drops_stored, report.dead_lettered) == (1, {})
    assert home.query("SELECT idempotency_key, excerpt FROM dropped_payloads") == [
        ("old-drop", None)
    ]


def test_a_database_file_replaced_under_the_worker_keeps_the_spool_for_the_next(
    home: Home,
) -> None:
    """What was ingested into a file no longer at the path would be lost with it: the spool
    file stays, and the worker on the file now there ingests it."""
    settings = load_settings(home.env)
    engine = make_engine(settings.database_url)
    worker = Worker(engine, settings)
    with engine.connect():
        pass  # the engine holds a connection to the file it opened
    spool.append(str(home.spool), _event_record("kept"))
    copy = home.path / "restored.db"
    with sqlite3.connect(home.db) as reading, sqlite3.connect(copy) as writing:
        reading.backup(writing)
    reading.close()
    writing.close()
    os.replace(copy, home.db)
    with pytest.raises(DatabaseVanished, match="replaced by another file"):
        worker.ingest()
    engine.dispose()
    assert len(list(home.spool.glob("ingesting-*.jsonl"))) == 1
    assert _ingest(home).files == 1  # stored once, whichever file the first commit reached
    assert home.query("SELECT tool_use_id FROM captured_events") == [("kept",)]
    assert not list(home.spool.glob("ingesting-*.jsonl"))


INGEST_MEASURED = """
import resource, sys
from remem.capture.ingest import ingest_spool
from remem.db.engine import make_engine

engine = make_engine(f"sqlite:///{sys.argv[1]}")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
report = ingest_spool(engine, sys.argv[2])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(before * 1024, after * 1024, report.events_stored, sum(report.dead_lettered.values()))
"""


def test_a_large_spool_is_ingested_in_batches_within_bounded_memory(home: Home) -> None:
    """96 MB of spooled events, with refused lines among them: ingestion's peak memory grows
    by a fraction of the spool's size (reading it whole took seven times its size)."""
    import subprocess
    import sys

    lines, output = 12_000, "x" * 8_000
    home.spool.mkdir(exist_ok=True)
    with open(home.spool / spool.ACTIVE_FILE, "wb") as handle:
        for number in range(lines):
            record = _event_record(f"big-{number}")
            record["event"]["output_excerpt"] = f"{number} {output}"  # type: ignore[index]
            handle.write(json.dumps(record).encode() + b"\n")
            if number % 1000 == 0:
                handle.write(b'{"not": "a record"}\n')
    size = (home.spool / spool.ACTIVE_FILE).stat().st_size

    result = subprocess.run(
        [sys.executable, "-c", INGEST_MEASURED, str(home.db), str(home.spool)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    before, after, stored, dead = map(int, result.stdout.split())

    assert (stored, dead) == (lines, 12)
    assert size > 90_000_000
    assert after - before < size / 4, (size, before, after)
    assert home.scalar("SELECT count(*) FROM captured_events") == lines
    assert [name for name in os.listdir(home.spool) if name.endswith(spool.REFUSED_SUFFIX)] == []
