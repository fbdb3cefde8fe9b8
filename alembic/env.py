"""Alembic environment for remem.

The engine comes from `remem.db.engine.make_engine` (passed in by the runner as
config.attributes["connection"], or built from sqlalchemy.url), so migrations see the same PRAGMAs
as the application. SQLite uses batch mode so ALTERs work; PostgreSQL runs the same scripts.
"""

from __future__ import annotations

from alembic import context
from remem.db.engine import make_engine
from remem.db.schema import metadata


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(context.config.get_main_option("sqlalchemy.url"))
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


if context.is_offline_mode():
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"), target_metadata=metadata
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
