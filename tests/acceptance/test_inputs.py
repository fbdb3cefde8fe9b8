"""A procedure knows when what it runs changed since it was last verified, as real processes:
real repositories (`git init`), Claude Code payloads through `remem-hook`, `remem worker
--burst`, then what the SessionStart digest, `remem context`, `remem procedures` and their JSON
say before and after the Makefile, package.json, justfile or script changed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp.client import ClientSession
from sqlalchemy import Engine

from remem.record.inputs import READ_AT_REBUILD, READ_AT_VERIFICATION
from tests.acceptance.test_advice import Claude, context_of, learn_substitute
from tests.acceptance.test_mcp import _data, _talk
from tests.acceptance.test_team import Machine, clone, machines
from tests.acceptance.test_truthful_digest import Agent
from tests.conftest import REMEM, Home, hook_imports, load_fixture

MAKEFILE = """\
PYTEST ?= pytest
FLAGS = -q

test:
\t$(PYTEST) $(FLAGS) tests/

lint:
\truff check .
"""
PACKAGE = {"name": "web", "scripts": {"build": "vite build", "lint": "eslint ."}}
JUSTFILE = """\
set dotenv-load

fmt:
    cargo fmt

check:
    cargo clippy
"""


def _repository(tmp_path: Path, name: str = "shop") -> Path:
    project = tmp_path / name
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    (project / "Makefile").write_text(MAKEFILE)
    (project / "package.json").write_text(json.dumps(PACKAGE, indent=2))
    (project / "justfile").write_text(JUSTFILE)
    (project / "scripts").mkdir()
    (project / "scripts" / "check.sh").write_text("#!/bin/sh\necho ok\n")
    return project


COMMANDS = ("make test", "make lint", "npm run build", "npm run lint", "just fmt",
            "./scripts/check.sh")  # fmt: skip


def _verify(home: Home, agent: Agent, commands: tuple[str, ...], session: str) -> None:
    for _ in range(2):
        for command in commands:
            agent.ran(command, session)
    home.remem("worker", "--burst")


def _start(home: Home, project: Path, session: str) -> str:
    payload = load_fixture("claude-code/session_start.json")
    payload.update(cwd=str(project), session_id=session)
    result = home.hook(payload)
    assert (result.returncode, result.stderr) == (0, b""), result
    return result.stdout.decode()


def _by_command(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["command"]: item for item in items}


def _line(digest: str, command: str) -> str:
    return next(line for line in digest.splitlines() if line.startswith(f"- `{command}`"))


def _touch_later(path: Path) -> None:
    """A file's modification time moved on, as an editor's save moves it."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return _repository(tmp_path)


__all__ = ["machines"]  # the two machines of a team (tests/acceptance/test_team.py)


def test_changed_inputs_are_said_everywhere_and_a_new_passing_run_clears_them(
    home: Home, shop: Path
) -> None:
    agent = Agent(home, shop)
    _verify(home, agent, COMMANDS, "s1")
    before = _start(home, shop, "start-1")
    for command in COMMANDS:
        assert f"- `{command}`" in before
    assert "changed since last verified" not in before
    listed = _by_command(home.procedures())
    assert {c: listed[c]["changed_inputs"] for c in COMMANDS} == {c: [] for c in COMMANDS}
    inputs = {c: [(i["path"], i["task"]) for i in listed[c]["inputs"]] for c in COMMANDS}
    assert inputs == {
        "make test": [("Makefile", "test")],
        "make lint": [("Makefile", "lint")],
        "npm run build": [("package.json", "build")],
        "npm run lint": [("package.json", "lint")],
        "just fmt": [("justfile", "fmt")],
        "./scripts/check.sh": [("scripts/check.sh", None)],
    }
    assert {i["read_by"] for c in COMMANDS for i in listed[c]["inputs"]} == {READ_AT_VERIFICATION}

    # The Makefile's test target changes (its variable FLAGS), lint does not; package.json's
    # build script changes, lint does not; the justfile gains a recipe, fmt stays.
    (shop / "Makefile").write_text(MAKEFILE.replace("FLAGS = -q", "FLAGS = -x"))
    scripts = {**PACKAGE["scripts"], "build": "vite build --mode production"}  # type: ignore[dict-item]
    (shop / "package.json").write_text(json.dumps({**PACKAGE, "scripts": scripts}, indent=2))
    (shop / "justfile").write_text(JUSTFILE + "\nbench:\n    cargo bench\n")
    for name in ("Makefile", "package.json", "justfile"):
        _touch_later(shop / name)

    after = _start(home, shop, "start-2")
    assert _line(after, "make test").endswith(" — changed since last verified: Makefile (test)")
    assert _line(after, "npm run build").endswith(
        " — changed since last verified: package.json (build)"
    )
    for unchanged in ("make lint", "npm run lint", "just fmt", "./scripts/check.sh"):
        assert "changed since" not in _line(after, unchanged)
        assert _line(after, unchanged) == _line(before, unchanged)
    assert after == home.remem("context", "--cwd", str(shop)).stdout

    shown = _by_command(home.json("context", "--cwd", str(shop))["procedures"])
    listed = _by_command(home.procedures())
    expected = {c: [] for c in COMMANDS} | {
        "make test": ["Makefile"],
        "npm run build": ["package.json"],
    }
    assert {c: shown[c]["changed_inputs"] for c in COMMANDS} == expected
    assert {c: listed[c]["changed_inputs"] for c in COMMANDS} == expected
    detail = home.json("procedures", "show", str(listed["make test"]["id"]))
    assert detail["changed_inputs"] == ["Makefile"]
    assert detail["changed_tasks"] == ["Makefile (test)"]

    # Verified again: the new fingerprints are read, and nothing is said any more.
    _verify(home, agent, ("make test", "npm run build"), "s2")
    again = _start(home, shop, "start-3")
    assert "changed since last verified" not in again
    listed = _by_command(home.procedures())
    assert {c: listed[c]["changed_inputs"] for c in COMMANDS} == {c: [] for c in COMMANDS}


def test_a_deleted_script_is_not_offered_as_verified(home: Home, shop: Path) -> None:
    agent = Agent(home, shop)
    _verify(home, agent, ("./scripts/check.sh", "make lint"), "s1")
    assert "- `./scripts/check.sh`" in _start(home, shop, "start-1")
    (shop / "scripts" / "check.sh").unlink()

    digest = _start(home, shop, "start-2")
    offered, _, gone = digest.partition("Not offered as verified")
    assert "./scripts/check.sh" not in offered
    assert "- `make lint`" in offered
    assert "- `./scripts/check.sh`  missing: scripts/check.sh" in gone
    data = home.json("context", "--cwd", str(shop))
    assert [p["command"] for p in data["procedures"]] == ["make lint"]
    (missing,) = data["inputs_gone"]
    assert (missing["changed_inputs"], missing["missing_inputs"]) == (
        ["scripts/check.sh"],
        ["scripts/check.sh"],
    )
    listed = _by_command(home.procedures())
    assert listed["./scripts/check.sh"]["changed_inputs"] == ["scripts/check.sh"]
    assert listed["make lint"]["changed_inputs"] == []


def test_a_large_file_and_a_file_outside_the_project_are_never_read(
    home: Home, tmp_path: Path
) -> None:
    shop = _repository(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "tool.sh").write_text("#!/bin/sh\necho outside\n")
    (shop / "scripts" / "linked.sh").symlink_to(outside / "tool.sh")
    (shop / "scripts" / "big.sh").write_text("#" * (2 * 1024 * 1024) + "\necho big\n")
    commands = ("sh ../elsewhere/tool.sh", "./scripts/linked.sh", "sh scripts/big.sh")
    agent = Agent(home, shop)
    _verify(home, agent, commands, "s1")
    listed = _by_command(home.procedures())
    assert {c: listed[c]["inputs"] for c in commands} == {c: [] for c in commands}
    assert home.scalar("SELECT count(*) FROM procedures WHERE inputs != '[]'") == 0


def test_rebuild_reads_inputs_for_existing_procedures(home: Home, shop: Path) -> None:
    agent = Agent(home, shop)
    _verify(home, agent, ("make test",), "s1")
    # As a database from before inputs were kept holds it.
    connection = sqlite3.connect(home.db)
    with connection:
        connection.execute("UPDATE procedures SET inputs = '[]', inputs_read_at = NULL")
    connection.close()
    assert home.procedures()[0]["inputs"] == []
    home.remem("procedures", "rebuild")
    (found,) = home.procedures()
    assert [(i["path"], i["task"], i["read_by"]) for i in found["inputs"]] == [
        ("Makefile", "test", READ_AT_REBUILD)
    ]
    (shop / "Makefile").write_text(MAKEFILE.replace("pytest", "python -m pytest"))
    _touch_later(shop / "Makefile")
    assert home.procedures()[0]["changed_inputs"] == ["Makefile"]


def _listed(home: Home, shop: Path) -> str:
    """`remem procedures list` on a terminal wide enough for its lines."""
    return subprocess.run(
        [REMEM, "procedures", "list", "--project", str(shop)],
        env={**home.env, "COLUMNS": "400"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_procedures_list_and_show_say_it_in_text(home: Home, shop: Path) -> None:
    agent = Agent(home, shop)
    _verify(home, agent, ("make test", "./scripts/check.sh"), "s1")
    listed = _listed(home, shop)
    assert "make test" in listed and "./scripts/check.sh" in listed
    assert "changed since" not in listed and "missing" not in listed
    (shop / "Makefile").write_text(MAKEFILE.replace("FLAGS = -q", "FLAGS = -vv"))
    _touch_later(shop / "Makefile")
    (shop / "scripts" / "check.sh").unlink()
    listed = _listed(home, shop)
    assert "make test — changed since last verified: Makefile (test)" in listed
    assert "./scripts/check.sh — missing: scripts/check.sh" in listed
    test = _by_command(home.procedures())["make test"]["id"]
    shown = home.remem("procedures", "show", str(test)).stdout
    assert "What it runs — changed since last verified: Makefile (test)\n" in shown


def test_fingerprints_travel_with_the_teams_procedures(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    """Each machine runs `make test` once in its own clone: the team's procedure carries the
    fingerprint of the Makefile's test target, and each checkout compares it with its own."""
    alice, bob, _team = machines
    shop_a = clone(tmp_path / "alice" / "src" / "shop", "git@github.com:acme/shop.git")
    shop_b = clone(tmp_path / "bob" / "work" / "shop", "https://github.com/acme/shop")
    for root in (shop_a, shop_b):
        (Path(root) / "Makefile").write_text(MAKEFILE)
    alice.run(shop_a, "make test", "alice-1")
    bob.run(shop_b, "make test", "bob-1")
    for machine in (alice, bob, alice, bob, alice):  # ship; ship; promote; pull; pull
        assert machine.burst().returncode == 0
    for machine, root in ((alice, shop_a), (bob, shop_b)):
        (pulled,) = machine.pulled(root)
        assert [(i["path"], i["task"]) for i in pulled["inputs"]] == [("Makefile", "test")]
        assert pulled["changed_inputs"] == []
        assert "changed since" not in machine.session_start(root, f"{machine.name}-start")

    (Path(shop_b) / "Makefile").write_text(MAKEFILE.replace("FLAGS = -q", "FLAGS = -x"))
    _touch_later(Path(shop_b) / "Makefile")
    digest = bob.session_start(shop_b, "bob-2")
    assert _line(digest, "make test").endswith(" — changed since last verified: Makefile (test)")
    assert "verified by the team" in _line(digest, "make test")
    assert bob.pulled(shop_b)[0]["changed_inputs"] == ["Makefile"]
    assert _by_command(bob.json("context", "--cwd", shop_b)["procedures"])["make test"][
        "changed_inputs"
    ] == ["Makefile"]
    # Alice's checkout has its own Makefile, unchanged.
    assert "changed since" not in alice.session_start(shop_a, "alice-2")
    assert alice.pulled(shop_a)[0]["changed_inputs"] == []


def test_advice_naming_a_procedure_says_what_it_runs_changed(home: Home, shop: Path) -> None:
    (shop / "assets").mkdir()
    (shop / "assets" / "build.js").write_text("require('esbuild').buildSync({})\n")
    agent = Claude(home, shop)
    error = 'Exit code 1\n✘ [ERROR] Could not resolve "js/app.js"'
    learn_substitute(agent, "node assets/build.js", error, f"cd {shop}/assets && node build.js")
    use = " — use `node build.js` in assets/ (verified, 2 runs)"
    assert context_of(agent.failed("node assets/build.js", "now-1", error)).endswith(use)

    (shop / "assets" / "build.js").write_text("require('esbuild').buildSync({minify: true})\n")
    _touch_later(shop / "assets" / "build.js")
    changed = (
        " — use `node build.js` in assets/ (verified, 2 runs"
        " — changed since last verified: assets/build.js)"
    )
    assert context_of(agent.failed("node assets/build.js", "now-2", error)).endswith(changed)
    digest = _start(home, shop, "start")
    assert changed.removeprefix(" — ") in digest
    (found,) = home.json("context", "--cwd", str(shop))["substitutions"]
    assert found["instead_changed_inputs"] == ["assets/build.js"]


def test_mcp_tools_say_what_changed(home: Home, shop: Path, tmp_path: Path) -> None:
    agent = Agent(home, shop)
    _verify(home, agent, ("make test", "make lint"), "s1")
    (shop / "Makefile").write_text(MAKEFILE.replace("FLAGS = -q", "FLAGS = -x"))
    _touch_later(shop / "Makefile")
    test = _by_command(home.procedures())["make test"]["id"]
    answers: dict[str, dict[str, Any]] = {}

    async def body(session: ClientSession) -> None:
        answers["procedures"] = _data(await session.call_tool("procedures", {"cwd": str(shop)}))
        answers["procedure"] = _data(await session.call_tool("procedure", {"id": test}))

    _talk(home, str(shop), tmp_path / "stderr.log", body)
    shown = _by_command(answers["procedures"]["procedures"])
    assert (shown["make test"]["changed_inputs"], shown["make lint"]["changed_inputs"]) == (
        ["Makefile"],
        [],
    )
    assert answers["procedure"]["changed_tasks"] == ["Makefile (test)"]


def test_session_start_compares_inputs_with_the_stdlib_alone(home: Home, shop: Path) -> None:
    """The SessionStart hook that finds a changed Makefile and a gone script imports nothing
    heavy: no grammar, no SQLAlchemy, no hashlib, no typing."""
    _verify(home, Agent(home, shop), ("make test", "./scripts/check.sh"), "s1")
    (shop / "Makefile").write_text(MAKEFILE.replace("FLAGS = -q", "FLAGS = -x"))
    _touch_later(shop / "Makefile")
    (shop / "scripts" / "check.sh").unlink()
    payload = load_fixture("claude-code/session_start.json")
    payload.update(cwd=str(shop), session_id="imports")
    printed, code, modules = hook_imports(home, payload)
    assert code == 0
    assert "— changed since last verified: Makefile (test)" in "\n".join(printed)
    forbidden = {"typing", "dataclasses", "inspect", "sqlalchemy", "tree_sitter", "hashlib"}
    assert forbidden.isdisjoint(modules)
