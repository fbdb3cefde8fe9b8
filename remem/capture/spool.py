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

from remem.db import columns
from remem.paths import write_whole
from remem.record import rewrite as files
from remem.record.bounded import redacted_head

# Event fields newer than the first spool format; a record without them is still an event.
ADDED_EVENT_FIELDS = ("directory", "output_excerpt", "event_at_reported")

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, BinaryIO

    Store = Callable[[list[dict[str, Any]]], tuple[int, int, int]]
    Matches = Callable[[bytes], bool]

ACTIVE_FILE = "events.jsonl"
INGESTING_PREFIX = "ingesting-"
DEAD_LETTER_FILE = "dead-letter.jsonl"
INGEST_LOCK = ".ingest.lock"
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
        "excerpt",
    }
)
# An event's fields by what they hold: its session and project are named by key and root.
_KINDS = {
    columns.BY_NAME.get(name, name): (columns.TEXT, True) if name in columns.BY_NAME else kind
    for name, kind in columns.EVENT_COLUMN_KINDS.items()
}
_REQUIRED_STRINGS = tuple(name for name, kind in _KINDS.items() if kind == (columns.TEXT, True))
_OPTIONAL_STRINGS = tuple(name for name, kind in _KINDS.items() if kind == (columns.TEXT, False))
_NUMBERS = tuple(name for name, (kind, _required) in _KINDS.items() if kind == columns.REAL)
# A batch of records is stored in one transaction; a batch the database refuses is stored again
# one record at a time, so that only the records it refuses are set aside.
# A file is read line by line, a batch at a time: a spool of any size costs its ingestion a
# batch's memory (BATCH_RECORDS records or BATCH_BYTES of lines, whichever comes first).
BATCH_RECORDS = 500
BATCH_BYTES = 8 * 1024 * 1024
# Beside the file while it is ingested (hidden, `.NAME.refused`): its refused lines, moved to
# the dead letters once every batch is stored.
REFUSED_SUFFIX = ".refused"
_INTEGER_BOUND = 1 << 63  # SQLite and PostgreSQL BIGINT
DEAD_LINE_CHARS = 10_000  # of a dead letter's line


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
    write_whole(path, json.dumps(state).encode())


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
        return {**self.__dict__, "dead_lettered": dict(sorted(self.dead_lettered.items()))}


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


def _load(line: bytes | str) -> dict[str, Any] | str:
    """A line's JSON object, or why it holds none."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return "unparsable line"
    return value if isinstance(value, dict) else "not a spool record"


def _parse(line: bytes) -> tuple[dict[str, Any] | None, str]:
    record = _load(line)
    if isinstance(record, str):
        return None, record
    if record.get("type") not in RECORD_TYPES:
        return None, "not a spool record"
    body = record.get(record["type"])
    if not isinstance(body, dict):
        return None, "spool record without a body"
    if record["type"] == "drop":
        body.setdefault("excerpt", None)  # spooled by a remem from before excerpts
        return (record, "") if set(body) == DROP_FIELDS else (None, "drop with wrong fields")
    for name in ADDED_EVENT_FIELDS:  # spooled by an older remem
        body.setdefault(name, None)
    if set(body) != set(columns.EVENT_FIELDS):
        return None, "event with wrong fields"
    if not _has_field_types(body):
        return None, "event with wrong field types"
    return record, ""


def _has_field_types(body: dict[str, Any]) -> bool:
    exit_code, files = body["exit_code"], body["files"]
    return (
        all(isinstance(body[name], str) for name in _REQUIRED_STRINGS)
        and all(body[name] is None or isinstance(body[name], str) for name in _OPTIONAL_STRINGS)
        and all(isinstance(body[name], int | float) for name in _NUMBERS)
        and (exit_code is None or (isinstance(exit_code, int) and abs(exit_code) < _INTEGER_BOUND))
        and (files is None or (isinstance(files, list) and all(isinstance(f, str) for f in files)))
    )


class Rejected(Exception):
    """The database refused a record for what it holds (a constraint, a value it cannot take):
    storing it again would fail again. Raised by the `store` callable given to ingest()."""


def _dead_letter(spool_dir: str, source: str, number: int, line: bytes, reason: str) -> None:
    text = redacted_head(line.decode("utf-8", "replace"), DEAD_LINE_CHARS)
    # A database's message may quote the row it refused.
    reason = redacted_head(reason, 500)
    entry = {"reason": reason, "source": source, "line_number": number, "line": text}
    path = os.path.join(spool_dir, DEAD_LETTER_FILE)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, (json.dumps(entry, ensure_ascii=False) + "\n").encode())
    finally:
        os.close(descriptor)


def ingest(spool_dir: str, store: Store) -> IngestReport:
    """Store every spooled record. `store(records)` writes them in one transaction and returns
    (events stored, events already present, drops stored); it raises Rejected when the database
    refuses the records' contents, and anything else when the database cannot be used now (the
    file then stays for the next ingest). Safe to run twice or concurrently."""
    report = IngestReport()
    if not os.path.isdir(spool_dir):
        return report
    with IngestLock(spool_dir):
        _rotate_active(spool_dir)
        for name in sorted(os.listdir(spool_dir)):
            if name.startswith(INGESTING_PREFIX) and name.endswith(".jsonl"):
                _ingest_file(spool_dir, name, store, report)
    return report


class IngestLock:
    """Held, no other process ingests the spool: `with IngestLock(spool_dir): ...`. A spool
    directory that does not exist has nothing to ingest, and is not created.

    A class, not a contextlib generator: `contextlib` is not imported on the hook's path."""

    def __init__(self, spool_dir: str) -> None:
        self.path = os.path.join(spool_dir, INGEST_LOCK)
        self.descriptor: int | None = None

    def __enter__(self) -> IngestLock:
        if os.path.isdir(os.path.dirname(self.path)):
            self.descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                fcntl.flock(self.descriptor, fcntl.LOCK_EX)
            except BaseException:
                os.close(self.descriptor)
                self.descriptor = None
                raise
        return self

    def __exit__(self, *_exc_info: object) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None


def _ingest_file(spool_dir: str, name: str, store: Store, report: IngestReport) -> None:
    path = os.path.join(spool_dir, name)
    refused_path = os.path.join(spool_dir, f".{name}{REFUSED_SUFFIX}")
    totals = [0, 0, 0]
    with open(path, "rb") as handle, open(refused_path, "wb") as refused:
        batch: list[tuple[int, bytes, dict[str, Any]]] = []
        size = 0
        for number, line in enumerate(handle, start=1):
            if not line.endswith(b"\n"):
                # The file was rotated under the writers' lock, so an unterminated last line
                # can only be a writer that died mid-append.
                if line.strip():
                    _refuse(refused, number, line, "torn line (writer stopped mid-append)")
                break
            line = line[:-1]
            if not line.strip():
                continue
            record, reason = _parse(line)
            if record is None:
                _refuse(refused, number, line, reason)
                continue
            batch.append((number, line, record))
            size += len(line)
            if len(batch) >= BATCH_RECORDS or size >= BATCH_BYTES:
                _store_batch(batch, store, totals, refused)
                batch, size = [], 0
        _store_batch(batch, store, totals, refused)
    # Dead letters are written only once every batch is stored: a file left for the next
    # ingest by an unavailable database must not set its lines aside twice.
    _dead_letters(spool_dir, name, refused_path, report)
    os.unlink(path)
    report.files += 1
    report.events_stored += totals[0]
    report.events_already_stored += totals[1]
    report.drops_stored += totals[2]


def _refuse(refused: BinaryIO, number: int, line: bytes, reason: str) -> None:
    """Set a refused line aside, cut to what its dead letter keeps (with room for redaction to
    see a secret whole), until the file's every batch is stored."""
    entry = {"number": number, "reason": reason, "line": line[: 4 * DEAD_LINE_CHARS].hex()}
    refused.write(json.dumps(entry).encode() + b"\n")


def _dead_letters(spool_dir: str, name: str, refused_path: str, report: IngestReport) -> None:
    with open(refused_path, "rb") as refused:
        for text in refused:
            entry = json.loads(text)
            reason = entry["reason"]
            _dead_letter(spool_dir, name, entry["number"], bytes.fromhex(entry["line"]), reason)
            report.dead_lettered[reason] = report.dead_lettered.get(reason, 0) + 1
    os.unlink(refused_path)


def _store_batch(
    batch: list[tuple[int, bytes, dict[str, Any]]],
    store: Store,
    totals: list[int],
    refused: BinaryIO,
) -> None:
    if not batch:
        return
    try:
        counts = [store([record for _number, _line, record in batch])]
    except Rejected:
        # One refused record rolled back its whole batch: take the batch one record at a time.
        counts = []
        for number, line, record in batch:
            try:
                counts.append(store([record]))
            except Rejected as exc:
                _refuse(refused, number, line, f"refused by the database: {exc}")
    for stored, already, drops in counts:
        totals[0] += stored
        totals[1] += already
        totals[2] += drops


# Reading the spool for a search, and taking lines out of it: what `remem forget` does.


def spool_files(spool_dir: str) -> list[str]:
    """The active file, files an ingestion left behind, and the dead letters."""
    return [path for path in files.visible_files(spool_dir) if path.endswith(".jsonl")]


def search_line(line: bytes) -> tuple[list[dict[str, Any]], list[str]]:
    """(events, strings) of a spool or dead-letter line. The events are the bodies of the
    record it holds, or of the one a dead letter quotes while that still parses; unchecked,
    unlike ingestion's, since what is searched for may sit in a line ingestion refused. The
    strings are the line itself and every string in its JSON, decoded: a regular expression
    sees `"` and `\\` as they were typed."""
    decoded = line.decode("utf-8", "surrogateescape")
    records = _quoted_records(decoded)
    events = [record["event"] for record in records if isinstance(record.get("event"), dict)]
    return events, [decoded, *(text for record in records for text in _strings(record))]


def _quoted_records(line: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for _ in range(2):  # a record, or a dead letter and the record it quotes
        value = _load(line)
        if isinstance(value, str):
            break
        found.append(value)
        if not isinstance(value.get("line"), str):
            break
        line = value["line"]
    return found


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def rewrite_without(path: str, matches: Matches) -> None:
    """Take the matching lines out of a spool file. The active file is rewritten under its
    writers' lock; a writer waiting on it finds the file replaced and appends to the new one
    (append checks the inode). The caller holds the IngestLock, so no ingestion renames or
    removes the file meanwhile."""
    files.rewrite_without(path, matches, lock=os.path.basename(path) == ACTIVE_FILE)
