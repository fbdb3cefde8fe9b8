"""The JSON contract (docs/json.md) on one home built by real hook payloads and a burst: every
`--json` output of `remem` and every MCP tool result writes times as RFC 3339 in UTC to the
second, never has `null` for a list, has integer ids, and shows one procedure alike everywhere;
docs/json.md names every field each of them emits."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from remem.procedures.steps import workflow_hash
from tests.checkpoint_repo import Copy, add_checkpoint, metadata, new_repository
from tests.conftest import REMEM, Home

DOCS = Path(__file__).resolve().parents[2] / "docs" / "json.md"
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
TEST = "python -m pytest -q tests/test_cart.py"
TEST_PYTHON3 = "python3 -m pytest -q tests/test_cart.py"
NO_PYTEST = "/usr/bin/python3: No module named pytest"
TEST_TAIL = "python -m pytest -q tests/test_cart.py 2>&1 | tail -5"
ERROR = "E   sqlalchemy.exc.OperationalError: no such table: carts"
TEAM_COMMAND = "npm run e2e"
TRANSCRIPT = (
    Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "claude" / "01.jsonl"
)


def _project(tmp: Path) -> str:
    project = tmp / "shop"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return os.path.realpath(project)


def _populate(home: Home, root: str) -> None:
    """A failure, a fix and passes of one workflow in two forms, a session start, a payload that
    is dropped: through remem-hook, then a burst; and one team procedure as a pull leaves it."""
    base = {"session_id": "s1", "cwd": root}
    events: list[dict[str, Any]] = [
        {"command": TEST, "exit_code": 1, "error": ERROR},
        {"files": [f"{root}/migrations/0002_carts.py"]},
        {"command": TEST_PYTHON3, "exit_code": 1, "error": NO_PYTEST},
        {"command": TEST, "exit_code": 0},
        {"command": TEST_TAIL, "exit_code": 0, "output": "3 passed in 0.2s"},
        {"command": TEST, "exit_code": 0},
        # Red again since: the digest entry says since when it fails on this branch.
        {"command": TEST, "exit_code": 1, "error": "E   assert 2 == 3"},
        # An error nothing fixed yet: a known error whose resolved_at is null.
        {"command": "make build", "exit_code": 2, "error": "error: linker `cc` not found"},
    ]
    for number, event in enumerate(events):
        result = home.hook({**base, **event, "event_id": f"e{number}"}, "--host", "generic")
        assert result.returncode == 0, result.stderr
    start = {"session_id": "s2", "cwd": root, "hook_event_name": "SessionStart"}
    assert home.hook(start, "--host", "claude-code").returncode == 0
    assert home.hook(b"not json", "--host", "generic").returncode == 0
    home.remem("worker", "--burst")
    connection = sqlite3.connect(home.db, isolation_level=None)
    try:
        (project_id,) = connection.execute(
            "SELECT id FROM projects WHERE root = ?", (root,)
        ).fetchone()
        connection.execute(
            "INSERT INTO team_procedures (project_id, team_procedure_id, scope, branch, "
            "directory, workflow, workflow_hash, command, status, confidence, verified_runs, "
            "distinct_sessions, machines, branches, files, files_more, first_verified_at, "
            "last_verified_at, body, pulled_at) VALUES (?, 41, 'branch', 'main', '.', ?, ?, ?, "
            "'active', 0.9, 5, 4, 3, '[\"main\"]', '[]', 0, 1.8e9, 1.8e9, 'Run it.', 1.8e9)",
            (project_id, TEAM_COMMAND, workflow_hash(TEAM_COMMAND), TEAM_COMMAND),
        )
    finally:
        connection.close()


def _mcp(home: Home, root: str, procedure_id: int, team_id: int) -> dict[str, Any]:
    """Every MCP tool's result, through the official client over stdio."""
    params = StdioServerParameters(command=REMEM, args=["mcp"], env=home.env, cwd=root)
    calls = {
        "mcp procedures": ("procedures", {"cwd": root}),
        "mcp procedure": ("procedure", {"id": procedure_id}),
        "mcp procedure (team)": ("procedure", {"id": team_id, "source": "team"}),
        "mcp recall": ("recall", {"pattern": "carts", "cwd": root}),
        "mcp lessons": ("lessons", {"cwd": root}),
    }
    answers: dict[str, Any] = {}

    async def main() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            with anyio.fail_after(60):
                await session.initialize()
                for name, (tool, arguments) in calls.items():
                    result = await session.call_tool(tool, arguments)
                    assert not result.is_error, result.content
                    answers[name] = result.structured_content

    anyio.run(main)
    return answers


@pytest.fixture(scope="module")
def outputs(template_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Every `--json` output and every MCP tool result, by the heading docs/json.md gives it."""
    tmp = tmp_path_factory.mktemp("contract")
    shutil.copytree(template_home, tmp / "home")
    (tmp / "user-home").mkdir()
    home = Home(tmp / "home")
    root = _project(tmp)
    _populate(home, root)

    def run(*args: str) -> Any:
        return json.loads(home.remem(*args).stdout)

    checkpoints = new_repository(tmp / "checkpoints")
    add_checkpoint(checkpoints, [Copy("abcdefabcdef", 0, TRANSCRIPT.read_bytes(), metadata("s"))])

    found: dict[str, Any] = {"remem procedures list --json": run("procedures", "list", "--json")}
    (procedure,) = found["remem procedures list --json"]
    procedure_id = procedure["id"]
    team = run("procedures", "team", "--project", root, "--json")
    team_id = team["procedures"][0]["id"]
    found.update(
        {
            "remem procedures show --json": run("procedures", "show", str(procedure_id), "--json"),
            "remem procedures errors --json": run("procedures", "errors", "--json"),
            "remem procedures team --json": team,
            "remem procedures team ID --json": run("procedures", "team", str(team_id), "--json"),
            "remem context --json": run("context", "--cwd", root, "--json"),
            "remem status --json": run("status", "--json"),
            "remem report --json": run("report", "--since", "3650d", "--json"),
            "remem recall --json": run("recall", "carts", "--cwd", root, "--json"),
            "remem tasks --json": run("tasks", "--json"),
            "remem drops --json": run("drops", "--json"),
            "remem doctor --json": json.loads(home.remem("doctor", "--json", check=False).stdout),
            "remem init --json": run("init", "--json"),
            "remem hooks install --json": run(
                "hooks", "install", "claude-code", "--dry-run", "--json"
            ),
            "remem hooks uninstall --json": run(
                "hooks", "uninstall", "claude-code", "--dry-run", "--json"
            ),
            "remem hooks show --json": run("hooks", "show", "claude-code", "--json"),
            "remem spool ingest --json": run("spool", "ingest", "--json"),
            "remem worker --burst --json": run("worker", "--burst", "--json"),
            "remem import --json": run(
                "import", "claude-code", str(TRANSCRIPT), "--dry-run", "--json"
            ),
            "remem import entire --json": run(
                "import", "entire", str(checkpoints), "--dry-run", "--json"
            ),
            "remem procedures export --json": run(
                "procedures",
                "export",
                str(procedure_id),
                "--format",
                "runbook",
                "--json",
                "--out",
                str(tmp / "drafts"),
            ),
            "remem forget --json": run("forget", "--event", "1", "--dry-run", "--json"),
        }
    )
    found.update(_mcp(home, root, procedure_id, team_id))
    yield found


def _walk(data: Any, maps: frozenset[str] = frozenset(), path: str = "") -> Iterator[tuple]:
    """(path, key, value) of every field, however deep; the keys inside a field named in
    `maps` are data (statuses, file names), not fields."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield f"{path}.{key}", key, value
            if key not in maps:
                yield from _walk(value, maps, f"{path}.{key}")
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from _walk(item, maps, f"{path}[{index}]")


def _documented() -> dict[str, dict[str, str]]:
    """Per output (a `## ` heading of docs/json.md), each field its tables name, with its type,
    and those of the sections it includes."""
    sections: dict[str, dict[str, str]] = {}
    includes: dict[str, list[str]] = {}
    names: list[str] = []
    for line in DOCS.read_text().splitlines():
        if line.startswith("## "):
            names = [heading.strip() for heading in line[3:].split(" · ")]
            for name in names:
                sections[name], includes[name] = {}, []
        elif names and line.startswith("Includes the fields of "):
            for name in names:
                includes[name] += re.findall(r"`([^`]+)`", line)
        elif names and line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            for name in names:
                sections[name].update(dict.fromkeys(re.findall(r"`([^`]+)`", cells[0]), cells[1]))

    def fields(name: str) -> dict[str, str]:
        found = {}
        for included in includes[name]:
            found.update(fields(included))
        return {**found, **sections[name]}

    return {name: fields(name) for name in sections}


def _maps(types: dict[str, str]) -> frozenset[str]:
    return frozenset(name for name, kind in types.items() if kind == "map")


def test_every_time_is_rfc3339_in_utc_to_the_second(outputs: dict[str, Any]) -> None:
    times = [
        (name, path, value)
        for name, data in outputs.items()
        for path, key, value in _walk(data)
        if key == "at" or key.endswith("_at")
    ]
    assert len({name for name, _path, _value in times}) >= 10  # the contract is exercised
    wrong = [
        (name, path, value)
        for name, path, value in times
        if value is not None and not (isinstance(value, str) and TIME.fullmatch(value))
    ]
    assert wrong == []


def test_lists_are_never_null_and_ids_are_integers(outputs: dict[str, Any]) -> None:
    documented = _documented()
    for name, data in outputs.items():
        types = documented[name]
        for path, key, value in _walk(data, _maps(types)):
            if types.get(key, "").startswith("list"):
                assert isinstance(value, list), (name, path, value)
            if key == "id" or key.endswith("_id"):
                assert value is None or type(value) is int, (name, path, value)
            if key.endswith("_ids"):
                assert all(type(item) is int for item in value), (name, path, value)


def test_docs_name_every_field_of_every_output(outputs: dict[str, Any]) -> None:
    documented = _documented()
    assert set(outputs) <= set(documented), set(outputs) - set(documented)
    missing = {
        name: sorted(
            {key for _path, key, _value in _walk(data, _maps(documented[name]))}
            - set(documented[name])
        )
        for name, data in outputs.items()
    }
    assert {name: keys for name, keys in missing.items() if keys} == {}


def test_a_digest_entry_says_since_when_it_fails_on_this_branch(outputs: dict[str, Any]) -> None:
    (entry,) = [e for e in outputs["remem context --json"]["procedures"] if e["source"] == "local"]
    assert (entry["failing_runs"], entry["failing_error"]) == (1, "E   assert 2 == 3")
    assert TIME.fullmatch(entry["failing_since_at"])
    assert outputs["remem context --json"]["verified_earlier"] == []


def test_one_procedure_reads_the_same_everywhere(outputs: dict[str, Any]) -> None:
    (listed,) = outputs["remem procedures list --json"]
    shown = outputs["remem procedures show --json"]
    mcp = outputs["mcp procedure"]
    for name in listed:
        assert shown[name] == listed[name] == mcp[name], name
    assert listed["last_verified_at"] is not None and listed["variants"] != []
    assert shown["evidence"] == mcp["evidence"]
    assert shown["lessons"] == mcp["lessons"] != []
    entries = {
        name: [entry for entry in outputs[name]["procedures"] if entry["source"] == "local"]
        for name in ("remem context --json", "mcp procedures")
    }
    (entry,) = entries["remem context --json"]
    assert entries["mcp procedures"] == [entry]
    common = set(entry) & set(listed)
    assert {"id", "command", "last_verified_at", "branches", "files", "confidence"} <= common
    assert {name: entry[name] for name in common} == {name: listed[name] for name in common}
    (team,) = outputs["remem procedures team --json"]["procedures"]
    assert outputs["remem procedures team ID --json"] == team
    mcp_team = outputs["mcp procedure (team)"]
    assert {name: mcp_team[name] for name in team} == team
    assert (
        outputs["remem context --json"]["known_errors"] == outputs["mcp procedures"]["known_errors"]
    )


def test_a_substitution_reads_the_same_everywhere(outputs: dict[str, Any]) -> None:
    (listed,) = [item for item in outputs["remem procedures errors --json"] if "instead" in item]
    assert (listed["kind"], listed["workflow"], listed["instead"]) == (
        "substitution",
        "python3 -m pytest -q <test file>",  # the workflow: runs on any test file
        TEST,
    )
    assert listed["instead_procedure_id"] == outputs["remem procedures show --json"]["id"]
    for name in (
        "remem procedures show --json",
        "remem context --json",
        "mcp procedures",
        "mcp lessons",
    ):
        assert outputs[name]["substitutions"] == [listed], name


def test_known_errors_read_alike_fixed_or_not(outputs: dict[str, Any]) -> None:
    errors = outputs["remem procedures errors --json"]
    (fixed,) = [error for error in errors if "no such table" in error["error"]]
    (unfixed,) = [error for error in errors if error["workflow"] == "make build"]
    assert fixed["workflow"] == "python -m pytest -q <test file>"  # the workflow's family
    assert fixed["resolved_at"] is not None and fixed["fix_files"] == ["migrations/0002_carts.py"]
    assert (unfixed["resolved_at"], unfixed["resolved_by_event_id"]) == (None, None)
    assert unfixed["times_seen"] == 1 and unfixed["fix_commands"] == []
    own = [error for error in errors if error["workflow"] == fixed["workflow"]]
    assert len(own) == 2 and fixed in own  # its fixed error, and the red run since
    assert outputs["remem procedures show --json"]["known_errors"] == own
    assert fixed in outputs["mcp lessons"]["known_errors"]
