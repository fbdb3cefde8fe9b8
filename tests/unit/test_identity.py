from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from remem.record.identity import branch_of, locate

SHA = "3f9a2b7c8d1e4f5a6b7c8d9e0f1a2b3c4d5e6f70"
HAS_GIT = shutil.which("git") is not None


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """tmp_path as locate() reports it: symlinks in it resolved."""
    return tmp_path.resolve()


def make_repo(root: Path, head: str) -> Path:
    git_dir = root / ".git"
    git_dir.mkdir(parents=True)
    (git_dir / "HEAD").write_text(head + "\n", encoding="utf-8")
    return git_dir


def make_worktree(base: Path, gitdir_line: str, commondir: str | None = "../..") -> Path:
    """A linked worktree as `git worktree add` lays it out: its git dir inside the main
    repository's .git/worktrees/, with a `commondir` leading back (None: a submodule-style
    gitdir, which has none)."""
    make_repo(base / "main", "ref: refs/heads/main")
    worktree_git_dir = base / "main" / ".git" / "worktrees" / "wt"
    worktree_git_dir.mkdir(parents=True)
    (worktree_git_dir / "HEAD").write_text("ref: refs/heads/wt-branch\n", encoding="utf-8")
    if commondir is not None:
        (worktree_git_dir / "commondir").write_text(commondir + "\n", encoding="utf-8")
    worktree = base / "wt"
    (worktree / "src").mkdir(parents=True)
    (worktree / ".git").write_text(gitdir_line + "\n", encoding="utf-8")
    return worktree


def git(cwd: Path, *args: str) -> None:
    # Only the test's own configuration: no user or system config changes what git lays out.
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=a", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
    )


def test_branch_and_root_from_a_nested_directory(base: Path) -> None:
    make_repo(base / "shop", "ref: refs/heads/feature/x")
    nested = base / "shop" / "src" / "cart"
    nested.mkdir(parents=True)
    shop = str(base / "shop")

    assert locate(str(nested)) == (shop, "feature/x", shop, "src/cart")


def test_the_root_itself(base: Path) -> None:
    make_repo(base, "ref: refs/heads/main")

    assert locate(str(base)) == (str(base), "main", str(base), ".")


def test_detached_head_has_no_branch(base: Path) -> None:
    make_repo(base / "shop", SHA)
    (base / "shop" / "src").mkdir()
    shop = str(base / "shop")

    assert locate(str(base / "shop" / "src")) == (shop, None, shop, "src")


def test_nearest_repository_wins(base: Path) -> None:
    make_repo(base, "ref: refs/heads/outer")
    make_repo(base / "vendor" / "lib", "ref: refs/heads/inner")
    lib = str(base / "vendor" / "lib")

    assert locate(lib) == (lib, "inner", lib, ".")


def test_worktree_with_a_relative_gitdir(base: Path) -> None:
    worktree = make_worktree(base, "gitdir: ../main/.git/worktrees/wt")

    assert locate(str(worktree / "src")) == (
        str(base / "main"),
        "wt-branch",
        str(worktree),
        "src",
    )


def test_worktree_with_an_absolute_gitdir(base: Path) -> None:
    target = base / "main" / ".git" / "worktrees" / "wt"
    worktree = make_worktree(base, f"gitdir: {target}")

    assert locate(str(worktree / "src")) == (
        str(base / "main"),
        "wt-branch",
        str(worktree),
        "src",
    )


def test_worktree_with_an_absolute_commondir(base: Path) -> None:
    worktree = make_worktree(
        base, "gitdir: ../main/.git/worktrees/wt", commondir=str(base / "main" / ".git")
    )

    assert locate(str(worktree))[:2] == (str(base / "main"), "wt-branch")


def test_a_linked_worktree_and_its_main_checkout_are_one_project(base: Path) -> None:
    worktree = make_worktree(base, "gitdir: ../main/.git/worktrees/wt")
    (base / "main" / "src").mkdir()

    in_main = locate(str(base / "main" / "src"))
    in_worktree = locate(str(worktree / "src"))

    assert in_main[0] == in_worktree[0] == str(base / "main")
    assert (in_main[1], in_worktree[1]) == ("main", "wt-branch")
    assert (in_main[2], in_worktree[2]) == (str(base / "main"), str(worktree))
    assert in_main[3] == in_worktree[3] == "src"


def test_a_submodule_style_gitdir_without_commondir_is_its_own_project(base: Path) -> None:
    make_repo(base / "app", "ref: refs/heads/main")
    module_git_dir = base / "app" / ".git" / "modules" / "lib"
    module_git_dir.mkdir(parents=True)
    (module_git_dir / "HEAD").write_text("ref: refs/heads/vendored\n", encoding="utf-8")
    lib = base / "app" / "lib"
    (lib / "src").mkdir(parents=True)
    (lib / ".git").write_text("gitdir: ../.git/modules/lib\n", encoding="utf-8")

    assert locate(str(lib / "src")) == (str(lib), "vendored", str(lib), "src")


def test_a_hand_made_worktree_without_commondir_is_its_own_project(base: Path) -> None:
    worktree = make_worktree(base, "gitdir: ../main/.git/worktrees/wt", commondir=None)

    assert locate(str(worktree / "src")) == (str(worktree), "wt-branch", str(worktree), "src")


def test_a_symlinked_path_is_the_same_project_as_the_real_one(base: Path) -> None:
    make_repo(base / "shop", "ref: refs/heads/main")
    (base / "shop" / "src").mkdir()
    (base / "link").symlink_to(base / "shop", target_is_directory=True)

    through_link = locate(str(base / "link" / "src"))

    assert through_link == locate(str(base / "shop" / "src"))
    assert through_link == (str(base / "shop"), "main", str(base / "shop"), "src")


def test_a_symlink_to_a_subdirectory_keeps_the_directory(base: Path) -> None:
    make_repo(base / "mono", "ref: refs/heads/main")
    (base / "mono" / "frontend").mkdir()
    (base / "frontend-link").symlink_to(base / "mono" / "frontend", target_is_directory=True)
    mono = str(base / "mono")

    assert locate(str(base / "frontend-link")) == (mono, "main", mono, "frontend")


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_a_real_git_worktree_is_the_same_project_on_its_own_branch(base: Path) -> None:
    main = base / "main"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    git(main, "commit", "-q", "--allow-empty", "-m", "start")
    git(main, "worktree", "add", "-q", "../wt", "-b", "feat")
    (base / "wt" / "web").mkdir()

    in_main = locate(str(main))
    in_worktree = locate(str(base / "wt" / "web"))

    assert in_main == (str(main), "main", str(main), ".")
    assert in_worktree == (str(main), "feat", str(base / "wt"), "web")


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_a_real_bare_repository_is_the_project_of_its_worktrees(base: Path) -> None:
    origin = base / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    git(origin, "commit", "-q", "--allow-empty", "-m", "start")
    git(base, "clone", "-q", "--bare", "origin", "shop.git")
    git(base / "shop.git", "worktree", "add", "-q", "../one", "-b", "one")
    git(base / "shop.git", "worktree", "add", "-q", "../two", "-b", "two")

    one, two = locate(str(base / "one")), locate(str(base / "two"))

    assert one == (str(base / "shop.git"), "one", str(base / "one"), ".")
    assert two == (str(base / "shop.git"), "two", str(base / "two"), ".")


def test_gitfile_that_is_not_a_gitdir_is_skipped(base: Path) -> None:
    make_repo(base, "ref: refs/heads/main")
    inner = base / "inner"
    inner.mkdir()
    (inner / ".git").write_text("not a gitfile\n", encoding="utf-8")

    assert locate(str(inner)) == (str(base), "main", str(base), "inner")


def test_no_repository_gives_cwd_and_no_branch(base: Path) -> None:
    plain = base / "scratch" / "notes"
    plain.mkdir(parents=True)

    assert locate(str(plain)) == (str(plain), None, str(plain), ".")


def test_no_repository_through_a_symlink_gives_the_real_directory(base: Path) -> None:
    plain = base / "scratch"
    plain.mkdir()
    (base / "link").symlink_to(plain, target_is_directory=True)

    assert locate(str(base / "link")) == (str(plain), None, str(plain), ".")


def test_nonexistent_cwd_does_not_raise(base: Path) -> None:
    missing = base / "gone" / "deeper"

    assert locate(str(missing)) == (str(missing), None, str(missing), ".")


def test_nonexistent_cwd_inside_a_repository_finds_the_repository(base: Path) -> None:
    make_repo(base, "ref: refs/heads/main")

    assert locate(str(base / "deleted" / "dir")) == (str(base), "main", str(base), "deleted/dir")


def test_cwd_is_normalised(base: Path) -> None:
    (base / "a").mkdir()
    a = str(base / "a")

    assert locate(f"{base}/a/../a/") == (a, None, a, ".")


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


def test_a_fifo_where_git_reads_a_file_is_refused_without_waiting(base: Path) -> None:
    """A FIFO at `.git/HEAD`, at `commondir` or at `.git` itself has no writer: opened as a
    file, it would block for ever. Each is refused and the walk goes on."""
    outer = base / "outer"
    make_repo(outer, "ref: refs/heads/main")
    (outer / ".git" / "HEAD").unlink()
    os.mkfifo(outer / ".git" / "HEAD")
    os.mkfifo(outer / ".git" / "commondir")
    (outer / "src").mkdir()
    assert locate(str(outer / "src")) == (str(outer), None, str(outer), "src")

    inner = outer / "inner"
    inner.mkdir()
    os.mkfifo(inner / ".git")
    assert locate(str(inner)) == (str(outer), None, str(outer), "inner")


def test_the_origin_is_not_read_from_a_fifo(base: Path) -> None:
    from remem.team.keys import project_key

    make_repo(base / "shop", "ref: refs/heads/main")
    os.mkfifo(base / "shop" / ".git" / "config")
    assert project_key(str(base / "shop")) is None


def test_a_repository_in_a_directory_anyone_may_write_to_is_not_the_project(base: Path) -> None:
    """A sticky world-writable directory (like /tmp) where another account planted a `.git`:
    a directory under it is its own project, with no branch."""
    shared = base / "shared"
    make_repo(shared, "ref: refs/heads/planted")
    shared.chmod(0o1777)
    mine = shared / "mine" / "src"
    mine.mkdir(parents=True)
    assert locate(str(mine)) == (str(mine), None, str(mine), ".")
    shared.chmod(0o755)  # the same repository, once only its owner may write there, is found
    assert locate(str(mine)) == (str(shared), "planted", str(shared), "mine/src")


def test_a_repository_another_user_owns_is_not_the_project(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_repo(base / "shop", "ref: refs/heads/main")
    (base / "shop" / "src").mkdir()
    shop = str(base / "shop")
    assert locate(f"{shop}/src") == (shop, "main", shop, "src")
    # The same tree, seen from an account that owns none of it.
    monkeypatch.setattr(os, "geteuid", lambda: (base / "shop").stat().st_uid + 1)
    assert locate(f"{shop}/src") == (f"{shop}/src", None, f"{shop}/src", ".")
