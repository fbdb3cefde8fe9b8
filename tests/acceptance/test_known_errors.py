"""Every error its own known error (DESIGN.md §6), as real processes: sessions through the real
`remem-hook`, a `remem worker --burst`, then what a session elsewhere in the project is told.
Each error is resolved by the first later run that no longer shows it, and its fix is what came
between: the files edited and the commands that passed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.acceptance.test_real_sessions import (
    TRANSCRIPTS,
    add_worktree,
    hook,
    make_repository,
    replay_claude,
    session_start,
)
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
    found = known_lines(hook(home, session_start(fresh, "next-session")))

    lazy_html = the_one(found, "requires lazy_html as a test dependency")
    assert lazy_html == "fixed after editing mix.exs and running `mix deps.get`"
    print(json.dumps(errors_json(home, repository), indent=1))
    print(found)
    secret = the_one(found, "no :secret_key_base configuration found")
    assert secret == "fixed after editing config/test.exs"
    # The branch's name is masked where it names the branch.
    upstream = the_one(found, "has no upstream branch")
    assert upstream == "fixed after running `git push --set-upstream origin <branch>`"
    assert "The current branch <branch> has no upstream branch." in "\n".join(found)
    known = errors_json(home, repository)
    (lazy,) = [k for k in known if "lazy_html" in k["error"]]
    assert (lazy["fix_files"], lazy["fix_commands"]) == (["mix.exs"], ["mix deps.get"])
    assert lazy["workflow"] == "mix test test/spotter_web/live/session_live_test.exs"
    assert lazy["branch"] == "spotter-fum" and lazy["resolved_at"] is not None
