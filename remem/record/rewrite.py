"""Taking lines out of text files in place: how `forget` removes what it forgets from the spool
and the logs. Stdlib only and cheap to import: the spool, which the hook imports, uses it.
"""

from __future__ import annotations

import fcntl
import os

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Callable

    Matches = Callable[[bytes], bool]

TEMPORARY_PREFIX = ".rewrite-"


def visible_files(directory: str) -> list[str]:
    """A directory's regular files as sorted paths, less dot files (locks, temporaries)."""
    if not os.path.isdir(directory):
        return []
    return sorted(
        os.path.join(directory, name)
        for name in os.listdir(directory)
        if not name.startswith(".") and os.path.isfile(os.path.join(directory, name))
    )


def count_matching(paths: list[str], matches: Matches) -> dict[str, int]:
    """Matching lines per file (by name), for the files that have any."""
    counts = {}
    for path in paths:
        with open(path, "rb") as handle:
            found = sum(1 for line in split_lines(handle.read()) if matches(line))
        if found:
            counts[os.path.basename(path)] = found
    return counts


def split_lines(data: bytes) -> list[bytes]:
    """Lines without their newline; an unterminated last line is a line too."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


def without(data: bytes, matches: Matches) -> bytes:
    lines = split_lines(data)
    torn = bool(data) and not data.endswith(b"\n")
    kept = []
    for number, line in enumerate(lines, start=1):
        if not matches(line):
            # A torn last line stays torn: its writer may still end it, or a reader may refuse it.
            kept.append(line if torn and number == len(lines) else line + b"\n")
    return b"".join(kept)


def rewrite_without(path: str, matches: Matches, lock: bool = False) -> None:
    """Replace the file by a private (0600) copy without the matching lines. With `lock`, the
    copy is made under an exclusive flock on the file, for writers that take one."""
    import contextlib
    import tempfile  # costs the hook milliseconds: only a rewrite imports it

    with open(path, "rb") as handle:
        if lock:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        data = handle.read()
        descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=TEMPORARY_PREFIX)
        try:
            with os.fdopen(descriptor, "wb") as out:
                out.write(without(data, matches))
                # A writer that takes no lock may have appended meanwhile: kept, filtered.
                out.write(without(handle.read(), matches))
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
