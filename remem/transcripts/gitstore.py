"""Reading git's object store with git's own plumbing: refs, trees and blobs, never a checkout.

A blob is streamed out of one long-running `git cat-file --batch`, line by line and within the
bounds of remem.record.lines, so a transcript of any size costs the memory of its longest line.
Nothing here writes to the repository or its working tree (`fetch` only updates a ref).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

from remem.errors import RememError
from remem.record.lines import bounded_lines

# No pager, paths printed as they are; with _environment, no prompt for credentials and no
# lock taken only to refresh the index.
_GIT = ("git", "-c", "core.quotepath=off", "--no-pager")


class GitFailed(RememError):
    pass


@dataclass(frozen=True)
class Entry:
    """A blob of a tree: its path there, its object id and its size in bytes."""

    path: str
    blob: str
    size: int


def git(repository: str, *args: str) -> bytes:
    """What a git command printed; GitFailed with git's own words when it failed."""
    try:
        result = subprocess.run(
            [*_GIT, "-C", repository, *args],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=_environment(),
        )
    except FileNotFoundError:
        raise GitFailed("git is not installed: install git to read checkpoints") from None
    if result.returncode != 0:
        said = result.stderr.decode(errors="replace").strip().splitlines()
        raise GitFailed(f"git {args[0]} failed in {repository}: {said[-1] if said else ''}")
    return result.stdout


def _environment() -> dict[str, str]:
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


def refs(repository: str, *patterns: str) -> dict[str, str]:
    """Each ref matching the patterns (for-each-ref's), by name: its commit."""
    out = git(repository, "for-each-ref", "--format=%(objectname) %(refname)", *patterns)
    found = {}
    for line in out.decode(errors="replace").splitlines():
        sha, _, name = line.partition(" ")
        found[name] = sha
    return found


def tree(repository: str, commit: str) -> list[Entry]:
    """Every blob of a commit's tree, recursively, with its size."""
    out = git(repository, "ls-tree", "-r", "-l", "-z", "--full-tree", commit)
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        fields = meta.split()
        if len(fields) == 4 and fields[1] == b"blob" and fields[3].isdigit():
            entries.append(Entry(path.decode(errors="replace"), fields[2].decode(), int(fields[3])))
    return entries


def changed_paths(repository: str, before: str, after: str) -> set[str] | None:
    """The paths added or changed from one commit to another; None when `before` is not an
    object of this repository any more (the branch was rewritten and collected)."""
    try:
        git(repository, "cat-file", "-e", f"{before}^{{commit}}")
    except GitFailed:
        return None
    out = git(repository, "diff-tree", "-r", "-z", "--no-renames", "--name-only", before, after)
    return {path.decode(errors="replace") for path in out.split(b"\0") if path}


def fetch(repository: str, remote: str, branch: str) -> None:
    """`git fetch REMOTE BRANCH`, its remote-tracking ref updated as a plain fetch would."""
    refspec = f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}"
    git(repository, "fetch", "--quiet", remote, refspec)


# Read from git's pipe a megabyte at a time: a transcript of megabytes read through the
# default 8 KiB took a system call, and git a wake-up, every few lines.
PIPE_BUFFER_BYTES = 1 << 20


class Blobs:
    """One `git cat-file --batch` for the blobs of a repository, asked one after another."""

    def __init__(self, repository: str) -> None:
        self.process = subprocess.Popen(
            [*_GIT, "-C", repository, "cat-file", "--batch"],
            bufsize=PIPE_BUFFER_BYTES,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_environment(),
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests: IO[bytes] = self.process.stdin
        self.out: IO[bytes] = self.process.stdout

    def close(self) -> None:
        self.requests.close()
        self.process.wait()

    @contextmanager
    def lines(self, blob: str) -> Iterator[Iterator[tuple[bytes | None, int]]]:
        """The blob's lines as `bounded_lines` gives them; whatever the reader left unread is
        read past when it is done, so the next blob starts where it should."""
        size = self._ask(blob)
        stream = _Bounded(self.out, size)
        try:
            yield bounded_lines(stream, size)  # type: ignore[arg-type]
        finally:
            stream.drain()
            self.out.read(1)  # the newline cat-file writes after each object

    def read(self, blob: str, limit: int) -> bytes | None:
        """A small blob whole; None when it is larger than `limit` (it is read past)."""
        with self.lines(blob) as lines:
            chunks, total = [], 0
            for line, size in lines:
                total += size
                if line is None or total > limit:
                    return None
                chunks.append(line)
            return b"".join(chunks)

    def _ask(self, blob: str) -> int:
        self.requests.write(blob.encode() + b"\n")
        self.requests.flush()
        header = self.out.readline().split()
        if len(header) != 3 or not header[2].isdigit():
            raise GitFailed(f"git cat-file could not read {blob}: {b' '.join(header).decode()}")
        return int(header[2])


class _Bounded:
    """The next `size` bytes of a pipe, read as a file: never a byte past them."""

    def __init__(self, pipe: IO[bytes], size: int) -> None:
        self.pipe = pipe
        self.left = size

    def readline(self, limit: int = -1) -> bytes:
        cap = self.left if limit < 0 else min(limit, self.left)
        line = self.pipe.readline(cap) if cap > 0 else b""
        self.left -= len(line)
        return line

    def drain(self) -> None:
        while self.left > 0:
            chunk = self.pipe.read(min(self.left, 1 << 20))
            if not chunk:
                break
            self.left -= len(chunk)
