"""A check's own fix (remem/shell/fixers.py): every row's real pair is recognised, one way
only, and commands that merely share a tool's words are not."""

from __future__ import annotations

import pytest

from remem.shell.fixers import FORMS, fixes_check


@pytest.mark.parametrize("form", FORMS, ids=lambda form: f"{form.kind}:{form.word}")
def test_each_row_s_fix_fixes_its_check_and_not_the_other_way(form: object) -> None:
    assert form.word in form.fixing + " " + form.failing  # type: ignore[attr-defined]
    assert fixes_check(form.fixing, form.failing)  # type: ignore[attr-defined]
    assert not fixes_check(form.failing, form.fixing)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("step", "failing"),
    [
        ("tsc -w", "tsc"),  # watch, not write: `-w` counts only where a check option went
        ("bun run lint", "bun run lint"),
        ("bun run lint:fix", "bun run test"),
        ("pip install pytest", "pytest"),
        ("cargo fmt", "cargo build"),
        ("npx eslint --fix other.js", "npx eslint ."),
        ("git add -A", "git add src/a.ts"),
        ("", "ruff check"),
    ],
)
def test_another_command_is_no_check_s_fix(step: str, failing: str) -> None:
    assert not fixes_check(step, failing)
