"""`remem import entire`: the agents' sessions a repository keeps in git, as the Entire CLI
commits them, read from git's object store (no checkout) into the events of this checkout.

Entire writes each checkpoint to the orphan branch `entire/checkpoints/v1`, laid out as
`<id[0:2]>/<id[2:12]>/<n>/full.jsonl` with the session's `metadata.json` beside it (`agent`,
`session_id`, `created_at`, `branch`); newer releases also keep one ref per checkpoint,
`refs/entire/checkpoints/<shard>/<id>`, whose tree holds `<n>/full.jsonl` the same way, and
the branch's tree under `refs/entire/checkpoints/v1/full` when they no longer write it. The
transcript is the agent's own: a Claude Code session, a Codex rollout, an OpenCode export, each
read by its one reader; other agents are counted by name and skipped.

A session was recorded on some machine, under some folder: the folder it started in is taken as
that machine's repository root, and each call's cwd below it maps to the same path below this
checkout. Checkpoints repeat a session as it grows, so a call met again in a later copy is
skipped before it is built (and would be stored once anyway: its key is the import's).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from remem.errors import RememError
from remem.record.identity import locate
from remem.transcripts import gitstore
from remem.transcripts.claude import read_claude
from remem.transcripts.codex import read_codex
from remem.transcripts.common import Blob, ReadStats, TranscriptCall, parse_time
from remem.transcripts.importer import (
    ImportOptions,
    ImportSummary,
    Locate,
    Progress,
    Writer,
    admit,
)
from remem.transcripts.opencode import read_opencode

if TYPE_CHECKING:
    from sqlalchemy import Engine

BRANCH = "entire/checkpoints/v1"
REMOTE = "origin"
LOCAL_REF = f"refs/heads/{BRANCH}"
REMOTE_REF = f"refs/remotes/{REMOTE}/{BRANCH}"
CHECKPOINT_REFS = "refs/entire/checkpoints/"
# The same tree as the branch, under refs/entire/ (releases that no longer write the branch).
FULL_REF = f"{CHECKPOINT_REFS}v1/full"
_IN_BRANCH = re.compile(r"^[0-9a-f]{2}/[0-9a-f]{10}/")
_BRANCH_SESSION = re.compile(r"^([0-9a-f]{2}/[0-9a-f]{10}/\d+)/full\.jsonl$")
_REF_SESSION = re.compile(r"^(\d+)/full\.jsonl$")
# One ref per checkpoint: its shard, then its id (12 hex characters, or a 26-character ULID).
_CHECKPOINT_REF = re.compile(r"^refs/entire/checkpoints/[0-9A-Za-z]{2}/[0-9A-Za-z]{12,26}$")
# The agents whose transcripts have a reader, by the name Entire's metadata gives them (lower
# case); a checkpoint naming none, or Entire's fallback "Agent", is Claude Code's, Entire's
# first agent.
READERS: dict[str, Callable[[Blob, ReadStats], Iterator[TranscriptCall]]] = {
    "claude code": read_claude,
    "codex": read_codex,
    "opencode": read_opencode,
}
DEFAULT_AGENT = "Claude Code"
METADATA_MAX_BYTES = 1024 * 1024
IMPORT_COMMAND = "remem import entire"


class NotCheckpoints(RememError):
    """A ref named like Entire's branch whose tree is laid out otherwise."""


# --- where a repository keeps its checkpoints -------------------------------------------------


@dataclass(frozen=True)
class Storage:
    work_tree: str
    branch_ref: str | None  # the local branch, else origin's, else FULL_REF; or None
    branch_commit: str | None
    checkpoint_refs: dict[str, str]  # one ref per checkpoint: its commit

    @property
    def found(self) -> bool:
        return self.branch_ref is not None or bool(self.checkpoint_refs)


def find_storage(work_tree: str) -> Storage:
    """The checkpoint refs of the repository at work_tree; GitFailed when it is none."""
    found = gitstore.refs(work_tree, LOCAL_REF, REMOTE_REF, CHECKPOINT_REFS)
    branch_ref = next((ref for ref in (LOCAL_REF, REMOTE_REF, FULL_REF) if ref in found), None)
    per_checkpoint = {name: sha for name, sha in found.items() if _CHECKPOINT_REF.match(name)}
    commit = found[branch_ref] if branch_ref else None
    return Storage(work_tree, branch_ref, commit, per_checkpoint)


def has_checkpoints(path: str) -> Storage | None:
    """The checkpoint storage of the repository holding `path`, when it has some."""
    try:
        storage = find_storage(locate(path)[2])
    except gitstore.GitFailed:
        return None
    return storage if storage.found else None


def said(storage: Storage) -> str:
    """Where the storage keeps its checkpoints, for a person: `refs/heads/entire/...`."""
    where = [storage.branch_ref] if storage.branch_ref else []
    if storage.checkpoint_refs:
        where.append(f"{len(storage.checkpoint_refs)} ref(s) under {CHECKPOINT_REFS}")
    return " and ".join(where)


@dataclass(frozen=True)
class Session:
    """One session's copy in one checkpoint: its transcript and metadata blobs, and a name
    saying where it lies (`<ref>:<path>`)."""

    name: str
    transcript: gitstore.Entry
    metadata: gitstore.Entry | None


@dataclass
class State:
    """What was read of a repository already: the branch's commit, each checkpoint ref's."""

    branch_commit: str | None = None
    refs: dict[str, str] = field(default_factory=dict)


def sessions(storage: Storage, since: State | None = None) -> list[Session]:
    """Every session copy of the storage; with `since`, only those added or changed after it.
    NotCheckpoints when the branch holds something else."""
    found: list[Session] = []
    if storage.branch_ref and storage.branch_commit:
        before = since.branch_commit if since else None
        if before != storage.branch_commit:
            entries = gitstore.tree(storage.work_tree, storage.branch_commit)
            if entries and not any(_IN_BRANCH.match(entry.path) for entry in entries):
                raise NotCheckpoints(
                    f"{storage.branch_ref} is not an Entire checkpoint branch: its tree holds no "
                    f"<id[0:2]>/<id[2:12]>/<n>/full.jsonl (it holds {entries[0].path}, …)."
                )
            changed = (
                gitstore.changed_paths(storage.work_tree, before, storage.branch_commit)
                if before
                else None
            )
            found += _laid_out(storage.branch_ref, entries, _BRANCH_SESSION, changed)
    for ref, commit in sorted(storage.checkpoint_refs.items()):
        if since is None or since.refs.get(ref) != commit:
            entries = gitstore.tree(storage.work_tree, commit)
            found += _laid_out(ref, entries, _REF_SESSION, None)
    return found


def _laid_out(
    ref: str, entries: list[gitstore.Entry], layout: re.Pattern[str], changed: set[str] | None
) -> list[Session]:
    by_path = {entry.path: entry for entry in entries}
    found = []
    for entry in entries:
        match = layout.match(entry.path)
        if match is None:
            continue
        folder = match.group(1)
        metadata = by_path.get(f"{folder}/metadata.json")
        touched = {entry.path, metadata.path if metadata else ""}
        if changed is None or touched & changed:
            found.append(Session(f"{ref}:{entry.path}", entry, metadata))
    return found


# --- the import ---------------------------------------------------------------------------------


@dataclass
class CheckpointSummary(ImportSummary):
    ref: str | None = None
    commit: str | None = None
    checkpoint_refs: int = 0
    session_copies: int = 0
    invalid_metadata: int = 0
    copies_repeated: int = 0  # the same transcript blob in two checkpoints: read once
    calls_repeated: int = 0  # a call met again in a later copy of its session
    agents_skipped: Counter[str] = field(default_factory=Counter)

    def as_json(self) -> dict[str, Any]:
        fields = super().as_json()
        fields["agents_skipped"] = dict(sorted(self.agents_skipped.items()))
        return fields


@dataclass(frozen=True)
class _Metadata:
    agent: str
    session_id: str | None
    created_at: float | None
    branch: str | None


class _Here:
    """This checkout, where a session recorded elsewhere lands: a call's cwd relative to the
    folder its session started in is the same path below this work tree."""

    def __init__(self, work_tree: str) -> None:
        self.root, self.head, self.work_tree, _ = locate(work_tree)
        self._below: dict[tuple[str, str | None], str | None] = {}  # a session's calls share a few

    def locator(self, call: TranscriptCall, branch: str | None) -> Locate | None:
        """None when the call ran outside the session's folder."""
        cwd, recorded = call.payload.get("cwd"), call.session_cwd
        directory = self.below(cwd, recorded) if isinstance(cwd, str) else "."
        if directory is None:
            return None
        where = (self.root, branch, self.work_tree, directory)
        return lambda _cwd: where

    def below(self, cwd: str, root: str | None) -> str | None:
        key = (cwd, root)
        if key not in self._below:
            self._below[key] = _below(cwd, root)
        return self._below[key]


def _below(cwd: str, root: str | None) -> str | None:
    if not root or not os.path.isabs(cwd) or not os.path.isabs(root):
        return "."
    cwd, root = os.path.normpath(cwd), os.path.normpath(root)
    if cwd == root:
        return "."
    if cwd.startswith(root.rstrip("/") + "/"):
        return os.path.relpath(cwd, root)
    return None


def import_checkpoints(
    engine: Engine,
    storage: Storage,
    found: list[Session],
    options: ImportOptions,
    now: float,
    on_progress: Progress | None = None,
) -> CheckpointSummary:
    """Read each session copy found in the storage (`sessions`) and store what its agent's
    live hooks would have stored; `on_progress(bytes done, copies done)` as they go by."""
    summary = CheckpointSummary(dry_run=options.dry_run, ref=storage.branch_ref)
    summary.commit, summary.checkpoint_refs = storage.branch_commit, len(storage.checkpoint_refs)
    reading = _Reading(engine, storage, options, now, summary)
    done_bytes = 0
    try:
        for number, session in enumerate(found, 1):
            reading.session(session)
            done_bytes += session.transcript.size
            if on_progress is not None:
                on_progress(done_bytes, number)
    finally:
        reading.blobs.close()
    reading.writer.finish()
    summary.sessions = len(reading.sessions)
    return summary


class _Reading:
    def __init__(
        self,
        engine: Engine,
        storage: Storage,
        options: ImportOptions,
        now: float,
        summary: CheckpointSummary,
    ) -> None:
        self.options, self.now, self.summary = options, now, summary
        self.here = _Here(storage.work_tree)
        self.writer = Writer(engine, summary, options.dry_run)
        self.blobs = gitstore.Blobs(storage.work_tree)
        self.seen_blobs: set[str] = set()
        self.seen_calls: set[tuple[str, Any, Any]] = set()
        self.sessions: set[tuple[str, str]] = set()

    def session(self, session: Session) -> None:
        summary = self.summary
        summary.session_copies += 1
        metadata = self._metadata(session.metadata)
        if metadata is None:
            summary.invalid_metadata += 1
            return
        reader = READERS.get(metadata.agent.lower())
        if reader is None:
            summary.agents_skipped[metadata.agent] += 1
            return
        if session.transcript.blob in self.seen_blobs:
            summary.copies_repeated += 1
            return
        self.seen_blobs.add(session.transcript.blob)
        created_at = metadata.created_at if metadata.created_at is not None else self.now
        if self.options.since_at is not None and created_at < self.options.since_at:
            summary.files_too_old += 1
            summary.too_old(created_at)
            return
        stats = ReadStats()
        with self.blobs.lines(session.transcript.blob) as lines:
            for call in reader(Blob(session.name, lines), stats):
                self._call(call, metadata, created_at)
        summary.add_read(stats)

    def _call(self, call: TranscriptCall, metadata: _Metadata, created_at: float) -> None:
        payload = call.payload
        if metadata.session_id and not payload.get("session_id"):
            payload["session_id"] = metadata.session_id
        key = (
            call.host,
            payload.get("session_id"),
            payload.get("tool_use_id", payload.get("event_id")),
        )
        if key[2] is not None:
            if key in self.seen_calls:
                self.summary.calls_repeated += 1
                return
            self.seen_calls.add(key)
        locate_call = self.here.locator(call, call.branch or metadata.branch)
        if locate_call is None:
            self.summary.calls_outside_project += 1
            return
        event = admit(call, created_at, self.options, self.now, locate_call, self.summary)
        if event is not None:
            self.sessions.add((event.host, event.session_key))
            self.writer.add(event)

    def _metadata(self, entry: gitstore.Entry | None) -> _Metadata | None:
        if entry is None:
            return None
        data = self.blobs.read(entry.blob, METADATA_MAX_BYTES)
        try:
            document = json.loads(data) if data is not None else None
        except (ValueError, RecursionError):
            return None
        if not isinstance(document, dict):
            return None
        agent = document.get("agent")
        agent = agent if isinstance(agent, str) and agent not in ("", "Agent") else DEFAULT_AGENT
        session_id, branch = document.get("session_id"), document.get("branch")
        created_at = parse_time(document.get("created_at"))
        return _Metadata(
            agent,
            session_id if isinstance(session_id, str) and session_id else None,
            created_at if created_at is not None and math.isfinite(created_at) else None,
            branch if isinstance(branch, str) and branch else None,
        )
