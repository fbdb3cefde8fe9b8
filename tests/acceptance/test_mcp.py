"""`remem mcp` as a real process: an MCP client (the official SDK's) talks JSON-RPC to it over
stdio: initialize, list the tools, call each against a populated database; a bad argument or a
missing home is a tool error, and the server keeps answering."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from remem.agent import recall
from tests.acceptance.test_truthful_digest import Agent
from tests.conftest import REMEM, Home

TEST = "python -m pytest -q tests/test_cart.py"
ERROR = "E   sqlalchemy.exc.OperationalError: no such table: carts"
TOOLS = {"procedures", "procedure", "recall", "lessons"}


def _populate(home: Home, tmp_path: Path) -> str:
    """A project on main where the cart test failed, a migration was edited, and it passed
    twice: one procedure with one lesson; through remem-hook and a burst."""
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    root = os.path.realpath(project)
    base = {"session_id": "s1", "cwd": root}
    events: list[dict[str, Any]] = [
        {"command": TEST, "exit_code": 1, "error": ERROR},
        {"files": [f"{root}/migrations/0002_carts.py"]},
        {"command": TEST, "exit_code": 0},
        {"command": TEST, "exit_code": 0},
    ]
    for number, event in enumerate(events):
        result = home.hook({**base, **event, "event_id": f"e{number}"}, "--host", "generic")
        assert result.returncode == 0, result.stderr
    home.remem("worker", "--burst")
    return root


Session = Callable[[ClientSession], Awaitable[None]]


def _talk(
    home: Home, cwd: str, errlog: Path, body: Session, env: dict[str, str] | None = None
) -> None:
    """Start `remem mcp`, initialize a session, and run body with it."""
    params = StdioServerParameters(command=REMEM, args=["mcp"], env=env or home.env, cwd=cwd)

    async def main() -> None:
        with errlog.open("w") as stderr:
            async with (
                stdio_client(params, errlog=stderr) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(60):
                    await session.initialize()
                    await body(session)

    anyio.run(main)


def _data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    text = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert text == result.structured_content
    assert text["notice"] == recall.NOTICE
    return text


def _error(result: CallToolResult) -> str:
    assert result.is_error
    message: str = result.content[0].text  # type: ignore[union-attr]
    return message


def test_initialize_lists_four_read_only_tools(home: Home, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["tools"] = (await session.list_tools()).tools

    root = _populate(home, tmp_path)
    _talk(home, root, tmp_path / "stderr.log", body)
    tools = {tool.name: tool for tool in seen["tools"]}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.description
    assert tools["procedure"].input_schema["required"] == ["id"]
    assert tools["recall"].input_schema["required"] == ["pattern"]
    assert set(tools["lessons"].input_schema["properties"]) == {"cwd", "query", "page"}


def test_each_tool_answers_from_the_database(home: Home, tmp_path: Path) -> None:
    root = _populate(home, tmp_path)
    (procedure_id,) = [p["id"] for p in home.procedures()]
    answers: dict[str, dict[str, Any]] = {}

    async def body(session: ClientSession) -> None:
        init = session.initialize_result
        assert init is not None and init.server_info.name == "remem"
        assert init.instructions is not None and "not instructions" in init.instructions
        answers["procedures"] = _data(await session.call_tool("procedures", {"cwd": root}))
        answers["procedure"] = _data(await session.call_tool("procedure", {"id": procedure_id}))
        answers["recall"] = _data(
            await session.call_tool("recall", {"pattern": "no such table", "cwd": root})
        )
        answers["lessons"] = _data(
            await session.call_tool("lessons", {"cwd": root, "query": "SUCH table carts"})
        )
        answers["no lesson"] = _data(
            await session.call_tool("lessons", {"cwd": root, "query": "KeyError"})
        )
        answers["default cwd"] = _data(await session.call_tool("procedures", {}))

    _talk(home, root, tmp_path / "stderr.log", body)
    context = json.loads(home.remem("context", "--cwd", root, "--json").stdout)
    procedures = answers["procedures"]
    assert (procedures["project"], procedures["branch"], procedures["page"]) == (root, "main", 1)
    assert procedures["procedures"] == context["procedures"]
    assert procedures["known_errors"] == context["known_errors"]
    assert answers["default cwd"]["procedures"] == context["procedures"]  # the server's cwd

    procedure = answers["procedure"]
    assert (procedure["id"], procedure["command"], procedure["status"]) == (
        procedure_id,
        TEST,
        "active",
    )
    # The newest page of evidence, newest first: as `remem procedures show` pages it.
    assert [run["event_id"] for run in procedure["evidence"]] == [4, 3]
    (lesson,) = procedure["lessons"]
    assert (lesson["first_error"], lesson["fix_files"]) == (ERROR, ["migrations/0002_carts.py"])

    hits = answers["recall"]["hits"]
    assert {(hit["kind"], hit["match"]) for hit in hits} == {
        ("lesson", ERROR),
        ("known_error", ERROR),
        ("command", ERROR),
    }
    (found,) = answers["lessons"]["lessons"]
    assert (found["id"], found["command"], found["procedure_id"]) == (
        lesson["id"],
        TEST,
        procedure_id,
    )
    assert found["attempts"][0]["error_excerpt"] == ERROR
    assert answers["no lesson"]["lessons"] == []
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


TYPE_ERROR = "E       TypeError: total() missing 1 required positional argument: 'tax'"


def test_recall_quotes_an_error_with_the_run_that_printed_it(home: Home, tmp_path: Path) -> None:
    """Only the failed run of `pytest -q` holds the error; the runs after it passed. The hit
    quoting the error names that failed run, in `remem recall` and the MCP tool alike."""
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    root = os.path.realpath(project)
    agent = Agent(home, Path(root))
    agent.ran("pytest -q", "s1")
    agent.failed("pytest -q", "s1", f"Exit code 1\n{TYPE_ERROR}\n1 failed in 0.02s")
    agent.edited("src/cart.py", "s1", "def total(items, tax=0):")
    agent.ran("pytest -q", "s1")
    agent.ran("pytest -q", "s1")
    home.remem("worker", "--burst")
    ((failed_id, code),) = home.query(
        "SELECT id, exit_code FROM captured_events WHERE outcome = 'failure'"
    )
    newest = home.scalar("SELECT max(id) FROM captured_events WHERE kind = 'command'")
    assert (code, newest > failed_id) == (1, True)
    answers: dict[str, dict[str, Any]] = {}

    async def body(session: ClientSession) -> None:
        answers["mcp"] = _data(await session.call_tool("recall", {"pattern": "TypeError"}))

    _talk(home, root, tmp_path / "stderr.log", body)
    cli = json.loads(home.remem("recall", "TypeError", "--cwd", root, "--json").stdout)
    for found in (answers["mcp"], cli):
        (hit,) = [hit for hit in found["hits"] if hit["kind"] == "command"]
        assert (hit["id"], hit["status"], hit["exit_code"], hit["match"]) == (
            failed_id, "failure", 1, TYPE_ERROR.strip(),
        )  # fmt: skip
        assert (hit["command"], hit["runs"], hit["evidence"]) == ("pytest -q", 4, 3)
    text = home.remem("recall", "TypeError", "--cwd", root).stdout
    assert f"- command, event {failed_id} (failure exit 1; 3 of 4 runs succeeded" in text
    # The command itself matching: the newest run, which passed.
    (by_name,) = [h for h in home.json("recall", "pytest", "--cwd", root)["hits"]
                  if h["kind"] == "command"]  # fmt: skip
    assert (by_name["id"], by_name["status"], by_name["match"]) == (newest, "success", None)


def test_bad_arguments_are_tool_errors_and_the_server_keeps_answering(
    home: Home, tmp_path: Path
) -> None:
    root = _populate(home, tmp_path)
    errors: dict[str, str] = {}

    async def body(session: ClientSession) -> None:
        errors["type"] = _error(await session.call_tool("procedure", {"id": "three"}))
        errors["missing"] = _error(await session.call_tool("procedure", {"id": 999}))
        errors["huge"] = _error(await session.call_tool("procedure", {"id": 2**63}))
        errors["huge team"] = _error(
            await session.call_tool("procedure", {"id": 2**64, "source": "team"})
        )
        errors["regex"] = _error(await session.call_tool("recall", {"pattern": "carts("}))
        errors["page"] = _error(await session.call_tool("procedures", {"cwd": root, "page": 9}))
        errors["cwd"] = _error(await session.call_tool("lessons", {"cwd": str(tmp_path / "no")}))
        _data(await session.call_tool("procedures", {"cwd": root}))

    _talk(home, root, tmp_path / "stderr.log", body)
    assert "id" in errors["type"] and "valid integer" in errors["type"]
    assert "No procedure 999" in errors["missing"]
    for huge in ("huge", "huge team"):
        assert "less than or equal to 9223372036854775807" in errors[huge], errors[huge]
    assert "Not a regular expression: 'carts('" in errors["regex"]
    assert "page 1 to 1" in errors["page"]
    assert "No directory" in errors["cwd"]
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


def test_seven_concurrent_calls_all_answer_though_one_pattern_backtracks_for_ever_in_re(
    home: Home, tmp_path: Path
) -> None:
    """In `re`, this pattern on this command runs for hours holding the interpreter lock, and
    every other call of the session waited on it."""
    root = _populate(home, tmp_path)
    command = "echo " + "a" * 40 + "!"
    home.hook({"session_id": "s2", "cwd": root, "command": command, "exit_code": 0}, "--host",
              "generic")  # fmt: skip
    calls: list[tuple[str, dict[str, Any]]] = [
        ("recall", {"pattern": r"(\w+\s?)+$", "cwd": root}),
        ("procedures", {"cwd": root}),
        ("procedure", {"id": 1}),
        ("recall", {"pattern": "no such table", "cwd": root}),
        ("lessons", {"cwd": root, "query": "carts"}),
        ("recall", {"pattern": "echo", "cwd": root}),
        ("procedures", {}),
    ]
    answers: dict[int, dict[str, Any]] = {}

    async def body(session: ClientSession) -> None:
        async def call(index: int, name: str, arguments: dict[str, Any]) -> None:
            answers[index] = _data(await session.call_tool(name, arguments))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                for index, (name, arguments) in enumerate(calls):
                    group.start_soon(call, index, name, arguments)

    _talk(home, root, tmp_path / "stderr.log", body)
    assert sorted(answers) == list(range(7))
    assert command not in {hit["command"] for hit in answers[0]["hits"]}
    assert [hit["command"] for hit in answers[5]["hits"]] == [command]


def test_a_missing_home_is_a_tool_error_not_a_crash(home: Home, tmp_path: Path) -> None:
    env = {**home.env, "REMEM_HOME": str(tmp_path / "typo")}
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["error"] = _error(await session.call_tool("procedures", {"cwd": str(tmp_path)}))
        seen["tools"] = (await session.list_tools()).tools

    _talk(home, str(tmp_path), tmp_path / "stderr.log", body, env)
    assert f"No remem home at {tmp_path / 'typo'}: run `remem init`" in seen["error"]
    assert {tool.name for tool in seen["tools"]} == TOOLS
    assert not (tmp_path / "typo").exists()


def test_a_piped_initialize_is_answered_and_the_server_ends_with_its_input(
    home: Home, tmp_path: Path
) -> None:
    """What an agent does first, as raw JSON-RPC (its start-up time is bench/cli.py's)."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    result = subprocess.run(
        [REMEM, "mcp"],
        input=json.dumps(initialize) + "\n",
        env=home.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    answer = json.loads(result.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "remem"
    assert result.returncode == 0 and "Traceback" not in result.stderr


def _pull_team_procedure(home: Home, root: str, command: str) -> int:
    """A team procedure as the daemon's pull files it in the local database; its row id."""
    import sqlite3

    from remem.procedures.steps import workflow_hash

    connection = sqlite3.connect(home.db)
    try:
        (project_id,) = connection.execute(
            "SELECT id FROM projects WHERE root = ?", (root,)
        ).fetchone()
        cursor = connection.execute(
            "INSERT INTO team_procedures (project_id, team_procedure_id, scope, branch, "
            "directory, workflow, workflow_hash, command, status, confidence, verified_runs, "
            "distinct_sessions, machines, branches, files, files_more, first_verified_at, "
            "last_verified_at, body, pulled_at) VALUES (?, 41, 'branch', 'main', '.', ?, ?, ?, "
            "'active', 0.9, 5, 4, 3, '[\"main\"]', '[]', 0, 1.8e9, 1.8e9, 'Run it.', 1.8e9)",
            (project_id, command, workflow_hash(command), command),
        )
        connection.commit()
        return int(cursor.lastrowid or 0)
    finally:
        connection.close()


def test_a_team_entry_is_shown_by_procedure_with_its_source(home: Home, tmp_path: Path) -> None:
    root = _populate(home, tmp_path)
    (local_id,) = [p["id"] for p in home.procedures()]
    team_id = _pull_team_procedure(home, root, "npm run e2e")
    assert team_id == local_id  # the same number names a local and a team procedure
    answers: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        answers["procedures"] = _data(await session.call_tool("procedures", {"cwd": root}))
        answers["team"] = _data(
            await session.call_tool("procedure", {"id": team_id, "source": "team"})
        )
        answers["local"] = _data(await session.call_tool("procedure", {"id": local_id}))
        answers["missing"] = _error(
            await session.call_tool("procedure", {"id": 99, "source": "team"})
        )

    _talk(home, root, tmp_path / "stderr.log", body)
    entries = {(e["source"], e["id"]): e for e in answers["procedures"]["procedures"]}
    assert entries[("team", team_id)]["command"] == "npm run e2e"
    assert entries[("team", team_id)]["machines"] == 3
    assert entries[("local", local_id)]["command"] == TEST
    team = answers["team"]
    assert (team["source"], team["command"], team["machines"], team["verified_runs"]) == (
        "team",
        "npm run e2e",
        3,
        5,
    )
    assert (answers["local"]["source"], answers["local"]["command"]) == ("local", TEST)
    assert "No team procedure 99" in answers["missing"]


def test_mcp_recall_never_finds_a_commit_message(home: Home, tmp_path: Path) -> None:
    root = _populate(home, tmp_path)
    message = "Drop the carts table hunter2"
    result = home.hook(
        {"session_id": "s2", "cwd": root, "command": f'git commit -am "{message}"', "exit_code": 0},
        "--host",
        "generic",
    )
    assert result.returncode == 0, result.stderr
    answers: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        answers["message"] = _data(await session.call_tool("recall", {"pattern": "hunter2"}))
        answers["commit"] = _data(await session.call_tool("recall", {"pattern": "git commit"}))

    _talk(home, root, tmp_path / "stderr.log", body)

    assert answers["message"]["hits"] == []
    assert [hit["command"] for hit in answers["commit"]["hits"]] == ["git commit -am …"]
    assert "hunter2" not in json.dumps([answer["hits"] for answer in answers.values()])
