"""Preparing windows ahead, in a second process, while a burst applies the one before.

A window's prepare (read its events, analyse its commands, read its groups) only reads, and is
about a third of the work; apply holds the write lock for the rest. A burst with a long
backlog starts `python -P -m workers.preparer`, which prepares the next claimed tasks on the other
core while this process applies. A window prepared before the previous one committed may have
read a group that window moved: when a window applied since it was handed over wrote one of
its groups (or may have), this process checks the groups' versions before it takes the write
lock and reads the window again (promote.catch_up), so the result is the one a serial burst
gives. A backlog whose windows keep colliding so is prepared here again (WATCHED).

The two processes speak in pickles over the child's stdin and stdout: the settings, then one
task at a time; back come "ready", then one reply per task, in order, with the log records
the child made meanwhile, which this process logs (and so redacts) as its own. A task the
child cannot prepare, or a child that stops, costs nothing but time: this process prepares
the window itself, and its errors take the usual road.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import subprocess
import sys
from collections import deque
from typing import IO, Any

from remem.config import Settings
from remem.faults import crash_point
from remem.queue.store import ClaimedTask

log = logging.getLogger("remem.worker")

# Tasks handed to the child and not yet taken back: one it prepares while this process applies
# the window before, one ready for when that window commits.
AHEAD = 2
_READY, _PREPARED, _FAILED = "ready", "prepared", "failed"
# The child's scheduling priority, below the processes it works for.
NICENESS = 10
# A window another one moved after the child prepared it is read again here (its groups'
# versions tell): the child's work on it is lost. When more than half of the last WATCHED
# windows were, the backlog's windows collide (one busy project), and the child is handed no
# more: this process prepares them in turn, and the child's core is left to the hooks.
WATCHED = 8


class Preparer:
    """The parent's side: starts the child, hands it tasks in claim order, takes their windows
    back in that order."""

    def __init__(self, process: subprocess.Popen[bytes], kinds: frozenset[str]) -> None:
        self.process = process
        self.kinds = kinds  # task kinds whose handler the child has
        self.sent: deque[ClaimedTask] = deque()
        self.ready = False
        self.running = True
        # Task id -> what each window applied after the task was handed over had prepared
        # (None: prepared by this process), for its catch-up.
        self.since: dict[int, list[Any]] = {}
        self.read_again: deque[bool] = deque(maxlen=WATCHED)  # of the windows taken last
        self.repays = True

    @classmethod
    def start(cls, database_url: str, settings: Settings, kinds: frozenset[str]) -> Preparer | None:
        try:
            process = subprocess.Popen(
                # -P: the current directory, which may hold a `workers` of its own, is not on
                # the child's path.
                [sys.executable, "-P", "-m", "workers.preparer"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Its errors come back as replies; a traceback on stderr could quote an event.
                stderr=subprocess.DEVNULL,
            )
        except OSError as exc:
            log.warning(
                "could not start a process to prepare windows ahead (%s); preparing them here",
                exc,
                extra={"action": "prepare_ahead"},
            )
            return None
        preparer = cls(process, kinds)
        preparer._send((database_url, settings))
        return preparer

    def is_ready(self) -> bool:
        """Whether the child has started (it is not waited for: a burst goes on meanwhile)."""
        if self.running and not self.ready:
            self.ready = self._poll_ready()
        return self.running and self.ready

    @property
    def handing(self) -> bool:
        """Whether the next tasks claimed are handed over."""
        return self.running and self.repays

    def applied(self, prepared: Any, read_again: bool) -> None:
        """A task taken back was processed, with the window prepared ahead (None when this
        process prepared it), which was applied as it came or read again first."""
        for waiting in self.sent:
            self.since[waiting.id].append(prepared)
        if prepared is None:
            return
        self.read_again.append(read_again)
        if self.repays and len(self.read_again) == WATCHED and sum(self.read_again) > WATCHED / 2:
            self.repays = False
            log.info(
                "%s of the last %s windows prepared ahead were read again: preparing the next "
                "ones here",
                sum(self.read_again),
                WATCHED,
                extra={"action": "prepare_ahead"},
            )

    def hand(self, task: ClaimedTask) -> None:
        """Hand over the next task claimed. One whose kind the child has no handler for is
        handed over too, to keep the order, and comes back unprepared."""
        self.sent.append(task)  # held from here, so that close() gives it back whatever happens
        self.since[task.id] = []
        self._send((task, task.kind in self.kinds))

    def take(self) -> tuple[ClaimedTask, Any, list[Any]]:
        """The oldest task handed over, with its window (None when the child could not prepare
        it: this process prepares it then), and what the windows applied since it was handed
        over had prepared (`applied`)."""
        task = self.sent[0]
        reply = self._receive()
        self.sent.popleft()
        since = self.since.pop(task.id)
        if reply is None:
            return task, None, since
        try:
            kind, task_id, prepared, records = reply
            for record in records:
                logging.getLogger(record["name"]).handle(logging.makeLogRecord(record))
        except Exception as exc:  # a reply of another shape: the child is not this code's
            self._stop(f"its reply could not be read ({type(exc).__name__})")
            return task, None, since
        if task_id != task.id:
            self._stop(f"it answered for task {task_id} when task {task.id} was next")
            return task, None, since
        return task, prepared if kind == _PREPARED else None, since

    def close(self) -> list[ClaimedTask]:
        """Stop the child; the tasks it still held, which the caller releases. Both pipes are
        closed first: a child blocked writing a reply no one will read stops at once."""
        left = list(self.sent)
        self.sent.clear()
        self.since.clear()
        self.running = False
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # a child gone already has closed its end
                    pipe.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return left

    def _poll_ready(self) -> bool:
        stdout = self.process.stdout
        assert stdout is not None
        readable, _w, _x = select.select([stdout], [], [], 0)
        if not readable:
            return False
        reply = self._receive()
        return reply is not None and reply[0] == _READY

    def _send(self, message: Any) -> None:
        if not self.running:
            return
        stdin = self.process.stdin
        assert stdin is not None
        try:
            pickle.dump(message, stdin, protocol=pickle.HIGHEST_PROTOCOL)
            stdin.flush()
        except OSError as exc:
            self._stop(f"writing to it failed: {exc}")

    def _receive(self) -> Any:
        if not self.running:
            return None
        stdout = self.process.stdout
        assert stdout is not None
        try:
            return pickle.load(stdout)
        except Exception as exc:  # gone, or a reply this code cannot read: prepare here
            self._stop(f"it stopped ({type(exc).__name__}, exit code {self.process.poll()})")
            return None

    def _stop(self, why: str) -> None:
        if self.running:
            log.warning(
                "the process preparing windows ahead is no longer used: %s; preparing them here",
                why,
                extra={"action": "prepare_ahead"},
            )
        self.running = False


class _Records(logging.Handler):
    """The child's log records, kept until its next reply carries them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        fields = dict(record.__dict__)
        fields["msg"], fields["args"] = record.getMessage(), None
        if record.exc_info:
            fields["exc_text"] = logging.Formatter().formatException(record.exc_info)
        fields["exc_info"] = None
        self.records.append(fields)

    def take(self) -> list[dict[str, Any]]:
        records, self.records = self.records, []
        return records


def main(stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> None:
    """The child: prepare each task read, reply in order, stop at the end of input."""
    from remem.db.engine import make_engine
    from workers.handlers import default_handlers

    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    # Work ahead is the one to wait when the cores are busy: not the burst writing under the
    # lock, nor the hooks of agents running meanwhile.
    with contextlib.suppress(AttributeError, OSError):
        os.nice(NICENESS)
    records = _Records()
    root = logging.getLogger("remem")
    root.handlers[:] = [records]
    root.setLevel(logging.INFO)
    root.propagate = False

    def reply(message: Any) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)  # whole, or not at all
        stdout.write(data)
        stdout.flush()

    database_url, settings = pickle.load(stdin)
    engine = make_engine(database_url)
    handlers = default_handlers()
    reply((_READY, None, None, []))
    try:
        while True:
            try:
                task, wanted = pickle.load(stdin)
            except EOFError:
                return
            crash_point("prepare_ahead")
            handler = handlers.get(task.kind)
            try:
                if handler is None or not wanted:
                    raise LookupError(f"not preparing task kind {task.kind!r} here")
                reply((_PREPARED, task.id, handler.prepare(engine, task, settings), records.take()))
            except Exception:  # the parent prepares it again, and its error takes the usual road
                reply((_FAILED, task.id, None, []))
    finally:
        engine.dispose()


if __name__ == "__main__":
    main()
