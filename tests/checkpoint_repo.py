"""Git repositories with Entire checkpoints, built as the Entire CLI lays them out: an orphan
branch `entire/checkpoints/v1` (or one ref per checkpoint) whose commits add
`<id[0:2]>/<id[2:12]>/<n>/full.jsonl` and `metadata.json`, written with `git fast-import` so
the work tree is never touched."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BRANCH_REF = "refs/heads/entire/checkpoints/v1"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repository: Path, *args: str, data: bytes | None = None) -> str:
    result = subprocess.run(
        ["git", "-C", str(repository), *args],
        input=data,
        capture_output=True,
        env={**os.environ, **GIT_ENV, "HOME": str(repository.parent)},
        check=True,
        timeout=120,
    )
    return result.stdout.decode()


def new_repository(path: Path, branch: str = "main") -> Path:
    """A repository with one commit on `branch`, checked out."""
    path.mkdir(parents=True)
    git(path, "init", "--quiet", f"--initial-branch={branch}")
    (path / "README.md").write_text("app\n")
    git(path, "add", "README.md")
    git(path, "commit", "--quiet", "-m", "start")
    return path


@dataclass(frozen=True)
class Copy:
    """One session copy in a checkpoint: its folder's id and index, transcript, metadata."""

    checkpoint_id: str  # 12 hex characters
    index: int
    transcript: bytes
    metadata: dict[str, Any] | bytes | None

    @property
    def folder(self) -> str:
        return f"{self.checkpoint_id[:2]}/{self.checkpoint_id[2:12]}/{self.index}"


def metadata(
    session_id: str,
    agent: str = "Claude Code",
    branch: str = "main",
    created_at: str = "2026-11-20T09:00:00Z",
) -> dict[str, Any]:
    return {
        "checkpoint_id": "",
        "session_id": session_id,
        "strategy": "manual-commit",
        "created_at": created_at,
        "branch": branch,
        "checkpoints_count": 1,
        "files_touched": [],
        "agent": agent,
    }


def _files(copies: list[Copy], folder: Callable[[Copy], str]) -> list[tuple[str, bytes]]:
    files = []
    for copy in copies:
        files.append((f"{folder(copy)}/full.jsonl", copy.transcript))
        if isinstance(copy.metadata, bytes):
            files.append((f"{folder(copy)}/metadata.json", copy.metadata))
        elif copy.metadata is not None:
            files.append((f"{folder(copy)}/metadata.json", json.dumps(copy.metadata).encode()))
    return files


def commit_files(repository: Path, ref: str, files: list[tuple[str, bytes]]) -> str:
    """One commit on `ref` adding these files to its tree (the ref is created, an orphan, when
    it does not exist), by `git fast-import`; the commit's id."""
    parent = git(repository, "for-each-ref", "--format=%(objectname)", ref).strip()
    body = [f"commit {ref}\ncommitter T <t@example.com> 1763629200 +0000\ndata 2\ncp\n".encode()]
    if parent:
        body.append(f"from {parent}\n".encode())
    for path, data in files:
        body.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
    git(repository, "fast-import", "--quiet", "--force", data=b"".join(body) + b"\n")
    return git(repository, "rev-parse", ref).strip()


def add_checkpoint(repository: Path, copies: list[Copy], ref: str = BRANCH_REF) -> str:
    """One commit on the checkpoint branch adding these copies; its id."""
    return commit_files(repository, ref, _files(copies, lambda copy: copy.folder))


def add_checkpoint_ref(repository: Path, checkpoint_id: str, copies: list[Copy]) -> str:
    """The newer layout: one ref per checkpoint, `refs/entire/checkpoints/<shard>/<id>`, whose
    tree holds `<n>/full.jsonl` and `<n>/metadata.json`; the ref."""
    ref = f"refs/entire/checkpoints/{checkpoint_id[-2:]}/{checkpoint_id}"
    commit_files(repository, ref, _files(copies, lambda copy: str(copy.index)))
    return ref


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(record).encode() + b"\n" for record in records)
