"""No input stops remem (issue 10), as real processes: spool lines the database refuses, a task
that kills every worker taking it, a SessionStart whose stdout is gone or cannot encode."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from remem.capture import spool
from tests.conftest import (
    REMEM,
    REMEM_HOOK,
    STDOUT_GONE,
    Home,
    hook_with_stdout_gone,
    load_fixture,
    wait_for,
)
from tests.integration.test_spool import _event_record, _poison

ACCENTED = './bin/运行.sh --name "coração"'


def _spool_good_and_poison(home: Home, tag: str) -> None:
    records = [
        _event_record(f"{tag}-good"),
        _poison(f"{tag}-check", kind="bogus"),  # violates a CHECK constraint
        _poison(f"{tag}-not-null", event_at=float("nan")),  # violates NOT NULL
    ]
    home.spool.mkdir(exist_ok=True)
    lines = b"".join(json.dumps(record).encode() + b"\n" for record in records)
    (home.spool / spool.ACTIVE_FILE).write_bytes(lines)


def _stored(home: Home) -> int:
    """How many events are stored: the good line of the spool alone, once ingested."""
    return int(home.status()["events"])


def _dead_letters(home: Home) -> list[dict[str, Any]]:
    path = home.spool / spool.DEAD_LETTER_FILE
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _assert_poison_set_aside(home: Home, tag: str) -> None:
    assert _stored(home) == 1
    reasons = [str(letter["reason"]) for letter in _dead_letters(home)]
    assert len(reasons) == 2, reasons
    assert "CHECK constraint failed" in reasons[0]
    assert "NOT NULL constraint failed" in reasons[1]
    assert not list(home.spool.glob("ingesting-*"))


def test_poison_spool_lines_do_not_stop_the_burst(home: Home) -> None:
    _spool_good_and_poison(home, "burst")
    home.remem("worker", "--burst")
    _assert_poison_set_aside(home, "burst")
    home.remem("worker", "--burst")  # and the next run has nothing left to trip over
    assert len(_dead_letters(home)) == 2


def test_poison_spool_lines_do_not_stop_the_daemon(home: Home) -> None:
    _spool_good_and_poison(home, "daemon")
    daemon = subprocess.Popen(
        [REMEM, "worker"],
        env={**home.env, "REMEM_WORKER_POLL_INTERVAL": "200ms"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: _stored(home) or daemon.poll() is not None, timeout=30)
        assert daemon.poll() is None, daemon.communicate()[1]
        home.wait_until_drained()
    finally:
        daemon.send_signal(signal.SIGTERM)
        _out, err = daemon.communicate(timeout=30)
    assert daemon.returncode == 0, err
    assert "Traceback" not in err
    _assert_poison_set_aside(home, "daemon")


def _task(home: Home, task_id: int) -> tuple[Any, ...]:
    [task] = [task for task in home.tasks() if task["id"] == task_id]
    return (task["status"], task["attempts"], task["lease_expiries"], task["last_error"])


def test_a_task_that_kills_every_worker_fails_and_the_others_complete(home: Home) -> None:
    for session in ("a", "b", "c"):
        for run in range(2):
            payload = {
                "host": "generic",
                "session_id": session,
                "cwd": "/p/shop",
                "command": "make test",
                "exit_code": 0,
                "event_id": f"{session}{run}",
            }
            assert home.hook(payload).returncode == 0
    budget = {"REMEM_WORKER_MAX_ATTEMPTS": "3"}
    crashing = {**home.env, **budget, "REMEM_TEST_CRASH_AT": "apply", "REMEM_WORKER_LEASE": "1s"}
    # Each burst reaps the previous lease, claims task 1 again (the oldest due task) and dies
    # applying it: the first death is forgiven, each later one spends an attempt.
    for death in range(1, 5):
        crashed = subprocess.run(
            [REMEM, "worker", "--burst"], env=crashing, capture_output=True, timeout=120
        )
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        assert _task(home, 1)[:3] == ("processing", max(0, death - 2), death - 1)
        home.wait_for_leases_to_expire()

    burst = subprocess.run(
        [REMEM, "worker", "--burst", "--json"],
        env={**home.env, **budget},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert burst.returncode in (0, 1) and "Traceback" not in burst.stderr, burst.stderr
    reason = "worker died while processing (lease expired 4 times)"
    assert _task(home, 1) == ("failed", 3, 4, reason)
    assert [_task(home, task_id)[0] for task_id in (2, 3)] == ["done", "done"]
    assert json.loads(burst.stdout)["tasks_done"] == 2

    listed = json.loads(home.remem("tasks", "--status", "failed", "--json").stdout)
    assert [(t["id"], t["status"], t["last_error"]) for t in listed] == [(1, "failed", reason)]
    doctor = home.remem("doctor", "--json", check=False)
    (tasks_check,) = [c for c in json.loads(doctor.stdout) if c["name"] == "tasks"]
    assert tasks_check["status"] == "fail" and reason in tasks_check["detail"]


def test_a_payload_sqlite_cannot_hold_is_a_recorded_drop(home: Home) -> None:
    payload = {"host": "generic", "session_id": "s", "cwd": "/p/shop", "command": "make test"}
    result = home.hook({**payload, "exit_code": 10**30})
    assert (result.returncode, result.stderr) == (0, b"")
    assert [drop["reason"] for drop in home.drops()] == ["invalid_record"]
    assert home.status()["events"] == 0
    assert not list(home.spool.glob("*.jsonl"))


@pytest.fixture
def accented_project(home: Home, tmp_path: Path) -> Path:
    """A project whose one procedure is a non-ASCII command, promoted by real processes."""
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for run in range(2):
        payload = {
            "host": "generic",
            "session_id": "earlier",
            "cwd": str(project),
            "command": ACCENTED,
            "exit_code": 0,
            "event_id": f"accented-{run}",
        }
        assert home.hook(payload).returncode == 0
    home.remem("worker", "--burst")
    assert [p["command"] for p in home.procedures()] == [ACCENTED]
    return project


def _session_start(project: Path) -> bytes:
    payload = load_fixture("claude-code/session_start.json")
    payload.update(cwd=str(project), session_id="new-session")
    return json.dumps(payload).encode()


def _session_start_stored(home: Home) -> bool:
    """Whether an event was stored beside the two runs of the accented project."""
    return bool(home.status()["events"] == 3)


def test_session_start_under_an_ascii_stdout_saves_and_prints_utf8(
    home: Home, accented_project: Path
) -> None:
    result = subprocess.run(
        [REMEM_HOOK],
        input=_session_start(accented_project),
        env={**home.env, "PYTHONIOENCODING": "ascii"},
        capture_output=True,
        timeout=30,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    assert _session_start_stored(home)
    assert ACCENTED in result.stdout.decode("utf-8")


@pytest.mark.parametrize("stdout", STDOUT_GONE)
def test_session_start_whose_stdout_is_gone_still_saves(
    home: Home, accented_project: Path, stdout: str
) -> None:
    code, err = hook_with_stdout_gone(home, _session_start(accented_project), stdout)
    assert code == 0, err
    assert len(err.splitlines()) <= 1, err
    assert b"Traceback" not in err
    assert _session_start_stored(home)
