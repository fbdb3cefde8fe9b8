"""Running the Alembic migrations from an editable checkout or an installed wheel."""

from __future__ import annotations

import os
from collections.abc import Callable

from alembic.config import Config
from sqlalchemy import Connection, Engine, text

from alembic import command
from remem.db.snapshot import engine_reader, revision
from remem.db.sqlite import migrations_dir, schema_head


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", migrations_dir())
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def current_revision(engine: Engine) -> str | None:
    with engine_reader(engine) as execute:
        return revision(execute)


def require_head(engine: Engine, behind: Callable[[str | None, str], Exception]) -> Engine:
    """The engine, unless its schema is not at this remem's head: then it is disposed of and
    `behind(current, head)` raised."""
    try:
        current, head = current_revision(engine), schema_head()
        if current != head:
            raise behind(current, head)
    except BaseException:
        engine.dispose()
        raise
    return engine


# Any fixed number: the key of the PostgreSQL advisory lock every remem migration takes.
MIGRATION_LOCK_KEY = 0x72656D656D


def _serialise(connection: Connection) -> None:
    """Concurrent migrations of one database run one after the other. SQLite's BEGIN IMMEDIATE
    already did that; on PostgreSQL (a team database that several machines upgrade) a
    transaction-scoped advisory lock does, and the one that waited then finds the schema
    current and has nothing left to do."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate in one transaction; concurrent upgrades queue (see _serialise)."""
    _migrate(engine, command.upgrade, revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Back to an earlier revision, in one transaction."""
    _migrate(engine, command.downgrade, revision)


def _migrate(engine: Engine, move: Callable[[Config, str], None], revision: str) -> None:
    config = alembic_config(engine.url.render_as_string(hide_password=False))
    with engine.begin() as connection:
        _serialise(connection)
        config.attributes["connection"] = connection
        move(config, revision)


def create_private_file(path: str) -> None:
    """Create an empty file readable by its owner only, unless it already exists."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(descriptor)
