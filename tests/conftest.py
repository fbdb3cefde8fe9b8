"""Shared test helpers: real executables, real SQLite files, bounded waits."""

from __future__ import annotations

import calendar
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.pg_server import DatabaseCopies, PostgresServer

BIN = Path(sys.executable).parent
REMEM = str(BIN / "remem")
REMEM_HOOK = str(BIN / "remem-hook")
REPO = Path(__file__).resolve().parents[1]


def fixtures_dir() -> Path:
    candidates = [
        REPO / "tests" / "fixtures" / "hooks",
        REPO.parent / "shared" / "fixtures" / "hooks",
    ]
    if os.environ.get("REMEM_FIXTURES"):
        candidates.insert(0, Path(os.environ["REMEM_FIXTURES"]))
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise RuntimeError(f"hook fixtures not found in {candidates}")


def corpus_dir() -> Path:
    """The development corpus (real sessions kept on Entire checkpoint branches), in shared/
    beside the clone as fixtures are; REMEM_CORPUS names another place."""
    candidates = [REPO.parent / "shared" / "corpus"]
    if os.environ.get("REMEM_CORPUS"):
        candidates.insert(0, Path(os.environ["REMEM_CORPUS"]))
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise RuntimeError(f"the session corpus was not found in {candidates}")


def load_fixture(relative: str) -> dict[str, Any]:
    return json.loads((fixtures_dir() / relative).read_text())


def hook_imports(
    home: Home, payload: dict[str, Any], *args: str
) -> tuple[list[str], int, set[str]]:
    """Run the hook's main in a fresh interpreter on a payload: the lines it printed, its exit
    code, and every module it imported (what the hot path pays for)."""
    script = (
        "import sys, json\n"
        "from remem.hook import main\n"
        f"code = main({list(args)!r})\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(payload).encode(),
        env=home.env,
        capture_output=True,
        timeout=30,
    )
    *printed, last = result.stdout.decode().splitlines()
    report = json.loads(last)
    return printed, report["code"], set(report["modules"])


STDOUT_GONE = ("read-end-closed", "fd-closed")


def hook_with_stdout_gone(home: Home, payload: bytes, how: str) -> tuple[int, bytes]:
    """Run `remem-hook` on a payload with its stdout gone, as an agent that stopped listening
    leaves it (`how`: one of STDOUT_GONE); its exit code and stderr."""
    if how == "read-end-closed":
        process = subprocess.Popen(
            [REMEM_HOOK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=home.env,
        )  # fmt: skip
        assert process.stdout is not None
        process.stdout.close()  # the agent stopped listening before anything is written
    else:
        process = subprocess.Popen(
            [REMEM_HOOK], stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=home.env,
            preexec_fn=lambda: os.close(1),
        )  # fmt: skip
    _out, err = process.communicate(payload, timeout=30)
    return process.returncode, err


def end_codex_command(rollout: Path, call_id: str, exit_code: int, output: str = "ok") -> None:
    """Append a command's end to a Codex rollout file, as Codex writes it."""
    record = {
        "timestamp": "2026-11-20T09:13:09.502Z",
        "type": "event_msg",
        "payload": {
            "type": "exec_command_end",
            "call_id": call_id,
            "exit_code": exit_code,
            "aggregated_output": output,
        },
    }
    with rollout.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll until predicate() is truthy; fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


# A pattern every text matches at its start and nowhere else: `remem forget --match EVERY
# --dry-run` lists everything, each excerpt whole (an empty match masks nothing).
EVERY = r"\A"


def contract_time(text: str) -> float:
    """A time as the JSON contract writes it (RFC 3339, UTC, to the second), in epoch seconds."""
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))


def unmasked(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What `forget --match EVERY` lists, without the mark of the empty match."""
    return [{**item, "command": item["command"].removeprefix("[forgotten]")} for item in items]


class Home:
    """A remem home in the test's temporary directory, and the environment that points at it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = path / "remem.db"
        self.spool = path / "spool"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("REMEM_")},
            "REMEM_HOME": str(path),
            "HOME": str(path.parent / "user-home"),
        }

    def hook(
        self, payload: dict[str, Any] | bytes | str, *args: str, timeout: float = 30
    ) -> subprocess.CompletedProcess[bytes]:
        data = (
            payload
            if isinstance(payload, bytes)
            else (payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
        )
        return subprocess.run(
            [REMEM_HOOK, *args], input=data, env=self.env, capture_output=True, timeout=timeout
        )

    def remem(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [REMEM, *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"remem {' '.join(args)} exited {result.returncode}: {result.stderr}"
            )
        return result

    def cli(self, *args: str, check: bool = True) -> Result:
        """`remem ARGS` run by click's runner in this process, with this home's environment
        (and no other REMEM_ variable): the reads of the contract without a process start."""
        from remem.cli.commands import cli

        unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("REMEM_")}
        result = CliRunner().invoke(
            cli, list(args), env={**unset, **self.env}, catch_exceptions=False
        )
        if check and result.exit_code != 0:
            raise AssertionError(
                f"remem {' '.join(args)} exited {result.exit_code}: {result.output}"
            )
        return result

    def json(self, *args: str) -> Any:
        """What `remem ARGS --json` prints, parsed."""
        return json.loads(self.cli(*args, "--json").stdout)

    def status(self) -> dict[str, Any]:
        return self.json("status")

    def command_hits(self, pattern: str = ".") -> list[dict[str, Any]]:
        """The captured commands `remem recall` finds in every project: identical runs in one
        project are one hit (the id, outcome and exit code of the newest run, or of the newest
        whose error matched when the command did not; how many ran, how many passed)."""
        hits, page, pages = [], 1, 1
        while page <= pages:
            found = self.json("recall", pattern, "--all-projects", "--page", str(page))
            hits += found["hits"]
            page, pages = page + 1, found["pages"]
        return [hit for hit in hits if hit["kind"] == "command"]

    def commands(self, pattern: str = ".") -> dict[str, dict[str, Any]]:
        """command_hits by their command, for a home where each command ran in one project."""
        hits = self.command_hits(pattern)
        by_command = {hit["command"]: hit for hit in hits}
        assert len(by_command) == len(hits), "a command ran in several projects"
        return by_command

    def procedures(self, *args: str) -> list[dict[str, Any]]:
        """`remem procedures list --all --json ARGS`: every procedure, archived included."""
        return self.json("procedures", "list", "--all", *args)

    def drops(self) -> list[dict[str, Any]]:
        return self.json("drops")

    def tasks(self, *args: str) -> list[dict[str, Any]]:
        return self.json("tasks", *args)

    def events(self) -> list[dict[str, Any]]:
        """Every captured event as `remem forget --match EVERY --dry-run` lists it, in id order:
        its id, time and command (an excerpt; `(session_start)` and the like for the rest)."""
        return unmasked(self.json("forget", "--match", EVERY, "--dry-run")["events"])

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        connection = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=10)
        try:
            return connection.execute(sql, params).fetchall()
        finally:
            connection.close()

    def scalar(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self.query(sql, params)[0][0]

    def wait_until_drained(self, timeout: float = 60) -> None:
        """Until every task has been completed (none pending, processing or failed)."""
        wait_for(lambda: set(self.undone_tasks().values()) <= {0}, timeout)

    def undone_tasks(self) -> dict[str, int]:
        """How many tasks `remem status` counts in each state but done."""
        tasks = self.status()["tasks"]
        return {state: n for state, n in tasks.items() if state != "done"}

    def wait_for_leases_to_expire(self, timeout: float = 30) -> None:
        """Until no task is held under a lease still running: a dead worker's task can only be
        reaped once its lease has run out."""

        def expired() -> bool:
            # `remem tasks` writes a lease's end to the second, floored: past that second and
            # one more, it has run out.
            now = time.time()
            held = self.tasks("--status", "processing", "--limit", "100000")
            return all(contract_time(task["lease_expires_at"]) + 1 <= now for task in held)

        wait_for(expired, timeout)


@pytest.fixture(scope="session")
def template_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated home per test run; each test gets a copy."""
    path = tmp_path_factory.mktemp("template") / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env["REMEM_HOME"] = str(path)
    subprocess.run([REMEM, "init"], env=env, check=True, capture_output=True, timeout=120)
    return path


@pytest.fixture
def home(template_home: Path, tmp_path: Path) -> Iterator[Home]:
    path = tmp_path / "home"
    shutil.copytree(template_home, path)
    (tmp_path / "user-home").mkdir()
    yield Home(path)


# ---- PostgreSQL: one throwaway cluster per test session (tests/pg_server.py) -------------------
# Without PostgreSQL installed these fixtures fail the tests that use them, loudly; a developer
# who has no server sets REMEM_NO_POSTGRES=1 to skip them instead.


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    if os.environ.get("REMEM_NO_POSTGRES") == "1":
        pytest.skip("REMEM_NO_POSTGRES=1: the PostgreSQL tests are skipped")
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    """An empty database of its own, as a postgresql+psycopg:// URL."""
    name = pg_server.create_database()
    yield pg_server.url(name)
    pg_server.drop_database(name)


@pytest.fixture(scope="session")
def pg_template(pg_server: PostgresServer) -> str:
    """One database migrated to head by remem's own migration code, once per test session:
    each test that needs a migrated database gets a copy (pg_server.create_database)."""
    from remem.db import migrate
    from remem.db.engine import make_engine

    name = pg_server.create_database()
    engine = make_engine(pg_server.url(name))
    try:
        migrate.upgrade(engine)
    finally:
        engine.dispose()  # a template must have no connection when it is copied
    return name


@pytest.fixture(scope="session")
def pg_copies(pg_server: PostgresServer, pg_template: str) -> Iterator[DatabaseCopies]:
    """Copies of pg_template, each test's own, made ahead of the tests that take them."""
    copies = DatabaseCopies(pg_server, pg_template)
    try:
        yield copies
    finally:
        copies.close()
