"""The OpenCode export reader: each finished bash call is a generic payload with its exit code,
each finished edit names its file, and whatever else the export holds is counted or passed by.
The shape is `opencode export`'s (info, then messages of info and parts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from remem.capture.hosts import build_event
from remem.transcripts.common import ReadStats
from remem.transcripts.opencode import read_opencode

NOW = 1_800_000_000.0


def part(call_id: str, tool: str, status: str, **state: Any) -> dict[str, Any]:
    times = {"start": 1_795_166_400_000, "end": 1_795_166_401_500}
    return {
        "id": f"prt_{call_id}",
        "type": "tool",
        "callID": call_id,
        "tool": tool,
        "state": {"status": status, "time": times, **state},
    }


def export(tmp_path: Path, parts: list[dict[str, Any]], **info: Any) -> Path:
    message = {"info": {"id": "msg_1", "role": "assistant", "time": {"created": 1}}, "parts": parts}
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"info": {"id": "ses_1", **info}, "messages": [message]}, indent=2))
    return path


def test_finished_calls_become_generic_payloads_with_their_exit_codes(tmp_path: Path) -> None:
    path = export(
        tmp_path,
        [
            part(
                "c1",
                "bash",
                "completed",
                input={"command": "make test", "workdir": "api"},
                output="ok",
                metadata={"exit": 0},
            ),
            part("c2", "bash", "error", input={"command": "make lint"}, error="aborted"),
            part("c3", "bash", "running", input={"command": "make watch"}),
            part("c4", "write", "completed", input={"filePath": "/w/app/a.go", "content": "x"}),
            part("c5", "grep", "completed", input={"pattern": "x"}, output=""),
            {"id": "prt_t", "type": "text", "text": "done"},
        ],
        directory="/w/app",
    )
    stats = ReadStats()

    calls = list(read_opencode(str(path), stats))

    assert [call.payload.get("command") for call in calls] == ["make test", "make lint", None]
    first, second, edit = calls
    assert first.payload["cwd"] == "/w/app/api" and first.exit_code == 0
    assert first.at == 1_795_166_401.5 and first.session_cwd == "/w/app"
    assert second.exit_code is None and second.payload["output"] == "aborted"
    assert edit.payload["files"] == ["/w/app/a.go"] and edit.payload["cwd"] == "/w/app"
    assert (stats.commands, stats.edits, stats.unpaired) == (2, 1, 1)
    events = [
        build_event(call.payload, call.host, NOW, lambda cwd: (cwd, None, cwd, "."))
        for call in calls
    ]
    assert [(e.kind, e.outcome, e.exit_code) for e in events] == [
        ("command", "success", 0),
        ("command", "unknown", None),
        ("edit", None, None),
    ]
    assert events[0].idempotency_key == "generic:ses_1:event:c1"


def test_what_is_no_export_is_counted_and_yields_nothing(tmp_path: Path) -> None:
    for text in ('{"info": {}}', "[1, 2]", '{"messages": [', "\x00\xff"):
        path = tmp_path / "export.json"
        path.write_text(text, encoding="latin-1")
        stats = ReadStats()
        assert list(read_opencode(str(path), stats)) == [] and stats.malformed == 1, text
    stats = ReadStats()
    assert list(read_opencode(str(tmp_path), stats)) == [] and stats.refused == "a directory"
