"""Whatever a tool printed, the hook, `remem import` and the worker end promptly and keep the
event. Each text here made a redaction rule or the edit reader restart its scan over and over:
the hook took from 10 s to minutes (killed at 120 s on 1 MB, nothing stored), an import 21 s a
line, the worker's one thread as long; a payload nested 600 levels lost its event. Each call is
a real process under a timeout far below what it took."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from remem.record.tree import DEEP
from tests.acceptance.test_context import make_project
from tests.acceptance.test_truthful_digest import Codex
from tests.conftest import Home, load_fixture, wait_for

# (name, output): each took the old hook tens of seconds to minutes.
ADVERSARIAL = [
    ("url userinfo", "x@y " + "a://" * 32_000),  # 128 KB: 30.9 s
    (".netrc", "machine m" + " login default" * 30_000),  # 420 KB: 293 s
    ("expect", 'send "x" expect "' + "assw" * 16_000),  # 64 KB: about 40 s
    ("tool options", " set x y; -p x;" * 8_000),  # 120 KB: about 60 s
]
BOUND_S = 20.0  # a hook here takes well under a second, a worker or an import a few seconds


def _bash(project: Path, command: str, stdout: str, number: int) -> dict[str, Any]:
    payload = load_fixture("claude-code/post_tool_use_bash_success.json")
    payload.update(session_id="s1", cwd=str(project), tool_use_id=f"toolu_{number:04d}")
    payload.update(tool_input={"command": command})
    payload["tool_response"] = {"stdout": stdout, "stderr": "", "interrupted": False}
    return payload


def _stored(home: Home, tool_use_id: str) -> list[tuple[Any, ...]]:
    return home.query(
        "SELECT kind, command, outcome, length(output_excerpt), payload FROM captured_events "
        "WHERE tool_use_id = ? ORDER BY id",
        (tool_use_id,),
    )


def _hook_in_time(home: Home, payload: dict[str, Any]) -> float:
    started = time.monotonic()
    result = home.hook(payload, "--host", "claude-code", timeout=BOUND_S)
    assert (result.returncode, result.stderr) == (0, b""), result
    return time.monotonic() - started


@pytest.mark.parametrize(("name", "output"), ADVERSARIAL, ids=[name for name, _ in ADVERSARIAL])
def test_the_hook_stores_promptly_what_made_a_rule_backtrack(
    home: Home, tmp_path: Path, name: str, output: str
) -> None:
    project = make_project(tmp_path)
    _hook_in_time(home, _bash(project, "make test", output, 1))
    ((kind, command, outcome, excerpt_chars, _payload),) = _stored(home, "toolu_0001")
    assert (kind, command, outcome) == ("command", "make test", "success")
    assert 0 < excerpt_chars < 5000  # its head and tail, cut


def test_the_hook_stores_promptly_a_megabyte_of_them_all(home: Home, tmp_path: Path) -> None:
    """A megabyte of output (over the payload cap, so cut first) that holds them all."""
    project = make_project(tmp_path)
    each = (1 << 20) // len(ADVERSARIAL)
    output = "\n".join((text * (each // len(text) + 1))[:each] for _name, text in ADVERSARIAL)
    _hook_in_time(home, _bash(project, "make test", output, 2))
    assert [row[:3] for row in _stored(home, "toolu_0002")] == [("command", "make test", "success")]


def test_a_command_writing_a_file_24000_times_stores_its_edit_promptly(
    home: Home, tmp_path: Path
) -> None:
    """`written_edit` read the whole line again for each redirection: 31 s."""
    project = make_project(tmp_path)
    command = "echo x" + " >f" * 24_000
    _hook_in_time(home, _bash(project, command, "", 3))
    kinds = [row[0] for row in _stored(home, "toolu_0003")]
    assert kinds == ["command", "edit"]
    files = home.scalar("SELECT files FROM captured_events WHERE kind = 'edit'")
    assert json.loads(files) == ["f"]


def test_a_payload_nested_600_levels_deep_is_stored_without_that_field(
    home: Home, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    payload = _bash(project, "make test", "12 passed", 4)
    payload["tool_response"]["extra"] = json.loads("[" * 600 + "]" * 600)
    _hook_in_time(home, payload)
    ((kind, command, _outcome, _chars, stored),) = _stored(home, "toolu_0004")
    assert (kind, command) == ("command", "make test")
    assert json.loads(stored)["tool_response"]["stdout"] == "12 passed" and DEEP in stored
    assert home.drops() == []


def _transcript(path: Path, project: Path) -> None:
    """A Claude Code session whose calls printed each adversarial text."""
    common = {"sessionId": path.stem, "cwd": str(project), "gitBranch": "main"}
    with open(path, "w", encoding="utf-8") as out:
        for number, (_name, output) in enumerate(ADVERSARIAL):
            use_id = f"toolu_import_{number}"
            use = {"type": "tool_use", "id": use_id, "name": "Bash"}
            use["input"] = {"command": f"make check-{number}"}
            out.write(json.dumps({**common, "type": "assistant", "message": {"content": [use]}}))
            part = {"type": "tool_result", "tool_use_id": use_id, "content": output}
            result = {"stdout": output, "stderr": "", "interrupted": False}
            record = {**common, "type": "user", "message": {"content": [part]}}
            out.write("\n" + json.dumps({**record, "toolUseResult": result}) + "\n")


def test_an_import_of_those_outputs_ends_promptly_and_keeps_every_call(
    home: Home, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    transcript = tmp_path / "session-adversarial.jsonl"
    _transcript(transcript, project)
    home.remem("import", "claude-code", str(transcript), "--json", timeout=3 * BOUND_S)
    rows = home.query("SELECT command FROM captured_events WHERE kind = 'command' ORDER BY id")
    assert rows == [(f"make check-{number}",) for number in range(len(ADVERSARIAL))]


def test_the_worker_resolves_a_codex_call_that_printed_them_promptly(
    home: Home, tmp_path: Path
) -> None:
    """A Codex call's outcome is read by the worker from the rollout, whose output it
    redacts: a megabyte of it kept the worker's one thread for minutes."""
    project = make_project(tmp_path)
    output = "x@y " + "a://" * ((1 << 20) // 4)
    Codex(home, project, tmp_path / "rollout-adversarial.jsonl", "codex-1").ran(
        "cargo test", 0, output
    )
    home.remem("worker", "--burst", timeout=3 * BOUND_S)

    def resolved() -> list[tuple[Any, ...]]:
        try:
            return home.query(
                "SELECT outcome, exit_code, length(output_excerpt) FROM captured_events "
                "WHERE command = 'cargo test' AND outcome = 'success'"
            )
        except sqlite3.OperationalError:  # the database is busy: asked again
            return []

    ((outcome, exit_code, excerpt_chars),) = wait_for(resolved, BOUND_S)
    assert (outcome, exit_code) == ("success", 0) and 0 < excerpt_chars < 5000
