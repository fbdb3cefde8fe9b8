"""A world for promotion tests: real capture into a real SQLite file, a worker with a clock."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from remem.capture import hook
from remem.config import Settings, load_settings
from remem.db.engine import make_engine
from tests.conftest import Home
from workers.runner import Worker, run_burst

DAY = 86400.0
NOW = 1_800_000_000.0


class World:
    def __init__(self, home: Home) -> None:
        self.home = home
        self.now = NOW
        self.settings: Settings = load_settings(home.env)
        self.engine: Engine = make_engine(self.settings.database_url)
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

    def execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The `execute(sql, params) -> rows` the digest readers take."""
        with self.engine.connect() as connection:
            return [tuple(r) for r in connection.execute(text(sql), params)]

    def post_payload(self, payload: dict[str, Any], host: str | None = None) -> None:
        kind, body = hook.capture(json.dumps(payload).encode(), host, self.now)
        assert kind == "event", body
        assert hook.save(str(self.home.path), kind, body) == "stored"

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
def world(home: Home) -> Iterator[World]:
    created = World(home)
    yield created
    created.engine.dispose()
