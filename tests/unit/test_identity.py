from __future__ import annotations

from pathlib import Path

import pytest

from remem.capture.identity import branch_of, locate

SHA = "3f9a2b7c8d1e4f5a6b7c8d9e0f1a2b3c4d5e6f70"


def make_repo(root: Path, head: str) -> Path:
    git_dir = root / ".git"
    git_dir.mkdir(parents=True)
    (git_dir / "HEAD").write_text(head + "\n", encoding="utf-8")
    return git_dir


def make_worktree(tmp_path: Path, gitdir_line: str) -> Path:
    make_repo(tmp_path / "main", "ref: refs/heads/main")
    worktree_git_dir = tmp_path / "main" / ".git" / "worktrees" / "wt"
    worktree_git_dir.mkdir(parents=True)
    (worktree_git_dir / "HEAD").write_text("ref: refs/heads/wt-branch\n", encoding="utf-8")
    worktree = tmp_path / "wt"
    (worktree / "src").mkdir(parents=True)
    (worktree / ".git").write_text(gitdir_line + "\n", encoding="utf-8")
    return worktree


def test_branch_and_root_from_a_nested_directory(tmp_path: Path) -> None:
    make_repo(tmp_path / "shop", "ref: refs/heads/feature/x")
    nested = tmp_path / "shop" / "src" / "cart"
    nested.mkdir(parents=True)

    assert locate(str(nested)) == (str(tmp_path / "shop"), "feature/x")


def test_the_root_itself(tmp_path: Path) -> None:
    make_repo(tmp_path, "ref: refs/heads/main")

    assert locate(str(tmp_path)) == (str(tmp_path), "main")


def test_detached_head_has_no_branch(tmp_path: Path) -> None:
    make_repo(tmp_path / "shop", SHA)
    (tmp_path / "shop" / "src").mkdir()

    assert locate(str(tmp_path / "shop" / "src")) == (str(tmp_path / "shop"), None)


def test_nearest_repository_wins(tmp_path: Path) -> None:
    make_repo(tmp_path, "ref: refs/heads/outer")
    make_repo(tmp_path / "vendor" / "lib", "ref: refs/heads/inner")

    assert locate(str(tmp_path / "vendor" / "lib")) == (str(tmp_path / "vendor" / "lib"), "inner")


def test_worktree_with_a_relative_gitdir(tmp_path: Path) -> None:
    worktree = make_worktree(tmp_path, "gitdir: ../main/.git/worktrees/wt")

    assert locate(str(worktree / "src")) == (str(worktree), "wt-branch")


def test_worktree_with_an_absolute_gitdir(tmp_path: Path) -> None:
    target = tmp_path / "main" / ".git" / "worktrees" / "wt"
    worktree = make_worktree(tmp_path, f"gitdir: {target}")

    assert locate(str(worktree / "src")) == (str(worktree), "wt-branch")


def test_gitfile_that_is_not_a_gitdir_is_skipped(tmp_path: Path) -> None:
    make_repo(tmp_path, "ref: refs/heads/main")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / ".git").write_text("not a gitfile\n", encoding="utf-8")

    assert locate(str(inner)) == (str(tmp_path), "main")


def test_no_repository_gives_cwd_and_no_branch(tmp_path: Path) -> None:
    plain = tmp_path / "scratch" / "notes"
    plain.mkdir(parents=True)

    assert locate(str(plain)) == (str(plain), None)


def test_nonexistent_cwd_does_not_raise(tmp_path: Path) -> None:
    missing = tmp_path / "gone" / "deeper"

    assert locate(str(missing)) == (str(missing), None)


def test_nonexistent_cwd_inside_a_repository_finds_the_repository(tmp_path: Path) -> None:
    make_repo(tmp_path, "ref: refs/heads/main")

    assert locate(str(tmp_path / "deleted" / "dir")) == (str(tmp_path), "main")


def test_cwd_is_normalised(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()

    assert locate(f"{tmp_path}/a/../a/") == (str(tmp_path / "a"), None)


@pytest.mark.parametrize(
    ("head", "branch"),
    [
        ("ref: refs/heads/main", "main"),
        ("ref: refs/heads/feature/x", "feature/x"),
        (SHA, None),
        ("ref: refs/heads/", None),
        ("ref: refs/remotes/origin/main", None),
    ],
)
def test_branch_of_reads_head(tmp_path: Path, head: str, branch: str | None) -> None:
    assert branch_of(str(make_repo(tmp_path, head))) == branch


def test_branch_of_a_directory_without_head(tmp_path: Path) -> None:
    assert branch_of(str(tmp_path)) is None
