"""Crashes at chosen moments (DESIGN.md §4: a window is applied entirely or not at all) and a
64-way load: nothing lost, nothing doubled, the same procedures as a quiet serial run."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REMEM, REMEM_HOOK, Home, wait_for

COMMANDS = ["make test", "npm run lint", "cargo build", "pytest -q", "go vet ./..."]
BASE_AT = 1_790_000_000.0
SLOW = os.environ.get("REMEM_SLOW") == "1"


def _payloads(sessions: int, per_session: int, seed: int = 7) -> list[dict[str, Any]]:
    chooser = random.Random(seed)
    payloads = []
    for session in range(sessions):
        for index in range(per_session):
            payloads.append(
                {
                    "host": "generic",
                    "session_id": f"s{session}",
                    "cwd": f"/p/{session % 4}",
                    "branch": "main",
                    "command": COMMANDS[(session + index) % len(COMMANDS)],
                    "exit_code": 0 if chooser.random() > 0.25 else 1,
                    "timestamp": BASE_AT + session * 100 + index,
                    "event_id": f"{session}-{index}",
                }
            )
    return payloads


SAID = (
    "project", "scope", "branch", "directory", "workflow", "workflow_hash", "command", "variants",
    "branches", "status", "confidence", "verified_runs", "distinct_sessions", "files",
    "files_more",
)  # fmt: skip


def _evidence(home: Home, procedure_id: int) -> list[tuple[str, str]]:
    """Every evidence run of the procedure, named by its session and time (ids differ between
    runs that captured in a different order)."""
    runs, page, pages = [], 1, 1
    while page <= pages:
        shown = home.json("procedures", "show", str(procedure_id), "--evidence-page", str(page))
        runs += [(run["session_key"], run["at"]) for run in shown["evidence"]]
        page, pages = page + 1, shown["evidence_pages"]
    return sorted(runs)


def _signature(home: Home) -> list[str]:
    """Procedures compared by what `remem procedures` says of them, evidence included."""
    return sorted(
        json.dumps([[p[name] for name in SAID], _evidence(home, p["id"])])
        for p in home.procedures()
    )


_RUNS = (
    "SELECT event_id, step, project_id, branch, directory, workflow, workflow_hash, command, "
    "masked FROM {table} ORDER BY event_id, step"
)


def _runs(home: Home) -> dict[str, list[tuple[Any, ...]]]:
    """The steps each table holds, keyed as the worker keys them: (event_id, step)."""
    return {
        table: home.query(_RUNS.format(table=table))
        for table in ("verifications", "attempts", "unverified_runs")
    }


def _serial_reference(tmp_path: Path, template: Home, payloads: list[dict[str, Any]]) -> Home:
    """The same payloads posted one at a time into an empty copy of the home, then one burst."""
    reference = Home(tmp_path / "reference")
    shutil.copytree(template.path, reference.path)
    connection = sqlite3.connect(reference.db)
    for table in (
        "procedures",
        "procedure_identities",
        "procedure_evidence",
        "group_sessions",
        "group_states",
        "lessons",
        "attempts",
        "verifications",
        "unverified_runs",
        "extraction_tasks",
        "captured_events",
        "sessions",
        "projects",
        "dropped_payloads",
    ):
        connection.execute(f"DELETE FROM {table}")
    connection.commit()
    connection.close()
    for payload in payloads:
        assert reference.hook(payload).returncode == 0
    reference.remem("worker", "--burst")
    return reference


def _integrity(home: Home) -> str:
    return str(home.scalar("PRAGMA integrity_check"))


def test_sixty_four_hooks_while_a_daemon_and_a_burst_drain(home: Home, tmp_path: Path) -> None:
    payloads = _payloads(64, 20)
    home.env.update(REMEM_WORKER_POLL_INTERVAL="200ms")
    daemon = subprocess.Popen(
        [REMEM, "worker"], env=home.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    results: list[subprocess.CompletedProcess[bytes]] = []
    lock = threading.Lock()

    def send(chunk: list[dict[str, Any]]) -> None:
        for payload in chunk:
            result = home.hook(payload)
            with lock:
                results.append(result)

    threads = [threading.Thread(target=send, args=(payloads[i::64],)) for i in range(64)]
    try:
        for thread in threads:
            thread.start()
        burst = home.remem("worker", "--burst", timeout=300)
        for thread in threads:
            thread.join(timeout=600)
        wait_for(lambda: home.status()["events"] == 1280, 60)
        home.wait_until_drained()
    finally:
        daemon.terminate()
        daemon_out, daemon_err = daemon.communicate(timeout=30)
    assert daemon.returncode == 0
    assert [r.returncode for r in results] == [0] * 1280
    outputs = [r.stdout + r.stderr for r in results] + [
        burst.stdout.encode(),
        burst.stderr.encode(),
        daemon_out.encode(),
        daemon_err.encode(),
        (home.path / "logs" / "worker.log").read_bytes(),
    ]
    assert not [o for o in outputs if b"database is locked" in o]
    assert home.status()["events"] == 1280  # each delivery once
    assert _signature(home) == _signature(_serial_reference(tmp_path, home, payloads))


POINTS = ["claim", "prepare", "apply", "complete"]


def _crash_run(home: Home, point: str, nth: int) -> None:
    env = {**home.env, "REMEM_TEST_CRASH_AT": f"{point}:{nth}", "REMEM_WORKER_LEASE": "1s"}
    crashed = subprocess.run(
        [REMEM, "worker", "--burst"], env=env, capture_output=True, timeout=300
    )
    assert crashed.returncode == -9, crashed.stderr


def _recover(home: Home) -> None:
    home.wait_for_leases_to_expire()
    home.remem("worker", "--burst", timeout=300)
    assert set(home.undone_tasks().values()) == {0}


@pytest.mark.parametrize("point", POINTS)
def test_worker_killed_mid_operation_recovers_to_the_crash_free_result(
    home: Home, tmp_path: Path, point: str
) -> None:
    payloads = _payloads(6, 8)
    for payload in payloads:
        assert home.hook(payload).returncode == 0
    reference = Home(tmp_path / "crash-free")
    shutil.copytree(home.path, reference.path)
    reference.remem("worker", "--burst")

    _crash_run(home, point, nth=3)
    _recover(home)
    assert _integrity(home) == "ok"
    assert home.status()["events"] == len(payloads)
    passed = sum(hit["evidence"] for hit in home.command_hits())
    assert home.scalar("SELECT count(*) FROM verifications") == passed
    assert _signature(home) == _signature(reference)
    assert _runs(home) == _runs(reference)
    lessons = (
        "SELECT project_id, branch, directory, workflow_hash, resolved_by_event_id, "
        "failed_attempts, error_key, body, pitfall FROM lessons "
        "ORDER BY resolved_by_event_id, project_id, branch, directory, workflow_hash"
    )
    assert home.query(lessons) == reference.query(lessons)


def test_hook_killed_mid_write_leaves_nothing_half_written(home: Home) -> None:
    payload = _payloads(1, 1)[0]
    crashed = subprocess.run(
        [REMEM_HOOK],
        input=json.dumps(payload).encode(),
        env={**home.env, "REMEM_TEST_CRASH_AT": "hook_write"},
    )
    assert crashed.returncode == -9
    assert _integrity(home) == "ok"
    assert home.status()["events"] == 0
    assert home.tasks() == []
    assert home.hook(payload).returncode == 0  # the host delivers it again
    assert home.hook(payload).returncode == 0
    assert home.status()["events"] == 1


@pytest.mark.skipif(not SLOW, reason="the long crash matrix runs with REMEM_SLOW=1 (.ci/run)")
@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_crash_matrix_at_random_moments(home: Home, tmp_path: Path, point: str) -> None:
    seed = random.randrange(1 << 30)
    chooser = random.Random(seed)
    payloads = _payloads(12, 10, seed)
    for payload in payloads:
        assert home.hook(payload).returncode == 0
    reference = Home(tmp_path / "crash-free")
    shutil.copytree(home.path, reference.path)
    reference.remem("worker", "--burst")
    for _ in range(3):
        nth = chooser.randint(1, 12)
        env = {**home.env, "REMEM_TEST_CRASH_AT": f"{point}:{nth}", "REMEM_WORKER_LEASE": "1s"}
        subprocess.run([REMEM, "worker", "--burst"], env=env, capture_output=True, timeout=300)
        home.wait_for_leases_to_expire()
    _recover(home)
    assert _integrity(home) == "ok", f"seed {seed}"
    assert _signature(home) == _signature(reference), f"seed {seed}"
    completed = Counter(
        re.findall(
            r" complete completed task (\d+)", (home.path / "logs" / "worker.log").read_text()
        )
    )
    assert completed, f"seed {seed}"
