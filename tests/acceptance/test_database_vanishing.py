"""The database file vanishing under a running `remem worker` daemon (issue 28, item 7): deleted,
moved away or replaced, it is noticed within a tick; the daemon stops writing, logs one error
line naming the file, leaves the spool alone and exits non-zero; the next daemon opens the file
then at the path, and no event the hooks captured meanwhile is lost."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REMEM, Home, wait_for

POLL = "1s"


def _start(home: Home) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [REMEM, "worker"],
        env={**home.env, "REMEM_WORKER_POLL_INTERVAL": POLL},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _running(home: Home, pid: int) -> bool:
    worker = home.status()["worker"]
    return bool(worker["state"] == "running" and worker["pid"] == pid)


def _hook(home: Home, command: str) -> None:
    payload = {"session_id": "s1", "cwd": "/p/shop", "command": command, "exit_code": 0}
    assert home.hook(payload, "--host", "generic").returncode == 0


def _copy(source: Path, target: Path) -> None:
    """A whole copy of a database in use, as a restore from a backup would put in place."""
    with sqlite3.connect(source) as reading, sqlite3.connect(target) as writing:
        reading.backup(writing)
    reading.close()
    writing.close()


def _delete(home: Home) -> None:
    home.db.unlink()


def _move(home: Home) -> None:
    home.db.rename(home.path / "moved.db")


def _replace(home: Home) -> None:
    _copy(home.db, home.path / "restored.db")
    os.replace(home.path / "restored.db", home.db)


def _spooled(home: Home) -> str:
    return "".join(path.read_text() for path in sorted(home.spool.glob("*.jsonl")))


@pytest.mark.parametrize(
    ("vanish", "change"),
    [(_delete, "deleted or moved away"), (_move, "deleted or moved away"),
     (_replace, "replaced by another file")],
    ids=["deleted", "moved", "replaced"],
)  # fmt: skip
def test_the_daemon_stops_without_writing_and_the_next_opens_the_file_at_the_path(
    home: Home, vanish: Callable[[Home], None], change: str
) -> None:
    _hook(home, "make before")
    daemon = _start(home)
    try:
        wait_for(lambda: _running(home, daemon.pid), timeout=20)
        home.wait_until_drained()
        vanish(home)
        _hook(home, "make meanwhile")
        wait_for(lambda: daemon.poll() is not None, timeout=15)
    finally:
        if daemon.poll() is None:
            daemon.kill()
    _out, err = daemon.communicate()
    assert daemon.returncode == 1, err
    assert err == (
        f"remem: The database file {home.db} was {change} while the worker ran: it stopped "
        "without writing to it, and the spool keeps what the hooks captured meanwhile. Start "
        "the worker again to open the file now at that path.\n"
    )
    log = (home.path / "logs" / "worker.log").read_text().splitlines()
    (line,) = [line for line in log if " database_vanished " in line]
    assert " ERROR database_vanished " in line and str(home.db) in line and change in line
    assert "Traceback" not in "\n".join(log)

    if change == "replaced by another file":
        assert not home.spool.exists() or "make meanwhile" not in _spooled(home)
    else:  # no file at the path: the hook spooled the event, and the daemon left it there
        assert "make meanwhile" in _spooled(home)
        assert not home.db.exists()  # the daemon did not create an empty one
        if vanish is _move:
            (home.path / "moved.db").rename(home.db)
        else:  # a new database at the path
            home.remem("init", "--no-hooks")

    after = _start(home)
    try:
        wait_for(lambda: _running(home, after.pid), timeout=20)
        # The spool is read back by one of the daemon's duties, which may run after a first
        # look at an empty queue: wait for the event itself.
        wait_for(lambda: "make meanwhile" in {e["command"] for e in home.events()}, timeout=30)
        home.wait_until_drained()
    finally:
        after.terminate()
        assert after.wait(timeout=15) == 0
