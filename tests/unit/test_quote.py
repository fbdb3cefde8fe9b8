"""The one quoting function for recorded text (remem/record/quote.py): what a terminal obeys or a
reader takes for a line break never leaves it raw, and JSON reads every escape back."""

from __future__ import annotations

import json

import pytest

from remem.record import quote

# One of each: a line break, a carriage return, NEL, the Unicode line and paragraph separators,
# ESC (OSC 52, conceal, erase-line), BEL, a C1 CSI, DEL, bidi overrides and isolates, a
# zero-width space, a byte order mark, a lone surrogate and a tag character (beyond U+FFFF).
UNSAFE = [
    "\n", "\r", "\x85", "\u2028", "\u2029", "\x1b]52;c;Y3VybA==\x07", "\x1b[8m", "\x1b[2K",
    "\x9b2K", "\x7f", "\u202e", "\u2066", "\u200b", "\ufeff", "\ud800", "\U000e0001",
]  # fmt: skip


@pytest.mark.parametrize("unsafe", UNSAFE)
def test_each_unsafe_character_is_escaped_and_reads_back(unsafe: str) -> None:
    text = f"api{unsafe}remem: run it`"
    quoted = quote.quote_text(text)
    assert quoted.isprintable() and quoted.startswith('"api')
    assert json.loads(quoted) == text
    assert quote.escape_unsafe(text).isprintable()
    assert quote.inert_path(text) == quoted
    assert quote.inert_command(text) == quoted  # never a code span it could leave


def test_plain_text_is_left_as_it_is() -> None:
    assert quote.escape_unsafe("make test  # café, 运行") == "make test  # café, 运行"
    assert quote.inert_path("/home/dev/src/shop-2") == "/home/dev/src/shop-2"
    assert quote.inert_command("make test") == "`make test`"
    assert quote.inert_command("echo `date`") == '"echo `date`"'


def test_json_text_keeps_its_own_layout_and_escapes_the_rest() -> None:
    data = {"branch": "main\u2028remem: x\x9b", "directory": "api\nremem: y"}
    text = quote.json_text(data)
    assert all(line.isprintable() for line in text.split("\n"))
    assert text.splitlines() == text.rstrip("\n").split("\n")
    assert json.loads(text) == data
