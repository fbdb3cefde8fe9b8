"""The digest's pages (DESIGN.md §7), pure: Entry objects in, text out, no database."""

from __future__ import annotations

import json

import pytest

from remem.procedures.digest import (
    COMMAND_CHARS,
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_LINES,
    Entry,
    header_for,
    paginate,
)

NOW = 1_750_000_000.0  # 2025-06-15 UTC
HEADER = header_for("/p/shop", "main")


def entry(
    id: int,
    command: str,
    *,
    branch: str = "main",
    confidence: float = 0.86,
    runs: int = 2,
    sessions: int = 1,
    at: float = NOW,
    files: list[str] | None = None,
    pitfalls: list[str] | None = None,
    inherited: bool = False,
) -> Entry:
    row = (id, command, branch, confidence, runs, sessions, at, json.dumps(files or []))
    made = Entry(row, inherited)
    made.pitfalls = list(pitfalls or [])
    return made


def many(count: int) -> list[Entry]:
    return [
        entry(
            index,
            f"python -m pytest -q tests/test_module_{index:03d}.py --maxfail=1",
            files=[f"src/module_{index:03d}.py"],
            pitfalls=[f'failed 1 time before passing; last error "E{index}"']
            if index % 5 == 0
            else [],
        )
        for index in range(1, count + 1)
    ]


def lines_of(page: str) -> int:
    return page.count("\n")


def occurrences(pages: list[str], needle: str) -> int:
    return sum(page.count(needle) for page in pages)


def test_no_entries_no_pages() -> None:
    assert paginate([], HEADER) == []


def test_one_small_entry_is_one_page_without_a_footer() -> None:
    (page,) = paginate([entry(1, "make test")], HEADER)
    assert page.startswith(HEADER + "\n")
    assert "`make test`" in page
    assert "2 runs in 1 session, last verified 2025-06-15, confidence 0.86" in page
    assert "Run:" not in page
    assert "last page" not in page
    assert page.endswith("\n")


def test_five_hundred_entries_page_within_the_budget_each_command_once() -> None:
    entries = many(500)
    pages = paginate(entries, HEADER)
    assert len(pages) > 1
    for page in pages:
        assert len(page) <= DEFAULT_MAX_CHARS
        assert lines_of(page) <= DEFAULT_MAX_LINES
        assert page.startswith(HEADER + "\n")
    for item in entries:
        # The trailing backtick keeps test_module_001 from matching inside test_module_0010.
        assert occurrences(pages, f"`{item.command}`") == 1
    for number, page in enumerate(pages[:-1], start=1):
        assert page.splitlines()[-1] == f"Run: remem context --page {number + 1}"
    last_line = pages[-1].splitlines()[-1]
    assert last_line == f"(page {len(pages)} of {len(pages)}: the last page)"


def test_pitfall_lines_sit_under_their_procedure() -> None:
    pages = paginate(
        [
            entry(1, "make test", confidence=0.95, pitfalls=["first pitfall", "second pitfall"]),
            entry(2, "make lint", confidence=0.80, files=["Makefile"]),
        ],
        HEADER,
    )
    lines = pages[0].splitlines()
    test_line = next(i for i, line in enumerate(lines) if "`make test`" in line)
    assert lines[test_line + 1 : test_line + 3] == [
        "  pitfall: first pitfall",
        "  pitfall: second pitfall",
    ]
    lint_line = next(i for i, line in enumerate(lines) if "`make lint`" in line)
    assert lint_line > test_line + 2
    assert lines[lint_line + 1] == "  files: Makefile"
    assert not any("pitfall" in line for line in lines[lint_line:])


def test_inherited_entries_are_marked() -> None:
    (page,) = paginate(
        [entry(1, "make test", inherited=True), entry(2, "make lint", branch="feature/x")],
        header_for("/p/shop", "feature/x"),
    )
    (test_line,) = [line for line in page.splitlines() if "`make test`" in line]
    (lint_line,) = [line for line in page.splitlines() if "`make lint`" in line]
    assert test_line.endswith(", inherited from main)")
    assert "inherited" not in lint_line


def test_a_two_thousand_character_command_appears_whole_on_one_page() -> None:
    long_command = "echo " + "x" * 1995
    assert len(long_command) == 2000
    entries = many(120)
    entries.insert(60, entry(9999, long_command))
    pages = paginate(entries, HEADER)
    holding = [page for page in pages if long_command in page]
    assert len(holding) == 1
    assert f"`{long_command}`" in holding[0]
    assert "remem procedures show 9999" not in holding[0]
    for page in pages:
        assert len(page) <= DEFAULT_MAX_CHARS


def test_a_command_over_the_limit_is_shortened_with_a_pointer() -> None:
    long_command = "printf '%s' " + "y" * (COMMAND_CHARS + 500)
    (page,) = paginate([entry(42, long_command)], HEADER)
    assert long_command not in page
    assert long_command[:COMMAND_CHARS] in page
    assert long_command[: COMMAND_CHARS + 1] not in page
    assert "remem procedures show 42" in page
    assert len(page) <= DEFAULT_MAX_CHARS


def test_a_command_of_exactly_the_limit_is_kept_whole() -> None:
    command = "z" * COMMAND_CHARS
    (page,) = paginate([entry(7, command)], HEADER)
    assert f"`{command}`" in page
    assert "remem procedures show" not in page


MULTI_BYTE = ['echo "coração"', "/srv/项目/测试/运行.sh", "cat /srv/数据/😀.txt"]


def test_multi_byte_commands_are_never_split() -> None:
    entries = [entry(index, f"{MULTI_BYTE[index % 3]} --run {index}") for index in range(1, 301)]
    pages = paginate(entries, HEADER, max_chars=2000)
    assert len(pages) > 1
    for page in pages:
        assert page.encode("utf-8").decode("utf-8") == page
        assert len(page) <= 2000
    for item in entries:
        assert occurrences(pages, f"`{item.command}`") == 1


def test_budget_counts_characters_not_bytes() -> None:
    # Each CJK character is three bytes in UTF-8: over 9,000 bytes, under 9,000 characters.
    entries = [entry(index, f"/srv/项目/{'测试' * 30}/运行_{index}.sh") for index in range(1, 41)]
    pages = paginate(entries, HEADER)
    assert len(pages) == 1
    (page,) = pages
    assert len(page.encode("utf-8")) > DEFAULT_MAX_CHARS
    assert len(page) <= DEFAULT_MAX_CHARS
    for item in entries:
        assert f"`{item.command}`" in page


def test_same_input_gives_byte_identical_output() -> None:
    first = paginate(many(300), HEADER)
    second = paginate(many(300), HEADER)
    assert [p.encode("utf-8") for p in first] == [p.encode("utf-8") for p in second]


@pytest.mark.parametrize(("max_chars", "max_lines"), [(9000, 20), (1500, 200), (700, 10)])
def test_custom_budgets_are_honoured(max_chars: int, max_lines: int) -> None:
    entries = many(80)
    pages = paginate(entries, HEADER, max_chars=max_chars, max_lines=max_lines)
    assert len(pages) > 1
    for page in pages:
        assert len(page) <= max_chars
        assert lines_of(page) <= max_lines
    for item in entries:
        assert occurrences(pages, f"`{item.command}`") == 1
    for number, page in enumerate(pages[:-1], start=1):
        assert page.splitlines()[-1] == f"Run: remem context --page {number + 1}"


def test_a_block_too_big_for_any_page_is_shown_whole_alone() -> None:
    big = entry(5, "w" * 600, files=[f"src/f{i}.py" for i in range(5)])
    pages = paginate([entry(1, "make test"), big, entry(2, "make lint")], HEADER, max_chars=500)
    holding = [page for page in pages if "w" * 600 in page]
    assert len(holding) == 1
    assert holding[0].count("`") == 2  # alone on its page


def test_full_last_pages_past_a_hundred_stay_within_the_budget() -> None:
    # The last page's footer, "(page 100 of 100: the last page)", is longer than the "Run: ..."
    # footer; budgets that pack pages tight catch a paginate that reserves room for the shorter.
    entries = [entry(index, f"make t{index:03d}") for index in range(200)]
    block_chars = len(paginate(entries[:1], HEADER)[0]) - len(HEADER) - 2
    two_blocks = len(HEADER) + 2 * (block_chars + 1)
    for max_chars in range(two_blocks + 20, two_blocks + 60):
        pages = paginate(entries, HEADER, max_chars=max_chars)
        assert len(pages) >= 100
        assert [len(page) for page in pages if len(page) > max_chars] == [], max_chars
