"""Reading a file an agent wrote (a transcript, a rollout), line by line and within bounds: only
a regular file, up to the size it had when opened, and no line longer than MAX_LINE_BYTES held
in memory. A FIFO would block its reader for ever and a device never ends; a line of gigabytes
would take the memory with it. Stdlib only: the hook reads a repository's HEAD through it.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path (identity reads here)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO

# The longest line read; a longer one is skipped whole (and counted by the caller). A Claude
# Code line holding a pasted image runs to a few MiB.
MAX_LINE_BYTES = 16 * 1024 * 1024
_SKIP_BYTES = 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFile(OSError):
    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path} is {kind}, not a regular file")
        self.kind = kind


def file_kind(mode: int) -> str | None:
    """What a file that is not a regular file is ("a FIFO"); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str) -> BinaryIO:
    """The file at path for reading; NotRegularFile when it is anything else. It is opened
    without waiting (a FIFO's open waits for a writer) and judged by what was opened."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        kind = file_kind(os.fstat(descriptor).st_mode)
        if kind is not None:
            raise NotRegularFile(path, kind)
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def bounded_lines(handle: BinaryIO, size: int | None = None) -> Iterator[tuple[bytes | None, int]]:
    """(line, bytes) for each line up to the size the file had when opened (or `size` bytes of
    a stream, a pipe that goes on after them); the line is None when it is longer than
    MAX_LINE_BYTES (it was skipped). What a writer appends meanwhile is the next reading's."""
    remaining = os.fstat(handle.fileno()).st_size if size is None else size
    while remaining > 0:
        line = handle.readline(min(MAX_LINE_BYTES + 1, remaining))
        if not line:
            return
        remaining -= len(line)
        if len(line) <= MAX_LINE_BYTES:
            yield line, len(line)
            continue
        skipped = len(line)
        while remaining > 0 and not line.endswith(b"\n"):
            line = handle.readline(min(_SKIP_BYTES, remaining))
            if not line:
                break
            remaining -= len(line)
            skipped += len(line)
        yield None, skipped
