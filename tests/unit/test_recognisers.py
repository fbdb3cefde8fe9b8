from __future__ import annotations

import functools
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.shell.exits import RUNNER_EXITS, RunnerExit, is_last_resort, is_runner_exit
from remem.shell.recognisers import (
    RECOGNISERS,
    SALIENT_MAX_CHARS,
    check_of,
    error_key,
    family_of,
    is_code_frame,
    is_summary,
    judge,
    mask_branch,
    salient_line,
    telling_line,
)
from remem.transcripts.claude import read_claude

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "claude"
ROWS = {row.family: row for row in RECOGNISERS}
ROWS_BY_NAME = tuple(ROWS.items())

# A command text, as an agent types it, for each row.
COMMANDS = {
    "exunit": "MIX_ENV=test mix test test/foo_test.exs",
    "mix-compile": "mix compile --warnings-as-errors 2>&1 | tail -10",
    "credo": "mix credo --strict",
    "dialyzer": "mix dialyzer --format dialyxir",
    "cargo-test": "cargo test --workspace",
    "cargo-clippy": "cargo clippy --all-targets -- -D warnings",
    "cargo-build": "cargo build --release",
    "go-test": "go test -count=1 ./...",
    "go-vet": "go vet ./...",
    "pytest": "python -m pytest -q",
    "unittest": "python -m unittest discover -s tests",
    "mypy": "uv run mypy --strict src",
    "biome": "bunx biome check .",
    "ruff": "ruff check .",
    "vitest": "npx vitest run",
    "bun-test": "bun test src/tests/workflow-agent-task.test.ts 2>&1",
    "jest": "npx jest --ci",
    "mocha": "npx mocha test/",
    "rspec": "bundle exec rspec spec/models",
    "eslint": "npx eslint .",
    "tsc": "npx tsc --noEmit",
    "git-add": "git add notes/draft.md",
    "git-commit": 'git commit -m "Cart: totals"',
    "git-push": "git -C shop push origin main",
    "git-merge": "git pull --no-rebase origin main",
}

# The line each row's example failure should be summed up by.
SALIENT = {
    "exunit": "** (RuntimeError) no :secret_key_base configuration found in SpotterWeb.Endpoint.",
    "mix-compile": 'error: undefined variable "url"',
    "credo": "┃ [F] ↗ Unless conditions should avoid having an `else` block.",
    "dialyzer": "Function eval_string/4 has no local return.",
    "cargo-test": "thread 'tests::test_bad_add' panicked at 'assertion failed: `(left == right)`",
    "cargo-clippy": "error: unneeded `return` statement",
    "cargo-build": "error[E0308]: `if` and `else` have incompatible types",
    "go-test": "--- FAIL: TestRecentCommitsSummaryTableAlignment (0.00s)",
    "go-vet": "./main.go:7:2: fmt.Printf format %d has arg usuario of wrong type string",
    "pytest": "E       AssertionError: assert False == True",
    "unittest": "AssertionError: 6 is not less than 5: first value is not less that second value.",
    "mypy": 'examples/after_typed.py:7: error: TypedDict "RawNews" has no key "titel"'
    "  [typeddict-item]",
    "biome": "× Formatter would have printed the following content:",
    "ruff": "F401 [*] `os` imported but unused",
    "vitest": "AssertionError: expected undefined to be '${{ !github.event.repository.private …'",
    "bun-test": "error: expect(received).toBe(expected)",
    "jest": "● This should fail",
    "mocha": "ReferenceError: whisper is not defined",
    "rspec": "Failure/Error: xlsx = Roo::Spreadsheet.open(file)",
    "eslint": "69:16  error  'prev' is defined but never used  @typescript-eslint/no-unused-vars",
    "tsc": "spaces.ts:4:13 - error TS2749: 'SHIPPING_ZONES' refers to a value, but is being used "
    "as a type here. Did you mean 'typeof SHIPPING_ZONES'?",
    "git-add": "The following paths are ignored by one of your .gitignore files:",
    "git-commit": 'no changes added to commit (use "git add" and/or "git commit -a")',
    "git-push": "! [rejected]        main -> main (fetch first)",
    "git-merge": "CONFLICT (content): Merge conflict in src/cart.py",
}

# Examples cut from the real transcripts in tests/fixtures: their lines must be there verbatim.
FROM_TRANSCRIPTS = [
    ("exunit", "example_success"),
    ("exunit", "example_failure"),
    ("mix-compile", "example_success"),
    ("credo", "example_success"),
    ("cargo-test", "example_success"),
    ("cargo-clippy", "example_success"),
    ("pytest", "example_success"),
    ("vitest", "example_success"),
]

# mocha prints its summary above the failure details, and git push its refusal above its
# hints, so a tail cut loses the failure.
SUMMARY_ABOVE_DETAILS = {"mocha", "git-push"}

EXIT_STATUS = re.compile(r"(?i)^(?:exit code|command (?:exited|failed) with)")


@functools.cache
def shell_calls() -> tuple[tuple[str, str, bool], ...]:
    """(command, output, failed) for every shell call of the real Claude Code transcripts."""
    return tuple(_shell_calls())


def _shell_calls() -> Iterator[tuple[str, str, bool]]:
    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        for call in read_claude(str(path)):
            payload = call.payload
            if payload["tool_name"] != "Bash":
                continue
            failed = payload["hook_event_name"] == "PostToolUseFailure"
            response = payload.get("tool_response", {})
            output = payload.get("error", "") if failed else response.get("stdout", "")
            yield payload["tool_input"]["command"], output, failed


def tail(text: str, count: int) -> str:
    return "\n".join(text.split("\n")[-count:])


def test_the_table_has_one_row_per_family_and_a_command_for_each() -> None:
    assert len(ROWS) == len(RECOGNISERS)
    assert set(COMMANDS) == set(ROWS) == set(SALIENT)


@pytest.mark.parametrize("family", list(ROWS))
def test_every_pattern_compiles(family: str) -> None:
    row = ROWS[family]
    for pattern in (row.command, row.success, row.failure, *row.salient):
        if pattern is not None:
            assert isinstance(re.compile(pattern.pattern, pattern.flags), re.Pattern)
    assert row.failure is not None and row.salient


def test_importing_the_table_compiles_nothing() -> None:
    """The hook imports the table to read one failure: what it does not use, it never pays."""
    script = (
        "from remem.shell.recognisers import RECOGNISERS as R\n"
        "patterns = [p for r in R for p in (r.command, r.success, r.failure, *r.salient) if p]\n"
        "print(sum('_compiled' in vars(p) for p in patterns), len(patterns))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    compiled, total = map(int, done.stdout.split())
    assert (compiled, total >= 50) == (0, True)


@pytest.mark.parametrize("family", list(ROWS))
def test_the_representative_command_maps_to_its_row(family: str) -> None:
    row = family_of(COMMANDS[family])
    assert row is not None and row.family == family


@pytest.mark.parametrize("family", list(ROWS))
def test_example_success_is_judged_a_success(family: str) -> None:
    row = ROWS[family]
    if row.success is None:  # a tool silent on success: only its exit status can tell
        assert row.example_success == ""
        assert judge(COMMANDS[family], row.example_success) is None
    else:
        assert judge(COMMANDS[family], row.example_success) == "success"


@pytest.mark.parametrize("family", list(ROWS))
def test_example_failure_is_judged_a_failure(family: str) -> None:
    assert judge(COMMANDS[family], ROWS[family].example_failure) == "failure"


@pytest.mark.parametrize("family", list(ROWS))
def test_a_tail_cut_keeps_the_verdict(family: str) -> None:
    row = ROWS[family]
    if row.success is not None:
        assert judge(COMMANDS[family], tail(row.example_success, 5)) == "success"
    if family not in SUMMARY_ABOVE_DETAILS:
        assert judge(COMMANDS[family], tail(row.example_failure, 5)) == "failure"


@pytest.mark.parametrize("family", list(ROWS))
def test_no_failure_pattern_matches_a_success_example(family: str) -> None:
    success = ROWS[family].example_success
    for other in RECOGNISERS:
        assert other.failure is not None
        assert not other.failure.search(success), (other.family, family)


@pytest.mark.parametrize("family", list(ROWS))
def test_salient_line_of_each_example_failure(family: str) -> None:
    row = ROWS[family]
    line = salient_line(COMMANDS[family], row.example_failure)
    assert line == SALIENT[family]
    assert not EXIT_STATUS.match(line)
    assert line in (x.strip() for x in row.example_failure.split("\n"))
    # Without the command, the summary the output shows names the family.
    assert salient_line(None, row.example_failure) == line


@pytest.mark.parametrize(("family", "attribute"), FROM_TRANSCRIPTS)
def test_transcript_excerpts_are_cut_not_reworded(family: str, attribute: str) -> None:
    lines = {line for _, output, _ in shell_calls() for line in output.split("\n")}
    excerpt = getattr(ROWS[family], attribute)
    assert [x for x in excerpt.split("\n") if x not in lines] == []


def test_the_issue_exunit_summaries() -> None:
    head = "...\nFinished in 3.2 seconds (1.1s async, 2.1s sync)\n"
    assert judge("mix test --seed 0", head + "297 tests, 11 failures\n") == "failure"
    assert judge("mix test --seed 0", head + "297 tests, 0 failures\n") == "success"
    assert judge("mix test", "14 doctests, 127 tests, 12 failures") == "failure"
    assert judge("mix test", "3 properties, 10 tests, 0 failures, 2 excluded") == "success"
    assert judge("mix test", "10 tests, 0 failures, 1 invalid") == "failure"


def test_success_summaries_are_never_failures() -> None:
    assert judge("python -m pytest", "== 10 passed in 0.5s ==") == "success"
    assert judge("python -m pytest -q", "10 passed, 1 warning in 0.50s") == "success"
    assert judge("cargo test", "test result: ok. 12 passed; 0 failed; 0 ignored") == "success"
    assert judge("python -m pytest", "== 1 failed, 9 passed in 0.5s ==") == "failure"
    assert judge("cargo test", "test result: FAILED. 1 passed; 1 failed; 0 ignored") == "failure"


def test_a_failure_summary_wins_over_a_success_summary() -> None:
    go = "ok  \texample.com/a\t0.01s\n--- FAIL: TestX (0.00s)\nFAIL\nFAIL\texample.com/b\t0.02s"
    assert judge("go test ./...", go) == "failure"
    cargo = "test result: ok. 3 passed; 0 failed\n\ntest result: FAILED. 1 passed; 1 failed"
    assert judge("cargo test", cargo) == "failure"


def test_the_last_three_lines_of_a_real_failure_are_still_judged() -> None:
    output = next(o for c, o, failed in shell_calls() if c == "mix test 2>&1" and failed)
    assert judge("mix test 2>&1", tail(output, 3)) == "failure"


def test_no_verdict_without_a_summary_or_a_known_command() -> None:
    assert judge("git status", "On branch main\nnothing to commit, working tree clean") is None
    assert judge("mix test", "Command running in background with ID: be613ab.") is None
    for empty in (None, "", "  \n"):
        assert judge("mix test", empty) is None


def test_a_runner_is_read_with_every_row() -> None:
    assert judge("npm test", ROWS["jest"].example_failure) == "failure"
    assert judge("pnpm test -- --run", ROWS["vitest"].example_success) == "success"
    assert judge("make check", ROWS["cargo-test"].example_failure) == "failure"
    assert judge("cd assets && yarn lint", ROWS["eslint"].example_failure) == "failure"
    # A build's "Finished" says the build passed, not that the runner's whole job did.
    assert judge("just lint 2>&1", ROWS["cargo-clippy"].example_success) is None


def test_a_command_that_only_shows_old_output_gets_no_verdict() -> None:
    assert judge("cat /tmp/build.log", ROWS["exunit"].example_failure) is None
    assert judge("tail -30 /tmp/task.output", ROWS["jest"].example_success) is None


def test_the_real_transcripts_agree_with_the_recorded_outcomes() -> None:
    judged = [(judge(c, o), failed) for c, o, failed in shell_calls() if judge(c, o)]
    assert len(judged) >= 15
    assert all((verdict == "failure") == failed for verdict, failed in judged)


def test_salient_line_of_the_spotter_secret_key_base_failure() -> None:
    output = next(o for c, o, _ in shell_calls() if "secret_key_base configuration" in o)
    assert output.startswith("Exit code 2\n")
    assert salient_line("mix test 2>&1", output) == (
        "** (RuntimeError) no :secret_key_base configuration found in SpotterWeb.Endpoint."
    )


def test_no_real_failure_is_summed_up_by_its_exit_status() -> None:
    failures = [(c, o) for c, o, failed in shell_calls() if failed]
    assert len(failures) >= 10
    for command, output in failures:
        line = salient_line(command, output)
        assert line is None or not EXIT_STATUS.match(line), (command, line)


def test_a_python_traceback_gives_its_exception_line() -> None:
    output = next(o for _, o, _ in shell_calls() if "Traceback (most recent call last)" in o)
    assert salient_line("head -c 500 x.jsonl | python3 -c ...", output) == (
        "json.decoder.JSONDecodeError: Unterminated string starting at: line 1 column 256"
        " (char 255)"
    )


def test_generic_error_lines() -> None:
    git = "Exit code 128\nfatal: The current branch spotter-fum has no upstream branch."
    assert salient_line("git push", git) == (
        "fatal: The current branch spotter-fum has no upstream branch."
    )
    assert salient_line("./build.sh", "compiling\nsomething failed here\ndone") == (
        "something failed here"
    )


def test_a_bundler_error_gives_its_own_line_not_the_stack_after_it() -> None:
    output = next(o for c, o, _ in shell_calls() if c.startswith("node assets/build.js"))
    assert salient_line("node assets/build.js", output) == '✘ [ERROR] Could not resolve "js/app.js"'


def test_a_logger_s_error_level_is_not_a_bundler_s_error_line() -> None:
    output = "[error] could not reach cache, retrying\nError: Cannot find module './config.json'"
    assert salient_line("node server.js", output) == "Error: Cannot find module './config.json'"


def test_an_exit_status_alone_says_nothing() -> None:
    for output in (
        "Exit code 1",
        "Exit code 2\n",
        "Command exited with non-zero status code 1",
        "Command failed with exit code 1",
    ):
        assert salient_line("npm test", output) is None
    # git's refusal opens with the branch: the line after it says why.
    refusal = "Exit code 1\nOn branch master\nnothing to commit, working tree clean"
    assert salient_line("git commit", refusal) == "nothing to commit, working tree clean"
    assert salient_line(None, None) is None


def test_git_failures_name_the_step_and_never_the_branch_line() -> None:
    clean = "On branch master\nnothing to commit, working tree clean"
    assert judge('git commit -am "x"', clean) == "failure"
    assert judge("git status", clean) is None  # the same words from a read: no verdict
    for command in ("git commit -m x", "git push", "git merge main", None):
        assert salient_line(command, "Exit code 1\nOn branch master") is None
    upstream = "fatal: The current branch feat-a has no upstream branch.\nTo push the current"
    assert judge("git push", upstream) == "failure"
    assert salient_line("git push", upstream) == (
        "fatal: The current branch feat-a has no upstream branch."
    )
    assert judge("git push", ROWS["git-push"].example_failure) == "failure"
    rebase = "error: could not apply 5d889b0... Cart: totals\nhint: Resolve all conflicts"
    assert judge("git rebase main", rebase) == "failure"
    assert judge("git commit --amend", ROWS["git-merge"].example_failure) is None
    typo = "fatal: pathspec 'src/cartt.py' did not match any files"
    assert (judge("git add src/cartt.py", typo), salient_line("git add x", typo)) == (
        "failure",
        typo,
    )
    # git is no check: a narrower or wider run of it is not the same check run again.
    assert family_of("git push -u origin main") is ROWS["git-push"]
    assert check_of("git push -u origin main") is None
    assert check_of("python -m pytest -q") is ROWS["pytest"]


def test_git_options_before_the_subcommand_are_read_in_linear_time() -> None:
    """`-C` is an option and a value alike: a long run of them, tried every way, would take
    exponential time, and the hook reads a failed command's family with these patterns."""
    assert family_of("git -C shop -c core.pager=cat --no-pager push") is ROWS["git-push"]
    script = (
        "from remem.shell.recognisers import family_of\n"
        "print(family_of('git ' + '-C ' * 5000 + 'status'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.stdout == "None\n", done.stderr


def test_a_commit_refused_by_its_hook_is_read_by_the_hook_s_tool() -> None:
    refused = (
        "Exit code 1\nmix format...............................................Failed\n"
        "- hook id: mix-format\n- exit code: 1\n\n"
        "** (Mix) mix format failed due to --check-formatted.\n"
        "The following files are not formatted:\n  * lib/cart.ex"
    )
    assert salient_line('git commit -m "Add the cart"', refused) == (
        "** (Mix) mix format failed due to --check-formatted."
    )


def test_an_assertion_about_an_exit_code_is_not_an_exit_status() -> None:
    output = "Exit code 1\nAssertionError: expected exit status 0"
    assert salient_line("./run.sh", output) == "AssertionError: expected exit status 0"


def test_salient_line_is_capped() -> None:
    line = salient_line("cargo build", "error: " + "x" * 1000)
    assert line is not None and len(line) == SALIENT_MAX_CHARS


SAME_ERROR = [
    ("test/foo_test.exs:42: error", "test/bar_test.exs:7: error"),
    (
        "/home/a/proj/src/app.py:3: error: Incompatible return value type",
        "src/app.py:117: error: Incompatible return value type",
    ),
    (
        "Running ExUnit with seed: 837521, max_cases: 32",
        "Running ExUnit with seed: 624694, max_cases: 16",
    ),
    (
        "Running unittests src/lib.rs (target/debug/deps/python_utils-657c4d9fcabfd191)",
        "Running unittests src/lib.rs (target/debug/deps/python_utils-1d9cbe00910c3870)",
    ),
    ("object at 0x7f5e7e69fb00 is gone", "object at 0x7f0011aa22cc is gone"),
    ("HEAD is now at 5d889b0 fix", "HEAD is now at a1b3b38 fix"),
    ("--- FAIL: TestX (0.00s)", "--- FAIL: TestX (1.25s)"),
    (
        "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
        "lib/b.ts(40,12): error TS2322: Type 'string' is not assignable to type 'number'.",
    ),
]

OTHER_ERRORS = [
    ("error: undefined function foo/1", "error: undefined function bar/1"),
    ("src/a.ts(3,7): error TS2322: Type mismatch", "src/a.ts(3,7): error TS2345: Type mismatch"),
    ("error[E0308]: mismatched types", "error[E0382]: mismatched types"),
    (
        "** (RuntimeError) no :secret_key_base configuration found in SpotterWeb.Endpoint.",
        "** (ArgumentError) no :secret_key_base configuration found in SpotterWeb.Endpoint.",
    ),
]


@pytest.mark.parametrize(("one", "other"), SAME_ERROR)
def test_error_key_is_the_same_for_the_same_error(one: str, other: str) -> None:
    assert error_key(one) == error_key(other)


@pytest.mark.parametrize(("one", "other"), OTHER_ERRORS)
def test_error_key_differs_for_different_errors(one: str, other: str) -> None:
    assert error_key(one) != error_key(other)


def test_error_key_keeps_an_error_recognisable() -> None:
    line = "** (RuntimeError) no :secret_key_base configuration found in SpotterWeb.Endpoint."
    assert error_key(line) == line
    assert error_key("  error:   undefined function foo/1  ") == "error: undefined function foo/N"
    assert error_key("test/foo_test.exs:42: error") == "<path>: error"


# The same error met on two branches, in two temporary directories, after two durations.
SAME_ERROR_ELSEWHERE = [
    (
        ("fatal: The current branch feat-a has no upstream branch.", "feat-a"),
        ("fatal: The current branch fix/login-2 has no upstream branch.", "fix/login-2"),
    ),
    (
        ("fatal: The current branch feat-a has no upstream branch.", "feat-a"),
        ("fatal: The current branch main has no upstream branch.", "main"),
    ),
    (
        ("error: src refspec spotter-fum does not match any", "spotter-fum"),
        ("error: src refspec issue-25 does not match any", "issue-25"),
    ),
    (
        ("! [rejected] feat-a -> feat-a (non-fast-forward)", "feat-a"),
        ("! [rejected] feat-b -> feat-b (non-fast-forward)", "feat-b"),
    ),
]
SAME_ERROR_ANYWHERE = [
    # hashes and hex ids
    ("fatal: bad object 5d889b0c1e2f", "fatal: bad object a1b3b38ff00d1"),
    (
        "sha256:9f86d081884c7d659a2feaa0c55ad015 mismatch",
        "sha256:2c26b46b68ffc68ff99b453c1d3041 mismatch",
    ),
    # temporary directories
    (
        "FileNotFoundError: /tmp/pytest-of-dev/pytest-12/test_login0/app.db",
        "FileNotFoundError: /tmp/pytest-of-ci/pytest-3/test_login0/app.db",
    ),
    (
        "PermissionError: /var/folders/x1/ab_c/T/tmpab12cd/out.txt",
        "PermissionError: /tmp/tmpzz99yy/out.txt",
    ),
    ("cannot remove tmpk2j3_x9a: busy", "cannot remove tmp8q_d1lzz: busy"),
    ("mktemp: cannot open tmp.X3kq9ZabcD", "mktemp: cannot open tmp.qwertyuiop"),
    ("database at /tmp/tmp.X3kq9Z/app.db is locked", "database at tmp/run-2/app.db is locked"),
    (
        "E   FileNotFoundError: /tmp/pytest-of-root/pytest-12/test_cart0/cart.json",
        "E   FileNotFoundError: /tmp/pytest-of-dev/pytest-3/test_cart1/cart.json",
    ),
    ("pytest-12 is not empty", "pytest-7 is not empty"),
    ("basetemp pytest-of-dev is locked", "basetemp pytest-of-runner is locked"),
    # durations
    (
        "Timeout: timed out after 10039 milliseconds",
        "Timeout: timed out after 5000 milliseconds",
    ),
    ("test_cart failed in 1.23s", "test_cart failed in 12ms"),
    ("deadline exceeded after 1m30s", "deadline exceeded after 2.5s"),
    (
        "ExUnit.TimeoutError: test timed out after 60000ms",
        "ExUnit.TimeoutError: test timed out after 2 seconds",
    ),
]


@pytest.mark.parametrize(("one", "other"), SAME_ERROR_ELSEWHERE)
def test_error_key_masks_the_runs_branch(one: tuple[str, str], other: tuple[str, str]) -> None:
    assert error_key(*one) == error_key(*other)
    assert "<branch>" in error_key(*one)


@pytest.mark.parametrize(("one", "other"), SAME_ERROR_ANYWHERE)
def test_error_key_masks_hashes_temporary_directories_and_durations(one: str, other: str) -> None:
    assert error_key(one) == error_key(other)


def test_a_plain_word_branch_is_masked_only_where_it_names_the_branch() -> None:
    assert error_key("** (Mix) The task test could not be found", "test") == (
        "** (Mix) The task test could not be found"
    )
    assert error_key("error: pathspec 'main' did not match", "main") == (
        "error: pathspec '<branch>' did not match"
    )
    assert mask_branch("package main: main.go", "main") == "package main: main.go"


def test_a_branch_inside_a_longer_name_is_not_masked() -> None:
    assert (
        mask_branch("feat-a2 and xfeat-a and feat-a.", "feat-a")
        == "feat-a2 and xfeat-a and <branch>."
    )
    assert mask_branch("git push --set-upstream origin feat-a", "feat-a") == (
        "git push --set-upstream origin <branch>"
    )
    assert mask_branch("origin/feat-a", "feat-a") == "origin/<branch>"
    assert mask_branch("feat-a", None) == "feat-a"


def test_words_are_not_durations_or_temporary_names() -> None:
    line = "tmp_path fixture in tmpfile_handler: 3 items, 10 mins"
    assert error_key(line) == "tmp_path fixture in tmpfile_handler: N items, <duration>"


def test_a_line_that_halts_a_run_and_says_why_is_no_bare_summary() -> None:
    assert not is_summary("** (Mix) mix format failed due to --check-formatted.")
    assert is_summary("14 doctests, 127 tests, 12 failures")


# (command, its row's family or None): a tool is read at the program's position, past its
# wrappers and launchers (remem/shell/wrappers.py), never by its name anywhere in the text.
AT_PROGRAM = [
    ("rtk pytest -q", "pytest"),
    ("timeout -k 5 120 .venv/bin/python -m pytest tests", "pytest"),
    ("CI=1 env PYTHONPATH=src nice -n 5 pytest", "pytest"),
    ("uv run --with pytest-cov pytest", "pytest"),
    ("poetry run pytest", "pytest"),
    ("cd api && rtk go test ./...", "go-test"),
    ("sudo -u dev cargo test", "cargo-test"),
    ("bunx vitest run", "vitest"),
    ("pnpm exec jest --ci", "jest"),
    ("yarn jest --watch=false", "jest"),
    ("npx -y tsc --noEmit", "tsc"),
    ("rtk git push -u origin feat/login", "git-push"),
    ("python manage.py test shop", "unittest"),
    ("pip install pytest", None),
    (".venv/bin/pip install pytest", None),
    ("uv add --dev pytest", None),
    ("npm i -D jest", None),
    ("bun add -d vitest", None),
    ("echo pytest", None),
    ("cat pytest.ini", None),
    ("git commit -m pytest", "git-commit"),
    ("rg -n 'def test_' tests/test_pytest.py", None),
    ("command -v pytest", None),
    ("ls node_modules/.bin/jest", None),
]


@pytest.mark.parametrize(("command", "family"), AT_PROGRAM, ids=[c for c, _ in AT_PROGRAM])
def test_a_tool_is_read_at_the_program_s_position(command: str, family: str | None) -> None:
    row = family_of(command)
    assert (row.family if row is not None else None) == family


def test_an_install_of_a_test_runner_is_no_run_of_it() -> None:
    """`pip install pytest` changes the environment: not a run of a family that changes
    nothing, and its output is read by no row of pytest's."""
    assert family_of("pip install pytest") is None
    assert judge("pip install pytest", "Successfully installed pytest-8.3.4") is None


@pytest.mark.parametrize(
    "row", RUNNER_EXITS, ids=[f"{r.runner}: {r.pattern}" for r in RUNNER_EXITS]
)
def test_every_runner_exit_is_found_in_its_example_and_never_salient_beside_a_tool_line(
    row: RunnerExit,
) -> None:
    notices = [line for line in row.example.split("\n") if is_runner_exit(line)]
    assert notices, row.example
    assert any(re.search(row.pattern, line) for line in notices)
    # The anchors stand in the pattern, and every line of the example it matches holds one.
    assert all(anchor == anchor.lower() and anchor.strip() for anchor in row.anchors)
    assert all(anchor.strip() in row.pattern.lower() for anchor in row.anchors)
    for line in row.example.split("\n"):
        if re.search(row.pattern, line):
            assert any(anchor in line.lower() for anchor in row.anchors), line
    salient = salient_line("bun run lint", row.example)
    assert salient is not None and not is_runner_exit(salient)


@pytest.mark.parametrize(
    "row", RUNNER_EXITS, ids=[f"{r.runner}: {r.pattern}" for r in RUNNER_EXITS]
)
def test_a_runner_s_notice_alone_is_the_line_only_as_a_last_resort(row: RunnerExit) -> None:
    notice = next(line for line in row.example.split("\n") if re.search(row.pattern, line))
    assert (salient_line("make", notice) is not None) is (
        row.last_resort and is_last_resort(notice)
    )


def test_bun_s_notice_under_biome_leaves_biome_s_line() -> None:
    output = (
        dict(ROWS_BY_NAME)["biome"].example_failure + '\nerror: script "lint" exited with code 1'
    )
    for command in ("bun run lint", "rtk bun run lint", "timeout 60 bun run lint 2>&1"):
        assert salient_line(command, output) == (
            "× Formatter would have printed the following content:"
        )
    assert salient_line("bun run lint", 'error: script "lint" exited with code 1') == (
        'error: script "lint" exited with code 1'
    )


def test_a_runner_s_echo_of_what_it_runs_is_never_the_error() -> None:
    """bun prints `$ <script>` and npm `> pkg@1.0.0 lint` before running it: an output that
    holds nothing else names no error."""
    for output in ("Exit code 2\n$ bun tsc --noEmit", "\n> app@1.0.0 lint /srv/app\n> eslint .\n"):
        assert salient_line("bun run tsc:check", output) is None
        assert telling_line(output) is None


def test_bun_test_s_unmatched_filter_is_its_error_not_its_banner() -> None:
    """`bun test name.test.ts` whose filter matched no file (desplega-ai+agent-swarm,
    ../shared/corpus, MIT): its banner is no error line."""
    output = (
        "Exit code 1\nbun test v1.3.9 (cf6cdbbb)\nThe following filters did not match any "
        'test files in --cwd="/srv/app":\n src/tests/handlers.test.ts\n'
        "992 files were searched [7.00ms]\n"
    )
    command = "bun test src/tests/handlers.test.ts 2>&1"
    assert judge(command, output) == "failure"
    line = salient_line(command, output)
    assert line is not None and line.startswith("The following filters did not match")


# The tail of a vitest failure (FSM1+cipher-box, ../shared/corpus, MIT): `| tail -20` cut the
# error itself, leaving the code frame under it, its stack and the summary.
VITEST_TAIL = """\
     88|   const deviceId = entry.deviceId as string;
     89|   if (deviceId.length !== 64 || !HEX_REGEX.test(deviceId)) {
     90|     throw new CryptoError('Invalid registry format', 'DECRYPTION_FAILE…
       |           ^
     91|   }
     92|\x20
 ❯ validateDeviceRegistry src/registry/schema.ts:54:5
 ❯ src/__tests__/registry.test.ts:254:20

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[5/5]⎯


 Test Files  1 failed | 11 passed (12)
      Tests  5 failed | 170 passed (175)
"""


@pytest.mark.parametrize(
    "frame",
    [
        "     90|     throw new CryptoError('Invalid registry format', 'DECRYPTION_FAILE…",
        "  > 12 |     expect(total).toBe(3) // TypeError here",
        "12 |     let value: u32 = parse_error();",
        "       |           ^",
        "   |     ^^^^^^^^^^^ expected `u32`, found enum `Result`",
    ],
)
def test_a_line_of_quoted_source_is_never_the_error(frame: str) -> None:
    """A code frame (vitest, jest, babel, rustc, gcc) quotes the source under the error: a
    line of it names an error only by chance, as code that raises one."""
    assert is_code_frame(frame)
    assert salient_line("npx vitest run", f"{frame}\nsomething broke") != frame.strip()
    assert telling_line(f"{frame}\nboom") == "boom"


def test_the_tail_of_a_vitest_failure_gives_its_summary_not_its_code_frame() -> None:
    assert salient_line("pnpm --filter @cipherbox/crypto test", VITEST_TAIL) == (
        "Test Files  1 failed | 11 passed (12)"
    )
    assert telling_line(VITEST_TAIL) == "Test Files  1 failed | 11 passed (12)"
    for line in ("Test Files  1 failed | 11 passed (12)", "error: tests failed", "| a | b |"):
        assert not is_code_frame(line)
