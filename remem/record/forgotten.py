"""Texts `remem forget` forgot, remembered without the text: what the hook, import, spool
ingestion and the team database mask from then on.

A forget is asked with a regular expression, but what must not come back is the text it found,
not the expression (which may name the secret's every character). So forget records the words
that held each match: the maximal runs of word characters (`[A-Za-z0-9_-]`), and of the wider
set secrets are written in (adding `+/.~`, with a base64 padding), that contain the match. A
text arriving later is cut into the same words, and a word that is a recorded one is replaced
by `[forgotten]`: `TOKEN=zq8Kp2abc`, `Bearer zq8Kp2abc` and `"zq8Kp2abc"` all hold the word
`zq8Kp2abc`. A match that spans words (`--match 'user pw'`) is held by no word and is not
recorded: the forget says how many such matches it left unrecorded.

Each recorded word is stored twice over, neither time as text:
- a bucket, 20 bits of its CRC-32: the cheap test every word of every payload goes through.
  With a handful of records one word in ten thousand or so passes it by chance;
- a PBKDF2-SHA256 digest under a random salt of its own: the proof, computed only for a word
  that passed the bucket test. Slow on purpose, so that holding the database does not make a
  forgotten word cheap to guess: 20 bits narrow an 8-character password down to millions of
  candidates, each costing a PBKDF2 run.
Words shorter than MIN_CHARS are never recorded (too few to guess hard, too common to mask).
The salt travels with its digest, so the team database's records hold on every machine.

Stdlib only and cheap to import: the hook imports it.
"""

from __future__ import annotations

import os
import re
import zlib

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any


MIN_CHARS = 8  # as WORDS spell it
BUCKET_MASK = (1 << 20) - 1
ITERATIONS = 20_000
MASK = "[forgotten]"
# The two ways a text is cut into words: runs of word characters, and runs of the characters
# secrets (base64, URL-safe tokens, dotted keys) are written in.
WORDS = (
    re.compile(r"[A-Za-z0-9_\-]{8,}"),
    re.compile(r"[A-Za-z0-9_\-+/.~]{8,}=*"),
)


def holds_forgotten(text: str) -> bool:
    """Whether a text had a forgotten word masked: as a command, it is not the one that ran."""
    return MASK in text


def bucket(word: str) -> int:
    return zlib.crc32(word.encode("utf-8", "surrogatepass")) & BUCKET_MASK


def digest(word: str, salt_hex: str) -> str:
    import hashlib  # costs the hook milliseconds: only a word that passed its bucket test

    data = word.encode("utf-8", "surrogatepass")
    return hashlib.pbkdf2_hmac("sha256", data, bytes.fromhex(salt_hex), ITERATIONS).hex()


def record(word: str) -> tuple[int, str, str]:
    """(bucket, salt, digest) for a word to remember."""
    salt = os.urandom(16).hex()
    return bucket(word), salt, digest(word, salt)


def words_holding(text: str, start: int, end: int) -> Iterator[str]:
    """The words of `text` that hold its span [start, end) whole."""
    for pattern in WORDS:
        for found in pattern.finditer(text, max(0, start - 4096), end + 4096):
            if found.start() <= start and end <= found.end():
                yield found.group()


class Known:
    """The recorded words, by bucket: tells a word arriving later whether it was forgotten.
    Given `fetch`, the records are read only for the buckets of the words asked about (an index
    on the bucket answers), so that many records cost a text its own words' reads, not all
    rows; without it, `rows` are all there are."""

    def __init__(
        self,
        rows: Iterable[Sequence[Any]] = (),
        fetch: Callable[[list[int]], Iterable[Sequence[Any]]] | None = None,
    ) -> None:
        self.by_bucket: dict[int, list[tuple[str, str]]] = {}
        self._fetch = fetch
        self._read: set[int] = set()
        self._add(rows)
        self._seen: dict[str, bool] = {}

    def _add(self, rows: Iterable[Sequence[Any]]) -> None:
        for word_bucket, salt, word_digest in rows:
            self.by_bucket.setdefault(int(word_bucket), []).append((salt, word_digest))

    def __bool__(self) -> bool:
        return self._fetch is not None or bool(self.by_bucket)

    def read(self, words: Iterable[str]) -> None:
        """Read the records of the words' buckets not read yet, in one call of fetch."""
        if self._fetch is None:
            return
        wanted = {bucket(word) for word in words} - self._read
        if wanted:
            self._add(self._fetch(sorted(wanted)))
            self._read |= wanted

    def forgotten(self, word: str) -> bool:
        if self._fetch is not None and bucket(word) not in self._read:
            self.read((word,))
        candidates = self.by_bucket.get(bucket(word))
        if not candidates:
            return False
        seen = self._seen.get(word)
        if seen is None:
            seen = any(digest(word, salt) == found for salt, found in candidates)
            self._seen[word] = seen
        return seen

    def mask(self, text: str) -> str:
        """The text with every forgotten word replaced by MASK."""
        # Each distinct word is tested once: an output repeats its words many times over.
        cut = [set(pattern.findall(text)) for pattern in WORDS]
        self.read(word for words in cut for word in words)
        forgotten = [
            pattern
            for pattern, words in zip(WORDS, cut, strict=True)
            if any(self.forgotten(word) for word in words)
        ]
        if not forgotten:
            return text
        spans = [
            found.span()
            for pattern in forgotten
            for found in pattern.finditer(text)
            if self.forgotten(found.group())
        ]
        parts, at = [], 0
        for start, end in sorted(spans):
            if start < at:  # the two ways of cutting found overlapping words
                at = max(at, end)
                continue
            parts.append(text[at:start] + MASK)
            at = end
        parts.append(text[at:])
        return "".join(parts)
