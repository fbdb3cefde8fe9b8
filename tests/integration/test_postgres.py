"""The same migrations and queue on a real PostgreSQL server (the team database, DESIGN.md §9):
one throwaway cluster per test session (tests/pg_server.py), a database per test."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import DBAPIError, OperationalError

from remem import hook
from remem.admin.home import open_engine
from remem.capture.store import store_event
from remem.config import load_settings
from remem.db import engine as engine_module
from remem.db import migrate
from remem.db.driver import Driver
from remem.db.engine import READ_ONLY, executor, make_engine
from remem.db.schema import metadata
from remem.db.sqlite import schema_head
from remem.errors import SchemaBehind
from remem.queue import store as queue
from tests.conftest import REMEM
from tests.pg_server import PostgresServer

NOW = 1_800_000_000.0
MAX_ATTEMPTS = 5


@pytest.fixture(scope="module")
def head_template(pg_server: PostgresServer) -> str:
    """One database migrated to head; each queue test gets a copy."""
    name = pg_server.create_database()
    engine = make_engine(pg_server.url(name))
    migrate.upgrade(engine)
    engine.dispose()
    return name


@pytest.fixture
def pg_engine(pg_server: PostgresServer, head_template: str) -> Iterator[Engine]:
    name = pg_server.create_database(template=head_template)
    # A claim that waited on a row lock instead of skipping it fails after 10 s, not never.
    engine = make_engine(pg_server.url(name) + "&options=-c%20lock_timeout%3D10s")
    yield engine
    engine.dispose()
    pg_server.drop_database(name)


# ---- migrations ---------------------------------------------------------------------------------


def _shape(connection: Connection) -> dict[str, Any]:
    """Tables, columns (type, nullability, default), indexes and unique constraints, as
    SQLAlchemy's inspector reads them back from the server."""
    inspector = inspect(connection)
    shape: dict[str, Any] = {}
    for table in sorted(set(inspector.get_table_names()) - {"alembic_version"}):
        shape[table] = {
            # Sorted: a column a migration added comes last, where the definitions may differ.
            "columns": sorted(
                (c["name"], str(c["type"]), c["nullable"], c.get("default"))
                for c in inspector.get_columns(table)
            ),
            "indexes": sorted(
                (
                    i["name"],
                    tuple(i["column_names"]),
                    bool(i["unique"]),
                    str(i.get("dialect_options", {}).get("postgresql_where")),
                )
                for i in inspector.get_indexes(table)
            ),
            "unique": sorted(
                (u["name"], tuple(u["column_names"]))
                for u in inspector.get_unique_constraints(table)
            ),
            "primary_key": tuple(inspector.get_pk_constraint(table)["constrained_columns"]),
        }
    return shape


def _metadata_shape(pg_server: PostgresServer) -> dict[str, Any]:
    """The shape the table definitions give when created directly."""
    name = pg_server.create_database()
    engine = make_engine(pg_server.url(name))
    try:
        metadata.create_all(engine)
        with engine.connect() as connection:
            return _shape(connection)
    finally:
        engine.dispose()
        pg_server.drop_database(name)


def _assert_matches_table_definitions(engine: Engine, pg_server: PostgresServer) -> None:
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
        assert _shape(connection) == _metadata_shape(pg_server)


def _sequences_behind(engine: Engine) -> list[str]:
    """Tables whose id sequence would hand out an id already taken."""
    behind = []
    with engine.connect() as connection:
        inspector = inspect(connection)
        for table in inspector.get_table_names():
            if "id" not in {column["name"] for column in inspector.get_columns(table)}:
                continue
            sequence = connection.execute(
                text("SELECT pg_get_serial_sequence(:table, 'id')"), {"table": table}
            ).scalar()
            if sequence is None:
                continue
            last, called = connection.execute(
                text(f"SELECT last_value, is_called FROM {sequence}")
            ).one()
            high = connection.execute(text(f"SELECT COALESCE(MAX(id), 0) FROM {table}")).scalar()
            if (last if called else last - 1) < high:
                behind.append(table)
    return behind


def test_upgrade_to_head_gives_the_table_definitions(
    pg_url: str, pg_server: PostgresServer
) -> None:
    engine = make_engine(pg_url)
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == schema_head()
    _assert_matches_table_definitions(engine, pg_server)
    engine.dispose()


def test_upgrade_to_head_is_idempotent_and_concurrent_upgrades_queue(pg_url: str) -> None:
    # Without the migration lock they wait on each other's tables: fail after 30 s, not hang.
    engines = [make_engine(pg_url + "&options=-c%20lock_timeout%3D30s") for _ in range(3)]
    errors: list[BaseException] = []

    def upgrade(engine: Engine) -> None:
        try:
            migrate.upgrade(engine)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=upgrade, args=(engine,)) for engine in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert migrate.current_revision(engines[0]) == schema_head()
    for engine in engines:
        engine.dispose()


PROCEDURE_0003 = """
INSERT INTO procedures (id, project_id, branch, workflow_key, command, command_hash, topic_key,
    status, confidence, verified_runs, distinct_sessions, evidence_event_ids, files,
    first_verified_at, last_verified_at, body, created_at, updated_at)
VALUES (:id, 1, 'main', :key, :command, :hash, :key, :status, 0.9, 3, 2, '[1]', '[]', 1, 2,
    'body', 1, 2)
"""


def _at_0003_with_procedures(engine: Engine) -> None:
    """Procedures 1 and 2 kept, procedure 3 deleted: its id was handed out all the same."""
    migrate.upgrade(engine, "0003")
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO projects (root, created_at) VALUES ('/p/shop', 1)"))
        for number, status in ((1, "active"), (2, "archived"), (3, "active")):
            connection.execute(
                text(PROCEDURE_0003),
                {
                    "id": number,
                    "key": f"make-{number}",
                    "command": f"make {number}",
                    "hash": f"h{number}",
                    "status": status,
                },
            )
        connection.execute(text("SELECT setval('procedures_id_seq', 3)"))
        connection.execute(text("DELETE FROM procedures WHERE id = 3"))


def _insert_procedure(engine: Engine) -> int:
    """A procedure inserted as the worker inserts one: the id comes from the sequence."""
    row: dict[str, Any] = {}
    for column in metadata.tables["procedures"].columns:
        if column.name != "id":
            row[column.name] = 0 if column.type.python_type in (int, float) else "x"
    row.update(project_id=1, scope="branch", status="active", branch="main")
    row.update(variants="[]", branches='["main"]', evidence_event_ids="[]", files="[]")
    with engine.begin() as connection:
        inserted = connection.execute(
            metadata.tables["procedures"].insert().returning(metadata.tables["procedures"].c.id),
            row,
        )
        return int(inserted.scalar_one())


def test_upgrade_from_0003_keeps_procedures_and_their_ids_are_never_reused(
    pg_url: str, pg_server: PostgresServer
) -> None:
    engine = make_engine(pg_url)
    _at_0003_with_procedures(engine)
    migrate.upgrade(engine)
    with engine.connect() as connection:
        kept = connection.execute(
            text("SELECT id, scope, workflow, status FROM procedures ORDER BY id")
        ).all()
    assert [tuple(row) for row in kept] == [
        (1, "branch", "make 1", "active"),
        (2, "branch", "make 2", "archived"),
    ]
    assert _sequences_behind(engine) == []
    assert _insert_procedure(engine) == 4  # past 3, which the old table had handed out
    _assert_matches_table_definitions(engine, pg_server)
    engine.dispose()


def test_downgrade_to_0003_and_up_again(pg_url: str, pg_server: PostgresServer) -> None:
    engine = make_engine(pg_url)
    _at_0003_with_procedures(engine)
    migrate.upgrade(engine)
    _insert_procedure(engine)
    migrate.downgrade(engine, "0003")
    assert migrate.current_revision(engine) == "0003"
    assert _sequences_behind(engine) == []
    with engine.begin() as connection:  # 0003's worker inserts without an id
        connection.execute(
            text(PROCEDURE_0003.replace("(id, ", "(").replace("(:id, ", "(")),
            {"key": "k", "command": "make 5", "hash": "h5", "status": "active"},
        )
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == schema_head()
    assert _sequences_behind(engine) == []
    _assert_matches_table_definitions(engine, pg_server)
    migrate.downgrade(engine, "base")
    with engine.connect() as connection:
        assert set(inspect(connection).get_table_names()) <= {"alembic_version"}
    engine.dispose()


def _behind_head() -> str:
    script = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
    previous = script.get_revision(schema_head()).down_revision
    assert isinstance(previous, str)
    return previous


def _home(tmp_path: Path, **env: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("REMEM_")},
        "REMEM_HOME": str(home),
        "HOME": str(tmp_path),
        **env,
    }


def _remem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REMEM, *args], env=env, capture_output=True, text=True, timeout=120)


def test_a_schema_behind_is_refused_in_one_line_until_db_upgrade(
    pg_url: str, tmp_path: Path
) -> None:
    engine = make_engine(pg_url)
    previous = _behind_head()
    migrate.upgrade(engine, previous)
    engine.dispose()
    env = _home(tmp_path, REMEM_DATABASE_URL=pg_url)
    with pytest.raises(SchemaBehind, match="run `remem db upgrade`"):
        open_engine(load_settings(env))

    refused = _remem(env, "tasks", "--json")
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"remem: Database schema is at {previous}, this remem needs {schema_head()}: "
        "run `remem db upgrade`."
    ]
    upgraded = _remem(env, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stdout == f"Schema {previous} -> {schema_head()}\n"
    listed = _remem(env, "tasks", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []


def test_db_upgrade_team_migrates_the_team_database(pg_url: str, tmp_path: Path) -> None:
    env = _home(tmp_path)
    unset = _remem(env, "db", "upgrade", "--team")
    assert unset.returncode == 1 and len(unset.stderr.splitlines()) == 1
    assert "database_url` under [team]" in unset.stderr

    env["REMEM_TEAM_DATABASE_URL"] = "sqlite:///elsewhere.db"
    wrong = _remem(env, "db", "upgrade", "--team")
    assert wrong.returncode == 1 and len(wrong.stderr.splitlines()) == 1
    assert "REMEM_TEAM_DATABASE_URL" in wrong.stderr and "PostgreSQL URL" in wrong.stderr

    env["REMEM_TEAM_DATABASE_URL"] = pg_url
    first = _remem(env, "db", "upgrade", "--team")
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"Team schema empty -> {schema_head()}\n"
    again = _remem(env, "db", "upgrade", "--team")
    assert again.stdout == f"Team schema at {schema_head()}\n"
    assert not (tmp_path / "home" / "remem.db").exists()  # the local database is not touched


def test_a_url_naming_no_driver_connects_through_psycopg(pg_url: str) -> None:
    engine = make_engine(pg_url.replace("postgresql+psycopg://", "postgresql://"))
    with engine.connect() as connection:
        assert connection.execute(text("SELECT 1")).scalar() == 1
    assert engine.dialect.driver == "psycopg"
    engine.dispose()


# ---- connections --------------------------------------------------------------------------------


def _backend_dropped(engine: Engine, pg_url: str) -> None:
    """The server ends the one pooled connection's backend, as a restart would."""
    with engine.connect() as connection:
        pid = connection.execute(text("SELECT pg_backend_pid()")).scalar()
    other = make_engine(pg_url)
    try:
        with other.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        other.dispose()


def test_a_connection_idle_past_the_ping_interval_is_pinged_and_replaced(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(pg_url)
    try:
        _backend_dropped(engine, pg_url)
        monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_S", 0.0)
        with engine.connect() as connection:
            assert connection.execute(text("SELECT 1")).scalar() == 1
    finally:
        engine.dispose()


def test_a_connection_back_within_the_ping_interval_goes_to_work_unasked(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ping while a worker drains: a server gone meanwhile fails the first statement, and
    the pool replaces its connections for the next."""
    engine = make_engine(pg_url)
    try:
        _backend_dropped(engine, pg_url)
        monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_S", 3600.0)
        with pytest.raises(OperationalError), engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        with engine.connect() as connection:
            assert connection.execute(text("SELECT 1")).scalar() == 1
    finally:
        engine.dispose()


def test_a_reader_keeps_the_statements_its_connection_prepared(pg_engine: Engine) -> None:
    """psycopg prepares a statement the fifth time a connection runs it and forgets them all
    at a rollback: a worker's readers end by commit, so its connection keeps them from one
    task to the next. Each execution is still planned for its values, and options the URL
    gives the server stay."""
    engine = pg_engine
    marker = text("SELECT count(*) FROM extraction_tasks WHERE id > :id /* a reader's */")
    try:
        for _ in range(6):
            with engine.connect().execution_options(**{READ_ONLY: True}) as sa_connection:
                assert Driver(sa_connection).execute(marker, {"id": 0}).scalar() == 0
        with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
            prepared = connection.execute(
                text("SELECT statement FROM pg_prepared_statements WHERE NOT from_sql")
            ).scalars()
            assert [s for s in prepared if "a reader's" in s]
            assert connection.execute(text("SHOW plan_cache_mode")).scalar() == (
                "force_custom_plan"
            )
            assert connection.execute(text("SHOW lock_timeout")).scalar() == "10s"
    finally:
        engine.dispose()


# As SQLAlchemy raises it, and as psycopg does under the driver (remem/db/driver.py).
WRITE_REFUSED = (DBAPIError, psycopg.errors.ReadOnlySqlTransaction)


def test_a_reader_is_refused_writes_on_the_server(pg_engine: Engine) -> None:
    """What ends by commit instead of rollback can have written nothing."""
    engine = pg_engine
    write = text("UPDATE extraction_tasks SET attempts = attempts + 1")
    try:
        for through_driver in (False, True):
            with (
                engine.connect().execution_options(**{READ_ONLY: True}) as connection,
                pytest.raises(WRITE_REFUSED, match="read-only transaction"),
            ):
                if through_driver:
                    Driver(connection).execute(write)
                else:
                    connection.execute(write)
        with engine.begin() as connection:  # and a writer is one
            connection.execute(write)
    finally:
        engine.dispose()


# ---- the queue ----------------------------------------------------------------------------------


def _enqueue(engine: Engine, sessions: int, *, first: int = 0, at: float = NOW) -> list[int]:
    """One captured command per session, stored as the spool ingestion stores it: each raises
    its session's task. The task ids."""
    with engine.begin() as connection:
        execute = executor(connection)
        for number in range(first, first + sessions):
            payload = {
                "host": "generic",
                "session_id": f"s{number}",
                "cwd": "/p/shop",
                "timestamp": at,
                "event_id": f"e{number}-{at}",
                "command": "make test",
                "exit_code": 0,
            }
            kind, event = hook.capture(json.dumps(payload).encode(), None, at)
            assert kind == "event", event
            store_event(execute, event)
        rows = connection.execute(text("SELECT id FROM extraction_tasks ORDER BY id")).all()
    return [row.id for row in rows]


def _task(engine: Engine, task_id: int) -> tuple[Any, ...]:
    with engine.connect() as connection:
        row = connection.execute(
            text(
                "SELECT status, attempts, cursor_event_id, high_watermark_event_id, lease_owner, "
                "last_error FROM extraction_tasks WHERE id = :id"
            ),
            {"id": task_id},
        ).one()
    return tuple(row)


def test_enqueue_claim_complete_and_revive(pg_engine: Engine) -> None:
    (task_id,) = _enqueue(pg_engine, 1)
    task = queue.claim_next(pg_engine, "w1", NOW + 1, 60)
    assert task is not None and task.id == task_id
    assert queue.claim_next(pg_engine, "w2", NOW + 1, 60) is None
    assert _task(pg_engine, task_id)[:1] + _task(pg_engine, task_id)[4:5] == ("processing", "w1")
    with pg_engine.begin() as connection:
        queue.complete(connection, task, NOW + 2)
    assert _task(pg_engine, task_id)[:5] == ("done", 0, 1, 1, None)
    _enqueue(pg_engine, 1, at=NOW + 3)  # the same session again: the done task comes back
    assert _task(pg_engine, task_id)[:4] == ("pending", 0, 1, 2)


def test_claim_skips_a_task_another_transaction_holds(pg_engine: Engine) -> None:
    first, second = _enqueue(pg_engine, 2)
    with pg_engine.connect() as holder:
        holder.begin()
        holder.execute(
            text("SELECT id FROM extraction_tasks WHERE id = :id FOR UPDATE"), {"id": first}
        )
        started = time.monotonic()
        task = queue.claim_next(pg_engine, "w", NOW + 1, 60)
        assert task is not None and task.id == second
        assert time.monotonic() - started < 5  # skipped at once, not waited for
        holder.rollback()
    task = queue.claim_next(pg_engine, "w", NOW + 1, 60)
    assert task is not None and task.id == first


def test_a_worker_takes_back_the_tasks_it_left_in_hand_and_no_others(pg_engine: Engine) -> None:
    mine, theirs = _enqueue(pg_engine, 2)
    held = queue.claim_next(pg_engine, "team-worker-a", NOW + 1, 300)
    other = queue.claim_next(pg_engine, "team-worker-b", NOW + 1, 300)
    assert held is not None and other is not None and (held.id, other.id) == (mine, theirs)
    assert queue.release_owned(pg_engine, "team-worker-a", NOW + 2) == 1
    assert _task(pg_engine, mine)[0::4] == ("pending", None)
    assert _task(pg_engine, theirs)[0::4] == ("processing", "team-worker-b")
    assert queue.release_owned(pg_engine, "team-worker-a", NOW + 3) == 0
    again = queue.claim_next(pg_engine, "team-worker-a", NOW + 3, 300)
    assert again is not None and again.id == mine  # at once, not after the 300 s lease


def test_an_expired_lease_is_reaped_back_to_pending(pg_engine: Engine) -> None:
    (task_id,) = _enqueue(pg_engine, 1)
    task = queue.claim_next(pg_engine, "crashed-worker", NOW + 1, 60)
    assert task is not None
    assert queue.reap_expired_leases(pg_engine, NOW + 60, MAX_ATTEMPTS) == []
    assert queue.reap_expired_leases(pg_engine, NOW + 61, MAX_ATTEMPTS) == [task_id]
    status, attempts, _cursor, _watermark, owner, last_error = _task(pg_engine, task_id)
    assert (status, attempts, owner) == ("pending", 0, None)
    assert "crashed-worker" in last_error and "expired" in last_error
    with pg_engine.begin() as connection, pytest.raises(queue.LeaseLost):
        queue.complete(connection, task, NOW + 62)  # the dead worker's lease is gone
    again = queue.claim_next(pg_engine, "next-worker", NOW + 62, 60)
    assert again is not None and again.id == task_id


def test_four_concurrent_claimers_complete_every_task_exactly_once(pg_engine: Engine) -> None:
    task_ids = _enqueue(pg_engine, 500)
    assert len(task_ids) == 500
    url = pg_engine.url.render_as_string(hide_password=False)
    claimed: dict[str, list[int]] = {f"w{n}": [] for n in range(4)}
    errors: list[BaseException] = []
    start = threading.Barrier(len(claimed))

    def work(owner: str) -> None:
        engine = make_engine(url)  # a connection of its own
        try:
            start.wait()
            while True:
                task = queue.claim_next(engine, owner, NOW + 1, 60)
                if task is None:
                    if not queue.has_due_task(engine, NOW + 1):
                        return
                    continue  # the rest is locked by claimers about to take it
                with engine.begin() as connection:
                    queue.complete(connection, task, NOW + 2)
                claimed[owner].append(task.id)
        except BaseException as exc:
            errors.append(exc)
        finally:
            engine.dispose()

    threads = [threading.Thread(target=work, args=(owner,)) for owner in claimed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    everything = [task_id for ids in claimed.values() for task_id in ids]
    assert sorted(everything) == task_ids  # each task completed once, none twice
    assert all(claimed.values()), {owner: len(ids) for owner, ids in claimed.items()}
    with pg_engine.connect() as connection:
        statuses = connection.execute(
            text("SELECT status, count(*) FROM extraction_tasks GROUP BY status")
        ).all()
    assert [tuple(row) for row in statuses] == [("done", 500)]


def test_a_snapshot_of_an_unmigrated_database_reads_on_after_asking_its_revision(
    pg_url: str, tmp_path: Path
) -> None:
    from remem.db.snapshot import read_snapshot, revision

    settings = load_settings(_home(tmp_path, REMEM_DATABASE_URL=pg_url))
    with read_snapshot(settings, require_current_schema=False) as execute:
        assert revision(execute) is None
        assert execute("SELECT 1 + 1", {})[0][0] == 2
    engine = make_engine(pg_url)
    migrate.upgrade(engine)
    engine.dispose()
    with read_snapshot(settings) as execute:
        assert revision(execute) == schema_head()
        assert execute("SELECT count(*) FROM captured_events", {})[0][0] == 0
