"""What tools print when they pass and when they fail, and which line of a failure says why.

One row per tool family, each with a real excerpt of that tool's output; a test walks the table.
Summaries are what `| tail -5` leaves behind, so the success and failure patterns key on them.
Pure: no I/O, stdlib only.
"""

from __future__ import annotations

import re
from functools import lru_cache

from remem.record.frozen import Record
from remem.shell.exits import is_last_resort, is_runner_exit
from remem.shell.wrappers import command_starts, program_starts

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from typing import Any

# The methods a pattern is used through here; a lazy pattern takes them from the compiled one.
_PATTERN_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class _Lazy:
    """A pattern compiled on its first use. The hook reads a failure's error line through this
    table, and compiling all of it would cost more than the hook's whole capture: it compiles
    the few patterns one failure needs. Once compiled, its methods are the compiled pattern's
    own, so the worker pays nothing per search."""

    def __init__(self, source: str, flags: int) -> None:
        self._source, self._flags = source, flags

    def __getattr__(self, name: str) -> Any:
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self._compiled = re.compile(self._source, self._flags)
            for method in _PATTERN_METHODS:
                setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)


def _compile(source: str, flags: int = 0) -> re.Pattern[str]:
    return _Lazy(source, flags)  # type: ignore[return-value]  # quacks as the pattern


class Recogniser(Record):
    """One tool family. `command` is searched in a step's command text; `success` and `failure`
    are searched in the whole output (multiline, ANSI colours removed); each `salient` pattern
    is tried against every line in turn. The examples are real output of the tool. A check
    (tests, linters, compilers) is run again to see the code pass; a row that is no check (git)
    only says which step failed and why. A row that `reads_only` (test runners, analysers that
    have no option to write) changes nothing it checks: its passing run is never a fix."""

    family: str
    command: re.Pattern[str]
    success: re.Pattern[str] | None
    failure: re.Pattern[str] | None
    salient: tuple[re.Pattern[str], ...]
    example_success: str
    example_failure: str
    check: bool = True
    reads_only: bool = False


def _summary(*alternatives: str) -> re.Pattern[str]:
    return _compile("|".join(f"(?:{a})" for a in alternatives), re.MULTILINE)


def _per_line(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(_compile(p) for p in patterns)


_ELIXIR_ERROR = r"^\s*error: \S.*"
_ELIXIR_RAISE = r"^\s*\*\* \([\w.]+\) \S.*"
_ELIXIR_HALT = (
    r"^== Compilation error in file ",
    r"^Compilation failed due to warnings while using the --warnings-as-errors option",
    r"^\*\* \(Mix\) ",
)
_RUST_ERROR = (
    r"^error(?:\[E\d+\])?: (?!could not compile|aborting due to|test failed, to rerun)\S.*"
)
_RUST_HALT = (r"^error: could not compile `", r"^error: aborting due to ")
_CARGO_FINISHED = r"^\s*Finished .*target\(s\) in "
_JS_ERROR = r"^\s*[A-Z]\w*Error(?: \[\w+\])?: \S.*"


def _program(program: str) -> re.Pattern[str]:
    """A row's program, matched only where a program stands in the command
    (remem/shell/wrappers.py): `pip install pytest` and `cat pytest.ini` are no runs of
    pytest."""
    return _compile(program)


def _git(*subcommands: str) -> re.Pattern[str]:
    """git running one of the subcommands, past the options before it (`git -C sub push`).
    Possessive: `-C` is an option and a value alike, and a run of them tried every way would
    take exponential time."""
    options = r"(?:-[Cc]\s+\S+\s+|--?[\w-]+(?:=\S*)?\s+)*+"
    return _program(rf"git\s+{options}(?:{'|'.join(subcommands)})(?![\w-])")


_GIT_ADD_REFUSED = (
    r"^The following paths are ignored by one of your \.gitignore files:",
    r"^fatal: pathspec '.*' did not match any files",
)
_NOTHING_TO_COMMIT = (
    r"^nothing to commit\b",
    r"^nothing added to commit\b",
    r"^no changes added to commit\b",
)


# Order matters: family_of takes the first row whose command pattern matches, so a specific
# command comes before a general one (`mix test` before `mix compile`, `cargo clippy` before
# `cargo build`, pytest before unittest and mypy, vitest before jest), and a check before git
# (a compound command's check is what its output is most often about).
RECOGNISERS: tuple[Recogniser, ...] = (
    Recogniser(
        family="exunit",
        reads_only=True,
        command=_program(r"mix\s+test\b"),
        success=_summary(r"^(?:\d+ (?:doctests?|propert(?:y|ies)), )*\d+ tests?, 0 failures\b"),
        failure=_summary(
            r"^(?:\d+ (?:doctests?|propert(?:y|ies)), )*\d+ tests?, [1-9]\d* failures?\b",
            r"^(?:\d+ (?:doctests?|propert(?:y|ies)), )*\d+ tests?, \d+ failures?"
            r".*\b[1-9]\d* invalid",
            *_ELIXIR_HALT,
        ),
        salient=_per_line(
            _ELIXIR_ERROR,
            _ELIXIR_RAISE,
            r"^\s*Assertion with \S+ failed.*",
            r"^\s*Expected (?:truthy|falsy), got .*",
            r"^== Compilation error in file .*",
        ),
        example_success="""\
Running ExUnit with seed: 75736, max_cases: 32

.................................................
Finished in 1.0 seconds (1.0s async, 0.00s sync)
49 tests, 0 failures""",
        # claude/spotter-fum.jsonl, `mix test 2>&1`, lines cut from the middle
        example_failure="""\
Exit code 2
Getting extensions in current project...
Running setup for AshSqlite.DataLayer...
Running ExUnit with seed: 837521, max_cases: 32

......................................................................................................................

  1) test transcript row class mapping code rows have is-code class and render as pre/code (SpotterWeb.SessionLiveTest)
     test/spotter_web/live/session_live_test.exs:109
     ** (RuntimeError) no :secret_key_base configuration found in SpotterWeb.Endpoint.
     code: {:ok, _view, html} = live(build_conn(), "/sessions/#{session_id}")

...........
Finished in 3.0 seconds (1.7s async, 1.3s sync)
14 doctests, 127 tests, 12 failures""",  # noqa: E501
    ),
    Recogniser(
        family="mix-compile",
        command=_program(r"mix\s+compile\b"),
        success=_summary(r"^Generated \S+ app$", r"^Compiling \d+ files? \(\.\w+\)$"),
        failure=_summary(
            r"^\*\* \((?:CompileError|SyntaxError|TokenMissingError)\) ", *_ELIXIR_HALT
        ),
        salient=_per_line(
            _ELIXIR_ERROR,
            _ELIXIR_RAISE,
            r"^\s*warning: \S.*",
            r"^Compilation failed due to warnings.*",
        ),
        # claude/spotter-fum.jsonl: the compile step at the head of a `mix test 2>&1`
        example_success="""\
Compiling 2 files (.ex)
Generated spotter app""",
        # a test fixture of nvim-kitty's mix parser
        example_failure="""\
Compiling 1 file (.ex)
error: undefined variable "url"
\tlib/theme_scanner/http.ex:12: ThemeScanner.Http.download_theme_assets/2

warning: variable "tag" is unused (if the variable is not meant to be used, prefix it with an underscore)
\tlib/theme_scanner/http.ex:99: ThemeScanner.Http.do_collect_subresources/2


== Compilation error in file lib/theme_scanner/http.ex ==
** (CompileError) lib/theme_scanner/http.ex: cannot compile module ThemeScanner.Http (errors have been logged)""",  # noqa: E501
    ),
    Recogniser(
        family="credo",
        reads_only=True,
        command=_program(r"mix\s+credo\b"),
        success=_summary(r"^\d+ mods/funs, found no issues\."),
        failure=_summary(r"^\d+ mods/funs, found \d+ "),
        salient=_per_line(r"^┃ \[[A-Z]\] \S+ \S.*"),
        example_success="""\
Checking 50 source files ...

Please report incorrect results: https://github.com/rrrene/credo/issues

Analysis took 1.5 seconds (0.5s to load, 1.0s running 57 checks on 50 files)
399 mods/funs, found no issues.""",
        # a test fixture of nvim-lint's credo parser
        example_failure="""\
Checking 94 source files (this might take a while) ...

  Refactoring opportunities
┃
┃ [F] ↗ Unless conditions should avoid having an `else` block.
┃       lib/fuschia.ex:11:5 #(Fuschia.x)

Please report incorrect results: https://github.com/rrrene/credo/issues

Analysis took 0.3 seconds (0.08s to load, 0.3s running 55 checks on 94 files)
380 mods/funs, found 1 refactoring opportunity.""",
    ),
    Recogniser(
        family="dialyzer",
        reads_only=True,
        command=_program(r"(?:mix\s+)?dialyzer\b"),
        success=_summary(r"^done \(passed successfully\)"),
        failure=_summary(r"^done \(warnings were emitted\)", r"^:dialyzer\.run error: "),
        salient=_per_line(
            r"^\S+:\d+(?::\d+)?: \S.*",
            r"^(?:Function \S+ has no local return|The \w+(?: \w+)? will not succeed"
            r"|Invalid type).*",
            r"^\S+:\d+(?::\d+)?:\w+$",
        ),
        example_success="""\
Total errors: 0, Skipped: 0, Unnecessary Skips: 0
done in 0m1.81s
done (passed successfully)""",
        example_failure="""\
lib/test.ex:2:7:no_return
Function eval_string/4 has no local return.
________________________________________________________________________________
lib/test.ex:3:9:call
The function call will not succeed.

________________________________________________________________________________
done (warnings were emitted)
Halting VM with exit status 2""",
    ),
    Recogniser(
        family="cargo-test",
        reads_only=True,
        command=_program(r"cargo\s+(?:\+\S+\s+)?(?:test|t|llvm-cov)\b"),
        success=_summary(r"^test result: ok\."),
        failure=_summary(
            r"^test result: FAILED\.", r"^error: test failed, to rerun pass ", *_RUST_HALT
        ),
        salient=_per_line(_RUST_ERROR, r"^thread '.*' panicked at .*", r"^---- \S+ stdout ----$"),
        # claude/01.jsonl, `cargo test 2>&1`
        example_success="""\
   Compiling python_utils v0.1.0 (/tmp/tmpqwh7888i)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.30s
     Running unittests src/lib.rs (target/debug/deps/python_utils-657c4d9fcabfd191)

running 29 tests
test dict_utils::tests::test_invert_dict ... ok

test result: ok. 29 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s""",
        # a test fixture of vscode-rust-test-adapter
        example_failure="""\
running 2 tests
test tests::test_add ... ok
test tests::test_bad_add ... FAILED

failures:

---- tests::test_bad_add stdout ----
thread 'tests::test_bad_add' panicked at 'assertion failed: `(left == right)`
left: `0`,
right: `1`', src/lib.rs:26:9
note: Run with `RUST_BACKTRACE=1` environment variable to display a backtrace.


failures:
   tests::test_bad_add

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out""",
    ),
    Recogniser(
        family="cargo-clippy",
        command=_program(r"cargo\s+(?:\+\S+\s+)?clippy\b"),
        success=_summary(_CARGO_FINISHED),
        failure=_summary(*_RUST_HALT),
        salient=_per_line(_RUST_ERROR, r"^warning: (?!.*generated \d+ warnings?)\S.*"),
        # claude/01.jsonl, `just lint` running `cargo clippy -- -D warnings`
        example_success="""\
    Checking python_utils v0.1.0 (/tmp/tmpqwh7888i)
    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.05s""",
        example_failure="""\
error: unneeded `return` statement
  --> src/main.rs:19:9
   |
19 |         return run_once(&config, hermes_url, &scheme, port, iface, ttl).await;
   |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#needless_return
   = note: `-D clippy::needless-return` implied by `-D warnings`
error: could not compile `hermes-pair` (bin "hermes-pair") due to 1 previous error""",
    ),
    Recogniser(
        family="cargo-build",
        command=_program(r"cargo\s+(?:\+\S+\s+)?(?:build|check|b|c)\b"),
        success=_summary(_CARGO_FINISHED),
        failure=_summary(*_RUST_HALT),
        salient=_per_line(_RUST_ERROR),
        example_success="""\
    Finished `dev` profile [unoptimized + debuginfo] target(s) in 1.17s""",
        # The Rust Programming Language, chapter 3.5
        example_failure="""\
   Compiling branches v0.1.0 (file:///projects/branches)
error[E0308]: `if` and `else` have incompatible types
 --> src/main.rs:4:44
  |
4 |     let number = if condition { 5 } else { "six" };
  |                                 -          ^^^^^ expected integer, found `&str`
  |                                 |
  |                                 expected because of this

For more information about this error, try `rustc --explain E0308`.
error: could not compile `branches` due to previous error""",
    ),
    Recogniser(
        family="go-test",
        reads_only=True,
        command=_program(r"go\s+test\b"),
        success=_summary(r"^ok\s+\S+\s+(?:\d+(?:\.\d+)?s|\(cached\))"),
        failure=_summary(
            r"^--- FAIL: ", r"^FAIL\s+\S+\s+(?:\d+(?:\.\d+)?s|\[(?:build|setup) failed\])"
        ),
        salient=_per_line(r"^\s*--- FAIL: \S.*", r"^panic: \S.*", r"^\S+\.go:\d+:\d+: \S.*"),
        example_success="""\
ok  \tgithub.com/veronica-agent/cans/cmd/cans\t2.251s
ok  \tgithub.com/veronica-agent/cans/internal/audio\t0.741s""",
        example_failure="""\
--- FAIL: TestRecentCommitsSummaryTableAlignment (0.00s)
    pipeline_history_test.go:313: expected Status column to be PASS, got -
FAIL
FAIL github.com/alimtvnetwork/gitmap-v28/cli/cmdpipeline 0.557s""",
    ),
    # go vet prints nothing when it finds nothing: its success is the exit status alone.
    Recogniser(
        family="go-vet",
        reads_only=True,
        command=_program(r"go\s+vet\b"),
        success=None,
        failure=_summary(r"^(?:vet: )?\S+\.go:\d+:\d+: "),
        salient=_per_line(r"^(?:vet: )?\S+\.go:\d+:\d+: \S.*"),
        example_success="",
        example_failure="""\
./main.go:7:2: fmt.Printf format %d has arg usuario of wrong type string""",
    ),
    Recogniser(
        family="pytest",
        reads_only=True,
        command=_program(r"py\.?test\b"),
        success=_summary(
            r"^=*\s*(?:\d+ (?:passed|skipped|deselected|xfailed|xpassed|warnings?)(?:, )?)+"
            r" in \d+(?:\.\d+)?s\b"
        ),
        failure=_summary(
            r"^=*\s*(?:\d+ \w+, )*\d+ (?:failed|errors?)\b.* in \d+(?:\.\d+)?s\b",
            r"^!+ Interrupted: \d+ errors? during collection",
        ),
        salient=_per_line(
            r"^E\s+[\w.]*(?:Error|Exception|Exit|Interrupt)\b.*",
            r"^(?:FAILED|ERROR) \S+.*",
            r"^E\s+\S.*",
        ),
        # claude/03.jsonl, `python -m pytest tests/test_math_utils.py -v`
        example_success="""\
============================= test session starts ==============================
collecting ... collected 2 items

tests/test_math_utils.py::test_add_numbers PASSED                        [ 50%]
tests/test_math_utils.py::test_multiply_numbers PASSED                   [100%]

============================== 2 passed in 0.00s ===============================""",
        example_failure="""\
____________________________ test_valid_input_visa _____________________________

    def test_valid_input_visa():
>       assert is_credit_card('4111 1111 1111 1111', 'VISA') == True
E       AssertionError: assert False == True
E        +  where False = is_credit_card('4111 1111 1111 1111', 'VISA')

python-string-utils/Test4DT_tests/test_string_utils_validation_is_credit_card_2_test_valid_input_visa.py:6: AssertionError
=========================== short test summary info ============================
FAILED python-string-utils/Test4DT_tests/test_string_utils_validation_is_credit_card_2_test_valid_input_visa.py::test_valid_input_visa
============================== 1 failed in 0.03s ===============================""",  # noqa: E501
    ),
    Recogniser(
        family="unittest",
        reads_only=True,
        command=_program(r"unittest\b|(?:(?:python|pypy)[\d.]*\s+)?(?:\S*/)?manage\.py\s+test\b"),
        # a bare "OK" says little on its own; with the "Ran" line above it, it is unmistakable
        success=_summary(r"^Ran \d+ tests? in \d+(?:\.\d+)?s\n+OK\b"),
        failure=_summary(r"^FAILED \((?:failures|errors|unexpected successes)=\d+"),
        salient=_per_line(
            r"^[A-Za-z_][\w.]*(?:Error|Exception|Failure): \S.*", r"^(?:FAIL|ERROR): \S.*"
        ),
        example_success="""\
----------------------------------------------------------------------
Ran 4 tests in 0.001s

OK""",
        example_failure="""\
======================================================================
FAIL: test_negativeForLess (__main__.TestStringMethods)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "p1.py", line 13, in test_negativeForLess
    self.assertLess(first, second, message)
AssertionError: 6 is not less than 5: first value is not less that second value.

----------------------------------------------------------------------
Ran 1 test in 0.000s

FAILED (failures=1)""",
    ),
    Recogniser(
        family="mypy",
        reads_only=True,
        command=_program(r"d?mypy\b"),
        success=_summary(r"^Success: no issues found in \d+ source files?"),
        failure=_summary(r"^Found \d+ errors? in \d+ files? \(checked \d+ source files?\)"),
        salient=_per_line(r"^\S+:\d+(?::\d+)?: error: \S.*"),
        example_success="""\
Success: no issues found in 1 source file""",
        example_failure="""\
examples/after_typed.py:7: error: TypedDict "RawNews" has no key "titel"  [typeddict-item]
examples/after_typed.py:7: note: Did you mean "title"?
examples/after_typed.py:11: error: Item "None" of "time | None" has no attribute "hour"  [union-attr]
Found 2 errors in 1 file (checked 1 source file)""",  # noqa: E501
    ),
    Recogniser(
        family="biome",
        command=_program(r"biome\b"),
        success=_summary(r"^\s*Checked \d+ files? in \S+\. No fixes (?:applied|needed)\.\s*$"),
        failure=_summary(
            r"^\s*× Some errors were emitted while (?:running checks|applying fixes)",
            r"^\s*Checked \d+ files? in \S+\..*\n\s*Found \d+ errors?\.",
        ),
        salient=_per_line(r"^\s*× (?!Some errors were emitted)\S.*"),
        example_success="""\
Checked 105 files in 41ms. No fixes applied.""",
        # desplega-ai+agent-swarm (../shared/corpus, MIT), `pnpm lint` running `biome check .`
        example_failure="""\
  > new-ui@0.0.0 lint /Users/taras/worktrees/agent-swarm/2026-03-18-feat/workflow-redesign/new-ui
  > biome check .

  Checked 105 files in 68ms. No fixes applied.
  Found 1 error.
  \u2009ELIFECYCLE\u2009 Command failed with exit code 1.
  src/pages/workflows/[id]/page.tsx format ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━

    × Formatter would have printed the following content:

      303 303 │           </InspectorSection>
      304 304 │\x20\x20\x20
      305     │ -\x20
      306 305 │           {/* Next */}

  check ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━

    × Some errors were emitted while running checks.""",
    ),
    Recogniser(
        family="ruff",
        command=_program(r"ruff\b"),
        success=_summary(
            r"^All checks passed!$",
            r"^Found \d+ errors? \(\d+ fixed, 0 remaining\)\.$",
            r"^\d+ files? (?:reformatted|left unchanged|already formatted)\b",
        ),
        failure=_summary(
            r"^Found \d+ errors?(?: \(\d+ fixed, [1-9]\d* remaining\))?\.$",
            r"^\d+ files? would be reformatted\b",
        ),
        salient=_per_line(
            r"^\S+:\d+:\d+: [A-Z]+\d+ \S.*",
            r"^[A-Z]+\d+ (?:\[\*\] )?\S.*",
            r"^Would reformat: \S.*",
        ),
        example_success="""\
All checks passed!""",
        example_failure="""\
F401 [*] `os` imported but unused
 --> bad.py:1:8
  |
1 | import os
  |        ^^
2 |
3 | def hello():
  |
help: Remove unused import: `os`

Found 1 error.
[*] 1 fixable with the `--fix` option.""",
    ),
    Recogniser(
        family="vitest",
        reads_only=True,
        command=_program(r"vitest\b"),
        success=_summary(r"^\s*Test Files\s+\d+ passed\b"),
        failure=_summary(
            r"^\s*(?:Test Files|Tests)\s+[1-9]\d* failed\b",
            r"^\s*Errors\s+[1-9]\d* errors?\b",
            r"^No test files found, exiting with code 1",
        ),
        salient=_per_line(_JS_ERROR, r"^\s*FAIL\s+\S.*", r"^\s*× \S.*"),
        # claude/spotter-fum.jsonl, `npx vitest run 2>&1`, colours and all
        example_success=(
            " \x1b[32m✓\x1b[39m test/highlight-integration.test.js \x1b[2m(\x1b[22m\x1b[2m12 tests"
            "\x1b[22m\x1b[2m)\x1b[22m\x1b[32m 135\x1b[2mms\x1b[22m\x1b[39m\n"
            "\n"
            "\x1b[2m Test Files \x1b[22m \x1b[1m\x1b[32m2 passed\x1b[39m\x1b[22m"
            "\x1b[90m (2)\x1b[39m\n"
            "\x1b[2m      Tests \x1b[22m \x1b[1m\x1b[32m16 passed\x1b[39m\x1b[22m"
            "\x1b[90m (16)\x1b[39m\n"
            "\x1b[2m   Start at \x1b[22m 23:42:11\n"
            "\x1b[2m   Duration \x1b[22m 1.39s\x1b[2m (transform 139ms, setup 0ms, import 303ms,"
            " tests 266ms, environment 806ms)\x1b[22m"
        ),
        example_failure="""\
 ❯ tests/codeql-workflow.test.ts (4 tests | 1 failed) 11ms
   ❯ the CodeQL workflow (4)
     × skips the analysis while the repository is private 8ms
 Test Files  1 failed (1)
      Tests  1 failed | 3 passed (4)

 FAIL  tests/codeql-workflow.test.ts > the CodeQL workflow > skips the analysis while the repository is private
AssertionError: expected undefined to be '${{ !github.event.repository.private …'""",  # noqa: E501
    ),
    Recogniser(
        family="bun-test",
        reads_only=True,
        command=_program(r"bun\s+test\b"),
        success=_summary(r"^\s*[1-9]\d* pass\n\s*0 fail\b"),
        failure=_summary(
            r"^\s*[1-9]\d* fail\b",
            r"^\(fail\) \S",
            r"^The following filters did not match any test files\b",
        ),
        salient=_per_line(
            r"^\s*error: \S.*",
            r"^\(fail\) \S.*",
            r"^The following filters did not match any test files\b.*",
        ),
        # desplega-ai+agent-swarm (../shared/corpus, MIT), `bun test src/tests/… 2>&1`
        example_success="""\
bun test v1.3.9 (cf6cdbbb)

 19 pass
 0 fail
 22 expect() calls
Ran 19 tests across 1 file. [36.00ms]""",
        example_failure="""\
75 |     const parsed = executor.configSchema.safeParse(config);
76 |     expect(parsed.success).toBe(true);
                                ^
error: expect(received).toBe(expected)

Expected: true
Received: false

      at <anonymous> (src/tests/workflow-agent-task.test.ts:76:28)
(fail) AgentTaskExecutor — workspace scoping > config schema accepts dir, vcsRepo [1.77ms]

 11 pass
 1 fail
Ran 12 tests across 1 file. [88.00ms]""",
    ),
    Recogniser(
        family="jest",
        reads_only=True,
        command=_program(r"jest\b"),
        success=_summary(r"^Tests:\s+(?:\d+ \w+, )*\d+ passed, \d+ total"),
        failure=_summary(
            r"^Tests:\s+.*\b[1-9]\d* failed\b", r"^Test Suites:\s+.*\b[1-9]\d* failed\b"
        ),
        salient=_per_line(r"^\s*● \S.*", _JS_ERROR),
        example_success="""\
PASS __tests__/articles.test.js (6.597 s)
Test Suites: 1 passed, 1 total
Tests:       18 passed, 18 total""",
        example_failure="""\
 FAIL  tests/math.test.js
  ✓ Hello World! (1 ms)
  ✕ This should fail (1 ms)

  ● This should fail

    Failure!

      at Object.<anonymous> (tests/math.test.js:6:9)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 1 passed, 2 total
Snapshots:   0 total
Time:        1.028 s""",
    ),
    Recogniser(
        family="mocha",
        reads_only=True,
        command=_program(r"mocha\b"),
        success=_summary(r"^\s*\d+ passing \(\d+(?:\.\d+)?\s*(?:ms|s|m)\)"),
        failure=_summary(r"^\s*[1-9]\d* failing\b"),
        salient=_per_line(_JS_ERROR, r"^\s*\d+\) \S.*"),
        example_success="""\
  CompareSorted test
    ✔ compareSorted test
    ✔ compareSorted test, source with more records


  11 passing (26ms)""",
        example_failure="""\
  1 passing (108ms)
  6 failing

  1) whisper(string)
       receives one argument and returns it in all lowercase:
     ReferenceError: whisper is not defined
      at Context.<anonymous> (test/index-test.js:10:5)""",
    ),
    Recogniser(
        family="rspec",
        reads_only=True,
        command=_program(r"rspec\b"),
        success=_summary(r"^\s*\d+ examples?, 0 failures\b"),
        failure=_summary(
            r"^\s*\d+ examples?, [1-9]\d* failures?\b",
            r"^\s*\d+ examples?, 0 failures, [1-9]\d* errors? occurred outside of examples",
        ),
        salient=_per_line(r"^\s*Failure/Error: \S.*", r"^\s*rspec \./\S+ # \S.*"),
        example_success="""\
Finished in 0.00256 seconds (files took 0.42831 seconds to load)
2 examples, 0 failures""",
        example_failure="""\
     Failure/Error: xlsx = Roo::Spreadsheet.open(file)

     NoMethodError:
       undefined method `=~' for #<Pathname:0x00005588a608e420>
     # ./app/forms/employee_import_form.rb:13:in `save'
     # ./spec/forms/employee_import_form_spec.rb:13:in `block (3 levels) in <top (required)>'

Finished in 1.44 seconds (files took 1.13 seconds to load)
3 examples, 1 failure, 1 pending

Failed examples:

rspec ./spec/forms/employee_import_form_spec.rb:7 # EmployeeImportForm with valid params returns success message""",  # noqa: E501
    ),
    # eslint is silent when clean; warnings alone still exit 0, and that summary is printed.
    Recogniser(
        family="eslint",
        command=_program(r"eslint\b"),
        success=_summary(r"^(?:✖ )?\d+ problems? \(0 errors, \d+ warnings?\)"),
        failure=_summary(
            r"^(?:✖ )?\d+ problems? \([1-9]\d* errors?, \d+ warnings?\)",
            r"^ESLint found too many warnings",
            r"^Oops! Something went wrong!",
        ),
        salient=_per_line(r"^\s*\d+:\d+\s+error\s+\S.*"),
        example_success="""\
E:\\soloWeed\\src\\app\\productos\\[...slug]\\page.tsx
  781:7   warning  'HARD_MODEL_TOKENS' is assigned a value but never used  @typescript-eslint/no-unused-vars
  1187:10  warning  'getMillimeters' is defined but never used              @typescript-eslint/no-unused-vars

✖ 2 problems (0 errors, 2 warnings)""",  # noqa: E501
        example_failure="""\
C:\\Users\\ragha\\Downloads\\AvantSpecs - Copy\\src\\components\\sections\\OrderPortalSection.tsx
  69:16  error  'prev' is defined but never used  @typescript-eslint/no-unused-vars

C:\\Users\\ragha\\Downloads\\AvantSpecs - Copy\\src\\pages\\RegisterPage.tsx
  3:10  error  'navigate' is defined but never used  @typescript-eslint/no-unused-vars

✖ 2 problems (2 errors, 0 warnings)""",
    ),
    # tsc is silent when clean except in watch mode. Piped (not a terminal) it prints no
    # summary at all, so each diagnostic line counts as the failure.
    Recogniser(
        family="tsc",
        command=_program(r"tsc\b"),
        success=_summary(r"Found 0 errors\. Watching for file changes\."),
        failure=_summary(
            r"Found [1-9]\d* errors?\b",
            r"^\S+\(\d+,\d+\): error TS\d+: ",
            r"^\S+:\d+:\d+ - error TS\d+: ",
        ),
        salient=_per_line(
            r"^\S+\(\d+,\d+\): error TS\d+: \S.*", r"^\S+:\d+:\d+ - error TS\d+: \S.*"
        ),
        example_success="""\
[7:23:42 am] Starting compilation in watch mode...
[7:24:22 am] Found 0 errors. Watching for file changes.""",
        example_failure="""\
spaces.ts:4:13 - error TS2749: 'SHIPPING_ZONES' refers to a value, but is being used as a type here. Did you mean 'typeof SHIPPING_ZONES'?

4 type Zone = SHIPPING_ZONES;
              ~~~~~~~~~~~~~~

spaces.ts:5:23 - error TS2693: 'OrderStatus' only refers to a type, but is being used as a value here.

5 const defaultStatus = OrderStatus;
                        ~~~~~~~~~~~


Found 2 errors in the same file, starting at: spaces.ts:4""",  # noqa: E501
    ),
    # git prints nothing telling when it works: its rows say which step of `git add x && git
    # commit -m ... && git push` failed, and why. Each example is git's own output (2.39).
    Recogniser(
        family="git-add",
        command=_git("add"),
        success=None,
        failure=_summary(*_GIT_ADD_REFUSED),
        salient=_per_line(*(line + ".*" for line in _GIT_ADD_REFUSED)),
        example_success="",
        example_failure="""\
The following paths are ignored by one of your .gitignore files:
notes/draft.md
hint: Use -f if you really want to add them.
hint: Turn this message off by running
hint: "git config advice.addIgnoredFile false\"""",
        check=False,
    ),
    # "On branch main" opens the refusal: the line after it says why.
    Recogniser(
        family="git-commit",
        command=_git("commit"),
        success=None,
        failure=_summary(*_NOTHING_TO_COMMIT),
        salient=_per_line(*(line + ".*" for line in _NOTHING_TO_COMMIT)),
        example_success="",
        example_failure="""\
On branch main
Changes not staged for commit:
  (use "git add <file>..." to update what will be committed)
  (use "git restore <file>..." to discard changes in working directory)
\tmodified:   src/cart.py

no changes added to commit (use "git add" and/or "git commit -a")""",
        check=False,
    ),
    Recogniser(
        family="git-push",
        command=_git("push"),
        success=None,
        failure=_summary(
            r"^fatal: The current branch \S+ has no upstream branch",
            r"^\s*! \[(?:remote )?rejected\] ",
            r"^error: failed to push some refs to ",
        ),
        salient=_per_line(
            r"^fatal: The current branch .* has no upstream branch.*",
            r"^\s*! \[(?:remote )?rejected\] .*",
            r"^error: failed to push some refs to .*",
        ),
        example_success="",
        example_failure="""\
To github.com:shop/cart.git
 ! [rejected]        main -> main (fetch first)
error: failed to push some refs to 'github.com:shop/cart.git'
hint: Updates were rejected because the remote contains work that you do
hint: not have locally. This is usually caused by another repository pushing
hint: to the same ref. You may want to first integrate the remote changes
hint: (e.g., 'git pull ...') before pushing again.
hint: See the 'Note about fast-forwards' in 'git push --help' for details.""",
        check=False,
    ),
    Recogniser(
        family="git-merge",
        command=_git("merge", "pull", "rebase", "cherry-pick", "revert"),
        success=None,
        failure=_summary(
            r"^CONFLICT \(",
            r"^Automatic merge failed; fix conflicts",
            r"^error: could not apply ",
        ),
        salient=_per_line(
            r"^CONFLICT \([\w/ -]+\): .*",
            r"^Automatic merge failed; fix conflicts.*",
            r"^error: could not apply .*",
        ),
        example_success="",
        example_failure="""\
Auto-merging src/cart.py
CONFLICT (content): Merge conflict in src/cart.py
Automatic merge failed; fix conflicts and then commit the result.""",
        check=False,
    ),
)

# Commands that run something else whose output is the one to read: `npm test` prints jest's
# summary, `make check` cargo's. For them every row is tried.
_RUNNER = _compile(
    r"(?:(?:npm|pnpm|yarn|npx|pnpx|bunx|bun|make|gmake|just|task|tox|nox|rake|nx|turbo"
    r"|(?:uv|poetry|pipenv|hatch|pdm|rye|mise)\s+run|bundle\s+exec|deno\s+task)(?=\s|$)"
    r"|(?:ba|z)?sh\s+\S|\.{0,2}/\S|(?:bin|scripts?)/\S)"
)
# "Finished ... target(s)" and "Generated x app" are the preludes of `cargo test` and `mix test`:
# in a runner's output they say the build passed, not that the run did.
_PRELUDES = frozenset({"mix-compile", "cargo-build", "cargo-clippy"})

_ANSI = _compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_TRACEBACK = "Traceback (most recent call last):"
# `error: …`, `fatal: …`, `ERROR …`, and a bundler's bracketed level after its mark
# (esbuild's `✘ [ERROR] Could not resolve "js/app.js"`; a logger's bare `[error]` is not one).
_ERROR_PREFIX = _compile(
    r"^\s*(?:(?:error|Error|fatal|FATAL)(?:\[\w+\])?:|ERROR\b|[✘✖×]\s*\[(?:ERROR|error)\])"
    r"\s*\S"
)
_MENTION = _compile(r"(?i)error|fail|exception|panic")
# A line of a code frame, the source a tool quotes under its error (vitest, jest, babel, rustc,
# gcc): a gutter of a line number and a bar (`  > 12 |`, `90|`), or a bar alone before carets.
_CODE_FRAME = _compile(r"\s*(?:>\s*)?(?:\d+\s*\||\|(?=\s*[\^~]|\s*$))")
SALIENT_MAX_CHARS = 300
# What an error excerpt no recogniser reads is read by: a line naming an error, else the first
# that says something.
_TELLING_LINE = _compile(r"error|fail|exception|assert|traceback|panic|denied", re.IGNORECASE)

_EXTENSIONS = (
    "py|pyi|ex|exs|erl|hrl|eex|heex|leex|rs|go|ts|tsx|mts|cts|js|jsx|mjs|cjs|vue|svelte|rb|rake"
    "|java|kt|kts|scala|c|h|cc|cpp|cxx|hpp|cs|swift|php|json|yaml|yml|toml|ini|cfg|lock|md|txt"
    "|html|css|scss|sql|sh|bash|zsh|proto|xml|csv|log"
)
_PATH = _compile(
    r"(?<![\w./~\\-])"
    r"(?![\w.?!]+/\d+(?![\w./]))"  # name/arity (`foo/1`, `Mod.fun/2`) is a function, not a path
    r"(?:(?:[A-Za-z]:)?[\w.@~+-]*(?:[/\\][\w.@~+-]+)+[/\\]?"
    rf"|[\w@~+-][\w.@~+-]*\.(?:{_EXTENSIONS})(?![\w]))"
    r"(?::\d+)*"
)
_UUID = _compile(r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
# A run of 7+ hex digits with a letter and a digit in it: a word or a plain number is neither.
_HEX = _compile(r"(?i)\b(?:0x[0-9a-f]+|(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,})\b")
_NUMBER = _compile(r"(?<![\w.])\d+(?:\.\d+)*")
# Names a test run's temporary files get: pytest's base directory, tempfile's and mktemp's.
_TEMP = _compile(
    r"(?<![\w.-])(?:pytest-of-[\w.-]+|pytest-\d+|tmp\.[A-Za-z0-9]{6,}"
    r"|tmp[._]?(?=[A-Za-z_]*\d)[A-Za-z0-9_]{6,})(?!\w)"
)
_DURATION = _compile(
    r"(?<![\w.])\d+(?:\.\d+)?"
    r"(?:\s?(?:milliseconds?|microseconds?|nanoseconds?|seconds?|secs?|minutes?|mins?|hours?)"
    r"|(?:ms|[uµn]s|[hms])(?:\d+(?:\.\d+)?(?:ms|[ms]))*)(?!\w)"
)
_PLAIN_WORD = _compile(r"[A-Za-z]+")
_MASKED = _compile(r"<(?:path|tmp|hex|duration|branch)>")
_SOME_WORD = _compile(r"[^\W\d_]{2}")
_SPACE = _compile(r"\s+")


@lru_cache(maxsize=1_024)
def family_of(command: str) -> Recogniser | None:
    """The first row whose command pattern matches the command text; None when no row does
    (remembered: an agent runs the same few commands all day)."""
    starts = program_starts(command)
    return next((r for r in RECOGNISERS if any(r.command.match(command, s) for s in starts)), None)


def reads_only(command: str) -> bool:
    """Whether the command is a run of a family that changes nothing it checks (a test run)."""
    row = family_of(command)
    return row is not None and row.reads_only


def check_of(command: str) -> Recogniser | None:
    """The check family of a command (tests, linters, compilers): its row when it is a check,
    else None (git's rows only say which step failed)."""
    row = family_of(command)
    return row if row is not None and row.check else None


def judge(command: str, output: str | None) -> str | None:
    """'failure' when the output shows the family's failure summary (checked first: a failure
    summary wins whatever else is printed), 'success' when it shows its success summary, else
    None. A runner (`npm test`, `make check`) is read with every row; any other command that is
    no row's gets None, so a `cat` of an old log never passes for the run it shows."""
    if not output or not output.strip():
        return None
    text = _clean(output)
    row = family_of(command)
    if row is not None:
        return _verdict(text, (row,), (row,))
    if any(_RUNNER.match(command, start) for start in command_starts(command)):
        if _failure_shown(text) is not None:
            return "failure"
        final = tuple(r for r in RECOGNISERS if r.family not in _PRELUDES)
        return _verdict(text, (), final)
    return None


def salient_line(command: str | None, output: str | None) -> str | None:
    """The one line of a failure's output that says what went wrong, stripped and capped: the
    family's salient patterns first (the family of the command, else, or after git's, the one
    whose summary the output shows), then the last line of a Python traceback, a line starting
    with `error:` and the like, and the first line that mentions an error. A runner's exit
    notice (remem/shell/exits.py) only when no other line says anything, a bare exit status
    never."""
    if not output:
        return None
    text = _clean(output)
    every = [line for line in text.split("\n") if not is_code_frame(line)]
    lines = [line for line in every if not is_runner_exit(line)]
    found = _salient(command, text, lines)
    if found is None:  # a runner's notice, when its command printed nothing telling
        found = next((line for line in every if is_last_resort(line)), None)
    return _cap(found) if found is not None else None


def _salient(command: str | None, text: str, lines: list[str]) -> str | None:
    own = family_of(command) if command else None
    # git runs hooks (a formatter refusing the commit): what its own rows do not read, the
    # family whose summary the output shows may.
    rows = (own,) if own is not None and own.check else (own, _family_shown(text))
    for pattern in (p for row in dict.fromkeys(rows) if row is not None for p in row.salient):
        found = next((line for line in lines if pattern.search(line)), None)
        if found is not None:
            return found
    found = _traceback_last(lines) or next((x for x in lines if _ERROR_PREFIX.search(x)), None)
    if found is None:
        found = next((x for x in lines if _MENTION.search(x) and not _is_success(x)), None)
    return found


def is_code_frame(line: str) -> bool:
    """Whether a line quotes source under an error (a code frame's numbered or caret line): it
    names an error only as code that raises one, never as what went wrong."""
    return _CODE_FRAME.match(line) is not None


def telling_line(excerpt: str | None) -> str | None:
    """The line of an error excerpt that says most: one naming an error, else the first."""
    if not excerpt:
        return None
    every = [line.strip() for line in excerpt.splitlines() if line.strip()]
    every = [line for line in every if not is_code_frame(line)]
    lines = [line for line in every if not is_runner_exit(line)]
    for line in lines:
        if _TELLING_LINE.search(line):
            return line
    found = next((line for line in lines if _says_something(line)), None)
    return found or next((line for line in every if is_last_resort(line)), None)


def _says_something(line: str) -> bool:
    """Whether a line has a word besides what error keys mask: a line of nothing but paths,
    ids and numbers (a loop's `echo "$f"`) names no error."""
    return bool(_SOME_WORD.search(_MASKED.sub(" ", error_key(line))))


def error_key(line: str, branch: str | None = None) -> str:
    """The line normalised so the same error under another command, seed, path, line number,
    branch, temporary directory or duration gives the same key: the run's branch -> <branch>,
    temporary names -> <tmp>, paths -> <path>, hashes and hex ids -> <hex>, durations ->
    <duration>, numbers -> N, spaces collapsed."""
    key = mask_branch(_ANSI.sub("", line), branch)
    key = _TEMP.sub("<tmp>", _PATH.sub("<path>", key))
    key = _HEX.sub("<hex>", _UUID.sub("<hex>", key))
    key = _DURATION.sub("<duration>", key)
    return _SPACE.sub(" ", _NUMBER.sub("N", key)).strip()


def without_colours(text: str) -> str:
    """The text without its terminal colour and title codes."""
    return _ANSI.sub("", text)


def mask_branch(text: str, branch: str | None) -> str:
    """The text with the branch's name as `<branch>`: the same error, or the same fix, on
    another branch reads the same."""
    return _branch_name(branch).sub("<branch>", text) if branch and branch in text else text


@lru_cache(maxsize=256)
def _branch_name(branch: str) -> re.Pattern[str]:
    name = re.escape(branch)
    if _PLAIN_WORD.fullmatch(branch):
        # A plain word ("main", "test") is a word of many errors: masked only where it names
        # the branch, after "branch" or quoted.
        return re.compile(rf"(?:(?<=\bbranch )|(?<=['\"`])){name}(?![\w/.-])")
    return re.compile(rf"(?<![\w.-]){name}(?![\w/-]|\.\w)")


@lru_cache(maxsize=8)  # judge and salient_line both read a failed run's output
def _clean(output: str) -> str:
    return _ANSI.sub("", output).replace("\r\n", "\n").replace("\r", "\n")


def _verdict(
    text: str, failing: tuple[Recogniser, ...], passing: tuple[Recogniser, ...]
) -> str | None:
    if any(r.failure is not None and r.failure.search(text) for r in failing):
        return "failure"
    if any(r.success is not None and r.success.search(text) for r in passing):
        return "success"
    return None


def _family_shown(text: str) -> Recogniser | None:
    """The row whose failure summary, else success summary, the output shows."""
    passing = (r for r in RECOGNISERS if r.success is not None and r.success.search(text))
    return _failure_shown(text) or next(passing, None)


@lru_cache(maxsize=8)
def _failure_shown(text: str) -> Recogniser | None:
    """The first row whose failure summary the output shows (remembered a little: judging a
    failed run and picking its salient line both look)."""
    return next((r for r in RECOGNISERS if r.failure is not None and r.failure.search(text)), None)


def _traceback_last(lines: list[str]) -> str | None:
    """The exception line of the last Python traceback: its first unindented line after the
    frames (chained tracebacks each end in one; the last is the one that escaped)."""
    last, inside = None, False
    for line in lines:
        if line.strip() == _TRACEBACK:
            inside = True
        elif inside and line.strip() and not line[0].isspace():
            last, inside = line, False
    return last


def _is_success(line: str) -> bool:
    return any(r.success is not None and r.success.search(line) for r in RECOGNISERS)


def _cap(line: str) -> str:
    return line.strip()[:SALIENT_MAX_CHARS]


def is_summary(line: str) -> bool:
    """Whether a line is a tool's success or failure summary rather than an error: a line
    that halts a run and says why (`** (Mix) The task "x" could not be found`) is an error."""
    return any(
        pattern is not None and pattern.search(line)
        for row in RECOGNISERS
        for pattern in (row.success, row.failure)
    ) and not any(pattern.search(line) for row in RECOGNISERS for pattern in row.salient)
