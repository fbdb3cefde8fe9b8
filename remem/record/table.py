"""Tables of recorded text, drawn with the stdlib: every table `remem` prints, so that the
commands answered before click loads (remem.cli.fast) print what the click commands print.

Cells are plain text whose controls were escaped (remem.record.quote.escape_unsafe). A table
wider than the room has its widest columns narrowed first; a cell too wide for its column
wraps at spaces, and a word longer than the column is folded.
"""

from __future__ import annotations

import unicodedata

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

MIN_WIDTH = 120  # what a terminal narrower than this, or none (a pipe), is drawn at


def cell_width(text: str) -> int:
    """Columns a text takes on a terminal: East Asian wide and full-width characters take two."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def terminal_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table of recorded text as wide as the terminal (at least MIN_WIDTH), each cell's
    controls escaped."""
    import shutil

    from remem.record.quote import escape_unsafe

    cells = [[escape_unsafe(cell) for cell in row] for row in rows]
    return render_table(title, columns, cells, shutil.get_terminal_size().columns)


def render_table(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], width: int = MIN_WIDTH
) -> str:
    """The title on its own line, then the table in box-drawing characters, at most `width`
    columns wide when the headers allow it."""
    widths = _widths(columns, rows, max(width, MIN_WIDTH))
    lines = [title] if title else []
    lines.append(_rule("┏", "━", "┳", "┓", widths))
    lines.extend(_row(columns, widths, "┃"))
    lines.append(_rule("┡", "━", "╇", "┩", widths))
    for row in rows:
        lines.extend(_row(row, widths, "│"))
    lines.append(_rule("└", "─", "┴", "┘", widths))
    return "\n".join(lines) + "\n"


def _widths(columns: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """Each column as wide as its widest cell; then, while the table is too wide, the widest
    columns lose a character each, never narrower than their header."""
    widths = [
        max([cell_width(header), *(cell_width(row[i]) for row in rows)])
        for i, header in enumerate(columns)
    ]
    floors = [max(cell_width(header), 1) for header in columns]
    excess = sum(widths) + 3 * len(widths) + 1 - width
    while excess > 0:
        shrinkable = [i for i, w in enumerate(widths) if w > floors[i]]
        if not shrinkable:
            break
        widest = max(widths[i] for i in shrinkable)
        for i in shrinkable:
            if widths[i] == widest and excess > 0:
                widths[i] -= 1
                excess -= 1
    return widths


def _rule(left: str, line: str, cross: str, right: str, widths: Sequence[int]) -> str:
    return left + cross.join(line * (w + 2) for w in widths) + right


def _row(cells: Sequence[str], widths: Sequence[int], bar: str) -> list[str]:
    wrapped = [wrap(cell, width) for cell, width in zip(cells, widths, strict=True)]
    height = max(len(lines) for lines in wrapped)
    return [
        bar
        + bar.join(
            f" {_pad(lines[n] if n < len(lines) else '', width)} "
            for lines, width in zip(wrapped, widths, strict=True)
        )
        + bar
        for n in range(height)
    ]


def _pad(text: str, width: int) -> str:
    return text + " " * (width - cell_width(text))


def wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width` columns: broken at spaces, a longer word folded."""
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        candidate = f"{current} {word}" if current else word
        if cell_width(candidate) <= width:
            current = candidate
            continue
        if current:
            lines.append(current)
        current = word
        while cell_width(current) > width:
            cut = _fits(current, width)
            lines.append(current[:cut])
            current = current[cut:]
    lines.append(current)
    return lines


def _fits(text: str, width: int) -> int:
    """How many leading characters of `text` fit in `width` columns (at least one)."""
    used = 0
    for index, char in enumerate(text):
        used += cell_width(char)
        if used > width:
            return max(index, 1)
    return len(text)
