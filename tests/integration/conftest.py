"""A world for promotion tests: real capture into a real database, a worker with a clock.

Every test that takes `world` runs on both backends (DESIGN.md §1, STYLE.md 22): a SQLite file
copied from the migrated template home, and a PostgreSQL database copied from a migrated
template database (tests/conftest.py). A test that is about the SQLite file itself (its bytes,
PRAGMAs, the hook's stdlib path) says so with `@pytest.mark.sqlite_only("why")`, and is then
collected for SQLite alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from remem import hook
from remem.capture.store import store_event
from remem.config import Settings, load_settings
from remem.db.engine import executor, is_sqlite, make_engine
from tests.conftest import Home
from tests.pg_server import DatabaseCopies
from workers.runner import Worker
from workers.work import run_burst

DAY = 86400.0
NOW = 1_800_000_000.0

BACKENDS = ("sqlite", "postgresql")
SQLITE_ONLY = "sqlite_only"
POSTGRES_ONLY = "postgres_only"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{SQLITE_ONLY}(reason): a `world` test about the SQLite file itself; it is collected "
        "for the sqlite backend alone",
    )
    config.addinivalue_line(
        "markers",
        f"{POSTGRES_ONLY}(reason): a `world` test about talking to a server; it is collected "
        "for the postgresql backend alone",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Each test whose fixtures include `backend` (every `world` test) runs once per backend,
    unless it is marked sqlite_only or postgres_only, which must say why."""
    if "backend" not in metafunc.fixturenames:
        return
    backends = []
    for marker, backend in ((SQLITE_ONLY, "sqlite"), (POSTGRES_ONLY, "postgresql")):
        only = metafunc.definition.get_closest_marker(marker)
        if only is None:
            continue
        if not (only.args and isinstance(only.args[0], str)):
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: {marker} needs a reason")
        backends.append(backend)
    if len(backends) > 1:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: one backend only, or both")
    metafunc.parametrize("backend", backends or list(BACKENDS))


class World:
    def __init__(self, home: Home) -> None:
        self.home = home
        self.now = NOW
        self.settings: Settings = load_settings(home.env)
        self.engine: Engine = make_engine(self.settings.database_url)
        self.backend = self.engine.dialect.name
        self.worker = Worker(self.engine, self.settings, "test-worker", clock=lambda: self.now)
        self._ids = 0

    def post(
        self,
        command: str,
        exit_code: int | None = 0,
        *,
        session: str = "s1",
        at: float | None = None,
        project: str = "/p/shop",
        branch: str | None = "main",
        **extra: Any,
    ) -> None:
        """A generic-host event through the real capture code."""
        fields = {"command": command, "exit_code": exit_code, **extra}
        self._generic(session, project, branch, self.now if at is None else at, fields)

    def edit(
        self,
        *files: str,
        session: str = "s1",
        project: str = "/p/shop",
        branch: str | None = "main",
    ) -> None:
        """A generic-host edit event of files (relative names are under the project)."""
        names = [name if name.startswith("/") else f"{project}/{name}" for name in files]
        self._generic(session, project, branch, self.now, {"files": names})

    def _generic(
        self, session: str, project: str, branch: str | None, at: float, fields: dict[str, Any]
    ) -> None:
        self._ids += 1
        payload: dict[str, Any] = {
            "host": "generic",
            "session_id": session,
            "cwd": project,
            "timestamp": at,
            "event_id": f"e{self._ids}",
            **fields,
        }
        if branch is not None:
            payload["branch"] = branch
        self.post_payload(payload)

    def execute(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """The `execute(sql, params) -> rows` the digest readers take; named parameters, on
        either backend."""
        with self.engine.connect() as connection:
            return [tuple(r) for r in connection.execute(text(sql), params or {})]

    def scalar(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        """The first column of the first row."""
        return self.execute(sql, params)[0][0]

    def post_payload(self, payload: dict[str, Any], host: str | None = None) -> None:
        """Capture as the hook does; SQLite stores through the hook's own stdlib path, any
        other database through the store the spool ingestion uses (remem/capture/ingest.py)."""
        kind, body = hook.capture(json.dumps(payload).encode(), host, self.now)
        assert kind == "event", body
        if is_sqlite(self.engine):
            assert hook.save(str(self.home.path), kind, body) == "stored"
            return
        with self.engine.begin() as connection:
            store_event(executor(connection), body)

    def burst(self) -> dict[str, int]:
        self.worker.stats.clear()
        return dict(run_burst(self.worker))

    def procedures(self, *columns: str) -> list[tuple[Any, ...]]:
        names = ", ".join(columns or ("command", "status", "confidence", "verified_runs"))
        with self.engine.connect() as connection:
            return [
                tuple(r)
                for r in connection.execute(text(f"SELECT {names} FROM procedures ORDER BY id"))
            ]

    def one(self, *columns: str) -> tuple[Any, ...]:
        rows = self.procedures(*columns)
        assert len(rows) == 1, rows
        return rows[0]

    def tasks(self) -> list[tuple[Any, ...]]:
        with self.engine.connect() as connection:
            return [
                tuple(r)
                for r in connection.execute(
                    text(
                        "SELECT id, status, attempts, cursor_event_id, high_watermark_event_id, "
                        "lease_owner, last_error, run_after FROM extraction_tasks ORDER BY id"
                    )
                )
            ]


def make_repository(root: Path, branch: str = "main") -> str:
    """A git work tree as remem reads it (a `.git` directory with HEAD); its real path."""
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    return os.path.realpath(root)


def make_worktree(repository: Path, root: Path, branch: str) -> str:
    """A linked worktree of repository, as `git worktree add` lays it out; its real path."""
    name = root.name
    git_dir = repository / ".git" / "worktrees" / name
    git_dir.mkdir(parents=True)
    (git_dir / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    (git_dir / "commondir").write_text("../..\n")
    root.mkdir(parents=True)
    (root / ".git").write_text(f"gitdir: {git_dir}\n")
    return os.path.realpath(root)


@pytest.fixture
def make_world(backend: str, request: pytest.FixtureRequest) -> Iterator[Callable[[Home], World]]:
    """Worlds on the test's backend, as many as it asks for. On PostgreSQL each home's
    environment names a fresh copy of the migrated template database (tests/conftest.py), so
    that the `remem` commands a test runs read it too; the copies are dropped at the end."""
    made: list[World] = []
    taken: list[str] = []
    copies: DatabaseCopies | None = None
    if backend == "postgresql":
        copies = request.getfixturevalue("pg_copies")

    def make(home: Home) -> World:
        if copies is not None:
            taken.append(copies.take())
            home.env["REMEM_DATABASE_URL"] = copies.server.url(taken[-1])
        made.append(World(home))
        return made[-1]

    try:
        yield make
    finally:
        for created in made:
            created.engine.dispose()
        for name in taken:
            assert copies is not None
            copies.give_back(name)


@pytest.fixture
def world(make_world: Callable[[Home], World], home: Home) -> World:
    return make_world(home)
