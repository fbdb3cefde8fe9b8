"""Forgetting in the files outside the database: the drafts remem wrote, which go, and the
agents' transcripts, whose matching lines are rewritten in place when asked."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
from typing import Any

from remem.forgetting.selection import Draft, mask_matches
from remem.regex import Regex

BACKUP_SUFFIX = ".remem-backup"


def delete_drafts(drafts: tuple[Draft, ...]) -> list[str]:
    """Delete the drafts' files (a person's edits of them too: they quote what is forgotten),
    and a skill's folder left empty. Returns the paths deleted."""
    deleted = []
    for draft in drafts:
        try:
            os.unlink(draft.path)
        except FileNotFoundError:
            continue
        deleted.append(draft.path)
        with contextlib.suppress(OSError):  # not empty, or not ours: kept
            if os.path.basename(draft.path) == "SKILL.md":
                os.rmdir(os.path.dirname(draft.path))
    return deleted


def rewrite_transcript(path: str, pattern: Regex, backup: bool) -> int:
    """Rewrite the lines of one transcript that quote the match, each match (and the word
    holding it) replaced: atomically, by a copy renamed over the file, keeping its mode. With
    backup, the file as it was is kept beside it (it still holds the text). Returns the lines
    rewritten."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    with open(path, "rb") as handle:
        descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".remem-")
        try:
            with os.fdopen(descriptor, "wb") as out:
                rewritten = _copy(handle, out, pattern)
                # The agent may have appended meanwhile (a live session): kept, rewritten.
                rewritten += _copy(handle, out, pattern)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temporary, mode)
            if backup:
                shutil.copy2(path, path + BACKUP_SUFFIX)
                os.chmod(path + BACKUP_SUFFIX, 0o600)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
    return rewritten


def _copy(source: Any, out: Any, pattern: Regex) -> int:
    rewritten = 0
    for raw in source:
        line = raw.decode("utf-8", "surrogateescape")
        if pattern.search(line):
            line = rewrite_line(line, pattern)
            rewritten += 1
        out.write(line.encode("utf-8", "surrogateescape"))
    return rewritten


def rewrite_line(line: str, pattern: Regex) -> str:
    """A JSON line keeps its shape: the match goes from the strings it holds. A line that is
    not JSON, or whose match spans its syntax, is masked as text."""
    ending = "\n" if line.endswith("\n") else ""
    try:
        value = json.loads(line)
    except ValueError:
        return mask_matches(pattern, line)
    kept = json.dumps(_masked(value, pattern), ensure_ascii=False, separators=(",", ":"))
    if pattern.search(kept):
        kept = mask_matches(pattern, kept)
    return kept + ending


def _masked(value: Any, pattern: Regex) -> Any:
    if isinstance(value, str):
        return mask_matches(pattern, value)
    if isinstance(value, list):
        return [_masked(item, pattern) for item in value]
    if isinstance(value, dict):
        return {_masked(key, pattern): _masked(item, pattern) for key, item in value.items()}
    return value
