"""Redaction within bounds (remem/record/bounded.py, tree.py): a field is cut to what is kept of
it before it is redacted, a field that cannot be cut is masked whole past its budget, a JSON
value nested too deeply loses that value only, and a line writing many files is read once."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from remem.capture.fields import STORED_STRING_CHARS
from remem.capture.hosts import written_edit
from remem.record import tree
from remem.record.bounded import (
    FIELD_BUDGET_CHARS,
    REDACTION_MARGIN_CHARS,
    redact_field,
    redacted_cut,
    redacted_head,
)
from remem.record.event import OUTPUT_HEAD_CHARS, OUTPUT_TAIL_CHARS
from remem.record.output import redacted_excerpt
from remem.record.redact import MASK, redact_json
from tests.unit.test_hosts import GITHUB_TOKEN, build, load

PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    + "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn\n" * 60
    + "-----END OPENSSH PRIVATE KEY-----"
)


def test_a_secret_across_the_cut_is_masked_not_left_as_a_fragment() -> None:
    for offset in (40, 20, 5, 1):
        text = "x" * (STORED_STRING_CHARS - offset) + f" {GITHUB_TOKEN} " + "y" * 100_000
        head = redacted_head(text, STORED_STRING_CHARS)
        assert len(head) == STORED_STRING_CHARS
        assert "ghp_" not in head and GITHUB_TOKEN[-6:] not in head
        cut = redacted_cut(text, STORED_STRING_CHARS)
        assert cut == f"{head}…[{len(text) - STORED_STRING_CHARS} more]"


def test_a_key_block_begun_before_the_tail_kept_is_masked_in_it() -> None:
    """The tail of a long output starts inside a private key block whose header lies before
    it: the margin lets redaction see the header."""
    tail = PEM + "\n" + "z" * (OUTPUT_TAIL_CHARS - 1000)
    text = "a" * (10 * REDACTION_MARGIN_CHARS) + "\n" + tail
    assert len(PEM) > 1000 + 100  # the tail kept starts inside the block's lines
    excerpt = redacted_excerpt(text)
    assert excerpt is not None and "b3BlbnNzaC1rZXktdjEA" not in excerpt
    assert excerpt.startswith("a" * OUTPUT_HEAD_CHARS + "\n…[")
    assert excerpt.endswith("[REDACTED PRIVATE KEY]\n" + "z" * (OUTPUT_TAIL_CHARS - 1000))


def test_a_field_past_its_budget_is_masked_whole() -> None:
    assert redact_field("make test") == "make test"
    assert redact_field("echo " + "x" * FIELD_BUDGET_CHARS) == MASK


def test_a_value_nested_too_deeply_is_left_out_and_the_rest_is_kept() -> None:
    deep: list[object] = []
    innermost = deep
    for _ in range(5000):  # far past any recursion limit
        innermost.append([])
        innermost = innermost[0]  # type: ignore[assignment]
    value = {"password": "hunter2", "deep": deep, "note": f"token {GITHUB_TOKEN}"}
    copied = redact_json(value)
    assert copied["password"] == MASK and copied["note"] == f"token {MASK}"
    level, depth = copied["deep"], 1
    while isinstance(level, list):
        level, depth = level[0], depth + 1
    assert level == tree.DEEP and depth == tree.MAX_DEPTH + 1


def test_an_event_nested_600_levels_deep_is_stored_without_the_deep_field() -> None:
    payload = load("claude-code/post_tool_use_bash_success.json")
    payload["tool_response"]["extra"] = json.loads("[" * 600 + "]" * 600)
    event = build(payload)
    stored = json.loads(event.payload)
    assert event.command == payload["tool_input"]["command"]
    assert stored["tool_response"]["stdout"] == payload["tool_response"]["stdout"]
    assert tree.DEEP in event.payload


def test_two_keys_masked_alike_keep_the_first_place_and_the_last_item() -> None:
    copied = tree.copy_json({"a": 1, "b": [2], "c": 3}, str, lambda key: "k" if key != "c" else key)
    assert copied == {"k": [2], "c": 3} and list(copied) == ["k", "c"]


def _growth(run: Callable[[int], object], n: int) -> float:
    """How much longer run(4n) takes than run(n): 4 when linear, 16 when quadratic."""
    times = []
    for size in (n, 4 * n):
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            run(size)
            best = min(best, time.perf_counter() - started)
        times.append(best)
    return times[1] / times[0]


def test_a_line_writing_a_file_many_times_is_read_once() -> None:
    """`echo x >f >f …`: each file named was normalised the whole line again (24,000
    redirections: 31 s)."""
    base = build(load("generic/command.json"))

    def edit(n: int) -> object:
        event = written_edit(base.but(command="echo x" + " >f" * n, outcome="success"))
        assert event is not None and event.files == ["f"]
        return event

    assert min(_growth(edit, 1000) for _ in range(3)) < 9


def test_a_quote_open_across_many_lines_is_read_once() -> None:
    base = build(load("generic/command.json"))

    def edit(n: int) -> object:
        return written_edit(base.but(command='echo x >f "' + "\nx" * n, outcome="success"))

    assert min(_growth(edit, 1000) for _ in range(3)) < 9
