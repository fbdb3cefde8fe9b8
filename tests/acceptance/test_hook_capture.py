"""remem-hook as a real process: concurrency, a locked database, bad input, its imports."""

from __future__ import annotations

import importlib.metadata
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from remem.db.sqlite import WAL_BOUND_BYTES
from tests.conftest import REMEM_HOOK, Home, hook_imports, load_fixture


def _bash_success(
    tool_use_id: str, session: str = "s-1", command: str | None = None
) -> dict[str, Any]:
    payload = load_fixture("claude-code/post_tool_use_bash_success.json")
    payload["tool_use_id"] = tool_use_id
    payload["session_id"] = session
    if command is not None:
        payload["tool_input"]["command"] = command
    return payload


def test_sixteen_hooks_at_once_all_land(home: Home) -> None:
    processes = [
        subprocess.Popen(
            [REMEM_HOOK],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=home.env,
        )
        for _ in range(16)
    ]
    payloads = [
        json.dumps(_bash_success(f"toolu_{i}", f"s-{i % 4}", f"make test-{i}")).encode()
        for i in range(16)
    ]
    # Start all processes first, then feed them, so their writes overlap.
    outputs = [p.communicate(data, timeout=60) for p, data in zip(processes, payloads, strict=True)]
    assert [p.returncode for p in processes] == [0] * 16
    assert all(err == b"" for _out, err in outputs)
    commands = home.commands()
    assert set(commands) == {f"make test-{i}" for i in range(16)}
    assert len({hit["id"] for hit in commands.values()}) == 16
    assert home.status()["events"] == 16
    assert not list(home.spool.glob("*.jsonl"))
    assert len(home.tasks()) == 4  # one per session


def test_hooks_with_no_worker_alive_keep_the_wal_bounded(home: Home) -> None:
    """Each hook is then the only process with the database open: it reads every frame of the
    WAL to rebuild its index, and the WAL never starts over by itself, so without a bound every
    hook would read what all the hooks before it wrote."""
    wal = home.db.with_name(home.db.name + "-wal")
    sizes = []
    for index in range(60):  # about 47 KB of frames each: 2.8 MB unbounded
        payload = _bash_success(f"toolu_wal_{index}", f"s-{index % 3}", f"make wal-{index}")
        assert home.hook(payload).returncode == 0
        sizes.append(wal.stat().st_size if wal.exists() else 0)
    assert max(sizes) <= WAL_BOUND_BYTES * 1.5, sizes
    assert home.status()["events"] == 60
    assert not list(home.spool.glob("*.jsonl"))


def test_hooks_leave_the_wal_to_a_worker_that_has_the_database_open(home: Home) -> None:
    """A checkpoint copies pages and syncs the file: while another process has the database
    open, that is its work, never a hook's."""
    wal = home.db.with_name(home.db.name + "-wal")
    worker = sqlite3.connect(home.db)
    try:
        worker.execute("SELECT count(*) FROM projects").fetchall()
        for index in range(40):
            payload = _bash_success(f"toolu_held_{index}", f"s-{index % 3}", f"make held-{index}")
            assert home.hook(payload).returncode == 0
        assert wal.stat().st_size > WAL_BOUND_BYTES * 1.5
    finally:
        worker.close()
    assert not wal.exists()  # the last connection to close emptied it
    assert home.status()["events"] == 40


def _hold_write_lock(db: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(db, isolation_level=None, timeout=1)
    connection.execute("BEGIN IMMEDIATE")
    connection.execute("UPDATE projects SET root = root")
    return connection


def test_locked_database_spools_within_two_seconds_then_ingests_once(home: Home) -> None:
    locker = _hold_write_lock(home.db)
    try:
        started = time.monotonic()
        results = [
            home.hook(_bash_success(f"toolu_locked_{i}", command=f"make locked-{i}"))
            for i in range(3)
        ]
        elapsed_each = (time.monotonic() - started) / 3
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert [r.returncode for r in results] == [0, 0, 0]
    assert elapsed_each < 2.0
    spooled = (home.spool / "events.jsonl").read_text().splitlines()
    assert len(spooled) == 3
    assert all(json.loads(line)["type"] == "event" for line in spooled)
    assert home.status()["events"] == 0

    first = json.loads(home.remem("spool", "ingest", "--json").stdout)
    assert (first["events_stored"], first["events_already_stored"]) == (3, 0)
    second = json.loads(home.remem("spool", "ingest", "--json").stdout)
    assert (second["events_stored"], second["files"]) == (0, 0)
    assert sorted(home.commands()) == [f"make locked-{i}" for i in range(3)]
    tasks = [(task["high_watermark_event_id"], task["status"]) for task in home.tasks()]
    assert tasks == [(3, "pending")]


def test_spooled_event_already_in_database_is_not_stored_twice(home: Home) -> None:
    payload = _bash_success("toolu_twice")
    locker = _hold_write_lock(home.db)
    try:
        assert home.hook(payload).returncode == 0
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert home.hook(payload).returncode == 0  # the same delivery, now stored directly
    report = json.loads(home.remem("spool", "ingest", "--json").stdout)
    assert (report["events_stored"], report["events_already_stored"]) == (0, 1)
    assert home.status()["events"] == 1


@pytest.mark.parametrize(
    ("stdin", "reason"),
    [
        (b"not json at all", "not_json"),
        (b"[1, 2, 3]", "not_object"),
        (b"", "empty"),
        (
            # Over 1 MiB in what the command was, not in its output: nothing to cut.
            b'{"hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/x", '
            b'"tool_name": "Bash", "tool_input": {"command": "ls", "description": "'
            + b"x" * (1024 * 1024)
            + b'"}}',
            "too_large",
        ),
        (
            b'{"hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/x", '
            b'"tool_name": 5, "tool_input": "ls"}',
            "invalid_field",
        ),
        (b'{"hello": "world"}', "unknown_host"),
        (
            b'{"hook_event_name": "PostToolUse", "cwd": "/x", "tool_name": "Bash", '
            b'"tool_input": {"command": "ls"}}',
            "missing_session",
        ),
        (b"\xff\xfe\x00garbage", "not_json"),
        (b"[" * 100_000 + b"]" * 100_000, "not_json"),
    ],
    ids=[
        "text",
        "array",
        "empty",
        "too-large",
        "wrong-types",
        "unknown-host",
        "no-session",
        "bytes",
        "deep-nesting",
    ],
)
def test_bad_input_is_dropped_with_its_reason(home: Home, stdin: bytes, reason: str) -> None:
    result = home.hook(stdin)
    assert (result.returncode, result.stderr, result.stdout) == (0, b"", b"")
    assert [(drop["reason"], drop["size_bytes"]) for drop in home.drops()] == [(reason, len(stdin))]
    assert home.status()["events"] == 0


def test_hook_never_imports_sqlalchemy(home: Home) -> None:
    script = (
        "import sys, json\n"
        "from remem.hook import main\n"
        "code = main([])\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    payload = json.dumps(_bash_success("toolu_imports")).encode()
    result = subprocess.run(
        [sys.executable, "-c", script], input=payload, env=home.env, capture_output=True, timeout=30
    )
    report = json.loads(result.stdout)
    assert report["code"] == 0
    assert home.status()["events"] == 1
    forbidden = {
        "sqlalchemy",
        "alembic",
        "click",
        "rich",
        "apscheduler",
        "tomllib",  # config.toml as `remem init` writes it is read without it
        "typing",
        "dataclasses",
        "tree_sitter",
        "remem.shell.analysis",
    }
    assert forbidden.isdisjoint(report["modules"])


def test_session_start_reads_its_digest_without_typing_or_dataclasses(
    home: Home, tmp_path: Path
) -> None:
    """The digest is read through the read model (remem.agent.context), whose records must not
    cost the hook `typing`, `dataclasses` or `inspect`."""
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for number in range(2):
        event = {"session_id": "s1", "cwd": str(project), "command": "make test", "exit_code": 0}
        assert home.hook({**event, "event_id": f"e{number}"}, "--host", "generic").returncode == 0
    home.remem("worker", "--burst")
    payload = {"session_id": "s2", "cwd": str(project), "hook_event_name": "SessionStart"}
    digest, code, modules = hook_imports(home, payload, "--host", "claude-code")
    assert code == 0
    assert "remem.agent.context" in modules and "- `make test`" in "\n".join(digest)
    assert {"typing", "dataclasses", "inspect", "sqlalchemy", "re2"}.isdisjoint(modules)
    # What only commands and failures need is not paid for at the start of a session.
    assert {"remem.record.writes", "remem.agent.advice"}.isdisjoint(modules)


def test_the_hook_process_imports_without_the_cycle_collector_and_importers_keep_it() -> None:
    """`remem-hook` is remem.hook_entry: the collector is off before its imports, which it
    would otherwise spend a twentieth of a start-up collecting during. A process that imports
    remem.hook and lives on (a test, a tool) keeps its collector."""
    (entry,) = [
        script
        for script in importlib.metadata.entry_points(group="console_scripts")
        if script.name == "remem-hook"
    ]
    assert entry.value == "remem.hook_entry:run"
    assert Path(REMEM_HOOK).read_text().count("remem.hook_entry") == 1

    def collector_after(module: str) -> str:
        script = f"import gc, {module}; print(gc.isenabled())"
        return subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        ).stdout.strip()

    assert collector_after("remem.hook_entry") == "False"
    assert collector_after("remem.hook") == "True"


def test_hook_never_migrates_a_database_behind_its_schema(home: Home) -> None:
    connection = sqlite3.connect(home.db, isolation_level=None)
    connection.execute("UPDATE alembic_version SET version_num = '0000'")
    connection.close()
    assert home.hook(_bash_success("toolu_old_schema")).returncode == 0
    status = home.status()
    assert (status["schema_revision"], status["events"]) == ("0000", 0)
    record = json.loads((home.spool / "events.jsonl").read_text())
    assert record["event"]["tool_use_id"] == "toolu_old_schema"
    assert "schema" in record["spool_reason"]


def test_non_sqlite_database_url_spools(home: Home) -> None:
    home.env["REMEM_DATABASE_URL"] = "postgresql://remem@localhost/remem"
    assert home.hook(_bash_success("toolu_pg")).returncode == 0
    record = json.loads((home.spool / "events.jsonl").read_text())
    assert record["spool_reason"] == "database is not a SQLite file"


def test_missing_database_file_spools_and_is_never_created(home: Home) -> None:
    home.db.unlink()
    assert home.hook(_bash_success("toolu_nodb")).returncode == 0
    assert not home.db.exists()
    assert (home.spool / "events.jsonl").exists()


def test_unwritable_spool_and_database_is_the_only_failure(home: Home) -> None:
    home.db.unlink()
    home.spool.rmdir()
    home.spool.write_text("not a directory")
    result = home.hook(_bash_success("toolu_lost"))
    assert result.returncode == 1
    assert len(result.stderr.decode().strip().splitlines()) == 1


def test_every_module_of_the_hooks_package_imports_with_the_stdlib_alone() -> None:
    script = (
        "import importlib, json, pkgutil, sys\n"
        "import remem.capture\n"
        "for module in pkgutil.iter_modules(remem.capture.__path__):\n"
        "    importlib.import_module(f'remem.capture.{module.name}')\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=30)
    modules = json.loads(result.stdout)
    assert "remem.capture.ingest" in modules
    assert {"sqlalchemy", "alembic", "click", "tree_sitter"}.isdisjoint(modules)
