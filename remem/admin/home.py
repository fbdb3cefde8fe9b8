"""Creating and opening a remem home. Only `remem init` creates one; everything else refuses a
missing home, so a typo in REMEM_HOME never starts a second, empty memory."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import Engine

from remem.config import Settings, render_example_config
from remem.db import migrate, snapshot
from remem.db.engine import make_engine
from remem.errors import DatabaseUnavailable, SchemaBehind


@dataclass(frozen=True)
class InitResult:
    home: str
    created_home: bool
    created_config: bool
    database_url: str
    revision: str


def init_home(settings: Settings) -> InitResult:
    home = settings.home
    created_home = not os.path.isdir(home)
    os.makedirs(home, mode=0o700, exist_ok=True)
    snapshot.require_home(settings.home)
    os.chmod(home, 0o700)
    for sub in (settings.spool_dir, settings.log_dir):
        os.makedirs(sub, mode=0o700, exist_ok=True)
    created_config = not os.path.exists(settings.config_file)
    if created_config:
        descriptor = os.open(settings.config_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(render_example_config())
    if settings.sqlite_file:
        migrate.create_private_file(settings.sqlite_file)
    engine = make_engine(settings.database_url)
    try:
        with migration_lock(settings):
            migrate.upgrade(engine)
        revision = migrate.current_revision(engine) or ""
    finally:
        engine.dispose()
    return InitResult(home, created_home, created_config, settings.database_url, revision)


@contextlib.contextmanager
def migration_lock(settings: Settings) -> Iterator[None]:
    """Upgrades of one database run one after another (each is also one IMMEDIATE
    transaction, so a running daemon's writes never interleave with it)."""
    path = (settings.sqlite_file or os.path.join(settings.home, "remem")) + ".migrate.lock"
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def open_engine(settings: Settings, *, require_current_schema: bool = True) -> Engine:
    """The engine of an existing home's database; never creates a file."""
    snapshot.require_home(settings.home)
    path = settings.sqlite_file
    if path is not None and not os.path.isfile(path):
        raise DatabaseUnavailable(path, "the file does not exist: run `remem init`")
    engine = make_engine(settings.database_url)
    return migrate.require_head(engine, SchemaBehind) if require_current_schema else engine
