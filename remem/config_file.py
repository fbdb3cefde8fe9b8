"""Reading config.toml for remem.config: its text, what tomllib makes of it (kept in a cache
beside the home, for the next reader), and where in the text a key is written, for messages.

Stdlib only, and no `typing` at run time: the hook reads its settings through this.
"""

from __future__ import annotations

import json
import re

from remem.errors import ConfigError, ConfigSyntaxError
from remem.paths import write_whole

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from typing import Any

_TOML_POSITION = r"\s*\(at line (\d+), column \d+\)$"
# What TOML refuses even in a comment: the control characters other than tab (a newline ends
# the comment; CR only before one).
_COMMENT_REFUSES = tuple(chr(code) for code in (*range(0x09), *range(0x0B, 0x20), 0x7F))


def _nothing_but_comments(text: str) -> bool:
    """Whether TOML reads nothing at all in this text (blank lines and comments, as `remem init`
    writes it): the hook then spares itself tomllib, which costs it a fifth of its time."""
    text = text.replace("\r\n", "\n")
    for line in text.split("\n"):
        stripped = line.lstrip(" \t")
        if stripped and not stripped.startswith("#"):
            return False
    return not any(character in text for character in _COMMENT_REFUSES)


# What tomllib made of the config's text, kept in the home (never beside a REMEM_CONFIG that
# lies outside it) and keyed by the whole text, for the next reader.
CACHE_FILE = ".config.toml.parsed.json"


def read_file(path: str, cache: str) -> tuple[dict[str, Any], str]:
    """The parsed config file and its text; a missing file is no settings at all."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return {}, ""
    except OSError as exc:
        raise ConfigError(path, "(file)", f"cannot be read ({exc.strerror})") from None
    text = raw.decode("utf-8", errors="replace")
    if _nothing_but_comments(text):
        return {}, text
    document = _cached(cache, text)
    if document is None:
        document = _parse(path, text)
        _remember(cache, text, document)
    return document, text


def _parse(path: str, text: str) -> dict[str, Any]:
    import tomllib  # only for a file that sets something, and that the cache does not know

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        position = re.search(_TOML_POSITION, message)
        line = int(position.group(1)) if position else None
        raise ConfigSyntaxError(path, line, re.sub(_TOML_POSITION, "", message)) from None


def _cached(cache: str, text: str) -> dict[str, Any] | None:
    try:
        with open(cache, encoding="utf-8") as handle:
            saved = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("text") != text:
        return None
    document = saved.get("document")
    return document if isinstance(document, dict) else None


def _remember(cache: str, text: str, document: dict[str, Any]) -> None:
    """Best effort: a folder we cannot write to, or a value JSON cannot hold (a TOML date),
    only means the next reader parses the file again."""
    try:
        data = json.dumps({"text": text, "document": document}, ensure_ascii=False)
    except (TypeError, ValueError):
        return
    from contextlib import suppress  # the rare path: the hook does not import it otherwise

    with suppress(OSError):
        write_whole(cache, data.encode("utf-8"))  # whole or not at all, for a reader meanwhile


def line_of(text: str, section: str, key: str | None = None) -> int | None:
    """Where a [section] header, or a key inside it, is written; None when it is not found
    (a dotted or inline form): the message then names the key alone."""
    current = ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            current = stripped.strip("[] \t").strip().strip('"')
            if key is None and current == section:
                return number
        elif key is not None and current == section:
            name = stripped.split("=", 1)[0].strip().strip('"')
            if name == key:
                return number
    return None
