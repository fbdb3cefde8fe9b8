"""The one way a pattern a person gives is compiled: RE2, for `remem recall`, the MCP server,
the site's search and `remem forget` alike.

RE2 rather than `re`: a pattern like `(a+)+$` backtracks for ever in `re`, holding the
interpreter lock (a forget from the site would hang it); RE2's time is linear in the text
whatever the pattern, at the price of backreferences and lookaround. Positions are the
text's characters, as `re` counts them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol


class Match(Protocol):
    def start(self) -> int: ...

    def end(self) -> int: ...

    def group(self) -> str: ...


class RegexError(ValueError):
    """A pattern RE2 refuses; the message is RE2's reason, without the pattern."""


@dataclass(frozen=True)
class Regex:
    compiled: Any

    def search(self, text: str) -> Match | None:
        try:
            found: Match | None = self.compiled.search(text)
        except UnicodeEncodeError:
            found = self.compiled.search(_encodable(text))
        return found

    def finditer(self, text: str) -> Iterator[Match]:
        found: Iterator[Match] = self.compiled.finditer(_encodable(text))
        return found


def _encodable(text: str) -> str:
    """RE2 reads UTF-8: a lone surrogate becomes "?", one character for one, so that the
    positions found are the text's own."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def compile_regex(pattern: str, case_sensitive: bool = True) -> Regex:
    import re2  # only when a pattern is given: the hook's readers never load it

    options = re2.Options()
    options.log_errors = False  # the error is the caller's to say, once
    options.case_sensitive = case_sensitive
    try:
        return Regex(re2.compile(pattern, options))
    except UnicodeEncodeError:
        raise RegexError("a lone surrogate, not text") from None
    except re2.error as exc:
        raise RegexError(_reason(exc)) from None


def _reason(exc: Exception) -> str:
    """RE2's message without the pattern it repeats: "missing ): migrat(" -> "missing )"."""
    message = exc.args[0] if exc.args else str(exc)
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
    return text.split(": ", 1)[0]
