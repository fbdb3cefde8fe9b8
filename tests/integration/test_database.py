"""The schema, migrations and connection settings agree with each other."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

from remem.config import render_example_config
from remem.db import migrate
from remem.db.engine import READ_ONLY, make_engine
from remem.db.schema import metadata
from remem.db.sqlite import schema_head
from tests.conftest import REPO, Home


def test_migrations_match_table_definitions(home: Home) -> None:
    engine = make_engine(f"sqlite:///{home.db}")
    with engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), metadata)
    engine.dispose()
    assert diff == []


def test_every_connection_gets_the_pragmas(home: Home) -> None:
    engine = make_engine(f"sqlite:///{home.db}", busy_timeout_s=3)
    with engine.connect() as connection:
        values = {
            name: connection.execute(text(f"PRAGMA {name}")).scalar()
            for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")
        }
    engine.dispose()
    assert values == {"journal_mode": "wal", "synchronous": 1, "foreign_keys": 1,
                      "busy_timeout": 3000}  # fmt: skip


def test_writers_begin_immediate_and_readers_do_not(home: Home) -> None:
    engine = make_engine(f"sqlite:///{home.db}", busy_timeout_s=0.1)
    with (
        engine.connect() as writer,
        engine.connect().execution_options(**{READ_ONLY: True}) as reader,
    ):
        writer.begin()
        writer.execute(text("SELECT 1"))  # no write yet, but the write lock is already held
        assert reader.execute(text("SELECT count(*) FROM projects")).scalar() == 0
        other = make_engine(f"sqlite:///{home.db}", busy_timeout_s=0.1)
        with other.connect() as second_writer:
            try:
                second_writer.begin()
                second_writer.execute(text("SELECT 1"))
            except Exception as exc:
                assert "locked" in str(exc)
            else:
                raise AssertionError("a second writer began while the first held the lock")
        other.dispose()
        writer.rollback()
    engine.dispose()


def test_upgrade_is_idempotent(home: Home) -> None:
    engine = make_engine(f"sqlite:///{home.db}")
    migrate.upgrade(engine)
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == schema_head()
    engine.dispose()


def test_config_example_is_the_rendered_template() -> None:
    assert (REPO / "config.example.toml").read_text() == render_example_config()


def test_migrations_dir_is_the_checkout_in_an_editable_install() -> None:
    assert Path(migrate.migrations_dir()) == REPO / "alembic"
