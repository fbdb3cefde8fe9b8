"""Records the database refuses, at the hook: a bad payload is a recorded drop, never a spooled
event that every later ingest would trip over (issue 10)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from remem import hook
from remem.record.event import CapturedEvent
from tests.conftest import Home

NOW = 1_800_000_000.0


def _event(**fields: Any) -> CapturedEvent:
    payload = {
        "host": "generic",
        "session_id": "s1",
        "cwd": "/p/shop",
        "command": "make test",
        "exit_code": 0,
        "event_id": "e1",
    }
    kind, body = hook.capture(json.dumps(payload).encode(), None, NOW)
    assert kind == "event", body
    return CapturedEvent(**{**body.as_dict(), **fields})


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"kind": "bogus"}, "IntegrityError: CHECK constraint failed"),
        ({"event_at": float("nan")}, "IntegrityError: NOT NULL constraint failed"),
        ({"exit_code": 10**30}, "OverflowError"),
    ],
    ids=["check", "not-null", "overflow"],
)
def test_a_record_the_database_refuses_is_a_recorded_drop_not_a_spooled_event(
    home: Home, fields: dict[str, Any], detail: str
) -> None:
    event = _event(**fields)
    assert hook.save(str(home.path), "event", event) == "dropped"
    assert home.scalar("SELECT count(*) FROM captured_events") == 0
    assert home.scalar("SELECT count(*) FROM extraction_tasks") == 0
    (drop,) = home.query(
        "SELECT reason, detail, host, hook_event, dropped_at FROM dropped_payloads"
    )
    assert drop[0] == "invalid_record"
    assert str(drop[1]).startswith(detail)
    assert drop[2:] == ("generic", event.hook_event, NOW)
    assert not home.spool.exists() or not list(home.spool.iterdir())


def test_the_same_refused_record_saved_twice_is_one_drop(home: Home) -> None:
    event = _event(kind="bogus")
    for _ in range(2):
        assert hook.save(str(home.path), "event", event) == "dropped"
    assert home.scalar("SELECT count(*) FROM dropped_payloads") == 1


def test_a_good_record_is_still_stored(home: Home) -> None:
    assert hook.save(str(home.path), "event", _event()) == "stored"
    assert home.scalar("SELECT count(*) FROM dropped_payloads") == 0
