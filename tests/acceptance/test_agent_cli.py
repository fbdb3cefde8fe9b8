"""`remem recall`, `remem procedures export` and the MCP registration as the user meets them:
real processes, the working directory as the project, one-line errors."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from remem.agent.mcp import mcp_instructions
from remem.db import migrate
from remem.db.engine import make_engine
from tests.conftest import REMEM, Home

TEST = "python -m pytest -q tests/test_cart.py"


def _project(tmp_path: Path, name: str = "shop") -> str:
    project = tmp_path / name
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return os.path.realpath(project)


def _verify(home: Home, project: str, command: str = TEST) -> None:
    for number in range(2):
        payload = {"session_id": "s1", "cwd": project, "command": command, "exit_code": 0}
        result = home.hook({**payload, "event_id": f"{command}-{number}"}, "--host", "generic")
        assert result.returncode == 0, result.stderr
    home.remem("worker", "--burst")


def _run(home: Home, cwd: str, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [REMEM, *args], cwd=cwd, env=env or home.env, capture_output=True, text=True, timeout=60
    )


def _one_line(result: Any, *words: str) -> None:
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("remem: ")
    for word in words:
        assert word in result.stderr


def test_recall_searches_the_project_of_the_working_directory(home: Home, tmp_path: Path) -> None:
    shop = _project(tmp_path)
    other = _project(tmp_path, "other")
    _verify(home, shop)
    _verify(home, other, "python -m pytest -q tests/test_other.py")
    os.makedirs(f"{shop}/src/cart")
    result = _run(home, f"{shop}/src/cart", "recall", "pytest")
    assert result.returncode == 0, result.stderr
    assert f" in {shop}, newest first" in result.stdout.splitlines()[0]
    assert TEST in result.stdout and "test_other" not in result.stdout


def test_a_missing_home_is_one_line_naming_init(home: Home, tmp_path: Path) -> None:
    env = {**home.env, "REMEM_HOME": str(tmp_path / "typo")}
    _one_line(_run(home, str(tmp_path), "recall", "x", env=env), "remem init")
    _one_line(
        _run(home, str(tmp_path), "procedures", "export", "1", "--format", "runbook", env=env),
        "remem init",
    )
    assert not (tmp_path / "typo").exists()


def test_a_schema_behind_is_one_line_naming_the_upgrade(home: Home, tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{home.db}")
    try:
        migrate.downgrade(engine, "0004")
    finally:
        engine.dispose()
    _one_line(_run(home, str(tmp_path), "recall", "x"), "remem db upgrade")


def test_export_of_a_project_not_on_this_machine_asks_for_out(home: Home, tmp_path: Path) -> None:
    shop = _project(tmp_path)
    _verify(home, shop)
    shutil.rmtree(shop)
    (procedure_id,) = [p["id"] for p in home.procedures()]
    args = ("procedures", "export", str(procedure_id), "--format", "agents-md")
    _one_line(_run(home, str(tmp_path), *args), "not on this machine", "--out")
    out = tmp_path / "drafts"
    written = _run(home, str(tmp_path), *args, "--out", str(out))
    assert written.returncode == 0, written.stderr
    (draft,) = out.iterdir()
    assert draft.name.startswith("agents-md-") and draft.read_text().startswith(f"## {TEST}")


@pytest.mark.parametrize("custom_home", [True, False])
def test_mcp_instructions_register_the_server_with_each_agent(
    tmp_path: Path, custom_home: bool
) -> None:
    default = os.path.abspath(os.path.expanduser("~/.remem"))
    home = str(tmp_path / "home") if custom_home else default
    executable = str(tmp_path / "bin" / "remem")
    text = mcp_instructions(home, executable)
    blocks = text.split("\n\n")
    env = {"REMEM_HOME": home} if custom_home else {}

    claude = shlex.split(blocks[1].splitlines()[1])
    options = [f"--env=REMEM_HOME={home}"] if custom_home else []
    assert claude[:7] == ["claude", "mcp", "add", "--transport", "stdio", "--scope", "user"]
    assert [f"{a}={b}" for a, b in zip(claude[7:-4:2], claude[8:-4:2], strict=True)] == options
    assert claude[-4:] == ["remem", "--", executable, "mcp"]

    codex_lines = blocks[2].splitlines()
    assert "~/.codex/config.toml" in codex_lines[0]
    codex = tomllib.loads("\n".join(codex_lines[1:]))
    assert codex["mcp_servers"]["remem"] == {
        "command": executable,
        "args": ["mcp"],
        **({"env": env} if env else {}),
    }

    cursor_lines = blocks[3].split("\n", 1)
    assert "~/.cursor/mcp.json" in cursor_lines[0]
    cursor = json.loads(cursor_lines[1])
    assert cursor == {
        "mcpServers": {
            "remem": {"command": executable, "args": ["mcp"], **({"env": env} if env else {})}
        }
    }


def test_the_registered_command_is_this_remem() -> None:
    text = mcp_instructions()
    assert f"-- {shlex.quote(REMEM)} mcp" in text


TOO_LARGE = str(2**64)


@pytest.mark.parametrize(
    "args",
    [
        ("procedures", "show", TOO_LARGE),
        ("procedures", "archive", TOO_LARGE),
        ("procedures", "export", TOO_LARGE),
        ("procedures", "team", TOO_LARGE),
        ("tasks", "retry", TOO_LARGE),
        ("forget", "--event", TOO_LARGE, "--yes"),
        ("forget", "--procedure", "0", "--yes"),
    ],
)
def test_an_id_no_database_holds_is_a_usage_error(home: Home, args: tuple[str, ...]) -> None:
    """An id past the database's integer range (or below 1) is refused as the command reads
    its arguments, not met as an overflow in the driver."""
    result = home.cli(*args, check=False)
    assert result.exit_code == 2, result.output
    assert "is not in the range 1<=x<=9223372036854775807" in result.output
