"""Every error its own known error (DESIGN.md §6), as real processes: sessions through the real
`remem-hook`, a `remem worker --burst`, then what a session elsewhere in the project is told.
Each error is resolved by the first later run that no longer shows it, and its fix is what came
between: the files edited and the commands that passed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.common import add_worktree, make_repository, session_start
from tests.acceptance.test_real_sessions import TRANSCRIPTS, hook, replay_claude
from tests.acceptance.test_truthful_digest import Agent
from tests.conftest import Home

KNOWN_TITLE = "Known errors in this project"


def known_lines(digest: str) -> dict[str, str]:
    """The digest's known errors: each error line (as quoted) -> what it says fixed it."""
    lines = digest.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(KNOWN_TITLE))
    found = {}
    for line in lines[start + 1 :]:
        if not line.startswith('- "'):
            break
        quoted, _sep, fix = line[2:].partition('": ')
        found[json.loads(quoted + '"')] = fix
    return found


def the_one(found: dict[str, str], words: str) -> str:
    (fix,) = [fix for error, fix in found.items() if words in error]
    return fix


def errors_json(home: Home, project: Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = home.json("procedures", "errors", "--project", str(project))
    return found


def test_a_real_session_teaches_each_of_its_errors_with_its_own_fix(
    home: Home, tmp_path: Path
) -> None:
    workspace = tmp_path / "projects"
    repository = make_repository(workspace / "spotter")
    (workspace / "spotter-worktrees").mkdir()
    worktree = add_worktree(
        repository, workspace / "spotter-worktrees" / "spotter-fum", "spotter-fum"
    )
    (worktree / "assets").mkdir()
    replay_claude(
        home, TRANSCRIPTS / "claude" / "spotter-fum.jsonl", "/home/USER/projects", workspace
    )
    home.remem("worker", "--burst")

    fresh = add_worktree(repository, workspace / "spotter-worktrees" / "spotter-new", "new")
    digest = hook(home, session_start(fresh, "next-session"))
    found = known_lines(digest)

    lazy_html = the_one(found, "requires lazy_html as a test dependency")
    assert lazy_html == "fixed after running `mix deps.get` and editing mix.exs"
    secret = the_one(found, "no :secret_key_base configuration found")
    assert secret == "fixed after editing config/test.exs"
    # The branch's name is masked where it names the branch.
    upstream = the_one(found, "has no upstream branch")
    assert upstream == "fixed after running `git push --set-upstream origin <branch>`"
    assert "The current branch <branch> has no upstream branch." in "\n".join(found)
    known = errors_json(home, repository)
    (lazy,) = [k for k in known if "lazy_html" in k["error"]]
    assert (lazy["fix_files"], lazy["fix_commands"]) == (["mix.exs"], ["mix deps.get"])
    assert lazy["workflow"] == "mix test <test file>"  # runs on any test file: one family
    assert lazy["branch"] == "spotter-fum" and lazy["resolved_at"] is not None
    # The asset build failed from the root and passed from assets/, with no edit between.
    (build,) = [k for k in known if k.get("kind") == "substitution" and "build.js" in k["workflow"]]
    assert (build["workflow"], build["instead_workflow"], build["instead_directory"]) == (
        "node assets/build.js",
        "node build.js",
        "assets",
    )
    assert "— `node build.js 2>&1` in assets/ passed instead" in digest


def test_a_fix_that_was_a_command_is_named(home: Home, tmp_path: Path) -> None:
    project = make_repository(tmp_path / "pkg")
    agent = Agent(home, project)
    agent.edited("src/pkg/cli.py", "s1", "return main()")
    agent.failed(
        "pytest -q",
        "s1",
        "Exit code 2\nImportError while loading conftest '/w/pkg/tests/conftest.py'.\n"
        "tests/conftest.py:3: in <module>\n    import pkg\n"
        "E   ModuleNotFoundError: No module named 'pkg'\n1 error in 0.31s",
    )
    agent.ran(".venv/bin/pip install -e .", "s1")
    agent.ran("git status", "s1")  # read-only: never a fix
    agent.ran("pytest -q", "s1")
    home.remem("worker", "--burst")

    found = known_lines(hook(home, session_start(project, "s2")))
    fix = the_one(found, "No module named 'pkg'")
    assert fix == "fixed after running `.venv/bin/pip install -e .`"


def test_a_commit_refused_by_a_formatter_is_fixed_by_running_it(home: Home, tmp_path: Path) -> None:
    project = make_repository(tmp_path / "cart")
    agent = Agent(home, project)
    agent.edited("lib/cart.ex", "s1", "def total(items), do: Enum.sum(items)")
    agent.ran("git add lib/cart.ex", "s1")
    agent.failed(
        'git commit -m "Add the cart"',
        "s1",
        "Exit code 1\nmix format...............................................Failed\n"
        "- hook id: mix-format\n- exit code: 1\n\n"
        "** (Mix) mix format failed due to --check-formatted.\n"
        "The following files are not formatted:\n  * lib/cart.ex",
    )
    agent.ran("mix format", "s1")
    agent.ran("git add -u", "s1")
    agent.ran('git commit -m "Cart: total sums the items"', "s1")  # another message
    home.remem("worker", "--burst")

    digest = hook(home, session_start(project, "s2"))
    found = known_lines(digest)
    (fix,) = found.values()
    assert fix == "fixed after running `mix format`"  # `git add` is read-only
    (known,) = errors_json(home, project)
    assert known["workflow"] == "git commit -m …"  # one workflow, whatever the message
    shown = digest + json.dumps(known)
    assert "Add the cart" not in shown and "total sums" not in shown


def test_a_missing_upstream_is_fixed_by_the_push_that_sets_it_on_every_branch(
    home: Home, tmp_path: Path
) -> None:
    repository = make_repository(tmp_path / "shop")
    first = add_worktree(repository, tmp_path / "shop-a", "feat-a")
    agent = Agent(home, first)
    agent.edited("src/cart.py", "s1", "return 3")  # before the push: no part of its fix
    agent.ran('git commit -am "cart"', "s1")
    agent.failed(
        "git push",
        "s1",
        "Exit code 128\nfatal: The current branch feat-a has no upstream branch.\n"
        "To push the current branch and set the remote as upstream, use\n\n"
        "    git push --set-upstream origin feat-a\n",
    )
    agent.ran("git push --set-upstream origin feat-a", "s1")
    agent.edited("src/tax.py", "s1", "return 1")  # after the fix: no part of it either
    home.remem("worker", "--burst")

    other = add_worktree(repository, tmp_path / "shop-b", "feat-b")
    found = known_lines(hook(home, session_start(other, "s2")))
    assert found == {
        "fatal: The current branch <branch> has no upstream branch.": (
            "fixed after running `git push --set-upstream origin <branch>`"
        )
    }
    (known,) = errors_json(home, repository)
    assert (known["branch"], known["workflow"], known["fix_files"]) == ("feat-a", "git push", [])


def test_an_error_never_fixed_says_how_often_it_was_seen(home: Home, tmp_path: Path) -> None:
    project = make_repository(tmp_path / "native")
    for session in ("s1", "s2"):
        agent = Agent(home, project)
        agent.failed("make build", session, "Exit code 2\nerror: linker `cc` not found")
        agent.edited("Makefile", session, "CC=gcc")
        agent.ran("make clean", session)
    home.remem("worker", "--burst")

    found = known_lines(hook(home, session_start(project, "s3")))
    assert found == {"error: linker `cc` not found": "seen 2 times, not yet fixed"}
    # The two sessions' failures are one stretch of attempts showing the error.
    (known,) = errors_json(home, project)
    assert (known["times_seen"], known["sessions"], known["resolved_at"]) == (2, 2, None)
    assert (known["fix_files"], known["fix_commands"]) == ([], [])
    table = home.remem("procedures", "errors", "--project", str(project)).stdout
    assert "linker" in table and "make build" in table
