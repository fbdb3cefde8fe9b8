"""What runners print around the command they ran: its echo (`$ tsc --noEmit`) before it, and
when it failed, `error: script "lint" exited with code 1` under biome's own error, `make: ***
[Makefile:3: test] Error 1` under the compiler's. Such a line says what ran or how a run ended,
never why: it is the same for every failure of the script, so it is never an error's line
while a line of the tool the runner ran is there (DESIGN.md §6).

One row per runner, each with a real excerpt that holds its line; a test walks the table. A
row that is `last_resort` may still be the line when the output holds nothing else (bun's
notice under a script that printed nothing); the others never are (`Exit code 1`). Pure,
stdlib only: the hook reads a failure's error line through it.
"""

from __future__ import annotations

import re

from remem.record.frozen import Record


class RunnerExit(Record):
    runner: str
    pattern: str  # searched in one line, colours removed
    # Words the line holds, lower-cased, one at least: the pattern is compiled and searched only
    # in a line that holds one, so a failure no runner printed costs the hook no compile.
    anchors: tuple[str, ...]
    example: str  # a real output holding the line
    last_resort: bool = True


RUNNER_EXITS: tuple[RunnerExit, ...] = (
    # Before what it runs, a runner echoes it: bun and yarn as `$ <command>`, npm and pnpm as
    # `> <package>@<version> <script>` over `> <command>` (a line opening with `> ` is that
    # echo, or a quote, or a diff's: never a tool's error).
    RunnerExit(
        "bun",
        r"^\$ \S",
        ("$ ",),
        # desplega-ai+agent-swarm (../shared/corpus, MIT), `bun run tsc:check 2>&1`
        "Exit code 2\n$ bun tsc --noEmit\n"
        "src/cli.tsx(94,16): error TS18048: 'arg' is possibly 'undefined'.\n"
        'error: "tsc" exited with code 2',
        last_resort=False,
    ),
    RunnerExit(
        "npm",
        r"^> \S",
        ("> ",),
        # desplega-ai+agent-swarm (../shared/corpus, MIT), `pnpm lint` in new-ui/
        "Exit code 1\n\n> new-ui@0.0.0 lint /Users/taras/worktrees/agent-swarm/new-ui\n"
        "> biome check .\n\nsrc/pages/templates/[id]/page.tsx:89:3 "
        "lint/correctness/useExhaustiveDependencies  FIXABLE  ━━━━━━━━━━\n\n"
        "  × This hook specifies more dependencies than necessary: templateVersion.\n\n"
        "Checked 111 files in 47ms. No fixes applied.\nFound 1 error.",
        last_resort=False,
    ),
    # Claude Code opens a failed call's error with it; npm and pnpm end theirs with it.
    RunnerExit(
        "shell",
        r"(?i:\b(?:exit|status)(?: code| status)?:? -?\d+\.?)$",
        ("exit", "status"),
        "Exit code 1\nFAILED tests/test_cart.py::test_total - AssertionError: assert 9 == 10",
        last_resort=False,
    ),
    RunnerExit(
        "make",
        r"(?i:\bmake(?:\[\d+\])?: \*\*\* .*\berror \d+)$",
        ("make",),
        "tests/test_cart.py:12: AssertionError\nmake: *** [Makefile:3: test] Error 1",
        last_resort=False,
    ),
    RunnerExit(
        "npm",
        r"(?i:^npm (?:err!|error) (?:code|errno|path|command|workspace|location)\b.*)$",
        ("npm ",),
        "FAIL src/cart.test.js\n  ● Cart › adds tax\nnpm ERR! code ELIFECYCLE\n"
        "npm ERR! errno 1\nnpm ERR! cart@1.0.0 test: `jest`\nnpm ERR! Exit status 1",
        last_resort=False,
    ),
    RunnerExit(
        "npm",
        r"^npm (?:ERR!|error) (?:Lifecycle script .* failed\b|\S+@\S+ \S+: `|Failed at the )",
        ("npm ",),
        "FAIL src/cart.test.js\n  ● Cart › adds tax\n"
        "npm error Lifecycle script `test` failed with error:\nnpm error code 1\n"
        "npm error path /home/dev/cart\nnpm error command failed\nnpm error command sh -c jest",
    ),
    RunnerExit(
        "bun",
        r'^error: (?:script )?"[^"]+" exited with code -?\d+',
        ("exited with code",),
        # desplega-ai+agent-swarm (../shared/corpus, MIT), `bun run docs:openapi`
        "$ bun scripts/generate-openapi.ts\n"
        "error: Cannot find module '../src/http/linear' from "
        "'/Users/taras/worktrees/agent-swarm/2026-03-18-linear/scripts/generate-openapi.ts'\n\n"
        'Bun v1.3.9 (macOS arm64)\nerror: script "docs:openapi" exited with code 1',
    ),
    RunnerExit(
        "pnpm",
        r"ELIFECYCLE\W+Command failed with exit code -?\d+|^\s*ERR_PNPM_\w+\s",
        ("elifecycle", "err_pnpm_"),
        # FSM1+cipher-box (../shared/corpus, MIT), `pnpm --filter web lint`
        "Checked 109 files in 49ms. No fixes applied.\nFound 2 errors.\n"
        "  × Some errors were emitted while running checks.\n\n"
        "\u2009ELIFECYCLE\u2009 Command failed with exit code 1.",
    ),
    RunnerExit(
        "yarn",
        r"^error Command failed with exit code -?\d+\.",
        ("command failed with exit code",),
        "  ● Cart › adds tax\n\n    expect(received).toBe(expected) // Object.is equality\n"
        "Tests:       1 failed, 3 passed, 4 total\nerror Command failed with exit code 1.\n"
        "info Visit https://yarnpkg.com/en/docs/cli/run for documentation about this command.",
    ),
    RunnerExit(
        "just",
        r"^error: Recipe `[^`]+` failed (?:on line \d+ )?with exit code -?\d+",
        ("error: recipe",),
        "error: unneeded `return` statement\n"
        "error: Recipe `lint` failed on line 8 with exit code 101",
    ),
    RunnerExit(
        "cargo",
        r"^error: (?:test failed, to rerun pass |\d+ targets? failed:)",
        ("failed",),
        "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n\n"
        "error: test failed, to rerun pass `--lib`",
    ),
    RunnerExit(
        "github actions",
        r"(?:##\[error\]|\bError: )Process completed with exit code -?\d+",
        ("process completed with exit code",),
        # FSM1+cipher-box (../shared/corpus, MIT), `gh run view --log-failed`
        "E2E Tests\tRun E2E tests\t2026-02-22T01:41:26.6233830Z  "
        "ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  @cipherbox/e2e@0.15.0 test: `playwright test`\n"
        "E2E Tests\tRun E2E tests\t2026-02-22T01:41:26.6234244Z Exit status 1\n"
        "E2E Tests\tRun E2E tests\t2026-02-22T01:41:26.6381800Z "
        "##[error]Process completed with exit code 1.",
    ),
    RunnerExit(
        "agent host",
        r"(?i:^(?:command exited with|command failed with)\b)",
        ("command exited with", "command failed with"),
        "Command exited with code 1\nsrc/app.ts(3,7): error TS2322: Type 'string' is not "
        "assignable to type 'number'.",
    ),
)
# An assertion about an exit code ("expected exit code 0") is an error line, not a notice.
_ASSERTION = r"(?i)expect|assert"
_COMPILED: dict[str, re.Pattern[str]] = {}


def _search(pattern: str, line: str) -> bool:
    compiled = _COMPILED.get(pattern)
    if compiled is None:  # compiled on first use, one row at a time
        compiled = _COMPILED[pattern] = re.compile(pattern)
    return compiled.search(line) is not None


def _notices(line: str) -> list[RunnerExit]:
    """The rows whose notice the line is (an assertion about an exit code is none)."""
    lowered = line.lower()
    rows = [
        row
        for row in RUNNER_EXITS
        if any(anchor in lowered for anchor in row.anchors) and _search(row.pattern, line)
    ]
    return rows if rows and not _search(_ASSERTION, line) else []


def is_runner_exit(line: str) -> bool:
    """Whether a line only says how a runner's command ended."""
    return bool(_notices(line))


def is_last_resort(line: str) -> bool:
    """Whether a runner's line may stand for the error when nothing else says one."""
    rows = _notices(line)
    return bool(rows) and all(row.last_resort for row in rows)
