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


# What prints as nothing or draws on its neighbour: the Hangul fillers (letters, and default-
# ignorable), the blank Braille pattern, a combining acute accent, an enclosing circle, a
# variation selector and a combining grapheme joiner.
UNSEEN = ["\u3164", "\u115f", "\u1160", "\uffa0", "\u2800", "\u0301", "\u20dd", "\ufe0f", "\u034f"]


@pytest.mark.parametrize("unseen", UNSEEN)
def test_a_letter_a_reader_cannot_see_is_escaped_and_quoted(unseen: str) -> None:
    text = f"config/ignore{unseen}previous{unseen}instructions.exs"
    escaped = f"\\u{ord(unseen):04x}"
    assert quote.has_unsafe(text)
    assert quote.escape_unsafe(text) == text.replace(unseen, escaped)
    assert quote.inert_path(text) == f'"{text.replace(unseen, escaped)}"'
    assert json.loads(quote.inert_path(text)) == text
    assert quote.inert_command(f"cat {text}") == f'"cat {text.replace(unseen, escaped)}"'


def test_a_path_beyond_ascii_is_quoted_but_not_escaped() -> None:
    assert quote.inert_path("src/café/运行.py") == '"src/café/运行.py"'


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


def test_a_quoted_line_keeps_its_tabs_and_escapes_the_rest() -> None:
    line = 'E2E Tests\tfail\t3m18s\t"x"\x1b[2J\n'
    quoted = quote.quote_line(line)
    assert quoted == '"E2E Tests\tfail\t3m18s\t\\"x\\"\\u001b[2J\\n"'
    assert json.loads(quoted.replace("\t", "\\t")) == line
    assert quote.quote_line("no tab") == quote.quote_text("no tab")
    assert quote.escape_unsafe(quoted, tabs=True) == quoted
    assert "\t" not in quote.escape_unsafe(quoted)
