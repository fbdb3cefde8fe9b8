"""The worker's WAL checkpoints, on a thread of their own.

SQLite moves the WAL into the database file when a commit finds the WAL over 1,000 pages, and
that commit does the copying and the file syncs before it returns: one window in a few dozen
held its write lock for that long (the worst 1% of windows, twice the others), and a burst spent
a tenth of its time there. The worker's connections therefore never checkpoint: after each of
its commits it nudges a Checkpointer, whose thread runs a PASSIVE checkpoint on a connection of
its own, at most a few times a second. PASSIVE takes no lock a writer waits for, and SQLite
leaves the interpreter's lock while it copies, so the worker goes on with its next window on
the other core. Hooks keep SQLite's own checkpoints, which the WAL no longer reaches while the
worker runs. (Without this thread the write lock's p99 with hooks firing was 21.6 ms in
bench/scale.py, over its 20 ms target; with it, 12.1 ms.) The thread shares nothing with the
worker loop but the nudge: it checkpoints on a connection of its own.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import Any

from sqlalchemy import Engine, event

from remem.db import sqlite as sqlite_settings
from remem.paths import sqlite_path

log = logging.getLogger("remem.worker")
# Between two checkpoints: the WAL gathers what the worker wrote meanwhile (a few MB at most).
MIN_INTERVAL_S = 0.25
# A thread with nothing to do ends; the next nudge starts another.
IDLE_EXIT_S = 5.0
# A checkpoint that could not move every frame is tried again this many times.
RETRIES = 3
# A final checkpoint waits at most this long for the one in progress.
FLUSH_TIMEOUT_S = 30.0


def _no_automatic_checkpoints(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    dbapi_connection.execute("PRAGMA wal_autocheckpoint = 0")


class Checkpointer:
    """Checkpoints of one SQLite database, run on a thread when nudged."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.checkpoints = 0  # checkpoints that moved frames into the file
        self._lock = threading.Lock()
        self._wanted = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_engine(cls, engine: Engine) -> Checkpointer | None:
        """A checkpointer for an SQLite engine, whose connections stop checkpointing on commit
        from their next checkout; None for another database."""
        path = sqlite_path(engine.url.render_as_string(hide_password=False))
        if path is None:
            return None
        if not event.contains(engine, "checkout", _no_automatic_checkpoints):
            event.listen(engine, "checkout", _no_automatic_checkpoints)
        checkpointer = cls(path)
        # Fired as a transaction commits, on any of the engine's connections: the thread runs
        # after it, never sooner than MIN_INTERVAL_S after its previous checkpoint.
        event.listen(engine, "commit", checkpointer._on_commit)
        return checkpointer

    def _on_commit(self, _connection: Any) -> None:
        self.nudge()

    def nudge(self) -> None:
        """Ask for a checkpoint soon; returns at once."""
        with self._lock:
            self._wanted.set()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="remem-checkpoints", daemon=True
                )
                self._thread.start()

    def flush(self) -> None:
        """Checkpoint now, once the thread's checkpoint in progress is done: what the worker
        wrote is in the database file when this returns (unless a reader holds part of it)."""
        with self._lock:
            self._closing.set()
            self._wanted.set()  # wakes a thread waiting for work
            thread = self._thread
        if thread is not None:
            thread.join(FLUSH_TIMEOUT_S)
        self._checkpoint()
        self._wanted.clear()
        self._closing.clear()

    def _run(self) -> None:
        retries = 0
        while True:
            woken = self._wanted.wait(IDLE_EXIT_S)
            if not woken:
                with self._lock:
                    if not self._wanted.is_set():
                        self._thread = None
                        return
            # Nudged as a transaction commits: its frames are in the WAL after this wait, and
            # the commits that follow meanwhile share one checkpoint.
            if self._closing.wait(MIN_INTERVAL_S):
                return
            self._wanted.clear()
            if self._checkpoint():
                retries = 0
            elif retries < RETRIES:
                # A commit still in progress, or a reader on the frames: try again.
                retries += 1
                self._wanted.set()

    def _checkpoint(self) -> bool:
        """One PASSIVE checkpoint; whether it moved every frame of the WAL."""
        try:
            connection = sqlite_settings.connect(self.path)
            try:
                _busy, frames, moved = connection.execute(
                    "PRAGMA wal_checkpoint(PASSIVE)"
                ).fetchone()
            finally:
                connection.close()
        except sqlite3.Error as error:  # the next nudge tries again; hooks still checkpoint
            log.warning("could not checkpoint the WAL: %s", error, extra={"action": "checkpoint"})
            return False
        if moved > 0:
            self.checkpoints += 1
        return bool(moved >= frames)
