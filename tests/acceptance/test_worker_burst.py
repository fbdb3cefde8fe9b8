"""`remem worker --burst` as real processes: exactly once under concurrency, summaries, demo."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path

from remem.capture.hosts import build_event
from remem.capture.store import store_event
from tests.conftest import REMEM, Home

COMMANDS = ["make test", "npm run lint", "cargo build", "pytest -q", "go vet ./..."]


def _fill(home: Home, sessions: int) -> None:
    """`sessions` sessions, each running one command twice; some fail first."""
    connection = sqlite3.connect(home.db, isolation_level=None)
    execute = lambda sql, params: connection.execute(sql, params).fetchall()  # noqa: E731
    connection.execute("BEGIN IMMEDIATE")
    now = time.time() - 3600
    for index in range(sessions):
        command = COMMANDS[index % len(COMMANDS)]
        exit_codes = (1, 0, 0) if index % 7 == 0 else (0, 0)
        for run, exit_code in enumerate(exit_codes):
            payload = {
                "host": "generic",
                "session_id": f"s{index}",
                "cwd": f"/p/{index % 20}",
                "command": command,
                "exit_code": exit_code,
                "branch": "main",
                "timestamp": now + index + run / 10,
                "event_id": f"{index}-{run}",
            }
            event = build_event(payload, "generic", now, lambda cwd: (cwd, None, cwd, "."))
            store_event(execute, event)
    connection.execute("COMMIT")
    connection.close()


COMPARED = (
    "project", "scope", "branch", "directory", "workflow", "workflow_hash", "command",
    "variants", "branches", "status", "confidence", "verified_runs", "distinct_sessions",
    "evidence_event_ids", "files", "files_more", "topic_key", "body",
)  # fmt: skip


def _procedures(home: Home) -> list[str]:
    """Every procedure as `remem procedures list --all --json` gives it, without its id."""
    return sorted(json.dumps([p[name] for name in COMPARED]) for p in home.procedures())


def test_four_concurrent_bursts_complete_each_task_exactly_once(home: Home, tmp_path: Path) -> None:
    _fill(home, 2000)
    assert home.status()["tasks"]["pending"] == 2000
    serial = Home(tmp_path / "serial")
    shutil.copytree(home.path, serial.path)

    workers = [
        subprocess.Popen(
            [REMEM, "worker", "--burst", "-v", "--json"],
            env=home.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [w.communicate(timeout=600) for w in workers]
    assert [w.returncode for w in workers] == [0, 0, 0, 0], results
    summaries = [json.loads(out) for out, _err in results]
    assert sum(s["tasks_done"] for s in summaries) == 2000
    assert sum(s["leases_lost"] for s in summaries) == 0
    assert home.status()["tasks"] == {"pending": 0, "processing": 0, "done": 2000, "failed": 0}
    log = (home.path / "logs" / "worker.log").read_text()
    completed = Counter(re.findall(r" complete completed task (\d+)", log))
    assert len(completed) == 2000 and set(completed.values()) == {1}
    # Every successful run verified once: each procedure's runs (all fresh, of one step) are
    # as many as recall counts successes of its command in its project.
    passed = {(hit["project"], hit["command"]): hit["evidence"] for hit in home.command_hits()}
    verified = {(p["project"], p["command"]): p["verified_runs"] for p in home.procedures()}
    assert verified == passed

    single = subprocess.run(
        [REMEM, "worker", "--burst", "--json"],
        env=serial.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert single.returncode == 0, single.stderr
    assert json.loads(single.stdout)["tasks_done"] == 2000
    concurrent = _procedures(home)
    assert len(concurrent) == 20 and concurrent == _procedures(serial)


def test_burst_prints_a_summary_and_exits_1_when_a_task_failed(home: Home) -> None:
    _fill(home, 3)
    connection = sqlite3.connect(home.db, isolation_level=None)
    connection.execute("UPDATE extraction_tasks SET kind = 'mystery' WHERE id = 1")
    connection.close()
    result = home.remem("worker", "--burst", check=False)
    assert result.returncode == 1
    assert result.stdout.startswith("Tasks: 2 done, 0 retried, 1 failed.")
    failed = json.loads(home.remem("tasks", "--status", "failed", "--json").stdout)
    assert [t["id"] for t in failed] == [1]


def test_procedures_list_and_show_as_json(home: Home) -> None:
    _fill(home, 10)
    home.remem("worker", "--burst")
    listed = json.loads(home.remem("procedures", "list", "--json").stdout)
    assert len(listed) == 10  # ten sessions in ten projects, each ran its command twice
    required = {
        "id",
        "project",
        "scope",
        "branch",
        "branches",
        "directory",
        "workflow",
        "command",
        "variants",
        "status",
        "confidence",
        "verified_runs",
        "distinct_sessions",
        "evidence_event_ids",
        "files",
        "files_more",
        "first_verified_at",
        "last_verified_at",
        "topic_key",
    }
    assert all(required <= set(p) for p in listed)
    for procedure in listed:  # one command per project and branch: a workflow of one step
        assert (procedure["scope"], procedure["branch"], procedure["branches"]) == (
            "branch",
            "main",
            ["main"],
        )
        assert (procedure["directory"], procedure["workflow"]) == (".", procedure["command"])
        index = int(procedure["project"].rsplit("/", 1)[1])
        runs = 3 if index % 7 == 0 else 2  # every run of the variant, the failed one too
        expected = {"command": procedure["command"], "runs": runs, "verified": 2}
        assert procedure["variants"] == [expected]
    assert all(p["last_verified_at"].endswith("Z") for p in listed)
    assert [p["confidence"] for p in listed] == sorted(
        (p["confidence"] for p in listed), reverse=True
    )
    first = listed[0]
    shown = json.loads(home.remem("procedures", "show", str(first["id"]), "--json").stdout)
    # Newest first; the list's ids are the same runs in id order.
    assert [run["event_id"] for run in shown["evidence"]] == first["evidence_event_ids"][::-1]
    assert (shown["unverified_runs"], shown["same_errors_elsewhere"]) == (0, [])
    filtered = json.loads(
        home.remem(
            "procedures", "list", "--project", first["project"], "--branch", "main", "--json"
        ).stdout
    )
    assert {p["project"] for p in filtered} == {first["project"]}

    home.remem("procedures", "archive", str(first["id"]))
    active = json.loads(home.remem("procedures", "list", "--json").stdout)
    assert first["id"] not in [p["id"] for p in active]
    everything = json.loads(home.remem("procedures", "list", "--all", "--json").stdout)
    assert {p["status"] for p in everything} == {"active", "archived"}
    status = json.loads(home.remem("status", "--json").stdout)
    assert status["procedures"]["archived"] == 1
    assert status["tasks"]["done"] == 10
    missing = home.remem("procedures", "show", "999", check=False)
    assert missing.returncode == 1 and "remem procedures list --all" in missing.stderr


def test_demo_promotes_the_cart_test(home: Home) -> None:
    result = home.remem("demo")
    assert "1 promoted" in result.stdout
    assert "python -m pytest -q tests/test_cart.py" in result.stdout
    assert "confidence 0.86" in result.stdout
    assert "Files edited before it passed: src/cart.py." in result.stdout
