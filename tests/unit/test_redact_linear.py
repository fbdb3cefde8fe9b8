"""Every redaction rule is linear in its text, whatever the text repeats.

A rule that backtracks restarts its scan inside a run an earlier attempt already scanned: on
`prefix + token×n` its time grows with n², and a tool's output of a few hundred kilobytes then
blocks the agent's hook for minutes. Each rule of the tables (redact._RULES, which holds the
password options of password_flags.py, and every family of secret_families.py, rows added later
included) is timed on such texts, built from its own keywords and the words and punctuation
its patterns are made of: its time at 4n, against its time at n, must grow like 4n, not 16n.
"""

from __future__ import annotations

import gc
import re
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from remem.record import redact
from remem.record.masking import find_keywords, pattern
from remem.record.secret_families import FAMILIES

# The findings of a review, each on the rule that backtracked, tried on every rule: (prefix,
# token). Each took seconds to minutes on a few hundred kilobytes.
FOUND = [
    ("x@y ", "a://"),  # URL userinfo: each scheme scanned the rest of the word for an `@`
    ("machine m", " login default"),  # .netrc: each `default` restarted the run of pairs
    ('send "x" expect "', "assw"),  # expect: a prompt scanned again from each keyword in it
    # A tool's option in many steps that name no program: each step searched the rest of the
    # text for the program (96 KB: 47 s for htpasswd, 70 s for `aws configure set`).
    ("", " -p x;"),
    ("", " set x y;"),
]
# The punctuation a rule's text is made of, and blanks.
PUNCTUATION = [
    " ", "\n", "\t", '"', "'", "=", ":", "@", "://", "/", "-", "--", "_", ".", "\\", "$",
    ";", "|", "&", ",", "{", "}", "<", ">", "x", "7", "aB3",
]  # fmt: skip
TEXT_CHARS = 2000  # the text at n; at 4n it is four times as long
LINEAR = 9.0  # 4 when linear, 16 when quadratic: the line between, with room for noise
NOTICEABLE_S = 0.002  # below this at 4n a rule is fast whatever its growth: noise only

Timed = Callable[[str], object]


def _texts(thing: Any, seen: set[int]) -> Iterator[str]:
    """The strings a rule is made of: its constants, the module names it uses and what its
    closures hold, followed into the functions it calls (remem.record's only)."""
    if id(thing) in seen:
        return
    seen.add(id(thing))
    if isinstance(thing, str):
        yield thing
    elif isinstance(thing, tuple | list | frozenset):
        for item in thing:
            yield from _texts(item, seen)
    elif isinstance(thing, types.CodeType):
        yield from _texts(thing.co_consts, seen)
    elif isinstance(thing, types.FunctionType) and thing.__module__.startswith("remem.record"):
        yield from _texts(thing.__code__, seen)
        for cell in thing.__closure__ or ():
            yield from _texts(cell.cell_contents, seen)
        used = [thing.__globals__.get(name) for name in thing.__code__.co_names]
        yield from _texts(used, seen)


def _vocabulary(*parts: Any) -> list[str]:
    """The words (runs of letters and digits) and keywords of a rule, and punctuation."""
    words: set[str] = set()
    for text in _texts(parts, set()):
        if len(text) < 400:  # a long text is a table's example or a docstring
            words.update(re.findall(r"[A-Za-z0-9]{2,}", text))
            if len(text) < 24 and text.strip():  # a keyword, a trigger
                words.add(text)
    return sorted(words) + PUNCTUATION


def _rules() -> Iterator[Any]:
    """(name, how to run it on a text, its vocabulary) of every rule of the tables."""
    for position, (triggers, rule) in enumerate(redact._RULES):

        def run(text: str, rule: Any = rule) -> object:
            lowered = text.lower()
            return rule(text, lowered, find_keywords(lowered, redact._KEYWORDS))

        name = f"rule {position} ({', '.join(triggers) or 'always'})"
        yield pytest.param(run, _vocabulary(triggers, rule), id=name)
    for family, keywords, source, _example in FAMILIES:

        def scan(text: str, source: str = source) -> object:
            return list(pattern(source).finditer(text))

        yield pytest.param(scan, _vocabulary(keywords, source), id=f"family {family}")


RULES = list(_rules())


def _seconds(timed: Timed, text: str) -> float:
    """The rule's best time of three on the text, without the collector's pauses."""
    best = float("inf")
    gc.disable()
    try:
        for _ in range(3):
            started = time.perf_counter()
            timed(text)
            best = min(best, time.perf_counter() - started)
    finally:
        gc.enable()
    return best


def _growth(timed: Timed, prefix: str, token: str) -> tuple[float, float]:
    """(how much longer the rule takes on prefix + token×4n than on prefix + token×n, the
    time taken). A growth past LINEAR is measured again from 4n to 16n, and the smaller one
    counts: a quadratic rule grows 16-fold at each step, while a linear one may jump once,
    where its text outgrows a cache of the machine."""
    n = max(1, TEXT_CHARS // len(token))
    times = [_seconds(timed, prefix + token * n)]
    growths = []
    for size in (4 * n, 16 * n):
        times.append(_seconds(timed, prefix + token * size))
        if times[-1] < NOTICEABLE_S:
            return 0.0, times[-1]
        growths.append(times[-1] / max(times[-2], 1e-9))
        if growths[-1] < LINEAR:
            break
    return min(growths), times[-1]


@pytest.mark.parametrize(("timed", "vocabulary"), RULES)
def test_each_rule_is_linear_on_what_its_own_words_repeat(
    timed: Timed, vocabulary: list[str]
) -> None:
    words = st.sampled_from(vocabulary)

    @settings(
        max_examples=12,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(prefix=st.lists(words, max_size=4), token=st.lists(words, min_size=1, max_size=4))
    def check(prefix: list[str], token: list[str]) -> None:
        growth, seconds = _growth(timed, "".join(prefix), "".join(token))
        assert growth < LINEAR, (prefix, token, growth, seconds)

    for prefix, token in FOUND:
        check = example(prefix=[prefix], token=[token])(check)
    check()
