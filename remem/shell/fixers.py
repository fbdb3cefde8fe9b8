"""A check's own fix (DESIGN.md §6): the same tool told to write what it reported, run between
a failure and the pass. `bun run lint:fix` after `bun run lint`, `cargo fmt` after `cargo fmt
--check`, `ruff check --fix` after `ruff check`: such a run is the fix, named on its own,
whatever else was edited or run in between.

Knowledge as data: the options that make a check write its fixes, the options that make a
formatter only check, and the suffixes a project's scripts take for either, each with a real
pair of commands (failing, fixing); a test walks the table. Read on workflows, where wrappers
are already left out (`rtk bun run lint:fix` is `bun run lint:fix`). Pure, stdlib only, no
pattern: advice names a fix through it on the hook's path.
"""

from __future__ import annotations

from remem.record.frozen import Record


class Form(Record):
    """One way a check and its fix differ. `kind`: "writes", an option the fix adds; "checks",
    an option the check has and the fix drops (its fix may add a write option of its own,
    `gofmt -l .` then `gofmt -w .`); "script fixes", a suffix the fix's script name adds;
    "script checks", a suffix the check's script name has and the fix's drops."""

    kind: str
    word: str
    failing: str
    fixing: str


WRITES, CHECKS, SCRIPT_FIXES, SCRIPT_CHECKS = "writes", "checks", "script fixes", "script checks"

FORMS: tuple[Form, ...] = (
    Form(WRITES, "--fix", "ruff check src", "ruff check --fix src"),
    Form(WRITES, "--fix", "npx eslint .", "npx eslint . --fix"),
    Form(WRITES, "--fix", "bun run lint", "bun run lint -- --fix"),
    Form(WRITES, "--fix-only", "ruff check .", "ruff check --fix-only ."),
    Form(WRITES, "--unsafe-fixes", "ruff check .", "ruff check --fix --unsafe-fixes ."),
    Form(WRITES, "--write", "bunx biome check .", "bunx biome check --write ."),
    Form(WRITES, "--write", "npx prettier --check src", "npx prettier --write src"),
    Form(WRITES, "--apply", "npx biome check src", "npx biome check --apply src"),
    Form(WRITES, "--apply-unsafe", "npx biome check src", "npx biome check --apply-unsafe src"),
    Form(WRITES, "--allow-dirty", "cargo clippy", "cargo clippy --fix --allow-dirty"),
    Form(WRITES, "--allow-staged", "cargo clippy", "cargo clippy --fix --allow-staged"),
    Form(CHECKS, "--check", "cargo fmt --check", "cargo fmt"),
    Form(CHECKS, "--check", "ruff format --check .", "ruff format ."),
    Form(CHECKS, "--check", "black --check src", "black src"),
    Form(CHECKS, "--check", "cargo fmt --all -- --check", "cargo fmt --all"),
    Form(CHECKS, "--check-formatted", "mix format --check-formatted", "mix format"),
    Form(CHECKS, "--check-only", "isort --check-only .", "isort ."),
    Form(CHECKS, "-check", "terraform fmt -check", "terraform fmt"),
    Form(CHECKS, "--diff", "ruff format --diff", "ruff format"),
    Form(CHECKS, "-l", "gofmt -l .", "gofmt -w ."),
    Form(CHECKS, "--list-different", "npx prettier --list-different .", "npx prettier --write ."),
    Form(SCRIPT_FIXES, ":fix", "bun run lint", "bun run lint:fix"),
    Form(SCRIPT_FIXES, "-fix", "make lint", "make lint-fix"),
    Form(SCRIPT_FIXES, "_fix", "just lint", "just lint_fix"),
    Form(SCRIPT_FIXES, ":write", "pnpm run format", "pnpm run format:write"),
    Form(SCRIPT_CHECKS, ":check", "npm run format:check", "npm run format"),
    Form(SCRIPT_CHECKS, "-check", "make fmt-check", "make fmt"),
    Form(SCRIPT_CHECKS, "_check", "just fmt_check", "just fmt"),
)


def _words(kind: str) -> frozenset[str]:
    return frozenset(form.word for form in FORMS if form.kind == kind)


_WRITES, _CHECKS = _words(WRITES), _words(CHECKS)
# A formatter's own option to write, counted only where the check's option was dropped: `-w`
# is gofmt's write and many tools' watch.
_WRITES_ONCE_CHECKED = frozenset({"-w", "-i", "--in-place"})
_SCRIPT_FIXES, _SCRIPT_CHECKS = _words(SCRIPT_FIXES), _words(SCRIPT_CHECKS)


def fixes_check(step: str, failing: str) -> bool:
    """Whether `step` runs the failing workflow's own tool told to fix what it reports: the
    same words, with an option that writes added or one that only checks dropped, or a
    script named for the fix (`lint:fix`) in place of the check's (`lint`, `format:check`)."""
    mine, theirs = step.split(), failing.split()
    if not mine or not theirs or mine[0] != theirs[0] or mine == theirs:
        return False
    added = any(word in _WRITES for word in mine)
    dropped = any(word in _CHECKS for word in theirs)
    rest = [word for word in mine if word not in _WRITES and word != "--"]
    if dropped:
        rest = [word for word in rest if word not in _WRITES_ONCE_CHECKED]
    if (added or dropped) and rest == [w for w in theirs if w not in _CHECKS and w != "--"]:
        return True
    return _script_fixes(mine, theirs)


def _script_fixes(mine: list[str], theirs: list[str]) -> bool:
    if len(mine) != len(theirs):
        return False
    differ = [(a, b) for a, b in zip(mine, theirs, strict=True) if a != b]
    if len(differ) != 1:
        return False
    fix, check = differ[0]
    return any(fix == check + suffix for suffix in _SCRIPT_FIXES) or any(
        check == fix + suffix for suffix in _SCRIPT_CHECKS
    )
