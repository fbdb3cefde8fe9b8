"""The one table renderer: columns as wide as their cells, the widest narrowed first when the
table is too wide, cells wrapped at spaces and long words folded, wide characters counted
twice."""

from __future__ import annotations

from remem.record.table import cell_width, render_table, wrap


def test_a_table_that_fits_keeps_every_cell_on_one_line() -> None:
    text = render_table("Things", ["id", "name"], [["1", "alpha"], ["22", "b"]])
    assert text == (
        "Things\n"
        "┏━━━━┳━━━━━━━┓\n"
        "┃ id ┃ name  ┃\n"
        "┡━━━━╇━━━━━━━┩\n"
        "│ 1  │ alpha │\n"
        "│ 22 │ b     │\n"
        "└────┴───────┘\n"
    )


def test_the_widest_columns_are_narrowed_until_the_table_fits() -> None:
    long_a, long_b = "a" * 100, "word " * 20
    lines = render_table("", ["x", "first", "second"], [["1", long_a, long_b.strip()]], 120)
    assert {len(line) for line in lines.splitlines()} == {120}
    header = lines.splitlines()[1]
    first, second = (len(cell) - 2 for cell in header.strip("┃").split("┃")[1:])
    assert abs(first - second) <= 1  # both shrunk to the same width
    body = [line for line in lines.splitlines() if line.startswith("│")]
    assert "".join(line.split("│")[2].strip() for line in body) == long_a  # folded, whole
    assert all(not line.split("│")[3].startswith("  ") for line in body)  # wrapped at spaces


def test_a_column_is_never_narrower_than_its_header() -> None:
    headers = [f"column-{n:02d}" for n in range(12)]  # wider than 120 columns by themselves
    lines = render_table("", headers, [["x" * 300] * 12]).splitlines()
    assert lines[1] == "┃" + "┃".join(f" {header} " for header in headers) + "┃"
    assert all(len(line) == len(lines[0]) == 12 * 12 + 1 for line in lines)


def test_wrap_breaks_at_spaces_and_folds_long_words() -> None:
    assert wrap("python -m pytest -q tests/test_cart.py", 26) == [
        "python -m pytest -q",
        "tests/test_cart.py",
    ]
    assert wrap("/tmp/remem-demo-a1b2c3d4/shop", 26) == ["/tmp/remem-demo-a1b2c3d4/s", "hop"]
    assert wrap("a  b", 10) == ["a  b"]  # spaces a cell holds are kept


def test_wide_characters_take_two_columns() -> None:
    assert cell_width("日本") == 4 and cell_width("ab") == 2
    assert wrap("日本語テキスト", 4) == ["日本", "語テ", "キス", "ト"]
    lines = render_table("", ["c"], [["日本"]]).splitlines()
    assert lines[3] == "│ 日本 │"
