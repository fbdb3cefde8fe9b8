"""Project root and branch of a working directory, read from .git without spawning git."""

from __future__ import annotations

import os

_HEAD_REF = "ref: refs/heads/"


def _read_small(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(4096).strip()
    except OSError:
        return None


def _git_dir(dot_git: str) -> str | None:
    """The directory holding HEAD: .git itself, or where a worktree's/submodule's gitfile points."""
    if os.path.isdir(dot_git):
        return dot_git
    content = _read_small(dot_git)
    if content is None or not content.startswith("gitdir:"):
        return None
    target = content[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(os.path.dirname(dot_git), target))


def branch_of(git_dir: str) -> str | None:
    """The checked-out branch; None when HEAD is detached or unreadable."""
    head = _read_small(os.path.join(git_dir, "HEAD"))
    if head is None or not head.startswith(_HEAD_REF):
        return None
    return head[len(_HEAD_REF) :] or None


def locate(cwd: str) -> tuple[str, str | None]:
    """(project root, branch): the nearest work-tree root above cwd, else cwd with no branch."""
    directory = os.path.normpath(cwd) if cwd else "/"
    while True:
        dot_git = os.path.join(directory, ".git")
        if os.path.lexists(dot_git):
            git_dir = _git_dir(dot_git)
            if git_dir is not None:
                return directory, branch_of(git_dir)
        parent = os.path.dirname(directory)
        if parent == directory:
            return os.path.normpath(cwd) if cwd else "/", None
        directory = parent
