"""Known errors' pure rules: each distinct error of a streak, what resolved it, and what fixed
it (the files edited and the commands that passed in between)."""

from __future__ import annotations

from remem.procedures.fixes import Between, Failing, Fix, read_fix
from remem.procedures.lessons import (
    JournalRun,
    Sighting,
    occurrences,
    sighting,
    streaks,
)

SECRET = "** (RuntimeError) no :secret_key_base configuration found in Shop.Endpoint."
LAZY = "** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency."


def seen(event_id: int, error: str | None, session_id: int = 1) -> Sighting:
    return sighting(event_id, float(event_id), session_id, error, None, "feat-a")


def segment(*runs: tuple[int, str | None] | int) -> list[tuple[str, list[int], int | None]]:
    """Runs in order: (event id, error) a failure, a bare id a success."""
    journal, sightings = [], {}
    for run in runs:
        if isinstance(run, int):
            journal.append(JournalRun(run, float(run), True))
        else:
            journal.append(JournalRun(run[0], float(run[0]), False))
            sightings[run[0]] = seen(*run)
    return [
        (
            o.error_key,
            [s.event_id for s in o.sightings],
            o.resolved_by.event_id if o.resolved_by else None,
        )
        for streak in streaks(journal)
        for o in occurrences(streak, sightings)
    ]


def test_each_error_of_a_streak_is_resolved_by_the_first_run_that_no_longer_shows_it() -> None:
    found = segment((1, SECRET), (2, SECRET), (3, LAZY), (4, "Assertion with =~ failed"), 5)
    assert [(ids, by) for _key, ids, by in found] == [([1, 2], 3), ([3], 4), ([4], 5)]
    assert found[0][0] == SECRET


def test_an_attempt_without_an_error_neither_shows_nor_resolves_one() -> None:
    found = segment((1, SECRET), (2, None), (3, "14 doctests, 127 tests, 12 failures"), (4, SECRET))
    assert [(ids, by) for _key, ids, by in found] == [([1, 4], None)]


def test_an_error_that_comes_back_is_met_again() -> None:
    found = segment((1, SECRET), (2, LAZY), (3, SECRET), 4, (5, SECRET))
    assert [(ids, by) for _key, ids, by in found] == [([1], 2), ([2], 3), ([3], 4), ([5], None)]


def test_the_same_error_on_another_branch_keys_alike() -> None:
    mine = seen(1, "fatal: The current branch feat-a has no upstream branch.")
    error = "fatal: The current branch fix-9 has no upstream branch."
    theirs = sighting(2, 2.0, 2, error, None, "fix-9")
    assert mine.error_key == theirs.error_key


PUSH = Failing("git push", "fatal: The current branch <branch> has no upstream branch.", "feat-a")


def edit(event_id: int, *files: str) -> Between:
    return Between(event_id, float(event_id), "edit", None, True, None, files)


def ran(event_id: int, command: str, output: str | None = None, ok: bool = True) -> Between:
    return Between(event_id, float(event_id), "command", command, ok, output, ())


def test_a_fix_is_the_files_edited_and_the_commands_that_passed() -> None:
    events = [
        edit(1, "mix.exs", "/home/dev/.claude/plan.md"),
        ran(2, "mix deps.get 2>&1 | tail -3"),
        ran(3, "git status && ls -la"),  # read-only
        ran(4, "mix compile", "error: undefined function", ok=False),  # failed: no fix
        ran(5, "mix test 2>&1"),  # the failing workflow itself
    ]
    failing = Failing("mix test", "no matter", None)
    assert read_fix(events, failing, ("git status", "ls")) == Fix(("mix.exs",), ("mix deps.get",))


def test_another_suite_that_passed_is_no_fix_and_a_formatter_that_passed_is() -> None:
    """A test run changes nothing it checks; a formatter of a checking family may write."""
    events = [
        edit(1, "test/renderer_test.exs"),
        ran(2, "npx vitest run"),
        ran(3, ".venv/bin/python -m pytest -q tests/unit"),
        ran(4, "ruff format ."),
        ran(5, "mix format"),
    ]
    failing = Failing("mix test", "no matter", None)
    fixed = Fix(("test/renderer_test.exs",), ("ruff format .", "mix format"))
    assert read_fix(events, failing) == fixed


def test_a_run_of_the_same_check_that_no_longer_shows_the_error_ends_the_fix() -> None:
    events = [
        edit(1, "config/test.exs"),
        ran(2, "mix test test/live_test.exs", f"Exit code 2\n{SECRET}", ok=False),  # shows it
        ran(3, "mix test test/live_test.exs", f"Exit code 2\n{LAZY}", ok=False),  # gone by then
        edit(4, "mix.exs"),
        ran(5, "mix deps.get"),
    ]
    failing = Failing("mix test", seen(0, SECRET).error_key or "", None)
    assert read_fix(events, failing) == Fix(("config/test.exs",), ())


def test_the_command_run_again_with_more_words_is_the_fix_and_resolves_the_error() -> None:
    events = [
        ran(1, "git push --set-upstream origin feat-a 2>&1"),
        edit(2, "src/late.py"),
    ]
    fix = read_fix(events, PUSH)
    assert (fix.files, fix.commands) == ((), ("git push --set-upstream origin <branch>",))
    assert fix.resolved_by == events[0]


def test_a_narrower_check_that_passes_resolves_nothing() -> None:
    events = [ran(1, "mix test test/one_test.exs"), edit(2, "lib/a.ex")]
    fix = read_fix(events, Failing("mix test", "Assertion with =~ failed", None))
    assert fix == Fix((), ())


IGNORE = ("git add",)
IGNORED_KEY = "The following paths are ignored by one of your .gitignore files:"


def test_a_read_s_variant_that_passes_is_the_fix_and_resolves_the_error() -> None:
    """`git add` is read-only: its passes are no runs, so the variant that passed (an option
    added, a path left out) resolves its error here, and is named."""
    events = [
        ran(1, "git status"),
        ran(2, "git add -f notes/plan.md && git commit -m 'plan'"),
    ]
    fix = read_fix(events, Failing("git add src/a.py notes/plan.md", IGNORED_KEY, None), IGNORE)
    assert (fix.commands, fix.resolved_by) == (("git add -f notes/plan.md",), events[1])
    fix = read_fix(
        [ran(1, "git add src/a.py")], Failing("git add src/a.py notes/plan.md", "x", None), IGNORE
    )
    assert fix.commands == ("git add src/a.py",)


def test_a_read_passing_itself_resolves_its_error_and_names_what_passed_before() -> None:
    events = [
        ran(1, "cat notes.txt"),  # another read: neither a fix nor its run
        ran(2, "make notes"),
        ran(3, "cat missing.txt"),
    ]
    fix = read_fix(events, Failing("cat missing.txt", "cat: <path>: No such file", None))
    assert (fix.commands, fix.resolved_by) == (("make notes",), events[2])


def test_another_command_of_the_same_program_is_no_variant() -> None:
    failing = Failing("ls build", "ls: cannot access", None)
    assert read_fix([ran(1, "ls -la")], failing) == Fix((), ())
    push = read_fix([ran(1, "npm run lint")], Failing("npm run build", "x", None))
    assert (push.commands, push.resolved_by) == (("npm run lint",), None)
