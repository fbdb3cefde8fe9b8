"""Settings: defaults <- config.toml <- REMEM_* environment.

Every setting is declared once in SPEC with its parser and default; config.example.toml lists the
same keys (a test keeps the two in step). An environment variable overrides a key as
REMEM_<SECTION>_<KEY> (REMEM_WORKER_POLL_INTERVAL=5s); REMEM_DATABASE_URL is the one most used.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from remem import paths
from remem.errors import ConfigError, ConfigSyntaxError, HomeUnusable

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> float:
    """'2s', '5m', '14d', '250ms' -> seconds. Bare numbers are refused: a unit is never guessed."""
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match:
            return float(match.group(1)) * _UNIT_S[match.group(2)]
    raise ValueError('must be a duration such as "2s", "5m" or "14d"')


# Claude Code replaces injected context above 10,000 characters by a preview.
MAX_PAGE_CHARS = 9000


def _page_chars(value: object) -> int:
    number = _positive_int(value)
    if number > MAX_PAGE_CHARS:
        raise ValueError(f"must be at most {MAX_PAGE_CHARS:,} (agents cut longer context)")
    return number


def _positive_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError("must be a whole number")
    try:
        number = int(value)
    except ValueError:
        raise ValueError("must be a whole number") from None
    if number < 1:
        raise ValueError("must be at least 1")
    return number


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return value


def _string_list(value: object) -> tuple[str, ...]:
    if isinstance(value, str):  # from the environment: comma-separated
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("must be a list of strings")
    return tuple(value)


def _boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _BOOLEAN_WORDS:
        return _BOOLEAN_WORDS[value.strip().lower()]
    raise ValueError("must be true or false")


_BOOLEAN_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _team_database_url(value: object) -> str:
    url = _string(value).strip()
    if url and not url.startswith(("postgresql://", "postgresql+psycopg://", "postgres://")):
        raise ValueError(
            "must be a PostgreSQL URL such as postgresql+psycopg://user@host/remem (or empty)"
        )
    return url


def _log_level(value: object) -> str:
    level = _string(value).upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
        raise ValueError("must be one of debug, info, warning, error")
    return level


DEFAULT_IGNORE_COMMANDS = (
    "ls",
    "ll",
    "la",
    "cat",
    "less",
    "more",
    "head",
    "tail",
    "pwd",
    "cd",
    "echo",
    "printf",
    "clear",
    "true",
    "which",
    "whoami",
    "history",
    "tree",
    "wc",
    "grep",
    "rg",
    "find",
    "env",
    "git status",
    "git log",
    "git diff",
    "git show",
    "git branch",
    "git remote",
    "git fetch",
    "git add",
    "git stash",
    "git blame",
    "git ls-files",
    "git rev-parse",
    "gh pr view",
    "gh pr list",
    "gh pr status",
    "gh pr diff",
    "gh issue view",
    "gh issue list",
    "gh run list",
    "gh run view",
    "bd show",
    "bd list",
    "bd ready",
    "docker ps",
    "docker images",
    "kubectl get",
    "kubectl describe",
    "kubectl logs",
    "ps",
    "df",
    "du",
    "stat",
    "file",
    "date",
    "uname",
    "printenv",
    "type",
    "man",
)

# (section, key) -> (attribute, parser, default)
SPEC: dict[tuple[str, str], tuple[str, Callable[[Any], Any], Any]] = {
    ("database", "url"): ("database_url", _string, ""),
    ("capture", "lock_timeout"): ("lock_timeout_s", parse_duration, "1s"),
    ("capture", "spool_max_bytes"): ("spool_max_bytes", _positive_int, 256 * 1024 * 1024),
    ("promotion", "min_verified_runs"): ("min_verified_runs", _positive_int, 2),
    ("promotion", "max_age"): ("max_age_s", parse_duration, "14d"),
    ("promotion", "min_distinct_sessions"): ("min_distinct_sessions", _positive_int, 1),
    ("promotion", "ignore_commands"): (
        "ignore_commands",
        _string_list,
        list(DEFAULT_IGNORE_COMMANDS),
    ),
    ("worker", "lease"): ("lease_s", parse_duration, "5m"),
    ("worker", "max_attempts"): ("max_attempts", _positive_int, 5),
    ("worker", "poll_interval"): ("poll_interval_s", parse_duration, "2s"),
    ("worker", "shutdown_timeout"): ("shutdown_timeout_s", parse_duration, "10s"),
    ("worker", "log_level"): ("log_level", _log_level, "info"),
    ("context", "max_chars"): ("context_max_chars", _page_chars, 4000),
    ("context", "max_lines"): ("context_max_lines", _positive_int, 200),
    ("context", "inherit_from"): ("inherit_from", _string_list, ["main", "master"]),
    ("team", "database_url"): ("team_database_url", _team_database_url, ""),
    ("team", "machine"): ("team_machine", _string, ""),
    ("team", "share"): ("team_share", _string_list, []),
    ("team", "promote"): ("team_promote", _boolean, False),
    ("team", "sync_interval"): ("team_sync_interval_s", parse_duration, "30s"),
}


DOCS: dict[tuple[str, str], str] = {
    ("database", "url"): "SQLAlchemy URL; empty means sqlite:///$REMEM_HOME/remem.db",
    ("capture", "lock_timeout"): "how long the hook waits for a locked database before spooling",
    ("capture", "spool_max_bytes"): "past this size the spool counts new events as dropped",
    ("promotion", "min_verified_runs"): "verified runs needed before a workflow is a procedure",
    ("promotion", "max_age"): "only runs this recent count as verification",
    ("promotion", "min_distinct_sessions"): "sessions those runs must come from",
    ("promotion", "ignore_commands"): (
        "read-only commands (matched on each parsed step's words) never promoted"
    ),
    ("worker", "lease"): "how long a claimed task is owned before another worker may reclaim it",
    ("worker", "max_attempts"): "attempts before a task is marked failed",
    ("worker", "poll_interval"): "how often the daemon looks for new tasks",
    ("worker", "shutdown_timeout"): (
        "on SIGTERM, how long to finish the task in hand before releasing it"
    ),
    ("worker", "log_level"): "debug, info, warning or error",
    (
        "context",
        "max_chars",
    ): "the digest's budget per page, at most 9000 (it is re-sent with every request)",
    ("context", "max_lines"): "the digest's line budget per page",
    ("context", "inherit_from"): "default branches whose procedures other branches inherit",
    ("team", "database_url"): (
        "the team's PostgreSQL database (postgresql+psycopg://user@host/remem); empty: no team"
    ),
    ("team", "machine"): "this machine's name in the team database; empty means the host name",
    ("team", "share"): (
        "project keys (glob patterns: github.com/org/*) to share; nothing else is shared"
    ),
    ("team", "promote"): "whether this machine's daemon also works the team's queue",
    ("team", "sync_interval"): "how often the daemon ships to and pulls from the team database",
}


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return str(value)


def render_example_config() -> str:
    """Every setting, commented out at its default: config.example.toml and the file that
    `remem init` writes are this text."""
    lines = [
        "# remem configuration. Every setting is shown at its default, commented out.",
        "# Environment variables override a setting: REMEM_<SECTION>_<KEY>, for example",
        "# REMEM_WORKER_POLL_INTERVAL=5s or REMEM_DATABASE_URL=postgresql+psycopg://host/remem.",
        '# Durations are written "250ms", "2s", "5m", "1h", "14d".',
    ]
    section = None
    for (name, key), (_attribute, _parse, default) in SPEC.items():
        if name != section:
            lines += ["", f"# [{name}]"]
            section = name
        lines.append(f"# {DOCS[(name, key)]}")
        lines.append(f"# {key} = {_toml_value(default)}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Settings:
    home: str
    config_file: str
    database_url: str
    lock_timeout_s: float
    spool_max_bytes: int
    min_verified_runs: int
    max_age_s: float
    min_distinct_sessions: int
    ignore_commands: tuple[str, ...]
    lease_s: float
    max_attempts: int
    poll_interval_s: float
    shutdown_timeout_s: float
    log_level: str
    context_max_chars: int
    context_max_lines: int
    inherit_from: tuple[str, ...]
    team_database_url: str
    team_machine: str
    team_share: tuple[str, ...]
    team_promote: bool
    team_sync_interval_s: float

    @property
    def sqlite_file(self) -> str | None:
        return paths.sqlite_path(self.database_url)

    @property
    def spool_dir(self) -> str:
        return os.path.join(self.home, paths.SPOOL_DIR)

    @property
    def log_dir(self) -> str:
        return os.path.join(self.home, paths.LOG_DIR)


_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column \d+\)$")


def _read_file(path: str) -> tuple[dict[str, Any], str]:
    """The parsed config file and its text; a missing file is no settings at all."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return {}, ""
    except OSError as exc:
        raise ConfigError(path, "(file)", f"cannot be read ({exc.strerror})") from None
    import tomllib  # only when there is a file: the import costs a fast command a tenth

    text = raw.decode("utf-8", errors="replace")
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        position = _TOML_POSITION.search(message)
        line = int(position.group(1)) if position else None
        raise ConfigSyntaxError(path, line, _TOML_POSITION.sub("", message)) from None


def _line_of(text: str, section: str, key: str | None = None) -> int | None:
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


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read the settings without touching the disk beyond the config file."""
    env = dict(os.environ if environ is None else environ)
    home = paths.resolve_home(env)
    problem = paths.home_problem(home)
    if problem:
        raise HomeUnusable(home, problem)
    config_file = paths.config_path(home, env)
    document, text = _read_file(config_file)
    for section, body in document.items():
        if not isinstance(body, dict):
            line = _line_of(text, section, None) or _line_of(text, "", section)
            raise ConfigError(config_file, section, "must be a [section] table", line)
        for key in body:
            if (section, key) not in SPEC:
                line = _line_of(text, section, key)
                raise ConfigError(config_file, f"{section}.{key}", "is not a remem setting", line)
    values: dict[str, Any] = {"home": home, "config_file": config_file}
    for (section, key), (attribute, parse, default) in SPEC.items():
        env_name = f"REMEM_{section}_{key}".upper()
        raw, source = document.get(section, {}).get(key, default), config_file
        line = _line_of(text, section, key) if key in document.get(section, {}) else None
        if env_name in env:
            raw, source, line = env[env_name], f"environment variable {env_name}", None
        try:
            values[attribute] = parse(raw)
        except ValueError as exc:
            raise ConfigError(source, f"{section}.{key}", str(exc), line) from None
    if not values["database_url"]:
        values["database_url"] = paths.default_database_url(home)
    if not values["team_machine"].strip():
        values["team_machine"] = os.uname().nodename
    return Settings(**values)
