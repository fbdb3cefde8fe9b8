"""The append-only spool: where an event goes when the database cannot take it.

Writers append one JSON line under an exclusive flock on `spool/events.jsonl`. Ingestion takes
the same lock, renames the file to `ingesting-*.jsonl` (new writers then start a fresh file),
and stores what it holds idempotently; only after that commit is the renamed file removed, so a
crash at any point re-ingests instead of losing. Stdlib only: the hook imports this.
"""

from __future__ import annotations

import fcntl
import json
import os
import time

from remem.capture.event import EVENT_FIELDS
from remem.capture.redact import redact_text

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

ACTIVE_FILE = "events.jsonl"
INGESTING_PREFIX = "ingesting-"
DEAD_LETTER_FILE = "dead-letter.jsonl"
RECORD_TYPES = ("event", "drop")
DROP_FIELDS = frozenset(
    {
        "idempotency_key",
        "reason",
        "host",
        "hook_event",
        "size_bytes",
        "payload_sha256",
        "detail",
        "dropped_at",
    }
)
_REQUIRED_STRINGS = (
    "idempotency_key",
    "host",
    "session_key",
    "hook_event",
    "kind",
    "cwd",
    "project_root",
    "payload",
)


def _open_locked_active(spool_dir: str) -> int:
    """An fd on the current active file, holding its lock. Retries when ingestion renamed the
    file between our open and our lock."""
    path = os.path.join(spool_dir, ACTIVE_FILE)
    while True:
        # Read-write, not write-only: append() reads the last byte to detect a torn line.
        descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(descriptor).st_ino:
                return descriptor
        except FileNotFoundError:
            pass
        os.close(descriptor)


class SpoolFull(Exception):
    """The spool reached its size cap; the record was counted in overflow.json, not kept."""


def append(spool_dir: str, record: dict[str, Any], max_bytes: int | None = None) -> None:
    """Append one record durably. Raises SpoolFull past max_bytes (the drop is counted), and
    OSError when it cannot write at all (the caller then reports that nothing was saved)."""
    line = json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8", "surrogatepass")
    os.makedirs(spool_dir, mode=0o700, exist_ok=True)
    descriptor = _open_locked_active(spool_dir)
    try:
        size = os.fstat(descriptor).st_size
        if max_bytes is not None and size + len(line) + 2 > max_bytes:
            _count_overflow(spool_dir, f"spool reached its cap of {max_bytes} bytes")
            raise SpoolFull(spool_dir)
        # A writer killed mid-line left no newline: end that line so ours starts clean; the
        # torn one is dead-lettered at ingestion.
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            line = b"\n" + line
        os.write(descriptor, line + b"\n")
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


OVERFLOW_FILE = "overflow.json"


def _count_overflow(spool_dir: str, reason: str) -> None:
    """Called with the active file's lock held, so counts never race."""
    path = os.path.join(spool_dir, OVERFLOW_FILE)
    state = read_overflow(spool_dir)
    state = {"dropped": int(state.get("dropped", 0)) + 1, "reason": reason, "last_at": time.time()}
    temporary = f"{path}.{os.getpid()}"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(descriptor, json.dumps(state).encode())
    finally:
        os.close(descriptor)
    os.replace(temporary, path)


def read_overflow(spool_dir: str) -> dict[str, Any]:
    try:
        with open(os.path.join(spool_dir, OVERFLOW_FILE), encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


class IngestReport:
    def __init__(self) -> None:
        self.files = 0
        self.events_stored = 0
        self.events_already_stored = 0
        self.drops_stored = 0
        self.dead_lettered: dict[str, int] = {}

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "events_stored": self.events_stored,
            "events_already_stored": self.events_already_stored,
            "drops_stored": self.drops_stored,
            "dead_lettered": dict(sorted(self.dead_lettered.items())),
        }


def _rotate_active(spool_dir: str) -> None:
    path = os.path.join(spool_dir, ACTIVE_FILE)
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        if os.fstat(descriptor).st_size:
            target = f"{INGESTING_PREFIX}{time.time_ns()}-{os.getpid()}.jsonl"
            os.rename(path, os.path.join(spool_dir, target))
    finally:
        os.close(descriptor)


def _parse(line: bytes) -> tuple[dict[str, Any] | None, str]:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None, "unparsable line"
    if not isinstance(record, dict) or record.get("type") not in RECORD_TYPES:
        return None, "not a spool record"
    body = record.get(record["type"])
    if not isinstance(body, dict):
        return None, "spool record without a body"
    if record["type"] == "drop":
        return (record, "") if set(body) == DROP_FIELDS else (None, "drop with wrong fields")
    if set(body) != set(EVENT_FIELDS):
        return None, "event with wrong fields"
    if not all(isinstance(body[name], str) for name in _REQUIRED_STRINGS) or not all(
        isinstance(body[name], int | float) for name in ("event_at", "captured_at")
    ):
        return None, "event with wrong field types"
    return record, ""


def _dead_letter(spool_dir: str, source: str, number: int, line: bytes, reason: str) -> None:
    text = redact_text(line.decode("utf-8", "replace"))[:10_000]
    entry = {"reason": reason, "source": source, "line_number": number, "line": text}
    path = os.path.join(spool_dir, DEAD_LETTER_FILE)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, (json.dumps(entry, ensure_ascii=False) + "\n").encode())
    finally:
        os.close(descriptor)


def ingest(
    spool_dir: str, store: Callable[[list[dict[str, Any]]], tuple[int, int, int]]
) -> IngestReport:
    """Store every spooled record. `store(records)` writes them in one transaction and returns
    (events stored, events already present, drops stored). Safe to run twice or concurrently."""
    report = IngestReport()
    if not os.path.isdir(spool_dir):
        return report
    lock = os.open(os.path.join(spool_dir, ".ingest.lock"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _rotate_active(spool_dir)
        for name in sorted(os.listdir(spool_dir)):
            if name.startswith(INGESTING_PREFIX) and name.endswith(".jsonl"):
                _ingest_file(spool_dir, name, store, report)
    finally:
        os.close(lock)
    return report


def _ingest_file(
    spool_dir: str,
    name: str,
    store: Callable[[list[dict[str, Any]]], tuple[int, int, int]],
    report: IngestReport,
) -> None:
    path = os.path.join(spool_dir, name)
    with open(path, "rb") as handle:
        data = handle.read()
    lines = data.split(b"\n")
    # The file was rotated under the writers' lock, so an unterminated last line can only be
    # a writer that died mid-append.
    torn = lines.pop()
    records, rejected = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record, reason = _parse(line)
        if record is None:
            rejected.append((number, line, reason))
        else:
            records.append(record)
    if torn.strip():
        rejected.append((len(lines) + 1, torn, "torn line (writer stopped mid-append)"))
    stored, already, drops = store(records) if records else (0, 0, 0)
    for number, line, reason in rejected:
        _dead_letter(spool_dir, name, number, line, reason)
        report.dead_lettered[reason] = report.dead_lettered.get(reason, 0) + 1
    os.unlink(path)
    report.files += 1
    report.events_stored += stored
    report.events_already_stored += already
    report.drops_stored += drops
