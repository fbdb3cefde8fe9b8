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


# The families' keywords. One made of a word and its separator (`dop_v1_` is found as `dop_`) is
# one of the text's pieces: the runs of letters and digits, each with the separator that ends it,
# found by bytes methods and a set intersection, each one loop in C; any other keyword is looked
# for anywhere, one by one. A text holding no keyword runs no family's pattern.
_PIECE_BYTES = b"abcdefghijklmnopqrstuvwxyz0123456789_.-"
_SPACES = bytes(byte if byte in _PIECE_BYTES else 0x20 for byte in range(256))
_BY_PIECE: dict[bytes, list[int]] = {}
_ANYWHERE: set[int] = set()  # families with a keyword looked for anywhere


def _index_families() -> tuple[frozenset[bytes], tuple[tuple[str, list[int]], ...]]:
    anywhere: dict[str, list[int]] = {}
    for position, (_family, keywords, _pattern, _example) in enumerate(FAMILIES):
        for keyword in keywords:
            cut = min((keyword.find(sep) for sep in "_.-" if sep in keyword), default=-1)
            if cut > 0 and keyword[:cut].isascii() and keyword[:cut].isalnum():
                _BY_PIECE.setdefault(keyword[: cut + 1].encode(), []).append(position)
            else:
                anywhere.setdefault(keyword.removeprefix("*"), []).append(position)
                _ANYWHERE.add(position)
    return frozenset(_BY_PIECE), tuple(anywhere.items())


_PIECES, _ANYWHERE_KEYWORDS = _index_families()


def _families_due(lowered: str) -> list[int]:
    pieces = lowered.encode("utf-8", "surrogatepass")
    for separator in (b"_", b"-", b"."):
        pieces = pieces.replace(separator, separator + b" ")
    found = [_BY_PIECE[piece] for piece in _PIECES.intersection(pieces.translate(_SPACES).split())]
    found += [rows for keyword, rows in _ANYWHERE_KEYWORDS if keyword in lowered]
    return sorted({position for rows in found for position in rows})


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
