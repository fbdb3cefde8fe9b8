"""A compound command's failure goes to the step that failed (DESIGN.md §5, §6), as real
processes: Claude Code and Codex payloads through `remem-hook`, a `remem worker --burst`, then
what the person and the next session are told. git's common refusals say which step failed;
the steps after it never ran and are never blamed; a commit message stays out of every table."""

from __future__ import annotations

import json
from pathlib import Path

from bench.common import add_worktree, make_repository, session_start
from tests.acceptance.test_known_errors import errors_json, known_lines
from tests.acceptance.test_real_sessions import hook
from tests.acceptance.test_truthful_digest import Agent, Codex
from tests.conftest import Home

# The message a commit carries in a heredoc, as agents write it: twenty lines.
MESSAGE_LINES = [f"Cart: line {n} of why the totals are rounded per line" for n in range(20)]
MESSAGE = "\n".join(MESSAGE_LINES)


def commit(*paths: str) -> str:
    """`git add PATHS && git commit -m "$(cat <<'EOF' ... EOF)"`."""
    return f"git add {' '.join(paths)} && git commit -m \"$(cat <<'EOF'\n{MESSAGE}\nEOF\n)\""


IGNORED = (
    "Exit code 1\nThe following paths are ignored by one of your .gitignore files:\n"
    "notes/plan.md\nhint: Use -f if you really want to add them.\n"
    'hint: Turn this message off by running\nhint: "git config advice.addIgnoredFile false"'
)
NO_UPSTREAM = (
    "[feat-a 5d889b0] Cart: totals\n 1 file changed, 1 insertion(+)\n"
    "fatal: The current branch feat-a has no upstream branch.\n"
    "To push the current branch and set the remote as upstream, use\n\n"
    "    git push --set-upstream origin feat-a\n"
)
REJECTED = (
    "To github.com:shop/cart.git\n ! [rejected]        main -> main (fetch first)\n"
    "error: failed to push some refs to 'github.com:shop/cart.git'\n"
    "hint: Updates were rejected because the remote contains work that you do\n"
    "hint: not have locally."
)
CONFLICT = (
    "Auto-merging src/cart.py\nCONFLICT (content): Merge conflict in src/cart.py\n"
    "Automatic merge failed; fix conflicts and then commit the result."
)


def shown(home: Home, project: Path) -> str:
    """Everything a person or the next session reads about the project's errors."""
    return "\n".join(
        [
            home.remem("procedures", "errors", "--project", str(project)).stdout,
            json.dumps(errors_json(home, project)),
            home.remem("procedures", "list", "--all").stdout,
            home.remem("context", "--cwd", str(project)).stdout,
            hook(home, session_start(project, "next")),
        ]
    )


def test_an_ignored_path_fails_the_add_and_never_the_commit_after_it(
    home: Home, tmp_path: Path
) -> None:
    project = make_repository(tmp_path / "shop")
    agent = Agent(home, project)
    agent.edited("src/cart.py", "s1", "return round(total, 2)")
    agent.failed(commit("src/cart.py", "notes/plan.md"), "s1", IGNORED)
    agent.ran(commit("src/cart.py"), "s1")
    agent.ran(commit("src/tax.py"), "s1")
    home.remem("worker", "--burst")

    # A commit keeps books: never a procedure. It never ran after the add failed, so no
    # error is the commit's (below: the add's is the only one), and no pitfall is shown.
    assert home.procedures() == []
    # The add's error is its own: leaving the ignored path out is what passed.
    (known,) = errors_json(home, project)
    assert (known["workflow"], known["error"]) == (
        "git add src/cart.py notes/plan.md",
        "The following paths are ignored by one of your .gitignore files:",
    )
    assert known["fix_commands"] == ["git add src/cart.py"] and known["resolved_at"] is not None
    text = shown(home, project)
    assert "passed again with no edit" not in text and "pitfall" not in text
    assert not any(line in text for line in MESSAGE_LINES)


def test_an_ignored_path_is_the_add_s_known_error_and_add_f_what_worked(
    home: Home, tmp_path: Path
) -> None:
    """`git add` is read-only (promotion.ignore_commands): its failure is still a known error,
    resolved by the variant that passed in a later call, which the next session is told."""
    project = make_repository(tmp_path / "shop")
    agent = Agent(home, project)
    agent.edited("notes/plan.md", "s1", "ship the cart")
    agent.failed(commit("notes/plan.md"), "s1", IGNORED)
    home.remem("worker", "--burst")
    (known,) = errors_json(home, project)
    assert (known["workflow"], known["resolved_at"]) == ("git add notes/plan.md", None)

    agent.ran(commit("-f", "notes/plan.md"), "s1")
    home.remem("worker", "--burst")

    (known,) = errors_json(home, project)
    assert (known["workflow"], known["error"]) == (
        "git add notes/plan.md",
        "The following paths are ignored by one of your .gitignore files:",
    )
    assert known["fix_commands"] == ["git add -f notes/plan.md"]
    assert known["resolved_at"] is not None
    found = known_lines(hook(home, session_start(project, "s2")))
    assert found == {
        "The following paths are ignored by one of your .gitignore files:": (
            "fixed after running `git add -f notes/plan.md`"
        )
    }
    # Nothing under the commit, which never ran; `git add` never becomes a procedure.
    assert [p["workflow"] for p in home.procedures()] == []
    assert not any(line in shown(home, project) for line in MESSAGE_LINES)


def test_codex_a_missing_file_fails_the_cat_and_never_the_make_after_it(
    home: Home, tmp_path: Path
) -> None:
    """The output names the step that failed by its program (`cat: ...`): the later step never
    ran and has no run at all."""
    project = make_repository(tmp_path / "shop")
    codex = Codex(home, project, tmp_path / "rollout-c3.jsonl", "codex-c3")
    codex.ran("cat missing.txt && make test", 1, "cat: missing.txt: No such file or directory\n")
    codex.ran("make test")
    codex.ran("make test")
    home.remem("worker", "--burst")

    (known,) = errors_json(home, project)
    assert (known["workflow"], known["error"]) == (
        "cat missing.txt",
        "cat: missing.txt: No such file or directory",
    )
    (make,) = home.procedures()
    assert (make["workflow"], make["verified_runs"], make["status"]) == ("make test", 2, "active")
    assert make["confidence"] == 0.86  # no failure since its latest success
    (hit,) = [h for h in home.command_hits("make test") if h["command"].startswith("cat")]
    assert (hit["runs"], hit["evidence"]) == (1, 0)
    text = shown(home, project) + home.remem("procedures", "show", str(make["id"])).stdout
    assert "pitfall" not in text and "fails on this branch" not in text


def test_read_only_commands_failing_and_passing_never_become_procedures(
    home: Home, tmp_path: Path
) -> None:
    project = make_repository(tmp_path / "shop")
    agent = Agent(home, project)
    missing = "Exit code 2\nls: cannot access 'build': No such file or directory"
    agent.failed("ls build", "s1", missing)
    agent.failed("git add notes/plan.md", "s1", IGNORED)
    for session in ("s1", "s2"):
        for command in ("ls build", "git add -f notes/plan.md", "sed -n '1,20p' src/cart.py"):
            agent.ran(command, session)
        agent.ran("git status && git log --oneline -5 && git diff", session)
    home.remem("worker", "--burst")

    assert home.procedures() == []
    errors = {known["workflow"]: known for known in errors_json(home, project)}
    assert set(errors) == {"ls build", "git add notes/plan.md"}
    assert errors["ls build"]["resolved_at"] is not None  # it passed itself
    assert errors["ls build"]["fix_commands"] == []
    assert errors["git add notes/plan.md"]["fix_commands"] == ["git add -f notes/plan.md"]


def test_a_push_without_upstream_is_the_push_s_error_not_the_commit_s(
    home: Home, tmp_path: Path
) -> None:
    repository = make_repository(tmp_path / "shop")
    first = add_worktree(repository, tmp_path / "shop-a", "feat-a")
    agent = Agent(home, first)
    agent.edited("src/cart.py", "s1", "return 3")
    agent.failed('git commit -am "Cart: totals" && git push', "s1", "Exit code 128\n" + NO_UPSTREAM)
    agent.ran("git push --set-upstream origin feat-a", "s1")
    home.remem("worker", "--burst")

    (known,) = errors_json(home, repository)
    assert (known["workflow"], known["error"]) == (
        "git push",
        "fatal: The current branch <branch> has no upstream branch.",
    )
    assert known["fix_commands"] == ["git push --set-upstream origin <branch>"]
    other = add_worktree(repository, tmp_path / "shop-b", "feat-b")
    found = known_lines(hook(home, session_start(other, "s2")))
    assert found == {
        "fatal: The current branch <branch> has no upstream branch.": (
            "fixed after running `git push --set-upstream origin <branch>`"
        )
    }


def test_codex_nothing_to_commit_is_the_commit_s_and_the_push_never_ran(
    home: Home, tmp_path: Path
) -> None:
    project = make_repository(tmp_path / "shop")
    codex = Codex(home, project, tmp_path / "rollout-c1.jsonl", "codex-c1")
    ship = commit("-A") + " && git push"
    codex.ran(ship, 1, "On branch main\nnothing to commit, working tree clean\n")
    codex.ran("git push")  # what it meant to do, and it passed
    codex.ran("git push")
    home.remem("worker", "--burst")

    # Nothing to commit is no error (remem/shell/states.py): the commit taught nothing. The
    # push never failed: no error of the commit's is its, and, keeping books, it is never a
    # procedure.
    assert errors_json(home, project) == []
    assert home.procedures() == []
    text = shown(home, project)
    assert "On branch main" not in text
    assert not any(line in text for line in MESSAGE_LINES)


def test_codex_rejected_push_and_merge_conflict_each_go_to_their_step(
    home: Home, tmp_path: Path
) -> None:
    project = make_repository(tmp_path / "shop")
    codex = Codex(home, project, tmp_path / "rollout-c2.jsonl", "codex-c2")
    codex.ran('git commit -am "Cart: totals" && git push', 1, "[main 5d889b0] Cart\n" + REJECTED)
    codex.ran("git pull && make test", 1, CONFLICT)
    codex.ran("git add src/cart.py && git commit --no-edit")
    codex.ran("git push")
    codex.ran("git pull && make test")
    home.remem("worker", "--burst")

    by_workflow = {known["workflow"]: known for known in errors_json(home, project)}
    assert set(by_workflow) == {"git push", "git pull"}
    push, pull = by_workflow["git push"], by_workflow["git pull"]
    assert push["error"] == "! [rejected]        main -> main (fetch first)"
    assert pull["error"] == "CONFLICT (content): Merge conflict in src/cart.py"
    assert pull["resolved_at"] is not None and push["resolved_at"] is not None
    # `make test` never ran after the conflict: its one run passed.
    (make,) = [h for h in home.command_hits("make test") if h["command"].startswith("git pull")]
    assert (make["runs"], make["evidence"]) == (2, 1)
    tests = [p for p in home.procedures() if p["workflow"] == "make test"]
    assert all(p["status"] == "active" for p in tests)
