"""`remem import` as a library: transcripts -> the hook's events, into a real SQLite file."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from remem import hook
from remem.config import load_settings
from remem.db.engine import make_engine
from remem.transcripts import read_claude, read_codex
from remem.transcripts.common import parse_time
from remem.transcripts.importer import (
    BATCH_EVENTS,
    Found,
    ImportOptions,
    ImportSummary,
    discover,
    find_sessions,
    import_transcripts,
    since_covering,
)
from tests.conftest import REPO, Home
from tests.integration.conftest import World

TRANSCRIPTS = REPO / "tests" / "fixtures" / "transcripts"
NOW = 1_800_000_000.0  # 2027-01-15, after every fixture
SESSION = "5f0c1e7a-0000-4000-8000-000000000001"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.fixture
def engine(home: Home) -> Iterator[Engine]:
    created = make_engine(load_settings(home.env).database_url)
    yield created
    created.dispose()


def run_import(engine: Engine, host: str, *paths: Path | str, **options: Any) -> ImportSummary:
    sources = discover(host, [str(p) for p in paths], "/nonexistent-user-home")
    return import_transcripts(engine, sources, ImportOptions(**options), NOW)


def stamp(second: int) -> str:
    return f"2026-11-20T10:{second // 60:02d}:{second % 60:02d}.000Z"


class Claude:
    """A Claude Code transcript written record by record, as the agent writes one."""

    def __init__(self, cwd: str, branch: str | None = "main", session: str = SESSION) -> None:
        self.cwd, self.branch, self.session = cwd, branch, session
        self.lines: list[str] = []
        self.calls = 0

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        base = {"type": kind, "sessionId": self.session, "cwd": self.cwd}
        if self.branch:
            base["gitBranch"] = self.branch
        record = {**base, "timestamp": stamp(len(self.lines)), **fields}
        self.lines.append(json.dumps(record))
        return record

    def bash(self, command: str, stdout: str = "ok", failed: bool = False) -> str:
        self.calls += 1
        use_id = f"toolu_{self.session}_{self.calls:04d}"
        use = {"type": "tool_use", "id": use_id, "name": "Bash", "input": {"command": command}}
        self.record("assistant", message={"role": "assistant", "content": [use]})
        content = f"Exit code 1\n{stdout}" if failed else stdout
        part = {"type": "tool_result", "tool_use_id": use_id, "content": content}
        part["is_error"] = failed
        result = {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}
        self.record("user", message={"role": "user", "content": [part]}, toolUseResult=result)
        return use_id

    def edit(self, path: str) -> str:
        self.calls += 1
        use_id = f"toolu_{self.session}_{self.calls:04d}"
        tool_input = {"file_path": path, "old_string": "a = 1", "new_string": "a = 2"}
        use = {"type": "tool_use", "id": use_id, "name": "Edit", "input": tool_input}
        self.record("assistant", message={"role": "assistant", "content": [use]})
        part = {"type": "tool_result", "tool_use_id": use_id, "content": "updated"}
        self.record("user", message={"role": "user", "content": [part]})
        return use_id

    def write(self, path: Path, tail: str = "") -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in self.lines) + tail, encoding="utf-8")
        return path


def make_repository(root: Path, branch: str = "main") -> str:
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    return os.path.realpath(root)


def rows(home: Home, columns: str, where: str = "1 = 1") -> list[tuple[Any, ...]]:
    return home.query(f"SELECT {columns} FROM captured_events WHERE {where} ORDER BY id")


# --- idempotency -------------------------------------------------------------------------------


def test_importing_the_real_transcripts_twice_stores_nothing_new(
    home: Home, engine: Engine
) -> None:
    first = run_import(engine, "claude-code", TRANSCRIPTS / "claude")
    first_codex = run_import(engine, "codex", TRANSCRIPTS / "codex")
    tasks = home.query("SELECT session_id, high_watermark_event_id FROM extraction_tasks")

    again = run_import(engine, "claude-code", TRANSCRIPTS / "claude")
    again_codex = run_import(engine, "codex", TRANSCRIPTS / "codex")

    assert (first.files, first.sessions, first_codex.files) == (4, 4, 2)
    assert first.events_new == first.commands + first.edits > 100
    assert first.skipped_lines == 0 and first.events_known == 0
    assert (again.events_new, again.events_known) == (0, first.events_new)
    assert (again_codex.events_new, again_codex.events_known) == (0, first_codex.events_new)
    total = first.events_new + first_codex.events_new
    assert home.scalar("SELECT count(*) FROM captured_events") == total
    assert home.query("SELECT session_id, high_watermark_event_id FROM extraction_tasks") == tasks


def test_an_import_checkpoints_apart_from_its_commits_and_when_it_is_done(
    home: Home, engine: Engine, tmp_path: Path
) -> None:
    """Its commits never move the WAL into the file (that would hold the write lock the hooks
    wait for): the import does, between batches and when it is done, so the file alone, its
    WAL left aside, holds every event it stored."""
    transcript = Claude(make_repository(tmp_path / "app"))
    for number in range(BATCH_EVENTS + 20):  # two batches
        transcript.bash(f"echo {number}")
    summary = run_import(engine, "claude-code", transcript.write(tmp_path / "s.jsonl"))

    with engine.connect() as connection:
        pooled = connection.connection.dbapi_connection
        assert pooled is not None
        assert pooled.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    file_alone = sqlite3.connect(f"file:{home.db}?immutable=1", uri=True)
    try:
        stored = file_alone.execute("SELECT count(*) FROM captured_events").fetchone()
    finally:
        file_alone.close()
    assert summary.events_new == BATCH_EVENTS + 20 == stored[0]


def test_a_session_the_hooks_captured_counts_each_run_once(home: Home, engine: Engine) -> None:
    transcript = TRANSCRIPTS / "claude" / "spotter-fum.jsonl"
    calls = list(read_claude(str(transcript)))
    for call in calls[::3]:  # the hooks saw a third of the session live
        kind, body = hook.capture(json.dumps(call.payload).encode(), "claude-code", NOW)
        assert kind == "event"
        assert hook.save(str(home.path), kind, body) == "stored"
    live = home.scalar("SELECT count(*) FROM captured_events")

    summary = run_import(engine, "claude-code", transcript)

    assert summary.events_known == live == len(calls[::3])
    assert summary.events_new == len(calls) - live
    assert home.scalar("SELECT count(*) FROM captured_events") == len(calls)
    assert home.scalar("SELECT count(DISTINCT tool_use_id) FROM captured_events") == len(calls)
    assert home.scalar("SELECT count(*) FROM sessions") == 1


def test_a_codex_session_the_hooks_captured_resolves_to_what_the_import_read(
    world: World,
) -> None:
    rollout = TRANSCRIPTS / "codex" / "01.jsonl"
    calls = list(read_codex(str(rollout)))
    for call in calls:  # live: the hook cannot know the outcome, the worker reads it later
        world.post_payload(call.payload, "codex")
    assert {r[0] for r in world.execute("SELECT outcome FROM captured_events")} == {"unknown"}

    summary = run_import(world.engine, "codex", rollout)
    world.burst()

    assert len(calls) == 6
    assert (summary.events_new, summary.events_known) == (0, 6)
    resolved = dict(world.execute("SELECT tool_use_id, exit_code FROM captured_events"))
    assert resolved == {call.payload["tool_use_id"]: call.exit_code for call in calls}


# --- broken and growing files -------------------------------------------------------------------


def test_broken_lines_and_unknown_records_are_counted_never_fatal(
    home: Home, engine: Engine, tmp_path: Path
) -> None:
    session = Claude("/home/dev/shop")
    session.bash("make test")
    session.lines.append("this is not json")
    session.lines.append("[1, 2, 3]")
    session.record("summary", summary="a record type no reader knows")
    session.bash("make lint")
    path = session.write(tmp_path / "s.jsonl", tail='{"type": "assistant", "message": {"con')

    summary = run_import(engine, "claude-code", path)

    assert summary.skipped_lines == 3  # two broken lines and the partial last one
    assert summary.unknown_records == 1
    assert (summary.commands, summary.events_new) == (2, 2)
    assert [r[0] for r in rows(home, "command")] == ["make test", "make lint"]


def test_a_file_still_being_written_is_read_to_the_size_it_had(
    home: Home, engine: Engine, tmp_path: Path
) -> None:
    session = Claude("/home/dev/shop")
    session.bash("make test")
    path = session.write(tmp_path / "live.jsonl", tail='{"type": "user", "mess')
    later = Claude("/home/dev/shop")
    later.calls = 10
    later.bash("make docs")

    reading = read_claude(str(path))
    first = next(reading)
    with open(path, "a", encoding="utf-8") as handle:  # the session goes on meanwhile
        handle.write('age": {}}\n' + "".join(line + "\n" for line in later.lines))
    rest = list(reading)
    summary = run_import(engine, "claude-code", path)

    assert first.payload["tool_input"] == {"command": "make test"} and rest == []
    assert (summary.commands, summary.skipped_lines) == (2, 0)
    assert [r[0] for r in rows(home, "command")] == ["make test", "make docs"]


# --- identity -----------------------------------------------------------------------------------


def test_a_gone_repository_falls_back_to_the_recorded_cwd_and_branch(
    home: Home, engine: Engine
) -> None:
    # /home/USER/projects does not exist here: the session's first cwd is the project.
    run_import(engine, "claude-code", TRANSCRIPTS / "claude" / "spotter-fum.jsonl")

    found = set(
        home.query(
            "SELECT p.root, e.branch, e.directory FROM captured_events e "
            "JOIN projects p ON p.id = e.project_id WHERE e.kind = 'command'"
        )
    )
    root = "/home/USER/projects/spotter-worktrees/spotter-fum"
    assert found == {(root, "spotter-fum", "."), (root, "spotter-fum", "assets")}


def test_the_claude_project_folder_names_the_root_of_a_gone_repository(
    home: Home, engine: Engine, tmp_path: Path
) -> None:
    session = Claude("/srv/gone/shop/web", branch="feature")
    session.bash("npm test")
    session.cwd = "/srv/gone/shop"
    session.bash("make test")
    session.cwd = "/srv/elsewhere"
    session.bash("make deploy")
    folder = tmp_path / ".claude" / "projects" / "-srv-gone-shop"
    session.write(folder / f"{SESSION}.jsonl")

    run_import(engine, "claude-code", tmp_path / ".claude")

    found = home.query(
        "SELECT e.command, p.root, e.branch, e.directory FROM captured_events e "
        "JOIN projects p ON p.id = e.project_id ORDER BY e.id"
    )
    assert found == [
        ("npm test", "/srv/gone/shop", "feature", "web"),
        ("make test", "/srv/gone/shop", "feature", "."),
        ("make deploy", "/srv/elsewhere", "feature", "."),
    ]


def test_an_existing_repository_is_located_exactly_as_the_hook_locates_it(
    home: Home, engine: Engine, tmp_path: Path
) -> None:
    repository = tmp_path / "shop"
    real_root = make_repository(repository, "main")
    (repository / "web").mkdir()
    session = Claude(str(repository / "web"), branch="main")
    use_id = session.bash("npm test")
    session.edit(str(repository / "web" / "app.js"))
    path = session.write(tmp_path / "s.jsonl")
    (call, _edit) = list(read_claude(str(path)))
    _kind, live = hook.capture(json.dumps(call.payload).encode(), "claude-code", NOW)

    run_import(engine, "claude-code", path)

    stored = home.query(
        "SELECT e.idempotency_key, p.root, e.branch, e.directory, e.cwd, e.files "
        "FROM captured_events e JOIN projects p ON p.id = e.project_id ORDER BY e.id"
    )
    assert stored[0][:5] == (live.idempotency_key, live.project_root, "main", "web", live.cwd)
    assert (live.project_root, live.directory) == (real_root, "web")
    assert live.idempotency_key.endswith(use_id)
    assert json.loads(stored[1][5]) == ["web/app.js"]


# --- what is kept -------------------------------------------------------------------------------


def test_codex_exit_codes_come_straight_from_the_rollout(home: Home, engine: Engine) -> None:
    run_import(engine, "codex", TRANSCRIPTS / "codex" / "01.jsonl")

    expected = {}
    for line in (TRANSCRIPTS / "codex" / "01.jsonl").read_text().splitlines():
        payload = json.loads(line).get("payload") or {}
        if payload.get("type") == "exec_command_end":
            expected[payload["call_id"]] = payload["exit_code"]
    stored = rows(home, "tool_use_id, exit_code, outcome, branch, output_excerpt")
    assert {r[0]: r[1] for r in stored} == expected
    assert all(r[2] == ("success" if r[1] == 0 else "failure") for r in stored)
    assert {r[3] for r in stored} == {"qvac-integration"}  # session_meta.git.branch
    assert all(r[4] for r in stored if r[1] != 0)  # kept for the masked-pipeline judgement


def test_secrets_are_redacted_before_they_are_stored(
    home: Home, engine: Engine, tmp_path: Path
) -> None:
    session = Claude("/home/dev/shop")
    session.bash(f"GITHUB_TOKEN={TOKEN} gh release list", stdout=f"token {TOKEN} accepted")
    path = session.write(tmp_path / "s.jsonl")

    run_import(engine, "claude-code", path)

    (stored,) = rows(home, "command, payload, output_excerpt")
    assert all(TOKEN not in (column or "") for column in stored)
    assert "gh release list" in stored[0]


def test_event_times_are_the_records_and_future_ones_are_clamped(
    home: Home, engine: Engine, tmp_path: Path
) -> None:
    session = Claude("/home/dev/shop")
    session.bash("make test")
    session.bash("make lint")
    session.lines[-1] = session.lines[-1].replace("2026-11-20", "2099-01-01")
    path = session.write(tmp_path / "s.jsonl")

    run_import(engine, "claude-code", path)

    (first, first_reported), (second, second_reported) = rows(home, "event_at, event_at_reported")
    expected = datetime(2026, 11, 20, 10, 0, 1, tzinfo=UTC).timestamp()  # the result's record
    assert first == expected and first_reported is None
    assert second == NOW and second_reported is not None


def test_import_enqueues_one_extraction_task_per_session_as_the_hook_does(
    home: Home, engine: Engine, tmp_path: Path
) -> None:
    for number in range(3):
        session = Claude("/home/dev/shop", session=f"{SESSION[:-1]}{number}")
        session.bash("make test")
        session.edit("/home/dev/shop/a.py")
        session.write(tmp_path / f"s{number}.jsonl")

    run_import(engine, "claude-code", tmp_path)

    tasks = home.query(
        "SELECT t.kind, t.status, t.high_watermark_event_id, max(e.id) FROM extraction_tasks t "
        "JOIN captured_events e ON e.session_id = t.session_id GROUP BY t.id"
    )
    assert len(tasks) == 3
    assert all(kind == "promote" and status == "pending" and w == m for kind, status, w, m in tasks)


# --- choosing what to import --------------------------------------------------------------------


def test_since_leaves_out_older_calls_and_files(home: Home, engine: Engine, tmp_path: Path) -> None:
    recent = Claude("/home/dev/shop")
    recent.bash("make test")
    recent.lines[-1] = recent.lines[-1].replace("2026-11-20", "2026-01-01")  # its result: old
    recent.bash("make lint")
    recent.write(tmp_path / "recent.jsonl")
    old = Claude("/home/dev/shop", session=SESSION[:-1] + "9")
    old.bash("make docs")
    old_path = old.write(tmp_path / "old.jsonl")
    os.utime(old_path, (NOW - 400 * 86400, NOW - 400 * 86400))

    summary = run_import(engine, "claude-code", tmp_path, since_at=NOW - 300 * 86400)

    assert (summary.files, summary.files_too_old, summary.calls_too_old) == (1, 1, 1)
    assert [r[0] for r in rows(home, "command")] == ["make lint"]


def test_project_keeps_only_sessions_inside_it(home: Home, engine: Engine, tmp_path: Path) -> None:
    for number, cwd in enumerate(("/home/dev/shop", "/home/dev/shop/web", "/home/dev/blog")):
        session = Claude(cwd, session=f"{SESSION[:-1]}{number}")
        session.bash(f"make test-{number}")
        session.write(tmp_path / f"s{number}.jsonl")

    summary = run_import(engine, "claude-code", tmp_path, project="/home/dev/shop")

    assert (summary.sessions, summary.calls_outside_project) == (2, 1)
    assert [r[0] for r in rows(home, "command")] == ["make test-0", "make test-1"]


def test_a_dry_run_counts_and_stores_nothing(home: Home, engine: Engine) -> None:
    counted = run_import(engine, "claude-code", TRANSCRIPTS / "claude", dry_run=True)
    assert home.scalar("SELECT count(*) FROM captured_events") == 0
    stored = run_import(engine, "claude-code", TRANSCRIPTS / "claude" / "01.jsonl")

    again = run_import(engine, "claude-code", TRANSCRIPTS / "claude", dry_run=True)

    assert counted.dry_run and counted.events_new == counted.commands + counted.edits > 100
    assert again.events_known == stored.events_new > 0
    assert again.events_new == counted.events_new - stored.events_new
    assert home.scalar("SELECT count(*) FROM captured_events") == stored.events_new


def test_sessions_are_counted_as_import_reads_them_and_dated_by_their_first_record(
    tmp_path: Path,
) -> None:
    projects = tmp_path / ".claude" / "projects"
    began = {"1.jsonl": "2026-03-02T10:00:00Z", "2.jsonl": "2026-01-05T08:30:00Z"}
    for folder, name in (("-a", "1.jsonl"), ("-a", "2.jsonl"), ("-b", "3.jsonl")):
        (projects / folder).mkdir(parents=True, exist_ok=True)
        record = {"type": "summary"}, {"type": "user", "timestamp": began.get(name)}
        (projects / folder / name).write_text("".join(json.dumps(r) + "\n" for r in record))
    (projects / "-b" / "3.jsonl").write_bytes(b"\x00not even json")  # dated by its mtime
    os.utime(projects / "-b" / "3.jsonl", (1_800_000_000, 1_800_000_000))
    (projects / "-a" / "1" / "subagents").mkdir(parents=True)
    (projects / "-a" / "1" / "subagents" / "agent-x.jsonl").write_text("")
    # Codex rollouts of every vintage: in dated folders or not, named rollout-* or not.
    sessions = tmp_path / ".codex" / "sessions"
    rollouts = sessions / "2026" / "11" / "20"
    rollouts.mkdir(parents=True)
    (rollouts / "rollout-2026-11-20T10-00-00-abc.jsonl").write_text(
        json.dumps({"timestamp": "2026-11-20T10:00:00.000Z", "type": "session_meta"}) + "\n"
    )
    (rollouts / "notes.txt").write_text("")
    (sessions / "rollout-2025-05-01-old.jsonl").write_text(
        json.dumps({"id": "x", "timestamp": "2025-05-01T09:00:00Z"}) + "\n"  # bare header
    )
    (sessions / "copied.jsonl").write_text("")

    found = find_sessions(str(tmp_path), {})
    assert {host: f.sessions for host, f in found.items()} == {"claude-code": 3, "codex": 3}
    assert found["claude-code"].oldest_at == parse_time("2026-01-05T08:30:00Z")
    assert found["codex"].oldest_at == parse_time("2025-05-01T09:00:00Z")
    codex_read = discover("codex", [], str(tmp_path), {})
    assert len(codex_read) == found["codex"].sessions  # init counts what import reads
    nobody = find_sessions(str(tmp_path / "nobody"), {})
    assert nobody == {"claude-code": Found(0, None), "codex": Found(0, None)}
    now = parse_time("2026-12-01T00:00:00Z")
    assert now is not None
    assert since_covering(now - 395.5 * 86_400, now) == "400d"
    assert since_covering(now - 3 * 86_400, now) == "10d"
    found = discover("claude-code", [], str(tmp_path), {})
    assert len(found) == 4  # subagents' transcripts are imported too: their hooks fire
    shutil.rmtree(projects)
    assert discover("claude-code", [], str(tmp_path), {}) == []


# --- edits made through the shell, and the shapes of a Codex outcome ----------------------------


class Rollout:
    """A Codex rollout written line by line in the envelope shape of the real ones (the
    fixtures' codex/01.jsonl and codex/02.jsonl): one session, its calls and their outcomes."""

    def __init__(self, cwd: str, session: str = "rollout-1", start: int = 0) -> None:
        self.lines: list[str] = []
        self.start, self.calls = start, 0
        self.lines.append(self._line("session_meta", {"id": session, "cwd": cwd}))

    def _line(self, kind: str, payload: dict[str, Any]) -> str:
        at = stamp(self.start + len(self.lines))
        return json.dumps({"timestamp": at, "type": kind, "payload": payload})

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        self.calls += 1
        call_id = f"call_{self.calls:04d}"
        item = {"type": "function_call", "name": name, "arguments": json.dumps(arguments)}
        self.lines.append(self._line("response_item", {**item, "call_id": call_id}))
        return call_id

    def output(self, call_id: str, output: str) -> None:
        item = {"type": "function_call_output", "call_id": call_id, "output": output}
        self.lines.append(self._line("response_item", item))

    def shell(self, argv: list[str], exit_code: int, output: str) -> str:
        """The `shell` tool of 2025: argv, and JSON output with metadata.exit_code."""
        call_id = self.call("shell", {"command": argv, "workdir": None})
        metadata = {"exit_code": exit_code, "duration_seconds": 0.4}
        self.output(call_id, json.dumps({"output": output, "metadata": metadata}))
        return call_id

    def shell_command(self, command: str, exit_code: int, output: str) -> str:
        """The `shell_command` tool: a command string, and text output under a header."""
        call_id = self.call("shell_command", {"command": command})
        self.output(call_id, f"Exit code: {exit_code}\nWall time: 0.4 seconds\nOutput:\n{output}")
        return call_id

    def exec_command(self, command: str, exit_code: int, output: str) -> str:
        """Unified exec: the outcome is its exec_command_end event."""
        call_id = self.call("exec_command", {"cmd": command})
        end = {"type": "exec_command_end", "call_id": call_id, "exit_code": exit_code}
        self.lines.append(self._line("event_msg", {**end, "aggregated_output": output}))
        return call_id

    def write(self, path: Path) -> Path:
        path.write_text("".join(line + "\n" for line in self.lines), encoding="utf-8")
        return path


def test_the_apply_patch_calls_of_an_older_codex_session_are_edits(
    home: Home, engine: Engine
) -> None:
    summary = run_import(engine, "codex", TRANSCRIPTS / "codex" / "02.jsonl")

    edits = [json.loads(files) for (files,) in rows(home, "files", "kind = 'edit'")]
    commands = [command for (command,) in rows(home, "command", "kind = 'command'")]
    assert summary.edits == len(edits) == 206
    assert not [c for c in commands if "apply_patch" in c or "*** Begin Patch" in c]
    assert edits[:2] == [["opk/cli/__main__.py"], ["README.md"]]
    named = {name for files in edits for name in files}
    assert {"opk/ui/pdl_editor.py", "schemas/pdl.schema.json", "tests/test_cli.py"} <= named
    assert all(not os.path.isabs(name) for name in named)


def test_a_fix_applied_through_the_shell_is_named_by_its_lesson(
    world: World, tmp_path: Path
) -> None:
    patch = "*** Begin Patch\n*** Update File: opk/core/io.py\n@@\n-import yaml\n+import json\n"
    rollout = Rollout("/home/dev/opk")
    error = "E   ModuleNotFoundError: No module named 'yaml'\n1 error in 0.31s\n"
    rollout.shell(["bash", "-lc", "PYTHONPATH=. pytest -q"], 1, error)
    heredoc = f"apply_patch << 'PATCH'\n{patch}*** End Patch\nPATCH\n"
    rollout.shell(["bash", "-lc", heredoc], 0, "Success. Updated the following files:\n")
    rollout.shell(["bash", "-lc", "PYTHONPATH=. pytest -q"], 0, "12 passed in 0.40s\n")
    second = Rollout("/home/dev/opk", session="rollout-2", start=60)
    second.shell(["bash", "-lc", "PYTHONPATH=. pytest -q"], 0, "12 passed in 0.41s\n")
    run_import(world.engine, "codex", rollout.write(tmp_path / "a.jsonl"))
    run_import(world.engine, "codex", second.write(tmp_path / "b.jsonl"))

    world.burst()

    (fix_files,) = world.execute("SELECT fix_files FROM lessons")[0]
    assert json.loads(fix_files) == ["opk/core/io.py"]


def test_each_shape_of_codex_outcome_keeps_its_exit_code_and_its_error(
    home: Home, engine: Engine, tmp_path: Path
) -> None:
    rollout = Rollout("/home/dev/shop")
    rollout.exec_command("go test ./...", 1, "--- FAIL: TestCart (0.00s)\nFAIL\tshop/cart\n")
    rollout.shell(["pytest", "-q"], 1, "E   ModuleNotFoundError: No module named 'shop'\n")
    rollout.shell_command("npm test", 127, "sh: 1: jest: not found\n")
    rollout.shell_command("make lint", 0, "ok\n")
    path = rollout.write(tmp_path / "rollout.jsonl")

    run_import(engine, "codex", path)

    stored = rows(home, "command, exit_code, outcome, exit_code_source, error_excerpt")
    assert [row[:4] for row in stored] == [
        ("go test ./...", 1, "failure", "rollout"),
        ("pytest -q", 1, "failure", "rollout"),
        ("npm test", 127, "failure", "rollout"),
        ("make lint", 0, "success", "rollout"),
    ]
    excerpts = [row[4] or "" for row in stored]
    assert "--- FAIL: TestCart" in excerpts[0]
    assert excerpts[1].startswith("E   ModuleNotFoundError: No module named 'shop'")
    assert excerpts[2] == "sh: 1: jest: not found\n"  # the text after the header, alone
    assert excerpts[3] == ""


def test_a_file_written_through_the_shell_is_an_edit_and_importing_again_adds_a_missing_one(
    home: Home, engine: Engine, tmp_path: Path
) -> None:
    repository = tmp_path / "shop"
    make_repository(repository)
    session = Claude(str(repository))
    session.bash("cat > src/cart.py <<'EOF'\ndef total(items):\n    return 0\nEOF")
    session.bash("cat > /tmp/commit-message.txt <<'EOF'\nfix: total\nEOF")
    path = session.write(tmp_path / "s.jsonl")

    run_import(engine, "claude-code", path)
    first = rows(home, "kind, files")
    with engine.begin() as connection:  # as a database stored before writes were edits
        connection.exec_driver_sql("DELETE FROM captured_events WHERE kind = 'edit'")
    run_import(engine, "claude-code", path)

    assert first == [("command", None), ("edit", '["src/cart.py"]'), ("command", None)]
    assert [row[1] for row in rows(home, "kind, files")] == [None, None, '["src/cart.py"]']
