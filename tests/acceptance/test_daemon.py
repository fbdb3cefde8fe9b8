"""`remem worker` as a real daemon process: promotion, signals, crashes, one per database."""

from __future__ import annotations

import json
import os
import plistlib
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REMEM, Home, contract_time, wait_for

HARNESS = str(Path(__file__).with_name("daemon_harness.py"))


def _start(home: Home, *, harness: bool = False, **env: str) -> subprocess.Popen[str]:
    command = [sys.executable, HARNESS, "worker"] if harness else [REMEM, "worker"]
    return subprocess.Popen(
        command, env={**home.env, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _running(home: Home) -> bool:
    return home.status()["worker"]["state"] == "running"


def _no_heartbeat(home: Home) -> bool:
    """`remem status` counts every heartbeat row left, dead or alive, as a worker."""
    worker = home.status()["worker"]
    return (worker["state"], worker["workers"]) == ("not running", 0)


def _task(home: Home, task_id: int) -> dict[str, Any]:
    (task,) = [t for t in home.tasks() if t["id"] == task_id]
    return task


def _generic(
    session: str, command: str = "make test", exit_code: int = 0, **extra: Any
) -> dict[str, Any]:
    return {
        "host": "generic",
        "session_id": session,
        "cwd": "/p/shop",
        "branch": "main",
        "command": command,
        "exit_code": exit_code,
        **extra,
    }


def _stop(process: subprocess.Popen[str], timeout: float = 15) -> tuple[int, str, str]:
    process.send_signal(signal.SIGTERM)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"the daemon ignored SIGTERM for {timeout}s: {err}") from None
    return process.returncode, out, err


def test_daemon_promotes_within_three_poll_intervals(home: Home) -> None:
    daemon = _start(home, REMEM_WORKER_POLL_INTERVAL="1s")
    try:
        wait_for(lambda: _running(home), timeout=20)
        for session in ("a", "b"):
            assert home.hook(_generic(session)).returncode == 0
        posted = time.monotonic()
        wait_for(home.procedures, timeout=3.0)
        assert time.monotonic() - posted <= 3.0
        status = home.status()
        assert status["worker"]["pid"] == daemon.pid
        assert status["worker"]["heartbeat_age_s"] < 15
        assert status["procedures"]["active"] == 1
    finally:
        code, _out, err = _stop(daemon)
    assert code == 0, err
    assert _no_heartbeat(home)
    log = (home.path / "logs" / "worker.log").read_text()
    for action in ("worker_start", "claim_next", "complete", "promote_procedure", "worker_stop"):
        assert f" {action} " in log


def test_a_second_daemon_refuses_to_start(home: Home) -> None:
    first = _start(home)
    try:
        wait_for(lambda: _running(home), timeout=20)
        second = home.remem("worker", check=False, timeout=30)
        assert second.returncode == 3  # `make run` tells it from a failure
        assert second.stderr.strip() == (
            f"remem: remem worker already running (pid {first.pid}): nothing to start; "
            "`remem status` shows it"
        )
    finally:
        assert _stop(first)[0] == 0


def _post_two_runs(home: Home) -> None:
    for session in ("a", "b"):
        assert home.hook(_generic(session)).returncode == 0


@pytest.mark.parametrize(
    ("slow_apply", "shutdown_timeout", "finished"),
    [("1", "5s", True), ("sql", "1s", False)],
    ids=["finishes-in-time", "too-slow-released"],
)
def test_sigterm_during_a_task(
    home: Home, slow_apply: str, shutdown_timeout: str, finished: bool
) -> None:
    """Within the shutdown timeout the task in hand completes; past it, its statement is
    interrupted, its transaction rolled back and the task released: never half-written."""
    marker = home.path / "applying"
    _post_two_runs(home)
    daemon = _start(
        home,
        harness=True,
        REMEM_TEST_SLOW_APPLY_S=slow_apply,
        REMEM_TEST_MARKER=str(marker),
        REMEM_WORKER_SHUTDOWN_TIMEOUT=shutdown_timeout,
    )
    wait_for(marker.exists, timeout=20)
    started = time.monotonic()
    code, _out, err = _stop(daemon)
    assert code == 0, err
    assert time.monotonic() - started < 5
    first = _task(home, 1)
    assert (first["lease_owner"], first["lease_expires_at"]) == (None, None)
    if finished:
        assert first["status"] == "done"
        assert first["cursor_event_id"] == first["high_watermark_event_id"]
        # The second session's run alone is one verified run: a procedure of two shows that the
        # first task's verified run was committed with it.
        home.remem("worker", "--burst")
        (procedure,) = home.procedures()
        assert procedure["verified_runs"] == 2
        assert first["high_watermark_event_id"] in procedure["evidence_event_ids"]
    else:
        assert (first["status"], first["cursor_event_id"]) == ("pending", 0)
        assert home.procedures() == []
        # A verified run has no output of its own until a procedure cites it: a row left by a
        # transaction that should have been rolled back would show nowhere.
        assert home.scalar("SELECT count(*) FROM verifications") == 0


def test_a_stop_during_start_up_is_not_lost(home: Home) -> None:
    marker = home.path / "starting"
    _post_two_runs(home)
    daemon = _start(home, harness=True, REMEM_TEST_START_PAUSE_S="1", REMEM_TEST_MARKER=str(marker))
    wait_for(marker.exists, timeout=20)
    code, _out, err = _stop(daemon)
    assert code == 0, err
    assert [t["status"] for t in home.tasks()] == ["pending", "pending"]
    assert _no_heartbeat(home)


COMPARED = (
    "scope", "branch", "directory", "workflow", "workflow_hash", "command", "variants",
    "branches", "status", "confidence", "verified_runs", "distinct_sessions",
    "evidence_event_ids", "files", "files_more",
)  # fmt: skip


def _procedures(home: Home) -> list[str]:
    """Every procedure as `remem procedures list --all --json` gives it, without its id."""
    return sorted(json.dumps([p[name] for name in COMPARED]) for p in home.procedures())


def _stream(home: Home, payloads: list[dict[str, Any]], failures: list[int]) -> None:
    def send(chunk: list[dict[str, Any]]) -> None:
        for payload in chunk:
            code = home.hook(payload).returncode
            if code:
                failures.append(code)

    threads = [threading.Thread(target=send, args=(payloads[i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_sigkill_mid_stream_then_restart_gives_the_never_killed_result(home: Home) -> None:
    seed = random.randrange(1 << 30)
    chooser = random.Random(seed)
    commands = ["make test", "npm run lint", "cargo build", "pytest -q", "go vet ./..."]
    payloads = [
        _generic(f"s{i % 25}", commands[i % 5], 0 if chooser.random() > 0.2 else 1, event_id=str(i))
        for i in range(500)
    ]
    env = {"REMEM_WORKER_POLL_INTERVAL": "200ms", "REMEM_WORKER_LEASE": "2s"}
    daemon = _start(home, **env)
    wait_for(lambda: _running(home), timeout=20)
    failures: list[int] = []
    stream = threading.Thread(target=_stream, args=(home, payloads, failures))
    stream.start()
    crash_after = chooser.randint(20, 400)  # the random moment of the crash, in events
    wait_for(lambda: home.status()["events"] >= crash_after, 120)
    daemon.kill()
    daemon.wait(timeout=10)
    stream.join(timeout=300)
    assert failures == [], f"seed {seed}"
    home.wait_for_leases_to_expire()

    restarted = _start(home, **env)
    try:
        home.wait_until_drained(timeout=60)
    finally:
        assert _stop(restarted)[0] == 0
    assert home.status()["events"] == 500

    reference = Home(home.path.parent / "reference")
    shutil.copytree(home.path, reference.path)
    derived = ("procedures", "procedure_evidence", "group_sessions", "group_states")
    for table in (*derived, "verifications", "attempts", "unverified_runs"):
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"import sqlite3; c = sqlite3.connect('{reference.db}');"
                f"c.execute('DELETE FROM {table}'); c.execute(\"UPDATE extraction_tasks SET "
                "status = 'pending', cursor_event_id = 0\"); c.commit()",
            ],
            check=True,
        )
    reference.remem("worker", "--burst")
    assert _procedures(home) == _procedures(reference), f"seed {seed}"
    assert len(_procedures(home)) == 5


def test_burst_beside_a_running_daemon_completes_each_task_once(home: Home) -> None:
    for index in range(300):
        assert home.hook(_generic(f"s{index}", event_id=str(index))).returncode == 0
    daemon = _start(home, REMEM_WORKER_POLL_INTERVAL="200ms")
    try:
        burst = home.remem("worker", "--burst", "--json", timeout=120)
        home.wait_until_drained(timeout=60)
    finally:
        assert _stop(daemon)[0] == 0
    log = (home.path / "logs" / "worker.log").read_text()
    completed = Counter(re.findall(r" complete completed task (\d+)", log))
    assert len(completed) == 300 and set(completed.values()) == {1}
    summary = json.loads(burst.stdout)
    assert summary["daemon_pids"] in ([], [daemon.pid])


def test_service_install_writes_units_for_this_interpreter_and_home(
    home: Home, tmp_path: Path
) -> None:
    env = {**home.env, "HOME": str(tmp_path / "user")}
    out = subprocess.run(
        [REMEM, "service", "install", "--systemd"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    unit = tmp_path / "user" / ".config" / "systemd" / "user" / "remem-worker.service"
    text = unit.read_text()
    assert f"ExecStart={sys.executable} -m remem worker" in text
    assert f'Environment="REMEM_HOME={home.path}"' in text
    assert "Restart=on-failure" in text
    assert "systemctl --user enable --now remem-worker.service" in out
    if shutil.which("systemd-analyze"):
        verify = subprocess.run(
            ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True
        )
        assert verify.returncode == 0, verify.stderr

    subprocess.run(
        [REMEM, "service", "install", "--launchd"], env=env, check=True, capture_output=True
    )
    plist = plistlib.loads(
        (tmp_path / "user" / "Library" / "LaunchAgents" / "dev.remem.worker.plist").read_bytes()
    )
    assert plist["ProgramArguments"] == [sys.executable, "-m", "remem", "worker"]
    assert plist["EnvironmentVariables"] == {"REMEM_HOME": str(home.path)}

    cron = subprocess.run(
        [REMEM, "service", "cron"], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert cron.startswith("*/10 * * * * ") and "worker --burst >> " in cron

    removed = subprocess.run(
        [REMEM, "service", "uninstall", "--systemd"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Removed" in removed and not unit.exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_idle_daemon_stops_on_either_signal(home: Home, signum: int) -> None:
    daemon = _start(home)
    wait_for(lambda: _running(home), timeout=20)
    daemon.send_signal(signum)
    assert daemon.wait(timeout=15) == 0
    assert os.path.exists(home.path / "remem.db.lock")


def test_a_second_sigint_exits_at_once_and_the_lease_is_reaped_later(home: Home) -> None:
    marker = home.path / "applying"
    _post_two_runs(home)
    daemon = _start(
        home,
        harness=True,
        REMEM_TEST_SLOW_APPLY_S="sql",
        REMEM_TEST_MARKER=str(marker),
        REMEM_WORKER_SHUTDOWN_TIMEOUT="60s",
        REMEM_WORKER_LEASE="2s",
    )
    wait_for(marker.exists, timeout=20)
    daemon.send_signal(signal.SIGINT)
    wait_for(lambda: " worker_stopping " in (home.path / "logs" / "worker.log").read_text(), 10)
    daemon.send_signal(signal.SIGINT)
    assert daemon.wait(timeout=5) == 130
    first = _task(home, 1)
    assert (first["status"], first["cursor_event_id"]) == ("processing", 0)
    # Rolled back; no output shows a verified run that no procedure cites.
    assert home.scalar("SELECT count(*) FROM verifications") == 0
    home.wait_for_leases_to_expire()  # before that, nobody may take the abandoned task
    home.remem("worker", "--burst")
    assert [t["status"] for t in home.tasks()] == ["done", "done"]
    assert len(home.procedures()) == 1


def test_a_long_task_keeps_its_lease_so_a_burst_beside_it_does_not_take_it(home: Home) -> None:
    marker = home.path / "preparing"
    _post_two_runs(home)
    daemon = _start(
        home,
        harness=True,
        REMEM_TEST_SLOW_PREPARE_S="4",
        REMEM_TEST_MARKER=str(marker),
        REMEM_WORKER_LEASE="1500ms",
    )
    try:
        wait_for(marker.exists, timeout=20)
        # The point is to outlive the 1.5 s lease the task was claimed with.
        wait_for(lambda: time.time() - marker.stat().st_mtime > 2.5, timeout=20)
        # Past the 1.5 s lease the task was claimed with: only renewal keeps it ours.
        now = time.time()
        held = [t for t in home.tasks() if t["status"] == "processing"]
        # Written to the second, floored: the lease's end lies in a second not yet over. The
        # burst beside it then proves it held: it reaps no lease.
        assert held and contract_time(held[0]["lease_expires_at"]) + 1 > now
        burst = json.loads(home.remem("worker", "--burst", "--json").stdout)
        assert burst["leases_reaped"] == 0
        home.wait_until_drained(timeout=30)
    finally:
        assert _stop(daemon)[0] == 0
    log = (home.path / "logs" / "worker.log").read_text()
    completed = Counter(re.findall(r" complete completed task (\d+)", log))
    assert completed == Counter({"1": 1, "2": 1})


def systemd_environment(unit: str) -> dict[str, str]:
    """The Environment= assignments as systemd reads them: one double-quoted word each, its C
    escapes undone, then its specifiers (only `%%` is expected: any other would expand)."""
    found = {}
    for line in unit.splitlines():
        if not line.startswith("Environment="):
            continue
        word = line.removeprefix("Environment=")
        assert re.fullmatch(r'"(?:[^"\\]|\\.)*"', word), line
        text = word[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        assert re.fullmatch(r"(?:[^%]|%%)*", text), line
        name, _, value = text.replace("%%", "%").partition("=")
        found[name] = value
    return found


def cron_command(line: str) -> str:
    """What cron hands the shell: the command field up to an unescaped `%`, `\\%` read as `%`."""
    command = line.split(" ", 5)[5]
    return re.split(r"(?<!\\)%", command)[0].replace("\\%", "%")


def test_service_files_carry_a_home_path_of_any_characters(
    template_home: Path, tmp_path: Path
) -> None:
    path = tmp_path / """remem home 100% "quoted" 'single' $HOME \\back`tick`"""
    shutil.copytree(template_home, path)
    home = Home(path)
    env = {**home.env, "HOME": str(tmp_path / "user")}
    agents = tmp_path / "user" / "Library" / "LaunchAgents"

    for kind in ("--systemd", "--launchd"):
        subprocess.run(
            [REMEM, "service", "install", kind], env=env, check=True, capture_output=True
        )
    unit = tmp_path / "user" / ".config" / "systemd" / "user" / "remem-worker.service"
    cron = subprocess.run(
        [REMEM, "service", "cron"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()

    assert systemd_environment(unit.read_text()) == {"REMEM_HOME": str(path)}
    if shutil.which("systemd-analyze"):
        verify = subprocess.run(
            ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True
        )
        assert str(unit) not in verify.stderr, verify.stderr
    plist = plistlib.loads((agents / "dev.remem.worker.plist").read_bytes())
    assert plist["EnvironmentVariables"] == {"REMEM_HOME": str(path)}
    worker = f"{sys.executable} -m remem worker --burst"
    (path / "logs").mkdir(exist_ok=True)
    shell = cron_command(cron).replace(worker, "printenv REMEM_HOME")
    assert subprocess.run(["sh", "-c", shell]).returncode == 0
    assert (path / "logs" / "cron.log").read_text() == f"{path}\n"
