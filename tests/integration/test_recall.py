"""`remem recall` (DESIGN.md §7): a regular expression over procedures, variants, lessons and
captured commands, newest first, in pages an agent harness keeps whole."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

from remem import hook
from remem.agent import recall
from remem.capture.store import store_event
from remem.db import sqlite as sqlite_settings
from tests.conftest import REMEM, Home, wait_for
from tests.integration.conftest import DAY, World, make_repository

TEST = "python -m pytest -q tests/test_cart.py"
MIGRATE = "alembic upgrade head"
MIGRATE_TAIL = "alembic upgrade head 2>&1 | tail -3"
ERROR = "E   sqlalchemy.exc.OperationalError: no such table: carts"


def _shop(world: World, tmp_path: Path, name: str = "shop") -> str:
    """A project with a migration procedure (and a variant), and a test procedure whose
    lesson records an error and the file that fixed it."""
    project = make_repository(tmp_path / name)
    world.post(TEST, exit_code=1, project=project, branch=None, error=ERROR)
    world.edit("migrations/0002_carts.py", project=project, branch=None)
    world.now += 60
    world.post(TEST, project=project, branch=None)
    world.post(TEST, project=project, branch=None)
    world.now += 60
    world.post(MIGRATE, project=project, branch=None)
    world.post(MIGRATE_TAIL, project=project, branch=None)
    world.post(MIGRATE, project=project, branch=None)
    world.burst()
    return project


def _recall(home: Home, *args: str, check: bool = True) -> Any:
    return home.remem("recall", *args, check=check)


def _json(home: Home, *args: str) -> dict[str, Any]:
    return json.loads(_recall(home, *args, "--json").stdout)


def test_recall_finds_a_procedure_and_its_variant_with_ids_status_and_evidence(
    world: World, home: Home, tmp_path: Path
) -> None:
    project = _shop(world, tmp_path)
    (migrate_id,) = [i for i, c in world.procedures("id", "command") if c == MIGRATE]
    found = _json(home, "alembic", "--cwd", project)
    assert (found["project"], found["total"], found["pages"]) == (project, 4, 1)
    assert found["notice"] == recall.NOTICE
    kinds = [(h["kind"], h["id"], h["status"], h["evidence"], h["command"]) for h in found["hits"]]
    assert kinds == [
        ("procedure", migrate_id, "active", 2, MIGRATE),
        ("variant", migrate_id, "active", 1, MIGRATE_TAIL),
        ("command", 7, "success", 2, MIGRATE),  # the newest of its identical runs
        ("command", 6, "success", 1, MIGRATE_TAIL),
    ]
    assert found["hits"][2]["runs"] == 2

    text = _recall(home, "alembic", "--cwd", project).stdout.splitlines()
    assert text[0] == recall.header_for("alembic", project, None)
    assert text[1].startswith(f"- procedure {migrate_id} (active, 2 verified runs, ")
    assert text[1].endswith(f"on main): `{MIGRATE}`")
    assert text[2].startswith(f"- variant of procedure {migrate_id} (active, 1 run, ")
    assert len(text) == 5  # one page: no order to read on


def test_recall_finds_the_lesson_by_its_error_and_what_fixed_it(
    world: World, home: Home, tmp_path: Path
) -> None:
    project = _shop(world, tmp_path)
    (test_id,) = [i for i, c in world.procedures("id", "command") if c == TEST]
    found = _json(home, "no such table", "--cwd", project)
    lessons = [h for h in found["hits"] if h["kind"] == "lesson"]
    commands = [h for h in found["hits"] if h["kind"] == "command"]
    assert [(h["procedure_id"], h["status"], h["evidence"]) for h in lessons] == [
        (test_id, "active", 1)
    ]
    assert lessons[0]["fix_files"] == ["migrations/0002_carts.py"]
    assert lessons[0]["match"] == ERROR
    # The run quoted is the one that printed the error: the first, which failed.
    assert [(h["command"], h["status"], h["runs"], h["evidence"]) for h in commands] == [
        (TEST, "failure", 3, 2)
    ]
    assert (commands[0]["id"], commands[0]["exit_code"]) == (1, 1)
    text = _recall(home, "no such table", "--cwd", project).stdout
    assert f'  matched: "{ERROR}"' in text
    assert "  fixed after editing migrations/0002_carts.py" in text


def test_hits_come_newest_first_with_smart_case(world: World, home: Home, tmp_path: Path) -> None:
    project = make_repository(tmp_path / "shop")
    for index, command in enumerate(["make Build", "make build-docs", "make build"]):
        world.now += 60
        world.post(command, project=project, branch=None, event_id=f"order-{index}")
    hits = _json(home, "build", "--cwd", project)["hits"]
    assert [h["command"] for h in hits] == ["make build", "make build-docs", "make Build"]
    assert [h["command"] for h in _json(home, "Build", "--cwd", project)["hits"]] == ["make Build"]


def test_recall_keeps_to_the_project_unless_asked_for_all(
    world: World, home: Home, tmp_path: Path
) -> None:
    shop = _shop(world, tmp_path)
    other = make_repository(tmp_path / "other")
    world.post("alembic downgrade -1", project=other, branch=None)
    assert {h["project"] for h in _json(home, "alembic", "--cwd", shop)["hits"]} == {shop}
    everywhere = _json(home, "alembic", "--all-projects")
    assert everywhere["project"] is None
    assert {h["project"] for h in everywhere["hits"]} == {shop, other}
    text = _recall(home, "downgrade", "--all-projects").stdout
    assert f"project {other}" in text


def test_since_keeps_what_happened_within_the_duration(
    world: World, home: Home, tmp_path: Path
) -> None:
    project = make_repository(tmp_path / "shop")
    world.post("make deploy-old", project=project, branch=None, at=time.time() - 60 * DAY)
    world.post("make deploy-new", project=project, branch=None, at=time.time() - DAY)
    recent = _json(home, "deploy", "--cwd", project, "--since", "30d")["hits"]
    assert [h["command"] for h in recent] == ["make deploy-new"]
    assert len(_json(home, "deploy", "--cwd", project)["hits"]) == 2
    bad = _recall(home, "deploy", "--since", "a month", check=False)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert "--since a month" in bad.stderr


def test_a_search_does_not_find_its_own_invocations(
    world: World, home: Home, tmp_path: Path
) -> None:
    project = make_repository(tmp_path / "shop")
    world.post("remem recall 'flaky'", project=project, branch=None)
    world.post("pytest -k flaky", project=project, branch=None)
    hits = _json(home, "flaky", "--cwd", project)["hits"]
    assert [h["command"] for h in hits] == ["pytest -k flaky"]


def test_a_bad_regular_expression_is_one_clear_line(home: Home, tmp_path: Path) -> None:
    result = _recall(home, "migrat(", "--cwd", str(tmp_path), check=False)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("remem: Not a regular expression: 'migrat(' (missing )): ")
    assert "escape special characters with a backslash" in result.stderr


# `re` backtracks through every split of the word before the "!": 2**40 ways, for hours.
CATASTROPHIC = r"(\w+\s?)+$"
BACKTRACKED = "echo " + "a" * 40 + "!"


def test_a_pattern_that_backtracks_for_ever_in_re_answers_at_once(
    world: World, home: Home, tmp_path: Path
) -> None:
    project = make_repository(tmp_path / "shop")
    world.post(BACKTRACKED, project=project, branch=None)
    world.post("make test", project=project, branch=None)
    process = subprocess.Popen(
        [REMEM, "recall", CATASTROPHIC, "--cwd", project, "--json"],
        env=home.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: process.poll() is not None, timeout=20)
    finally:
        process.kill()
    out, err = process.communicate()
    assert (process.returncode, err) == (0, "")
    assert [hit["command"] for hit in json.loads(out)["hits"]] == ["make test"]


def test_a_backreference_or_lookaround_is_one_line_saying_so(home: Home, tmp_path: Path) -> None:
    for pattern in (r"(make)\1", "(?=make)", "(?<!x)make"):
        result = _recall(home, pattern, "--cwd", str(tmp_path), check=False)
        assert (result.returncode, result.stdout) == (1, ""), pattern
        assert result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"remem: Not a regular expression: {pattern!r} (")
        assert "backreferences and lookaround are not supported" in result.stderr


def test_a_pattern_that_is_not_text_is_one_line_saying_so(home: Home, tmp_path: Path) -> None:
    """A byte that is not UTF-8 reaches the command as a lone surrogate, which RE2 cannot read."""
    result = subprocess.run(
        [REMEM, "recall", b"make\xff", "--cwd", str(tmp_path)],
        env=home.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.count("\n") == 1, result.stderr
    assert "(a lone surrogate, not text)" in result.stderr


def test_no_match_says_so_on_one_line(world: World, home: Home, tmp_path: Path) -> None:
    project = _shop(world, tmp_path)
    result = _recall(home, "terraform", "--cwd", project)
    assert result.stdout == f"No procedure, lesson or command in {project} matches 'terraform'.\n"


def _capture_many(home: Home, project: str, commands: list[str], now: float) -> None:
    """Generic hook payloads through the real capture code, stored in one transaction (one
    hook process per event would take minutes)."""
    connection = sqlite_settings.connect(str(home.db))
    try:

        def execute(sql: str, params: dict[str, Any]) -> list[Any]:
            return connection.execute(sql, params).fetchall()

        connection.execute("BEGIN IMMEDIATE")
        for index, command in enumerate(commands):
            payload = {
                "session_id": "bulk",
                "cwd": project,
                "command": command,
                "exit_code": index % 3 and 1,
                "timestamp": now - len(commands) + index,
                "event_id": f"bulk-{index}",
            }
            kind, event = hook.capture(json.dumps(payload).encode(), "generic", now)
            assert kind == "event"
            store_event(execute, event)
        connection.execute("COMMIT")
    finally:
        connection.close()


def _database_digest(home: Home) -> str:
    """The database and its write-ahead log (readers mark the shared-memory index, not these)."""
    digest = hashlib.sha256()
    for path in (home.db, home.path / "remem.db-wal"):
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def test_ten_thousand_matching_events_page_within_the_cap_each_hit_once(
    home: Home, tmp_path: Path
) -> None:
    project = make_repository(tmp_path / "shop")
    commands = [f"python -m pytest -q tests/test_module_{i:05d}.py" for i in range(10_000)]
    _capture_many(home, project, commands, time.time())
    before = _database_digest(home)

    started = time.monotonic()
    first = _recall(home, "test_module", "--cwd", project).stdout
    elapsed_s = time.monotonic() - started
    second = _recall(home, "test_module", "--cwd", project, "--page", "2").stdout

    connection = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True)
    try:
        hits = recall.search(
            lambda sql, params: connection.execute(sql, params).fetchall(),
            recall.compile_pattern("test_module"),
            project,
        )
    finally:
        connection.close()
    header = recall.header_for("test_module", project, None)
    order = f"remem recall test_module --cwd {project} --page {{}}".format
    pages = recall.text_pages(hits, header, order)
    assert len(hits) == 10_000
    assert len(pages) > recall.NARROW_AFTER_PAGES
    for page in pages:
        assert len(page) <= recall.MAX_CHARS
        assert page.splitlines()[0] == header
    # Newest first, every command exactly once over the pages.
    shown = [line for page in pages for line in page.splitlines() if line.startswith("- ")]
    assert [line.rsplit("`", 2)[1] for line in shown] == commands[::-1]

    assert len(first) <= recall.MAX_CHARS and len(second) <= recall.MAX_CHARS
    assert first.splitlines()[1:-1] == pages[0].splitlines()[1:-1]
    assert second.splitlines()[1:-1] == pages[1].splitlines()[1:-1]
    assert first.splitlines()[-1] == (
        f"Narrow the pattern: 10000 hits fill {len(pages)} pages (or read on: remem recall "
        f"test_module --cwd {project} --page 2)"
    )
    last = _recall(home, "test_module", "--cwd", project, "--page", str(len(pages))).stdout
    assert last.splitlines()[-1] == f"(page {len(pages)} of {len(pages)}: the last page)"
    past = _recall(home, "test_module", "--cwd", project, "--page", "999", check=False)
    assert past.returncode == 1 and past.stderr.count("\n") == 1
    assert _database_digest(home) == before  # read-only: not a byte of the database changed
    assert elapsed_s < 10, elapsed_s


def test_a_few_pages_end_with_the_order_to_read_the_next(home: Home, tmp_path: Path) -> None:
    project = make_repository(tmp_path / "shop")
    commands = [f"make target-{i:04d} && make check-{'x' * 80}" for i in range(300)]
    _capture_many(home, project, commands, time.time())
    first = _recall(home, "target", "--cwd", project).stdout
    lines = first.splitlines()
    assert lines[-1] == f"Run: remem recall target --cwd {project} --page 2"
    printed = _recall(home, "target", "--cwd", project, "--json").stdout
    assert len(printed) <= recall.MAX_CHARS
    as_json = json.loads(printed)
    assert as_json["pages"] >= 2 and as_json["total"] == 300
    assert as_json["more"].endswith(f"remem recall target --cwd {project} --page 2 --json)")


def test_a_commit_message_is_never_found_nor_shown(
    world: World, home: Home, tmp_path: Path
) -> None:
    """A commit's (or a pull request's) message is elided from what recall searches and
    shows, as workflows have it; the commands around it are found as ever. `remem recall`,
    the MCP server and `remem ui` all search with recall.search."""
    project = make_repository(tmp_path / "shop")
    world.post(
        'git add -A && git commit -m "Rotate the prod hunter2 passphrase" && make deploy',
        project=project,
        branch=None,
    )
    world.post(
        'gh pr create --title "hunter2 rotation" --body "done"', project=project, branch=None
    )
    world.post("git commit -F - <<'EOF'\nhunter2 in a heredoc\nEOF", project=project, branch=None)

    found = _json(home, "hunter2", "--cwd", project)
    deploys = _json(home, "make deploy", "--cwd", project)["hits"]
    shared = recall.search(world.execute, recall.compile_pattern("hunter2|Rotate"), None)
    every = recall.search(world.execute, recall.compile_pattern("git|gh"), None)

    assert len(every) == 3  # the commands are there, on this backend
    assert found["hits"] == []
    assert shared == []
    assert [hit["command"] for hit in deploys] == ["git add -A && git commit -m … && make deploy"]


# pytest's collection error as it prints it: the module it cannot import is named far past the
# first 500 characters that a failure's error excerpt keeps.
COLLECTION_ERROR = """\
platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0
rootdir: /home/dev/shop
collected 0 items / 1 error

==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_cart.py _____________________
ImportError while importing test module '/home/dev/shop/tests/test_cart.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/usr/lib/python3.12/importlib/__init__.py:90: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_cart.py:1: in <module>
    from cart import total
E   ModuleNotFoundError: No module named 'cart'
=========================== short test summary info ============================
ERROR tests/test_cart.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
1 error in 0.05s
"""


def test_recall_finds_an_error_past_the_first_lines_of_a_failures_output(
    world: World, home: Home, tmp_path: Path
) -> None:
    assert COLLECTION_ERROR.index("ModuleNotFoundError") == 621
    project = make_repository(tmp_path / "shop")
    world.post("python -m pytest -q", 1, project=project, branch=None, output=COLLECTION_ERROR)
    world.burst()
    found = _json(home, "ModuleNotFoundError", "--cwd", project)
    commands = [h for h in found["hits"] if h["kind"] == "command"]
    assert [(h["command"], h["status"], h["match"]) for h in commands] == [
        ("python -m pytest -q", "failure", "E   ModuleNotFoundError: No module named 'cart'")
    ]


def test_recall_finds_a_known_error_never_fixed(world: World, home: Home, tmp_path: Path) -> None:
    project = make_repository(tmp_path / "shop")
    error = "error[E0308]: mismatched types\n  --> src/main.rs:4:18"
    world.post("cargo build", 101, project=project, branch=None, output=error)
    world.burst()
    (known,) = home.json("procedures", "errors")
    assert known["resolved_at"] is None  # the digest says "seen 1 time, not yet fixed"
    found = _json(home, "mismatched", "--cwd", project)
    hits = [h for h in found["hits"] if h["kind"] == "known_error"]
    assert [(h["status"], h["evidence"], h["command"], h["match"]) for h in hits] == [
        ("not fixed", 1, "cargo build", "error[E0308]: mismatched types")
    ]
    text = _recall(home, "mismatched", "--cwd", project).stdout
    assert "- known error " in text and "(not fixed, seen 1 time, " in text
    assert "  seen 1 time, not yet fixed" in text


def test_recall_finds_what_passed_instead_of_a_failing_command(
    world: World, home: Home, tmp_path: Path
) -> None:
    project = make_repository(tmp_path / "shop")
    not_found = "/bin/bash: line 1: pytest: command not found"
    world.post("pytest", 127, project=project, branch=None, output=not_found)
    world.post(".venv/bin/python -m pytest", project=project, branch=None)
    world.burst()
    found = _json(home, "python -m", "--cwd", project)
    hits = [h for h in found["hits"] if h["kind"] == "substitution"]
    assert [(h["command"], h["instead"], h["evidence"], h["match"]) for h in hits] == [
        ("pytest", ".venv/bin/python -m pytest", 1, ".venv/bin/python -m pytest")
    ]
    text = _recall(home, "python -m", "--cwd", project).stdout
    assert "- failing command (1 session failed, " in text
    assert "  passed instead: `.venv/bin/python -m pytest`" in text
