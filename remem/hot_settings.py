"""The few settings the hot paths need (the hook, and `remem context`), read from config.toml
only when the file sets one of them: tomllib and the full settings module would cost the hook a
third of its time budget. Stdlib only."""

from __future__ import annotations

import os

from remem import paths
from remem.procedures import digest

TYPE_CHECKING = False  # `typing` is not imported on the hot paths
if TYPE_CHECKING:
    from collections.abc import Sequence


class HotSettings:
    KEYS = ("url", "lock_timeout", "spool_max_bytes", "max_chars", "max_lines", "inherit_from")

    def __init__(self, home: str) -> None:
        self.home = home
        self.database_url = os.environ.get("REMEM_DATABASE_URL") or paths.default_database_url(home)
        self.lock_timeout_s = 1.0
        self.spool_max_bytes = 256 * 1024 * 1024
        self.max_chars = digest.DEFAULT_MAX_CHARS
        self.max_lines = digest.DEFAULT_MAX_LINES
        self.inherit_from: Sequence[str] = digest.DEFAULT_INHERIT_FROM
        overridden = any(
            name.startswith(("REMEM_CAPTURE_", "REMEM_CONTEXT_")) for name in os.environ
        )
        if overridden or config_mentions(home, self.KEYS):
            from remem.config import load_settings

            settings = load_settings()
            self.database_url, self.lock_timeout_s = settings.database_url, settings.lock_timeout_s
            self.max_chars, self.max_lines = settings.context_max_chars, settings.context_max_lines
            self.inherit_from = settings.inherit_from
            self.spool_max_bytes = settings.spool_max_bytes

    @property
    def sqlite_file(self) -> str | None:
        return paths.sqlite_path(self.database_url)


def config_mentions(home: str, keys: tuple[str, ...]) -> bool:
    try:
        with open(paths.config_path(home), encoding="utf-8", errors="replace") as handle:
            lines = handle.read(65536).splitlines()
    except OSError:
        return False
    return any(line.strip().startswith(keys) for line in lines)
