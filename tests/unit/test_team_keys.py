"""The project key (remem/team/keys.py): remotes normalised, git config read as git reads it;
and the [team] settings that say which keys are shared, and where."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.config import load_settings
from remem.errors import ConfigError
from remem.team.keys import config_entries, is_shared, normalise_remote, origin_url, project_key

KEY = "github.com/org/repo"


def make_repository(root: Path) -> str:
    """A work tree as `git init` lays out what remem reads: `.git` with HEAD."""
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return str(root)


def make_worktree(repository: Path, root: Path, branch: str) -> str:
    """A linked worktree, as `git worktree add` lays it out."""
    git_dir = repository / ".git" / "worktrees" / root.name
    git_dir.mkdir(parents=True)
    (git_dir / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    (git_dir / "commondir").write_text("../..\n")
    root.mkdir(parents=True)
    (root / ".git").write_text(f"gitdir: {git_dir}\n")
    return str(root)


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:org/repo.git",
        "https://github.com/org/repo",
        "ssh://git@github.com/org/repo",
        "ssh://git@github.com:22/org/repo.git",  # a port
        "https://github.com:443/org/repo",
        "https://GitHub.COM/org/repo.git",  # the host's case
        "https://github.com/org/repo/",  # trailing slashes
        "https://github.com//org/repo.git//",
        "git@github.com:/org/repo.git",
        "github.com:org/repo",  # scp-like without a user
        "https://user:s3cret-token@github.com/org/repo",  # credentials never reach the key
        "git+ssh://git@github.com/org/repo",
        "git://github.com/org/repo.git",
        "  https://github.com/org/repo\n",
        "https://github.com/org/repo.git?ref=main#readme",
    ],
)
def test_every_way_of_writing_a_remote_is_one_key(url: str) -> None:
    assert normalise_remote(url) == KEY


def test_the_path_keeps_its_case_and_subgroups() -> None:
    assert normalise_remote("git@gitlab.com:Group/Sub/Repo.git") == "gitlab.com/Group/Sub/Repo"
    assert normalise_remote("ssh://git@[2001:db8::1]:2222/org/repo") == "2001:db8::1/org/repo"


@pytest.mark.parametrize(
    "url",
    [
        "/srv/git/repo.git",  # local paths
        "../repo",
        "./repo",
        "repo",
        "~/src/repo",
        "file:///srv/git/repo.git",
        "FILE:///srv/git/repo.git",
        "file://host/srv/repo",
        "C:\\src\\repo",  # a Windows drive is not a host
        "C:/src/repo",
        "ssh://localhost/srv/repo.git",  # this machine over the network: still a local path
        "git@127.0.0.1:srv/repo.git",
        "ssh://[::1]/srv/repo",
        "codecommit::eu-west-1://repo",  # a remote helper's address
        "https://github.com",  # a host alone
        "https://github.com/",
        "https://github.com/org/../repo",
        "",
        "   ",
    ],
)
def test_a_local_path_or_an_unusable_remote_has_no_key(url: str) -> None:
    assert normalise_remote(url) is None


CONFIG = """\
[core]
\trepositoryformatversion = 0
\tbare = false
[remote "upstream"]
\turl = git@github.com:other/repo.git
[Remote "origin"] ; the section name is case-insensitive
\tURL = "git@github.com:org/repo.git" # a comment
\turl = https://mirror.example.org/org/repo
\tfetch = +refs/heads/*:refs/remotes/origin/*
[branch "main"]
\tremote = origin
"""


def test_origin_url_is_the_first_url_of_remote_origin() -> None:
    assert origin_url(CONFIG) == "git@github.com:org/repo.git"


def test_a_subsection_is_case_sensitive_and_the_old_dotted_form_is_not() -> None:
    assert origin_url('[remote "Origin"]\nurl = git@h:a/b\n') is None
    assert origin_url("[remote.Origin]\nurl = git@h:a/b\n") == "git@h:a/b"


def test_config_values_as_git_reads_them() -> None:
    text = (
        '[remote "or\\"igin"] url = "a # b" ; comment\n'
        "[x]\n"
        "  flag\n"
        "  spaced =   several words   \n"
        '  quoted = "  kept  "\n'
        "  escaped = tab\\there\n"
        "  joined = first \\\n"
        "second\n"
        "  # url = commented out\n"
    )
    assert config_entries(text) == [
        (("remote", 'or"igin'), "url", "a # b"),
        (("x", None), "flag", None),
        (("x", None), "spaced", "several words"),
        (("x", None), "quoted", "  kept  "),
        (("x", None), "escaped", "tab\there"),
        (("x", None), "joined", "first second"),
    ]


def _set_origin(git_dir: Path, url: str | None) -> None:
    remote = "" if url is None else f'[remote "origin"]\n\turl = {url}\n'
    (git_dir / "config").write_text(f"[core]\n\tbare = false\n{remote}")


def test_project_key_of_a_repository(tmp_path: Path) -> None:
    root = make_repository(tmp_path / "shop")
    _set_origin(Path(root) / ".git", "git@github.com:org/shop.git")
    assert project_key(root) == "github.com/org/shop"


def test_a_repository_without_origin_has_no_key(tmp_path: Path) -> None:
    root = make_repository(tmp_path / "shop")
    _set_origin(Path(root) / ".git", None)
    assert project_key(root) is None
    (Path(root) / ".git" / "config").unlink()
    assert project_key(root) is None


def test_a_directory_outside_any_repository_has_no_key(tmp_path: Path) -> None:
    assert project_key(str(tmp_path)) is None


def test_a_repository_whose_origin_is_a_local_path_has_no_key(tmp_path: Path) -> None:
    root = make_repository(tmp_path / "shop")
    _set_origin(Path(root) / ".git", str(tmp_path / "upstream.git"))
    assert project_key(root) is None


def test_a_worktree_reads_the_config_of_its_common_dir(tmp_path: Path) -> None:
    main = Path(make_repository(tmp_path / "shop"))
    _set_origin(main / ".git", "https://github.com/org/shop")
    linked = make_worktree(main, tmp_path / "shop-fix", "fix")
    assert project_key(linked) == "github.com/org/shop"


def test_a_submodule_has_the_key_of_its_own_origin(tmp_path: Path) -> None:
    parent = Path(make_repository(tmp_path / "app"))
    module_dir = parent / ".git" / "modules" / "lib"
    module_dir.mkdir(parents=True)
    (module_dir / "HEAD").write_text("ref: refs/heads/main\n")
    _set_origin(module_dir, "git@github.com:org/lib.git")
    (parent / "lib").mkdir()
    (parent / "lib" / ".git").write_text("gitdir: ../.git/modules/lib\n")
    assert project_key(str(parent / "lib")) == "github.com/org/lib"


def test_a_bare_repository_is_its_own_git_dir(tmp_path: Path) -> None:
    bare = tmp_path / "shop.git"
    bare.mkdir()
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    _set_origin(bare, "git@github.com:org/shop.git")
    assert project_key(str(bare)) == "github.com/org/shop"


def test_origin_url_reads_what_git_itself_wrote(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    url = 'https://github.com/org/shop.git#a;b "c" \\d'
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", url], check=True)
    written = (root / ".git" / "config").read_text()
    assert origin_url(written) == url
    assert project_key(str(root)) == "github.com/org/shop"


@pytest.mark.parametrize(
    ("key", "patterns", "shared"),
    [
        (KEY, ("github.com/org/*",), True),
        (KEY, ("github.com/other/*", KEY), True),
        ("gitlab.com/org/sub/repo", ("gitlab.com/org/*",), True),
        (KEY, ("github.com/Org/*",), False),  # keys are compared as written
        (KEY, (), False),  # nothing is shared unless a pattern says so
        (None, ("*",), False),  # no remote: never shared
    ],
)
def test_only_keys_a_pattern_matches_are_shared(
    key: str | None, patterns: tuple[str, ...], shared: bool
) -> None:
    assert is_shared(key, patterns) is shared


# ---- the [team] settings ------------------------------------------------------------------------


def test_team_settings_default_to_no_team(tmp_path: Path) -> None:
    settings = load_settings({"REMEM_HOME": str(tmp_path)})
    assert settings.team_database_url == ""
    assert settings.team_machine == os.uname().nodename
    assert (settings.team_share, settings.team_promote) == ((), False)


def test_team_settings_from_the_file_and_the_environment(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        "[team]\n"
        'database_url = "postgresql+psycopg://remem@db.internal/team"\n'
        'machine = "build-box"\n'
        'share = ["github.com/org/*"]\n'
        "promote = true\n"
    )
    settings = load_settings({"REMEM_HOME": str(tmp_path)})
    assert settings.team_database_url == "postgresql+psycopg://remem@db.internal/team"
    assert settings.team_machine == "build-box"
    assert (settings.team_share, settings.team_promote) == (("github.com/org/*",), True)
    overridden = load_settings(
        {
            "REMEM_HOME": str(tmp_path),
            "REMEM_TEAM_SHARE": "github.com/org/*, gitlab.com/team/*",
            "REMEM_TEAM_PROMOTE": "no",
        }
    )
    assert overridden.team_share == ("github.com/org/*", "gitlab.com/team/*")
    assert overridden.team_promote is False


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('database_url = "sqlite:///team.db"', "must be a PostgreSQL URL"),
        ('database_url = "mysql://db/team"', "must be a PostgreSQL URL"),
        ('promote = "sometimes"', "must be true or false"),
        ("machine = 3", "must be a string"),
    ],
)
def test_a_wrong_team_setting_is_one_line_naming_it(
    tmp_path: Path, line: str, problem: str
) -> None:
    (tmp_path / "config.toml").write_text(f"[team]\n{line}\n")
    with pytest.raises(ConfigError) as caught:
        load_settings({"REMEM_HOME": str(tmp_path)})
    message = str(caught.value)
    key = line.split(" ", 1)[0]
    assert len(message.splitlines()) == 1
    assert f"line 2: `team.{key}` {problem}" in message


def test_the_hook_imports_nothing_of_the_team() -> None:
    probe = (
        "import sys, remem.hook; "
        "print([m for m in sys.modules if m.startswith(('remem.team', 'tomllib', "
        "'sqlalchemy', 'psycopg'))])"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout == "[]\n"
