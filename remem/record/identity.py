"""Project, branch and directory of a working directory, read from .git without spawning git.

A project is the repository, not the checkout: every worktree of a repository (a `.git` file
pointing into the main repository's `.git/worktrees/NAME`, whose `commondir` leads back) is the
same project, rooted at the main work tree; the branch and the directory stay the worktree's
own. Symlinks are resolved, so two spellings of one directory are one project.

Whatever lies in a parent directory may be planted (another account's `/tmp/.git`, a FIFO at
`.git/HEAD` in a tarball): a file is read only when it is a regular one, opened without waiting
for a writer, and the walk up stops at a directory another user owns or anyone may write to
(sticky and world-writable, like `/tmp`).
"""

from __future__ import annotations

import os
import stat

from remem.record.lines import open_regular

_HEAD_REF = "ref: refs/heads/"


def read_regular(path: str, limit: int) -> str | None:
    """The first `limit` bytes of a regular file as text; None for anything else (a FIFO, a
    device, a directory: remem.record.lines.open_regular) and for what cannot be read."""
    try:
        with open_regular(path) as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:  # NotRegularFile included
        return None


def _read_small(path: str) -> str | None:
    text = read_regular(path, 4096)
    return None if text is None else text.strip()


def _trusted(directory: str, uid: int) -> bool:
    """Whether a repository found in the directory may be taken for the user's: it is theirs,
    and not one where anyone may put a `.git` (sticky and world-writable)."""
    try:
        status = os.stat(directory)
    except OSError:  # a directory that is gone (or hidden) holds nothing to read either
        return True
    shared = status.st_mode & stat.S_ISVTX and status.st_mode & stat.S_IWOTH
    return status.st_uid == uid and not shared


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


def repository_root(work_tree: str, git_dir: str) -> str:
    """The main work tree of the repository a checkout belongs to. A linked worktree's git dir
    names the shared one in `commondir`; a submodule's has none and is its own project."""
    common = _read_small(os.path.join(git_dir, "commondir"))
    if not common:
        return work_tree
    common_dir = os.path.realpath(os.path.join(git_dir, common))
    if os.path.basename(common_dir) == ".git":
        return os.path.dirname(common_dir)
    return common_dir  # a bare repository's worktrees: the repository is the project


def locate(cwd: str) -> tuple[str, str | None, str, str]:
    """(project root, branch, work tree root, cwd relative to that root); outside any
    repository the directory itself is the project and its work tree, with no branch."""
    start = os.path.realpath(cwd) if cwd else "/"
    directory, uid = start, os.geteuid()
    while True:
        if not _trusted(directory, uid):
            return start, None, start, "."
        dot_git = os.path.join(directory, ".git")
        if os.path.lexists(dot_git):
            git_dir = _git_dir(dot_git)
            if git_dir is not None:
                relative = os.path.relpath(start, directory)
                root = repository_root(directory, git_dir)
                return root, branch_of(git_dir), directory, relative
        parent = os.path.dirname(directory)
        if parent == directory:
            return start, None, start, "."
        directory = parent


def locate_given(path: str | None) -> tuple[str, str | None, str, str]:
    """`locate` of a directory a person or an agent named (`~` expanded; default: the
    current directory)."""
    return locate(os.path.expanduser(path or os.getcwd()))


def spelt_root(cwd: str, directory: str) -> str:
    """The work tree's root as the agent spelt it: cwd less its directory's components; ""
    when cwd does not end with them (a symlink into the work tree names it otherwise)."""
    root = os.path.normpath(cwd)
    if directory in (".", ""):
        return root
    if not root.endswith("/" + directory):
        return ""
    return root[: -len(directory) - 1] or "/"


def directory_under(cwd: str, root: str) -> str:
    """cwd relative to a root it lies in, "." when it does not: what an event stored before
    directories were recorded gets, its project root being then its work tree's."""
    relative = os.path.relpath(os.path.normpath(cwd), root)
    return "." if relative == ".." or relative.startswith("../") else relative
