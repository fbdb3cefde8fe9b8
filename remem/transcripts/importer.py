"""`remem import`: the sessions already on disk -> the events their live hooks would have stored.

Each transcript is streamed through its reader, each call is built into an event by the hook's
own adapter (redaction, identity, idempotency key) and stored with the hook's own statements,
many to a transaction (capture.store.Batch). The key is the host's tool-use id, so importing
twice, or importing a session that the hooks also captured, stores each run once.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from remem.capture.hosts import FUTURE_SLACK_S, build_event
from remem.capture.store import Batch, stored_already
from remem.errors import NotFound, RememError
from remem.record.event import ERROR_EXCERPT_CHARS, CapturedEvent, Dropped
from remem.record.identity import locate
from remem.record.lines import file_kind
from remem.transcripts.claude import read_claude
from remem.transcripts.codex import read_codex
from remem.transcripts.common import ReadStats, TranscriptCall, parse_time, read_records

if TYPE_CHECKING:
    from sqlalchemy import Engine


HOSTS = ("claude-code", "codex")
READERS: dict[str, Callable[[str, ReadStats], Iterator[TranscriptCall]]] = {
    "claude-code": read_claude,
    "codex": read_codex,
}
# Events per write transaction: long enough to amortise the commit, short enough that a
# running daemon or hook waits milliseconds for the lock, not seconds.
BATCH_EVENTS = 500
# Claude Code names a project's folder after its path, every other character a dash.
_CLAUDE_FOLDER = re.compile(r"[^A-Za-z0-9]")

Where = tuple[str, str | None, str, str]
Locate = Callable[[str], Where]
Progress = Callable[[int, int], None]


# --- where the transcripts are ----------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    host: str
    path: str
    size: int
    modified_at: float


def agent_folder(host: str, user_home: str, environ: Mapping[str, str] | None = None) -> str:
    """Where an agent keeps its sessions: Claude Code's projects, Codex's dated rollouts."""
    env = os.environ if environ is None else environ
    if host == "claude-code":
        return os.path.join(env.get("CLAUDE_CONFIG_DIR") or f"{user_home}/.claude", "projects")
    return os.path.join(env.get("CODEX_HOME") or f"{user_home}/.codex", "sessions")


@dataclass(frozen=True)
class Found:
    """The sessions an agent kept on disk, and when the oldest of them began."""

    sessions: int = 0
    oldest_at: float | None = None


def find_sessions(user_home: str, environ: Mapping[str, str] | None = None) -> dict[str, Found]:
    """Sessions each agent kept on disk, by host, as `remem import all` reads them: Claude
    Code's transcripts in its project folders, and every Codex rollout below its sessions
    folder (dated folders or not, whatever their names); each with its first record's time."""
    claude = [
        path
        for folder in _subfolders(agent_folder("claude-code", user_home, environ))
        for path in _jsonl(folder)
    ]
    codex = [source.path for source in _below("codex", agent_folder("codex", user_home, environ))]
    found = {}
    for host, paths in (("claude-code", claude), ("codex", codex)):
        times = [at for at in map(began_at, paths) if at is not None]
        found[host] = Found(len(paths), min(times, default=None))
    return found


# A session's first records say when it began; a file that says nothing in these is dated by
# its modification time.
FIRST_RECORDS = 20


def began_at(path: str) -> float | None:
    """When a transcript began: its first record's time, or its modification time when none
    of its first records has one (or that is later); None when it cannot be read."""
    try:
        modified_at = os.stat(path).st_mtime
    except OSError:
        return None
    stats = ReadStats()
    for number, record in enumerate(read_records(path, stats)):
        at = parse_time(record.get("timestamp"))
        if at is not None:
            return min(at, modified_at)
        if number + 1 == FIRST_RECORDS:
            break
    return None if stats.refused else modified_at


def default_since_s(max_age_s: float) -> float:
    """How far back an import reads when `--since` is not given: twice promotion.max_age, so
    that what it learns can be verified again within the window."""
    return 2 * max_age_s


def since_covering(oldest_at: float, now: float) -> str:
    """A `--since` that reaches back to `oldest_at` with a day to spare, rounded up to ten
    days: `400d`."""
    days = math.ceil((now - oldest_at) / 86_400) + 1
    return f"{-(-days // 10) * 10}d"


def _subfolders(path: str) -> Iterator[str]:
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    yield from (entry.path for entry in entries if entry.is_dir(follow_symlinks=False))


def _jsonl(folder: str) -> Iterator[str]:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    yield from (e.path for e in entries if e.name.endswith(".jsonl") and e.is_file())


def discover(
    host: str, paths: Sequence[str], user_home: str, environ: Mapping[str, str] | None = None
) -> list[Source]:
    """The transcripts to read: each file named, every `.jsonl` below each folder named, or
    the agent's own folder when none is (absent: nothing to import)."""
    if not paths:
        return _below(host, agent_folder(host, user_home, environ))
    found: list[Source] = []
    for given in paths:
        path = os.path.abspath(os.path.expanduser(given))
        if os.path.isdir(path):
            found += _below(host, path)
        elif os.path.isfile(path):
            found.append(_source(host, path))
        elif os.path.exists(path):
            kind = file_kind(os.stat(path).st_mode)
            raise RememError(f"{given} is {kind}, not a transcript: give a .jsonl or a folder.")
        else:
            raise NotFound(f"No transcript file or folder at {given}: give a .jsonl or a folder.")
    return found


def _below(host: str, folder: str) -> list[Source]:
    found = []
    for directory, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(".jsonl"):
                found.append(_source(host, os.path.join(directory, name)))
    return found


def _source(host: str, path: str) -> Source:
    """A file below a folder may be anything named .jsonl (a FIFO, a link to nothing): the
    reading refuses it, and the summary counts it."""
    try:
        status = os.stat(path)
    except OSError:
        return Source(host, path, 0, 0.0)
    return Source(host, path, status.st_size, status.st_mtime)


# --- what an import did -----------------------------------------------------------------------


@dataclass(frozen=True)
class ImportOptions:
    since_at: float | None = None  # calls before this moment are left out
    project: str | None = None  # only sessions in this folder, or of its repository
    dry_run: bool = False


@dataclass
class ImportSummary:
    dry_run: bool = False
    files: int = 0
    files_too_old: int = 0
    files_refused: int = 0  # not regular files (a FIFO, a device), or unreadable
    bytes_read: int = 0
    sessions: int = 0
    commands: int = 0
    edits: int = 0
    lines: int = 0
    skipped_lines: int = 0
    lines_too_long: int = 0  # over MAX_LINE_BYTES, skipped
    unknown_records: int = 0
    unpaired_calls: int = 0
    calls_too_old: int = 0
    oldest_too_old_at: float | None = None  # when the oldest call left out as too old ran
    calls_outside_project: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    events_new: int = 0
    events_known: int = 0

    def too_old(self, at: float | None) -> None:
        if at is not None and (self.oldest_too_old_at is None or at < self.oldest_too_old_at):
            self.oldest_too_old_at = at

    def add_read(self, stats: ReadStats) -> None:
        if stats.refused is not None:
            self.files_refused += 1
            return
        self.files += 1
        self.lines += stats.lines
        self.lines_too_long += stats.too_long
        self.skipped_lines += stats.malformed
        self.unknown_records += stats.unknown_records
        self.unpaired_calls += stats.unpaired
        self.bytes_read += stats.bytes_read

    def as_json(self) -> dict[str, Any]:
        fields = dict(self.__dict__)
        fields["dropped"] = dict(sorted(self.dropped.items()))
        return fields


# --- identity of a call whose folder may be gone ---------------------------------------------


class _Identity:
    """Where each call ran. A cwd that exists is located exactly as the hook locates it; one
    that is gone (its repository deleted or moved) lies below its session's first cwd, which
    is then the project root, with the branch the transcript recorded."""

    def __init__(self) -> None:
        self._located: dict[str, Where | None] = {}
        self._claude_roots: dict[tuple[str, str], str] = {}
        # Each (cwd, branch, session root) once: a session's calls share a few.
        self._where: dict[tuple[str, str | None, str | None], Where] = {}

    def locator(self, call: TranscriptCall) -> Locate:
        """Where the call's cwd lies: its project, branch, work tree and directory."""
        session_root = self.session_root(call)
        return lambda cwd: self.where(cwd, call.branch, session_root)

    def where(self, cwd: str, branch: str | None, session_root: str | None) -> Where:
        key = (cwd, branch, session_root)
        where = self._where.get(key)
        if where is None:
            where = self._where[key] = self._where_now(cwd, branch, session_root)
        return where

    def _where_now(self, cwd: str, branch: str | None, session_root: str | None) -> Where:
        found = self._locate(cwd)
        if found is not None:
            root, head, tree, directory = found
            return root, branch or head, tree, directory
        path = os.path.normpath(cwd)
        anchor = session_root if session_root and _inside(path, session_root) else path
        relative = os.path.relpath(path, anchor)
        based = self._locate(anchor)
        if based is None:
            return anchor, branch, anchor, relative
        root, head, tree, directory = based
        return root, branch or head, tree, os.path.normpath(os.path.join(directory, relative))

    def _locate(self, cwd: str) -> Where | None:
        if cwd not in self._located:
            self._located[cwd] = locate(cwd) if os.path.isdir(cwd) else None
        return self._located[cwd]

    def session_root(self, call: TranscriptCall) -> str | None:
        """The session's first cwd; for Claude Code, the ancestor of it that names the project
        folder the transcript sits in, when one does."""
        first = call.session_cwd or call.payload.get("cwd")
        if not isinstance(first, str) or not first:
            return None
        first = os.path.normpath(first)
        if call.host != "claude-code":
            return first
        path = str(call.payload.get("transcript_path") or "")
        key = (os.path.dirname(path), first)
        if key not in self._claude_roots:
            self._claude_roots[key] = _named_root(path, first)
        return self._claude_roots[key]


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _named_root(transcript_path: str, first_cwd: str) -> str:
    folders = set(os.path.dirname(transcript_path).split("/")[-4:])
    candidate = first_cwd
    while True:
        if _CLAUDE_FOLDER.sub("-", candidate) in folders:
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return first_cwd
        candidate = parent


# --- building events --------------------------------------------------------------------------


def event_time(at: float | None, fallback_at: float, now: float) -> tuple[float, str | None]:
    """The record's own time when it is a usable past moment (the hook's clamp); the file's
    modification time when the record has none."""
    if at is None:
        return min(fallback_at, now), None
    if math.isfinite(at) and 0.0 <= at <= now + FUTURE_SLACK_S:
        return at, None
    return now, repr(at)[:100]


def build_call_event(
    call: TranscriptCall, now: float, locate: Locate, fallback_at: float
) -> CapturedEvent:
    """The hook's event for one call, at the record's time; a Codex command carries its exit
    code already, as the worker would have resolved it from the rollout."""
    event = build_event(call.payload, call.host, now, locate)
    fields: dict[str, Any] = {}
    fields["event_at"], fields["event_at_reported"] = event_time(call.at, fallback_at, now)
    if call.host == "codex" and event.kind == "command" and call.exit_code is not None:
        failed = call.exit_code != 0
        fields["outcome"] = "failure" if failed else "success"
        fields["exit_code"], fields["exit_code_source"] = call.exit_code, "rollout"
        # The excerpt is the redacted output's head, as the worker's resolution keeps it.
        if failed and event.output_excerpt:
            fields["error_excerpt"] = event.output_excerpt[:ERROR_EXCERPT_CHARS]
    changed: CapturedEvent = event.but(**fields)
    return changed


class _ProjectFilter:
    def __init__(self, project: str) -> None:
        spelt = os.path.normpath(os.path.abspath(os.path.expanduser(project)))
        self.prefixes = {spelt, os.path.realpath(spelt)}
        self.root = locate(os.path.realpath(spelt))[0] if os.path.isdir(spelt) else None

    def keeps(self, call: TranscriptCall, event: CapturedEvent) -> bool:
        cwd = call.session_cwd or call.payload.get("cwd") or ""
        spelt = os.path.normpath(str(cwd))
        return event.project_root == self.root or any(_inside(spelt, p) for p in self.prefixes)


# --- the import -------------------------------------------------------------------------------


class Writer:
    """Events stored many to a transaction with the hook's statements (each raises its
    session's extraction task, as the hook does); a dry run only asks which are known."""

    def __init__(self, engine: Engine, summary: ImportSummary, dry_run: bool) -> None:
        from remem.db.engine import checkpoint_apart

        self.engine = engine
        self.summary = summary
        self.dry_run = dry_run
        self.pending: list[CapturedEvent] = []
        # As the worker does, its commits never move the WAL into the file (the copy and its
        # syncs would hold the write lock the hooks wait for): it checkpoints between batches,
        # once a second, and when it is done.
        self.checkpoints = not dry_run and checkpoint_apart(engine)
        self.checkpointed_at = time.monotonic()

    def add(self, event: CapturedEvent) -> None:
        self.pending.append(event)
        if len(self.pending) >= BATCH_EVENTS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        from remem.db.engine import CHECKPOINT_INTERVAL_S, READ_ONLY, executor, inserter

        if self.dry_run:
            with self.engine.connect().execution_options(**{READ_ONLY: True}) as connection:
                execute = executor(connection)
                known = sum(1 for event in self.pending if stored_already(execute, event))
        else:
            with self.engine.begin() as connection:
                batch = Batch(executor(connection), inserter(connection), self.pending)
                known = sum(1 for event in self.pending if batch.store(event) is None)
                batch.finish()
        self.summary.events_known += known
        self.summary.events_new += len(self.pending) - known
        self.pending.clear()
        if self.checkpoints and time.monotonic() - self.checkpointed_at >= CHECKPOINT_INTERVAL_S:
            self._checkpoint()

    def finish(self) -> None:
        """Stores what is pending, and moves the WAL into the file."""
        self.flush()
        if self.checkpoints:
            self._checkpoint()

    def _checkpoint(self) -> None:
        from remem.db.engine import checkpoint

        checkpoint(self.engine)
        self.checkpointed_at = time.monotonic()


def import_transcripts(
    engine: Engine,
    sources: Sequence[Source],
    options: ImportOptions,
    now: float,
    on_progress: Progress | None = None,
) -> ImportSummary:
    """Read every source, store what its live hooks would have stored; `on_progress(bytes
    done, files done)` is called as the files go by."""
    summary = ImportSummary(dry_run=options.dry_run)
    writer = Writer(engine, summary, options.dry_run)
    identity = _Identity()
    project = _ProjectFilter(options.project) if options.project else None
    sessions: set[tuple[str, str]] = set()
    done_bytes = 0
    for number, source in enumerate(sources, 1):
        if options.since_at is not None and source.modified_at < options.since_at:
            summary.files_too_old += 1
            summary.too_old(began_at(source.path))
        else:
            stats = ReadStats()
            for call in READERS[source.host](source.path, stats):
                keeps = None if project is None else partial(project.keeps, call)
                event = admit(
                    call, source.modified_at, options, now, identity.locator(call), summary, keeps
                )
                if event is not None:
                    sessions.add((event.host, event.session_key))
                    writer.add(event)
                    if on_progress is not None and not writer.pending:
                        on_progress(done_bytes + stats.bytes_read, number - 1)
            summary.add_read(stats)
        done_bytes += source.size
        if on_progress is not None:
            on_progress(done_bytes, number)
    writer.finish()
    summary.sessions = len(sessions)
    return summary


def admit(
    call: TranscriptCall,
    modified_at: float,
    options: ImportOptions,
    now: float,
    locate: Locate,
    summary: ImportSummary,
    keeps: Callable[[CapturedEvent], bool] | None = None,
) -> CapturedEvent | None:
    """The call's event when it is to be imported; counts why when it is not. A call without
    a time of its own is dated by its transcript's `modified_at`."""
    at = modified_at if call.at is None else call.at
    if options.since_at is not None and at < options.since_at:
        summary.calls_too_old += 1
        summary.too_old(at)
        return None
    try:
        event = build_call_event(call, now, locate, modified_at)
    except Dropped as dropped:
        summary.dropped[dropped.reason] += 1
        return None
    if keeps is not None and not keeps(event):
        summary.calls_outside_project += 1
        return None
    if event.kind == "command":
        summary.commands += 1
    else:
        summary.edits += 1
    return event
