"""What redaction puts in place of a secret, and the table of secret families (secret_families.py)
applied to a text. Stdlib only: the hook's hot path."""

from __future__ import annotations

import re

from remem.record.secret_families import FAMILIES

MASK = "[REDACTED]"

_compiled: dict[str, re.Pattern[str]] = {}


def pattern(text: str, flags: int = 0) -> re.Pattern[str]:
    compiled = _compiled.get(text)
    if compiled is None:
        compiled = _compiled[text] = re.compile(text, flags)
    return compiled


def masked(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], MASK]
        last = end
    parts.append(text[last:])
    return "".join(parts)


# The families' keywords. Those made of a word and its separator (`dop_v1_` is found as `dop_`)
# are found together, in one pass over the text read backwards, where a separator is rare enough
# to start a match; the few others one by one. A text holding none runs no family's pattern.
_SEPARATOR_THEN_WORD = r"[_.-][a-z0-9]{1,16}(?![a-z0-9])"
_BY_WORD: dict[str, list[int]] = {}  # the keyword's word and separator, read backwards
_BY_TEXT: dict[str, list[int]] = {}
_ANYWHERE: set[int] = set()  # families with a keyword looked for anywhere


def _index_families() -> None:
    for position, (_family, keywords, _pattern, _example) in enumerate(FAMILIES):
        for keyword in keywords:
            cut = min((keyword.find(sep) for sep in "_.-" if sep in keyword), default=-1)
            if cut > 0 and keyword[:cut].isascii() and keyword[:cut].isalnum():
                _BY_WORD.setdefault(keyword[cut::-1], []).append(position)
            else:
                _BY_TEXT.setdefault(keyword.removeprefix("*"), []).append(position)
                _ANYWHERE.add(position)


_index_families()


def _families_due(lowered: str) -> list[int]:
    words = pattern(_SEPARATOR_THEN_WORD).findall(lowered[::-1])
    due = {position for word in _BY_WORD.keys() & set(words) for position in _BY_WORD[word]}
    due.update(
        position for keyword, rows in _BY_TEXT.items() if keyword in lowered for position in rows
    )
    return sorted(due)


def mask_families(text: str, lowered: str) -> str:
    """The text with every secret of the families its keywords call for masked; a family found
    at a word start matches only there."""
    for position in _families_due(lowered):
        found = pattern(FAMILIES[position][2])
        group = "secret" if "secret" in found.groupindex else 0
        spans = [
            match.span(group)
            for match in found.finditer(text)
            if position in _ANYWHERE
            or not (match.start() and text[match.start() - 1 : match.end()][:2].isalnum())
        ]
        text = masked(text, [(start, end) for start, end in spans if start < end])
    return text
