"""A resumed session counts its runs once. `claude --resume` starts a new session file, under a
new session id, that holds the messages of the session it resumed before its own; Codex's
rollout of a resumed session repeats its calls likewise. The same tool call id then reads as a
second run in a second session: remem keys a run by its tool call id, whatever session holds it,
in `remem import` and in the real hook."""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_import_cli import TRANSCRIPTS, import_json, with_env
from tests.conftest import Home

# (host, fixture, the field each line names its session by)
RESUMABLE = (("claude", "01.jsonl", "sessionId"), ("codex", "01.jsonl", "id"))


def resumed_copy(original: Path, copy: Path, field: str) -> None:
    """The resumed session's file: every line of the original, under a new session id."""
    old = json.loads(next(line for line in original.open() if f'"{field}"' in line))
    old_id = old.get(field) or old["payload"][field]
    new_id = str(uuid.uuid4())
    copy.write_text(original.read_text(encoding="utf-8").replace(old_id, new_id), "utf-8")


def event_rows(home: Home) -> list[tuple[Any, ...]]:
    with sqlite3.connect(home.db) as connection:
        return connection.execute(
            "SELECT e.tool_use_id, e.kind, s.session_key FROM captured_events e "
            "JOIN sessions s ON s.id = e.session_id ORDER BY e.id"
        ).fetchall()


@pytest.mark.parametrize(("kind", "name", "field"), RESUMABLE)
def test_a_session_file_and_its_resumed_copy_store_each_run_once(
    home: Home, tmp_path: Path, kind: str, name: str, field: str
) -> None:
    host = "claude-code" if kind == "claude" else "codex"
    original = tmp_path / "original.jsonl"
    shutil.copyfile(TRANSCRIPTS / kind / name, original)
    resumed = tmp_path / "resumed.jsonl"
    resumed_copy(original, resumed, field)
    with_env(home)

    first = import_json(home, host, str(original))
    rows = event_rows(home)
    dry = import_json(home, host, str(resumed), "--dry-run")
    second = import_json(home, host, str(resumed))

    assert first["events_new"] == len(rows) > 3
    assert dry["events_new"] == second["events_new"] == 0
    assert event_rows(home) == rows
    calls = [(tool_use_id, kind) for tool_use_id, kind, _session in rows]
    assert len(calls) == len(set(calls))


@pytest.mark.parametrize(("kind", "name", "field"), RESUMABLE)
def test_a_session_and_its_resumed_copy_imported_together_store_each_run_once(
    home: Home, tmp_path: Path, kind: str, name: str, field: str
) -> None:
    # One import, one transaction: the copy's calls meet the runs stored moments before.
    host = "claude-code" if kind == "claude" else "codex"
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copyfile(TRANSCRIPTS / kind / name, folder / "a-original.jsonl")
    resumed_copy(folder / "a-original.jsonl", folder / "b-resumed.jsonl", field)
    with_env(home)

    both = import_json(home, host, str(folder))

    rows = event_rows(home)
    assert both["events_new"] == both["events_known"] == len(rows) > 3
    calls = [(tool_use_id, kind) for tool_use_id, kind, _session in rows]
    assert len(calls) == len(set(calls))


def test_the_hook_stores_a_tool_call_once_whatever_session_sends_it(
    home: Home, tmp_path: Path
) -> None:
    payload = {
        "session_id": "first",
        "transcript_path": str(tmp_path / "first.jsonl"),
        "cwd": str(tmp_path),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": "toolu_01ResumedCopyOfTheSameCall",
        "tool_input": {"command": "make test"},
        "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
    }
    home.hook(json.dumps(payload))
    home.hook(json.dumps({**payload, "session_id": "second"}))
    home.hook(json.dumps({**payload, "tool_use_id": "toolu_01AnotherCall"}))

    assert event_rows(home) == [
        ("toolu_01ResumedCopyOfTheSameCall", "command", "first"),
        ("toolu_01AnotherCall", "command", "first"),
    ]
