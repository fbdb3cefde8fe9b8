"""Where a remem home and its files are, and how a file is replaced whole. Stdlib only: the
hook imports this."""

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


def installed_executable(name: str) -> str:
    """A command of remem's beside the running interpreter (the venv's bin/), else on PATH."""
    import shutil
    import sys

    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(beside):
        return beside
    return shutil.which(name) or beside


def write_whole(path: str, data: bytes, mode: int = 0o600, sync: bool = False) -> None:
    """Replace a file in one step, with this mode: a temporary file beside it, renamed over it,
    so that a reader at the same moment finds the old content or the new, never a part. With
    `sync` the new content is on disk before the rename."""
    temporary = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
