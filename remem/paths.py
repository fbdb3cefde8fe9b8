"""Where a remem home and its files are. Stdlib only: the hook imports this."""

from __future__ import annotations

import os

DEFAULT_HOME = "~/.remem"
DATABASE_FILE = "remem.db"
CONFIG_FILE = "config.toml"
SPOOL_DIR = "spool"
LOG_DIR = "logs"


def resolve_home(environ: os._Environ[str] | dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return os.path.abspath(os.path.expanduser(env.get("REMEM_HOME") or DEFAULT_HOME))


def config_path(home: str, environ: os._Environ[str] | dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    explicit = env.get("REMEM_CONFIG")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    return os.path.join(home, CONFIG_FILE)


def default_database_url(home: str) -> str:
    return "sqlite:///" + os.path.join(home, DATABASE_FILE)


def sqlite_path(url: str) -> str | None:
    """The file of a `sqlite:///…` URL, or None when the URL is not a SQLite file."""
    for prefix in ("sqlite:///", "sqlite+pysqlite:///"):
        if url.startswith(prefix):
            path = url[len(prefix) :].split("?", 1)[0]
            return path if path and path != ":memory:" else None
    return None


def foreign_owner(home: str) -> int | None:
    """The uid owning the home when it is not us (a shared or copied home is refused)."""
    owner = os.stat(home).st_uid
    return owner if owner != os.getuid() else None


def home_problem(home: str) -> str | None:
    """Why this path cannot be a home, if it exists and cannot: a file, or a folder we cannot
    enter."""
    if os.path.exists(home) and not os.path.isdir(home):
        return "is a file, not a folder"
    if os.path.isdir(home) and not os.access(home, os.R_OK | os.X_OK):
        return "cannot be read by this user"
    return None
