"""Forgotten words (remem/record/forgotten.py): recorded without their text, found again in
whatever text carries them, and nothing else masked."""

from __future__ import annotations

import re

import pytest

from remem.forgetting.places import MAX_WORDS, Words
from remem.forgetting.selection import excerpt, mask_matches
from remem.record.forgotten import MASK, Known, bucket, record, words_holding

SECRET = "zq8Kp2Vx7Lm4Rt9Wb3Nc6Yh1"
BASE64 = "dGhpcyBpcyBhIHNlY3JldA+/x=="


def known(*words: str) -> Known:
    return Known([record(word) for word in words])


def test_a_record_holds_no_text_of_the_word() -> None:
    found_bucket, salt, digest = record(SECRET)
    assert found_bucket == bucket(SECRET) < 2**20
    assert SECRET not in salt + digest and SECRET.lower() not in salt + digest
    assert record(SECRET)[1:] != (salt, digest)  # a salt of its own each time


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (f"TOKEN={SECRET}", f"TOKEN={MASK}"),
        (f"Authorization: Bearer {SECRET}", f"Authorization: Bearer {MASK}"),
        (f'{{"command": "deploy {SECRET}"}}', f'{{"command": "deploy {MASK}"}}'),
        (f"https://u:{SECRET}@host/x", f"https://u:{MASK}@host/x"),
        (f"{SECRET}\n{SECRET}", f"{MASK}\n{MASK}"),
        (f"key {BASE64} end", f"key {MASK} end"),
    ],
)  # fmt: skip
def test_a_forgotten_word_is_masked_wherever_it_stands(text: str, masked: str) -> None:
    assert known(SECRET, BASE64).mask(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        f"{SECRET}x",  # a longer word is another word
        SECRET[:-1],
        "make test && pytest -q tests/test_shop.py",
        "",
    ],
)
def test_other_words_are_left_alone(text: str) -> None:
    assert known(SECRET).mask(text) == text


def test_no_record_masks_nothing() -> None:
    assert not Known([])
    assert Known([]).mask(f"TOKEN={SECRET}") == f"TOKEN={SECRET}"


def test_the_words_holding_a_match_are_the_whole_words_around_it() -> None:
    text = f"./deploy.sh --mode {SECRET} now"
    start = text.index("Kp2")
    assert set(words_holding(text, start, start + 3)) == {SECRET}
    spans = Words(re.compile("zq8Kp2"))
    spans.add([text, f"export K={SECRET}", None, 3])
    assert spans.recorded() == frozenset({SECRET}) and spans.unrecorded() == 0


def test_a_match_across_words_or_too_broad_a_match_is_not_recorded() -> None:
    across = Words(re.compile(r"mode \S+"))
    across.add([f"--mode {SECRET}"])
    assert across.recorded() == frozenset() and across.unrecorded() == 1
    broad = Words(re.compile(r"\w{8,}"))
    broad.add([" ".join(f"word{n:06d}" for n in range(MAX_WORDS + 1))])
    assert broad.recorded() == frozenset() and broad.unrecorded() == MAX_WORDS + 1


def test_a_printed_match_shows_at_most_four_characters_either_side() -> None:
    pattern = re.compile("Kp2Vx")
    assert excerpt(f"./deploy.sh --mode {SECRET} --yes", pattern) == f"…ode {MASK} --y…"
    assert mask_matches(pattern, f"a {SECRET} b {SECRET}") == f"a {MASK} b {MASK}"
    assert excerpt("make test", pattern) == "make test"
