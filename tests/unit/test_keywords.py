"""The keywords redaction looks for (remem.record.redact._KEYWORDS): each child only where its
parent was found, which must find exactly what looking for every keyword finds."""

from __future__ import annotations

import random
from collections.abc import Iterator

from remem.record import masking, redact
from remem.record.password_flags import PASSWORD_FLAGS
from tests.acceptance.secrets_corpus import CORPUS

PARENTS_ONLY = {"_", "send "}


def _tree(keywords: masking.Keywords) -> Iterator[tuple[str | None, str]]:
    roots, children = keywords
    yield from ((None, root) for root in roots)
    yield from ((parent, child) for parent, inside in children.items() for child in inside)


def _main_keywords() -> set[str]:
    triggers = {
        t for triggers, _rule in redact._RULES[: redact._FIRST_OPTION_RULE] for t in triggers
    }
    return (triggers - {""}) | set(masking.ANYWHERE)


def _option_keywords() -> set[str]:
    # The tools' options; their words (PASSWORD_WORDS) are the main rules' triggers.
    return {trigger for _row, triggers, *_rest in PASSWORD_FLAGS for trigger in triggers}


def test_the_keywords_are_the_triggers_and_the_families_keywords() -> None:
    main = [keyword for _parent, keyword in _tree(redact._KEYWORDS)]
    options = [keyword for _parent, keyword in _tree(redact._OPTION_KEYWORDS)]

    assert len(main) == len(set(main)) and len(options) == len(set(options))
    assert set(main) - PARENTS_ONLY == _main_keywords()
    assert set(options) == _option_keywords() - set(main)


def test_each_child_holds_its_parent_which_is_looked_for_before_it() -> None:
    main = {keyword for _parent, keyword in _tree(redact._KEYWORDS)}
    for (roots, tree), known in ((redact._KEYWORDS, set()), (redact._OPTION_KEYWORDS, main)):
        seen = set(known) | set(roots)
        for parent, children in tree.items():
            assert parent in seen
            assert all(parent in child and parent != child for child in children)
            seen |= set(children)


def _texts() -> Iterator[str]:
    """The secrets corpus, and texts stitched at random from the keywords, their pieces and
    what may follow a name."""
    yield from (text for _family, text, _secret in CORPUS)
    words = sorted(_main_keywords() | _option_keywords() | PARENTS_ONLY)
    pieces = [*words, *(w[: len(w) // 2] for w in words), *(w[len(w) // 2 :] for w in words)]
    pieces += ["word", "wd", "phrase", "nature", " -", "\t", " ", "=", ":", '"', "x", "ed"]
    rng = random.Random(20261202)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))).lower()
        yield text
        yield text + " " * 300 + text  # long enough to be split at a stem rather than scanned


def test_the_keywords_found_are_those_the_text_holds() -> None:
    everything = _main_keywords() | _option_keywords() | PARENTS_ONLY
    for lowered in _texts():
        expected = {keyword for keyword in everything if keyword in lowered}

        found = masking.find_keywords(lowered, redact._KEYWORDS)
        masking.find_keywords(lowered, redact._OPTION_KEYWORDS, found)

        assert set(found) == expected, lowered


ENDS = ("=", ":", '"', "'", "_", "-", ".", "\\", " =")
# The spellings each gate stands for: of a secret name, and of a `--password VALUE` option.
NAME_WORDS = {
    *("token", "secret", "credential", "signature", "password", "passwd", "passphrase"),
    *(stem + end for stem in ("pass", "pwd", "key", "auth", "sig") for end in ENDS),
    *(
        stem + end
        for stem in ("pw", "pat", "hmac", "salt", "mnemonic", "cookie", "session")
        for end in ("=", ":", '"', "'", "\\", " =")
    ),
}
OPTION_WORDS = {
    *("token", "secret", "credential", "password", "passwd", "passphrase"),
    *(stem + end for stem in ("pass", "pwd", "key") for end in (" ", "\t")),
}
KEY_OPTION_WORDS = {stem + end for stem in ("key", "auth", "pw", "pass") for end in (" ", "\t")}
GATES = (
    (redact._NAME_GATE, NAME_WORDS),
    (redact._OPTION_GATE, OPTION_WORDS),
    (redact._KEY_OPTION_GATE, KEY_OPTION_WORDS),
)


def test_the_gates_stand_for_their_spellings() -> None:
    for gate, words in GATES:
        assert {stem + end for stem, ends in gate for end in ends} == words


def test_a_gate_asks_for_its_stems_followed_by_what_may_follow_them() -> None:
    answers = []
    for lowered in _texts():
        found = masking.find_keywords(lowered, redact._KEYWORDS)
        for gate, words in GATES:
            answer = redact._mentions(lowered, found, gate)
            assert answer == any(word in lowered for word in words), (lowered, gate)
            answers.append(answer)
    assert answers.count(True) > 500 and answers.count(False) > 500


def test_no_gate_stem_overlaps_itself() -> None:
    # Splitting a text at a stem finds every place it is at only if no two places overlap.
    for stem, _ends in (*redact._NAME_GATE, *redact._OPTION_GATE, *redact._KEY_OPTION_GATE):
        assert not any(stem[:size] == stem[-size:] for size in range(1, len(stem)))
