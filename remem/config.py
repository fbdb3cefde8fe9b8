"""Settings: defaults <- config.toml <- REMEM_* environment, read alike by the hook and the worker.

Each setting is declared once, in the Settings class below: where config.toml holds it, how a
value is read, its default and a line saying what it means. load_settings, config.example.toml
(what `remem init` writes) and the environment names all come from that one declaration. An
environment variable overrides a key as REMEM_<SECTION>_<KEY> (REMEM_WORKER_POLL_INTERVAL=5s);
REMEM_DATABASE_URL is the one most used.

Stdlib only, and no `typing` at run time: the hook reads its settings here too.
"""

from __future__ import annotations

import os
import re

from remem import paths
from remem.config_file import CACHE_FILE, line_of, read_file
from remem.errors import ConfigError, ConfigErrors, HomeUnusable

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar

    T = TypeVar("T")

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> float:
    """'2s', '5m', '14d', '250ms' -> seconds. Bare numbers are refused: a unit is never guessed."""
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match:
            return float(match.group(1)) * _UNIT_S[match.group(2)]
    raise ValueError('must be a duration such as "2s", "5m" or "14d"')


def duration_text(seconds: float) -> str:
    """Seconds as a setting writes them, in the largest unit that holds them whole: 1209600 ->
    '14d', 5400 -> '90m'."""
    for unit in ("d", "h", "m", "s"):
        count = seconds / _UNIT_S[unit]
        if count >= 1 and count == int(count):
            return f"{int(count)}{unit}"
    return f"{seconds:g}s"


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


def _port(value: object) -> int:
    number = _positive_int(value)
    if number > 65535:
        raise ValueError("must be a TCP port, 1 to 65535")
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


# Read-only commands never promoted, beside those remem/shell/kinds.py knows (cat, sed -n,
# grep, find, git status|log|diff|show, ...), written as the environment writes a list.
DEFAULT_IGNORE_COMMANDS = _string_list(
    "ll, la, clear, history, git branch, git remote, git fetch, git add, git stash, "
    "gh pr view, gh pr list, gh pr status, gh pr diff, gh issue view, gh issue list, "
    "gh run list, gh run view, bd show, bd list, bd ready, docker ps, docker images, "
    "kubectl get, kubectl describe, kubectl logs, ps, man"
)


class Setting:
    """One setting: where config.toml holds it ("section.key"), the parser every value goes
    through (from the file, the environment or the default), its default as config.toml would
    spell it, and one line of documentation. The attribute is its name on Settings.

    Read on the Settings class, a setting gives its default, parsed
    (`Settings.context_max_chars == 4000`); read on loaded settings, the value in force."""

    __slots__ = ("attribute", "default", "doc", "key", "name", "parse", "section")

    def __init__(self, name: str, parse: Callable[[Any], Any], default: Any, doc: str) -> None:
        self.name, self.parse, self.default, self.doc = name, parse, default, doc
        self.section, _, self.key = name.partition(".")
        self.attribute = ""

    def __set_name__(self, owner: type, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is not None:  # loaded settings hold every value: this one was never set
            raise AttributeError(self.attribute)
        return self.parse(self.default)

    @property
    def env_name(self) -> str:
        return f"REMEM_{self.section}_{self.key}".upper()


if TYPE_CHECKING:

    def setting(name: str, parse: Callable[[Any], T], default: Any, doc: str) -> T:
        """Typed as the value it reads to, which is what loaded settings hold."""

else:
    setting = Setting


class Settings:
    """The settings in force, each declared here once (in the order config.example.toml lists
    them). Frozen: load_settings builds them whole."""

    home: str
    config_file: str

    database_url = setting(
        "database.url", _string, "", "SQLAlchemy URL; empty means sqlite:///$REMEM_HOME/remem.db"
    )
    lock_timeout_s = setting(
        "capture.lock_timeout",
        parse_duration,
        "1s",
        "how long the hook waits for a locked database before spooling",
    )
    spool_max_bytes = setting(
        "capture.spool_max_bytes",
        _positive_int,
        256 * 1024 * 1024,
        "past this size the spool counts new events as dropped",
    )
    min_verified_runs = setting(
        "promotion.min_verified_runs",
        _positive_int,
        2,
        "verified runs needed before a workflow is a procedure",
    )
    max_age_s = setting(
        "promotion.max_age", parse_duration, "14d", "only runs this recent count as verification"
    )
    min_distinct_sessions = setting(
        "promotion.min_distinct_sessions", _positive_int, 1, "sessions those runs must come from"
    )
    ignore_commands = setting(
        "promotion.ignore_commands",
        _string_list,
        list(DEFAULT_IGNORE_COMMANDS),
        "more read-only commands (matched on each parsed step's words) never promoted, "
        "beside the built-in table (cat, sed -n, grep, find, git status, ...)",
    )
    lease_s = setting(
        "worker.lease",
        parse_duration,
        "5m",
        "how long a claimed task is owned before another worker may reclaim it",
    )
    max_attempts = setting(
        "worker.max_attempts", _positive_int, 5, "attempts before a task is marked failed"
    )
    poll_interval_s = setting(
        "worker.poll_interval", parse_duration, "2s", "how often the daemon looks for new tasks"
    )
    shutdown_timeout_s = setting(
        "worker.shutdown_timeout",
        parse_duration,
        "10s",
        "on SIGTERM, how long to finish the task in hand before releasing it",
    )
    log_level = setting("worker.log_level", _log_level, "info", "debug, info, warning or error")
    context_max_chars = setting(
        "context.max_chars",
        _page_chars,
        4000,
        "the digest's budget per page, at most 9000 (it is re-sent with every request)",
    )
    context_max_lines = setting(
        "context.max_lines", _positive_int, 200, "the digest's line budget per page"
    )
    inherit_from = setting(
        "context.inherit_from",
        _string_list,
        ["main", "master"],
        "default branches whose procedures other branches inherit",
    )
    team_database_url = setting(
        "team.database_url",
        _team_database_url,
        "",
        "the team's PostgreSQL database (postgresql+psycopg://user@host/remem); empty: no team",
    )
    team_machine = setting(
        "team.machine",
        _string,
        "",
        "this machine's name in the team database; empty means the host name",
    )
    team_share = setting(
        "team.share",
        _string_list,
        [],
        "project keys (glob patterns: github.com/org/*) to share; nothing else is shared",
    )
    team_promote = setting(
        "team.promote", _boolean, False, "whether this machine's daemon also works the team's queue"
    )
    team_sync_interval_s = setting(
        "team.sync_interval",
        parse_duration,
        "30s",
        "how often the daemon ships to and pulls from the team database",
    )
    # What a pull accepts of the words the team forgot (remem/team/pull.py), oldest first: each
    # record costs every hook a chance of a slow proof (remem/record/forgotten.py).
    team_forgotten_per_forget = setting(
        "team.forgotten_per_forget",
        _positive_int,
        500,
        "forgotten words a pull accepts from one forget on the team database",
    )
    team_forgotten_per_machine = setting(
        "team.forgotten_per_machine",
        _positive_int,
        1000,
        "forgotten words a pull accepts from one machine of the team",
    )
    team_forgotten_total = setting(
        "team.forgotten_total",
        _positive_int,
        2000,
        "forgotten words a pull accepts from the team database in all",
    )
    import_entire = setting(
        "import.entire",
        _boolean,
        False,
        "whether the daemon (and a burst) imports the new Entire checkpoints of known projects",
    )
    import_entire_interval_s = setting(
        "import.entire_interval",
        parse_duration,
        "10m",
        "how often the daemon looks for new Entire checkpoints",
    )
    ui_port = setting(
        "ui.port",
        _port,
        7767,
        "the port `remem ui` serves on, on 127.0.0.1 only (--port overrides)",
    )

    def __init__(self, home: str, config_file: str, values: Mapping[str, Any]) -> None:
        declared = {each.attribute for each in SETTINGS}
        if set(values) != declared:
            raise TypeError(f"settings must be given whole: {sorted(declared ^ set(values))}")
        state = vars(self)
        state.update(home=home, config_file=config_file)
        state.update(values)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"settings are read-only: {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"settings are read-only: {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Settings):
            return NotImplemented
        return vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(tuple(vars(self).items()))

    def __repr__(self) -> str:
        return f"Settings({', '.join(f'{name}={value!r}' for name, value in vars(self).items())})"

    @property
    def sqlite_file(self) -> str | None:
        return paths.sqlite_path(self.database_url)

    @property
    def spool_dir(self) -> str:
        return os.path.join(self.home, paths.SPOOL_DIR)

    @property
    def log_dir(self) -> str:
        return os.path.join(self.home, paths.LOG_DIR)


SETTINGS: tuple[Setting, ...] = tuple(
    each for each in vars(Settings).values() if isinstance(each, Setting)
)


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
    for each in SETTINGS:
        if each.section != section:
            lines += ["", f"# [{each.section}]"]
            section = each.section
        lines.append(f"# {each.doc}")
        lines.append(f"# {each.key} = {_toml_value(each.default)}")
    return "\n".join(lines) + "\n"


def load_settings(environ: Mapping[str, str] | None = None, home: str | None = None) -> Settings:
    """The settings in force for a home (REMEM_HOME's by default): the worker and every command
    read them here, and refuse to run on a setting they cannot use, naming every one at once.
    Touches no disk beyond the config file and its cache."""
    settings, problems = read_settings(environ, home)
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise ConfigErrors(problems)
    return settings


def read_settings(
    environ: Mapping[str, str] | None = None, home: str | None = None
) -> tuple[Settings, list[ConfigError]]:
    """The settings with a default in place of each one that cannot be used, and why each
    could not: the hook runs on these rather than switch the memory off, and says so."""
    env = dict(os.environ if environ is None else environ)
    home = paths.resolve_home(env) if home is None else home
    problem = paths.home_problem(home)
    if problem:
        raise HomeUnusable(home, problem)
    config_file = paths.config_path(home, env)
    problems: list[ConfigError] = []
    try:
        document, text = read_file(config_file, os.path.join(home, CACHE_FILE))
    except ConfigError as exc:  # not TOML, or unreadable: every setting at its default
        document, text = {}, ""
        problems.append(exc)
    declared = {(each.section, each.key) for each in SETTINGS}
    for section, body in list(document.items()):
        if not isinstance(body, dict):
            line = line_of(text, section, None) or line_of(text, "", section)
            problems.append(ConfigError(config_file, section, "must be a [section] table", line))
            del document[section]
            continue
        for key in body:
            if (section, key) not in declared:
                line = line_of(text, section, key)
                problem = "is not a remem setting"
                problems.append(ConfigError(config_file, f"{section}.{key}", problem, line))
    values: dict[str, Any] = {}
    for each in SETTINGS:
        written = document.get(each.section, {})
        raw = written.get(each.key, each.default)
        overridden = each.env_name in env
        if overridden:
            raw = env[each.env_name]
        try:
            values[each.attribute] = each.parse(raw)
        except ValueError as exc:
            source, line = f"environment variable {each.env_name}", None
            if not overridden:
                source = config_file
                line = line_of(text, each.section, each.key) if each.key in written else None
            problems.append(ConfigError(source, each.name, str(exc), line))
            values[each.attribute] = each.parse(each.default)
    if not values["database_url"]:
        values["database_url"] = paths.default_database_url(home)
    if not values["team_machine"].strip():
        values["team_machine"] = os.uname().nodename
    problems.sort(key=lambda each: (each.line is None, each.line or 0))  # in the file's order
    return Settings(home, config_file, values), problems
