"""Faults a user will meet: read-only and damaged databases, a full spool, an old schema, a
home owned by someone else, and `remem doctor` telling them what to do."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.db import migrate
from remem.db.engine import make_engine
from remem.db.sqlite import schema_head
from tests.conftest import REMEM, REMEM_HOOK, Home, load_fixture, wait_for


def _event(index: int) -> dict[str, object]:
    return {
        "host": "generic",
        "session_id": "s",
        "cwd": "/p",
        "command": "make test",
        "exit_code": 0,
        "event_id": str(index),
    }


@pytest.fixture
def read_only_db(home: Home) -> Iterator[Path]:
    """The database file made unwritable: immutable when we are root (root ignores modes)."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("root needs chattr to make a file unwritable")
        subprocess.run(["chattr", "+i", str(home.db)], check=True)
    else:
        home.db.chmod(0o444)
    yield home.db
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(home.db)], check=True)
    home.db.chmod(0o600)


def test_unwritable_database_spools_and_status_says_why(home: Home, read_only_db: Path) -> None:
    result = home.hook(_event(1))
    assert (result.returncode, result.stderr) == (0, b"")
    status = json.loads(home.remem("status", "--json").stdout)
    assert status["database_access"] == {"file": str(read_only_db), "writable": False}
    assert status["spool"]["pending"] == 1
    assert "readonly" in status["spool"]["last_reason"]
    text = home.remem("status").stdout
    assert "is not writable" in text and "last spooled because" in text
    burst = home.remem("worker", "--burst", check=False)
    assert burst.returncode == 1
    lines = burst.stderr.strip().splitlines()
    assert len(lines) == 1 and str(read_only_db) in lines[0] and "read-only" in lines[0]


def test_ingest_after_write_access_returns(home: Home, read_only_db: Path) -> None:
    assert home.hook(_event(1)).returncode == 0
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(read_only_db)], check=True)
    read_only_db.chmod(0o600)
    home.remem("spool", "ingest")
    assert home.status()["events"] == 1


def test_full_spool_drops_with_a_counted_visible_reason(home: Home) -> None:
    home.env["REMEM_DATABASE_URL"] = "postgresql://nowhere/remem"  # everything spools
    home.env["REMEM_CAPTURE_SPOOL_MAX_BYTES"] = "4000"
    results = [home.hook(_event(i)) for i in range(12)]
    assert [r.returncode for r in results] == [0] * 12
    assert all(r.stderr == b"" for r in results)
    assert (home.spool / "events.jsonl").stat().st_size <= 4000
    del home.env["REMEM_DATABASE_URL"]
    status = json.loads(home.remem("status", "--json").stdout)
    kept = status["spool"]["pending"]
    assert kept >= 1 and status["spool"]["overflow_dropped"] == 12 - kept
    assert "cap of 4000 bytes" in status["spool"]["overflow_reason"]
    doctor = json.loads(home.remem("doctor", "--json", check=False).stdout)
    assert any(c["name"] == "spool" and c["status"] == "fail" for c in doctor)


def test_damaged_database_is_one_line_naming_the_file(home: Home) -> None:
    home.db.write_bytes(b"this is not a database, it was overwritten by accident" * 100)
    for wal in (home.path / "remem.db-wal", home.path / "remem.db-shm"):
        wal.unlink(missing_ok=True)
    for args in (["status"], ["worker", "--burst"], ["procedures", "list"], ["context"]):
        result = home.remem(*args, check=False)
        assert result.returncode == 1, args
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and str(home.db) in lines[0] and "damaged" in lines[0], lines
        assert "Traceback" not in result.stderr
    hook = home.hook(_event(1))
    assert (hook.returncode, hook.stderr) == (0, b"")
    assert (home.spool / "events.jsonl").exists()


def _downgrade(home: Home, revision: str) -> None:
    engine = make_engine(f"sqlite:///{home.db}")
    try:
        migrate.downgrade(engine, revision)
        assert migrate.current_revision(engine) == revision
    finally:
        engine.dispose()


def test_old_schema_stops_the_worker_and_upgrades_under_a_running_daemon(home: Home) -> None:
    _downgrade(home, "0002")
    hook = home.hook(_event(1))
    assert hook.returncode == 0 and (home.spool / "events.jsonl").exists()
    burst = home.remem("worker", "--burst", check=False)
    assert burst.returncode == 1
    assert "run `remem db upgrade`" in burst.stderr and len(burst.stderr.splitlines()) == 1

    home.remem("db", "upgrade")
    daemon = subprocess.Popen(
        [REMEM, "worker"],
        env=home.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: home.status()["events"] == 1, 30)
        upgrades = [
            subprocess.Popen(
                [REMEM, "db", "upgrade"],
                env=home.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        outputs = [u.communicate(timeout=60) for u in upgrades]
        assert [u.returncode for u in upgrades] == [0, 0, 0], outputs
        assert all(out.strip() == f"Schema at {schema_head()}" for out, _ in outputs)
        assert home.hook(_event(2)).returncode == 0
        home.wait_until_drained(timeout=30)
        assert [task["status"] for task in home.tasks()] == ["done"]
        assert daemon.poll() is None
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
    assert daemon.returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a home to another user needs root")
def test_home_owned_by_another_user_is_refused(home: Home) -> None:
    os.chown(home.path, 65534, 65534)
    try:
        status = home.remem("status", check=False)
        assert status.returncode == 1 and "belongs to another user" in status.stderr
        hook = home.hook(_event(1))
        assert hook.returncode == 1
        assert len(hook.stderr.splitlines()) == 1 and b"another user" in hook.stderr
    finally:
        os.chown(home.path, 0, 0)
    assert home.status()["events"] == 0


def test_files_are_private_on_creation(home: Home, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    env = {**home.env, "REMEM_HOME": str(fresh)}
    subprocess.run([REMEM, "init"], env=env, check=True, capture_output=True)
    env["REMEM_DATABASE_URL"] = "postgresql://nowhere/remem"
    subprocess.run([REMEM_HOOK], input=json.dumps(_event(1)).encode(), env=env, check=True)
    del env["REMEM_DATABASE_URL"]
    subprocess.run([REMEM, "worker", "--burst"], env=env, check=True, capture_output=True)
    modes = {
        path.relative_to(fresh).as_posix(): stat.S_IMODE(path.stat().st_mode)
        for path in fresh.rglob("*")
    }
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
    assert {name: mode for name, mode in modes.items() if mode not in (0o600, 0o700)} == {}
    assert modes["remem.db"] == 0o600 and modes["logs/worker.log"] == 0o600


def test_doctor_on_a_healthy_home_and_on_a_failed_task(home: Home, tmp_path: Path) -> None:
    user = tmp_path / "user-home"
    (user / ".claude").mkdir(parents=True, exist_ok=True)
    settings = {
        "hooks": {
            "PostToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": f"{REMEM_HOOK} --host claude-code"}],
                }
            ]
        }
    }
    (user / ".claude" / "settings.json").write_text(json.dumps(settings))
    env = {**home.env, "HOME": str(user)}
    healthy = subprocess.run([REMEM, "doctor", "--json"], env=env, capture_output=True, text=True)
    checks = {c["name"]: c for c in json.loads(healthy.stdout)}
    assert healthy.returncode == 0, checks
    for name in (
        "home",
        "config",
        "database",
        "schema",
        "tasks",
        "clock",
        "spool",
        "hooks:claude-code",
    ):
        assert checks[name]["status"] == "ok", checks[name]
    # No ~/.codex on this machine: nothing to advise.
    assert (checks["hooks:codex"]["status"], checks["hooks:codex"]["fix"]) == ("ok", "")

    payload = load_fixture("claude-code/post_tool_use_bash_success.json")
    assert home.hook(payload).returncode == 0
    connection = sqlite3.connect(home.db)
    connection.execute("UPDATE extraction_tasks SET status = 'failed', last_error = 'boom'")
    connection.commit()
    connection.close()
    sick = subprocess.run([REMEM, "doctor"], env=env, capture_output=True, text=True)
    assert sick.returncode == 1
    assert "fail  tasks" in sick.stdout and "remem tasks retry ID" in sick.stdout

    (user / ".claude" / "settings.json").write_text(
        json.dumps(settings).replace(REMEM_HOOK, "/gone/bin/remem-hook")
    )
    moved = json.loads(
        subprocess.run([REMEM, "doctor", "--json"], env=env, capture_output=True, text=True).stdout
    )
    assert {c["name"]: c["status"] for c in moved}["hooks:claude-code"] == "fail"


def test_an_empty_spool_is_reported_empty(home: Home) -> None:
    # What a crash or an interrupted write can leave behind: blank lines, a tail of zeros.
    home.spool.mkdir(parents=True, exist_ok=True)
    (home.spool / "events.jsonl").write_bytes(b"\n\n \r\n" + b"\x00" * 64)
    (home.spool / "ingesting-1.jsonl").write_bytes(b"")

    status = json.loads(home.remem("status", "--json").stdout)
    doctor = json.loads(home.remem("doctor", "--json", check=False).stdout)

    assert status["spool"]["pending"] == 0
    assert [(c["status"], c["detail"]) for c in doctor if c["name"] == "spool"] == [("ok", "empty")]
