"""The digest (DESIGN.md §7) as real processes: `remem context` and the SessionStart hook."""

from __future__ import annotations

import gc
import json
import resource
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.agent import digest
from remem.agent.context import read_entries
from remem.agent.known import digest_known_errors
from remem.config import Settings
from tests.conftest import REMEM_HOOK, Home, load_fixture
from tests.integration.conftest import World
from tests.oracles import paginate

TEST = "python -m pytest -q tests/test_cart.py"
LINT = "ruff check src"
# A non-ASCII script name and argument: the digest shows the command as it was run.
ACCENTED = './bin/运行.sh --nome "coração"'


def make_project(tmp_path: Path, branch: str = "main", name: str = "shop") -> Path:
    project = tmp_path / name
    (project / ".git").mkdir(parents=True)
    set_branch(project, branch)
    return project


def set_branch(project: Path, branch: str) -> None:
    (project / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n", encoding="utf-8")


def verify(world: World, project: Path, command: str, session: str = "s1", runs: int = 2) -> None:
    """`runs` successful runs of `command` in the project's current branch, then a burst."""
    for _ in range(runs):
        world.post(command, session=session, project=str(project), branch=None)
    world.burst()


def context(
    home: Home, project: Path, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return home.remem("context", "--cwd", str(project), *args, check=check)


def expected_pages(home: Home, project: Path, branch: str) -> list[str]:
    """The library's rendering of what the database holds, read independently of the CLI."""
    connection = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True)

    def execute(sql: str, params: dict[str, Any]) -> list[Any]:
        return connection.execute(sql, params).fetchall()

    try:
        entries = read_entries(execute, str(project), branch)
        said = {key for entry in entries for key in entry.pitfall_keys}
        known_errors = digest_known_errors(execute, str(project), said=said)
    finally:
        connection.close()
    return paginate(
        entries, digest.header_for(str(project), branch, bool(entries)), known_errors=known_errors
    )


def command_lines(page: str) -> list[str]:
    return [line for line in page.splitlines() if line.startswith("- `")]


@pytest.fixture
def world(home: Home) -> Iterator[World]:
    """Events through the real capture code, promoted by a real worker (tests/integration)."""
    made = World(home)
    yield made
    made.engine.dispose()


@pytest.fixture
def shop(world: World, tmp_path: Path) -> Path:
    """A project on main with three procedures, one of which has a lesson."""
    project = make_project(tmp_path)
    world.post(TEST, exit_code=1, project=str(project), branch=None, error="E   assert 0 == 3")
    world.now += 60
    verify(world, project, TEST)
    verify(world, project, LINT, session="s2")
    verify(world, project, ACCENTED, session="s3")
    return project


def test_a_digest_of_known_errors_only_announces_no_verified_command(
    home: Home, world: World, tmp_path: Path
) -> None:
    """A failure fixed once: a lesson, and no procedure yet (one verified run)."""
    project = make_project(tmp_path)
    world.post(TEST, exit_code=1, project=str(project), branch=None, error="E   assert 0 == 3")
    world.now += 60
    verify(world, project, TEST, runs=1)
    result = context(home, project)
    lines = result.stdout.splitlines()
    assert lines[0] == digest.header_for(str(project), "main", verified=False)
    assert "no command verified lately" in lines[0] and "verified to work" not in lines[0]
    assert command_lines(result.stdout) == [] and "assert 0 == 3" in result.stdout
    assert [result.stdout] == expected_pages(home, project, "main")
    hook = home.hook(_claude_start(project))  # the SessionStart hook says the same
    assert (hook.returncode, hook.stdout) == (0, result.stdout.encode("utf-8"))


def test_context_prints_the_digest_of_the_project_and_branch(home: Home, shop: Path) -> None:
    result = context(home, shop)
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == digest.header_for(str(shop), "main")
    assert f"{shop} on branch main" in lines[0]
    assert len(command_lines(result.stdout)) == 3
    for command in (TEST, LINT, ACCENTED):
        assert sum(f"`{command}`" in line for line in lines) == 1
    test_index = next(i for i, line in enumerate(lines) if f"`{TEST}`" in line)
    assert lines[test_index + 1].startswith("  pitfall: failed 1 time before passing")
    # The project's one known error is the pitfall's: said there, not again.
    assert '"E   assert 0 == 3"' in lines[test_index + 1]
    assert "Known errors in this project" not in result.stdout
    assert "Run:" not in result.stdout
    assert result.stdout == expected_pages(home, shop, "main")[0]


def test_other_project_or_no_procedures_prints_nothing(home: Home, tmp_path: Path) -> None:
    empty = make_project(tmp_path, name="empty")
    result = context(home, empty)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_feature_branch_inherits_main_until_it_has_its_own(
    world: World,
    home: Home,
    shop: Path,
) -> None:
    set_branch(shop, "feature/x")
    verify(world, shop, "make docs", session="f1")
    inherited = context(home, shop).stdout
    assert inherited.splitlines()[0] == digest.header_for(str(shop), "feature/x")
    (docs,) = [line for line in command_lines(inherited) if "`make docs`" in line]
    assert "inherited" not in docs
    (test_line,) = [line for line in command_lines(inherited) if f"`{TEST}`" in line]
    assert "2 runs in 1 session, inherited from main, last verified " in test_line
    assert len(command_lines(inherited)) == 4

    # Verified on the branch too, the workflow is verified on two branches: project-wide, one
    # line that counts every branch's runs, no longer inherited.
    verify(world, shop, TEST, session="f2", runs=3)
    own = context(home, shop).stdout
    (test_line,) = [line for line in command_lines(own) if f"`{TEST}`" in line]
    assert "inherited" not in test_line
    assert "5 runs in 2 sessions, verified on 2 branches, last verified " in test_line
    assert len(command_lines(own)) == 4
    assert own == expected_pages(home, shop, "feature/x")[0]
    shown = json.loads(context(home, shop, "--json").stdout)["procedures"]
    (test,) = [p for p in shown if p["command"] == TEST]
    assert (test["scope"], test["branch"], test["branches"]) == (
        "project",
        None,
        ["feature/x", "main"],
    )


def test_same_state_gives_byte_identical_output(home: Home, shop: Path) -> None:
    first = context(home, shop)
    second = context(home, shop)
    assert first.stdout.encode("utf-8") == second.stdout.encode("utf-8")
    assert first.stdout != ""


def test_five_hundred_procedures_page_through_every_command_once(
    world: World,
    home: Home,
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    # Distinct workflows: runs on distinct test files would be one family.
    commands = [f"python -m pytest -q -k test_module_{i:03d}" for i in range(500)]
    for command in commands:
        for _ in range(2):
            world.post(command, project=str(project), branch=None)
    world.burst()
    assert home.status()["procedures"]["active"] == 500

    expected = expected_pages(home, project, "main")
    assert len(expected) > 2
    second = context(home, project, "--page", "2").stdout
    assert second == expected[1]
    assert second.splitlines()[0] == digest.header_for(str(project), "main")
    assert second.splitlines()[-1] == "Run: remem context --page 3"

    pages = [context(home, project, "--page", str(n)).stdout for n in range(1, len(expected) + 1)]
    assert pages == expected
    for page in pages:
        assert len(page) <= Settings.context_max_chars
        assert page.count("\n") <= Settings.context_max_lines
    for command in commands:
        assert sum(page.count(f"`{command}`") for page in pages) == 1
    assert pages[-1].splitlines()[-1] == f"(page {len(pages)} of {len(pages)}: the last page)"


def test_a_page_past_the_end_is_an_error_on_one_line(home: Home, shop: Path) -> None:
    result = context(home, shop, "--page", "99", check=False)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("remem: ")
    assert "--page 1 to 1" in result.stderr


def test_json_lists_the_procedures(home: Home, shop: Path) -> None:
    shown = json.loads(context(home, shop, "--json").stdout)
    assert (shown["project"], shown["branch"]) == (str(shop), "main")
    procedures = shown["procedures"]
    assert sorted(p["command"] for p in procedures) == sorted([TEST, LINT, ACCENTED])
    assert all(p["inherited"] is False and p["branch"] == "main" for p in procedures)
    assert all(p["scope"] == "branch" and p["branches"] == ["main"] for p in procedures)
    (test,) = [p for p in procedures if p["command"] == TEST]
    assert len(test["pitfalls"]) == 1
    assert test["verified_runs"] == 2


def _session_starts(home: Home) -> list[tuple[Any, ...]]:
    """The host and session of each recorded session start: read from the table, as no output
    names them (evidence runs do so for verified runs only)."""
    return home.query(
        "SELECT e.host, s.session_key FROM captured_events e JOIN sessions s ON s.id = e.session_id"
        " WHERE e.kind = 'session_start' ORDER BY e.id"
    )


def _claude_start(project: Path, session: str = "claude-start") -> dict[str, Any]:
    payload = load_fixture("claude-code/session_start.json")
    payload.update(cwd=str(project), session_id=session)
    return payload


def test_claude_code_session_start_prints_page_one_as_context_does(home: Home, shop: Path) -> None:
    result = home.hook(_claude_start(shop))
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == context(home, shop).stdout.encode("utf-8")
    assert _session_starts(home) == [("claude-code", "claude-start")]


def test_codex_session_start_prints_the_digest_as_additional_context(
    home: Home, shop: Path
) -> None:
    payload = load_fixture("codex/session_start.json")
    payload.update(cwd=str(shop), session_id="codex-start")
    result = home.hook(payload)
    assert (result.returncode, result.stderr) == (0, b"")
    output = json.loads(result.stdout)
    assert output == {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context(home, shop).stdout,
        }
    }
    assert _session_starts(home) == [("codex", "codex-start")]


def test_cursor_session_start_prints_the_digest_as_additional_context(
    home: Home, shop: Path
) -> None:
    payload = {
        "conversation_id": "cursor-start",
        "workspace_roots": [str(shop)],
        "hook_event_name": "sessionStart",
    }
    result = home.hook(payload)
    assert (result.returncode, result.stderr) == (0, b"")
    assert json.loads(result.stdout) == {"additional_context": context(home, shop).stdout}
    assert _session_starts(home) == [("cursor", "cursor-start")]


def test_session_start_in_a_project_without_procedures_prints_nothing(
    home: Home,
    shop: Path,
    tmp_path: Path,
) -> None:
    other = make_project(tmp_path, name="other")
    result = home.hook(_claude_start(other))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert _session_starts(home) == [("claude-code", "claude-start")]


def test_session_start_on_a_locked_database_prints_nothing_and_returns_fast(
    world: World,
    home: Home,
    shop: Path,
) -> None:
    # In WAL mode readers are blocked only by a connection holding the file exclusively, which
    # it can take only once no other connection has the file open.
    world.engine.dispose()
    # hook.save() leaves its connection open by design; a sqlite3 connection is in a reference
    # cycle with its statement cache, so only the collector closes it.
    gc.collect()
    locker = sqlite3.connect(home.db, isolation_level=None, timeout=1)
    try:
        locker.execute("PRAGMA locking_mode = EXCLUSIVE")
        locker.execute("BEGIN EXCLUSIVE")
        locker.execute("UPDATE projects SET root = root")
        started = time.monotonic()
        result = home.hook(_claude_start(shop))
        elapsed_s = time.monotonic() - started
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert (result.returncode, result.stdout) == (0, b"")
    assert elapsed_s < 2.0, elapsed_s
    spooled = (home.spool / "events.jsonl").read_text().splitlines()
    assert [json.loads(line)["event"]["kind"] for line in spooled] == ["session_start"]
    assert home.hook(_claude_start(shop, "after-unlock")).stdout == context(
        home, shop
    ).stdout.encode("utf-8")


def test_configured_budget_holds_for_the_hook_and_the_cli_alike(
    world: World,
    home: Home,
    shop: Path,
) -> None:
    for index in range(12):
        for _ in range(2):
            world.post(f"make target-{index:02d}", project=str(shop), branch=None)
    world.burst()
    with (home.path / "config.toml").open("a", encoding="utf-8") as config:
        config.write("\n[context]\nmax_lines = 8\n")
    pages = []
    for number in range(1, 20):
        result = context(home, shop, "--page", str(number), check=False)
        if result.returncode != 0:
            break
        pages.append(result.stdout)
    assert len(pages) > 2
    assert all(page.count("\n") <= 8 for page in pages)
    assert sum(len(command_lines(page)) for page in pages) == 15
    hook = home.hook(_claude_start(shop))
    assert (hook.returncode, hook.stdout) == (0, pages[0].encode("utf-8"))


def _disk_full() -> None:
    # No file may grow, as on a full disk; the write gets EFBIG instead of a SIGXFSZ kill.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_session_start_on_a_full_disk_still_prints_the_digest(
    world: World, home: Home, shop: Path
) -> None:
    world.engine.dispose()
    gc.collect()
    expected = context(home, shop).stdout
    # A reader keeps the -wal and -shm files in place, as a running worker does.
    reader = sqlite3.connect(home.db)
    try:
        reader.execute("SELECT count(*) FROM projects").fetchall()
        result = subprocess.run(
            [REMEM_HOOK],
            input=json.dumps(_claude_start(shop)).encode(),
            env=home.env,
            capture_output=True,
            timeout=30,
            preexec_fn=_disk_full,
        )
    finally:
        reader.close()

    assert result.stdout.decode("utf-8") == expected
    assert result.returncode == 0
    assert result.stderr.decode().startswith("remem-hook: could not store or spool the event")
    assert _session_starts(home) == []


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real filesystem of 16 MiB (a tmpfs, mounted as root), unmounted after the test."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here (needs root): {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


def _fill(path: Path) -> None:
    """Write until the filesystem refuses: a full disk."""
    chunk = b"\0" * (1 << 20)
    with (path / "filler").open("wb", buffering=0) as filler:
        while True:
            try:
                filler.write(chunk)
            except OSError:
                break
    for size in (4096, 512, 1):
        with (path / f"filler-{size}").open("wb", buffering=0) as filler:
            while True:
                try:
                    filler.write(b"\0" * size)
                except OSError:
                    break


def test_session_start_on_a_really_full_disk_prints_the_digest(
    template_home: Path, small_disk: Path
) -> None:
    """The home on a filesystem with not one byte free: the SessionStart event can be neither
    stored nor spooled, what the page showed cannot be recorded; the digest is printed."""
    import shutil

    home = Home(small_disk / "home")
    shutil.copytree(template_home, home.path)
    (small_disk / "user-home").mkdir()
    shop = make_project(small_disk)
    for session in ("s1", "s2"):
        payload = load_fixture("claude-code/post_tool_use_bash_success.json")
        payload.update(cwd=str(shop), session_id=session, tool_use_id=f"toolu_{session}")
        payload["tool_input"]["command"] = TEST
        assert home.hook(payload).returncode == 0
    home.remem("worker", "--burst")
    expected = context(home, shop).stdout
    starts = []

    _fill(small_disk)
    for session in ("full-1", "full-2", "full-3"):
        starts.append(home.hook(_claude_start(shop, session)))

    assert TEST in expected
    for result in starts:
        assert (result.returncode, result.stdout.decode("utf-8")) == (0, expected), result
