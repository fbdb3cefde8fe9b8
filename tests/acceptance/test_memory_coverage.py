"""The memory coverage evaluation (bench/coverage.py), run as `make bench` runs it, on two
sessions of one project: a Claude Code session fixes an error and finds what runs the tests
here, then a Codex session (whose failures get no advice: only the digest can tell it) hits
the same error and the same failing command again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO

PROJECT = "/home/dev/work/shop"
ERROR = "E   ModuleNotFoundError: No module named 'shop'"
NO_MODULE = f"ImportError while loading conftest.\n{ERROR}\n1 error in 0.31s"
NOT_FOUND = "/bin/bash: line 1: pytest: command not found"
VENV = ".venv/bin/python -m pytest"


def claude_session(path: Path) -> None:
    """`pytest -q` fails on a missing module, `pip install -e .` fixes it, `pytest -q` passes;
    bare `pytest` is not found, the project's own interpreter runs it."""
    calls = [
        ("pytest -q", f"Exit code 1\n{NO_MODULE}", True),
        ("pip install -e .", "Successfully installed shop-0.1", False),
        ("pytest -q", "3 passed in 0.12s", False),
        ("pytest", f"Exit code 127\n{NOT_FOUND}", True),
        (VENV, "3 passed in 0.12s", False),
    ]
    records = []
    for number, (command, output, failed) in enumerate(calls, 1):
        common = {
            "sessionId": "claude-1",
            "cwd": PROJECT,
            "gitBranch": "main",
            "timestamp": f"2026-03-01T10:00:{number:02d}Z",
        }
        use = {"type": "tool_use", "id": f"toolu_{number}", "name": "Bash"}
        use["input"] = {"command": command}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{number}", "content": output}
        result["is_error"] = failed
        records.append({**common, "type": "assistant", "message": {"content": [use]}})
        records.append(
            {
                **common,
                "type": "user",
                "message": {"content": [result]},
                "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False},
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def codex_session(path: Path) -> None:
    """A day later, `pytest -q` fails on the same missing module, and bare `pytest` again."""
    meta = {"id": "codex-2", "cwd": PROJECT, "git": {"branch": "main"}}
    records = [{"timestamp": "2026-03-02T10:00:00Z", "type": "session_meta", "payload": meta}]
    for number, (command, exit_code, output) in enumerate(
        [("pytest -q", 1, NO_MODULE), ("pytest", 127, NOT_FOUND)], 1
    ):
        call_id = f"call_{number}"
        arguments = json.dumps({"cmd": command})
        call = {"type": "function_call", "name": "exec_command", "arguments": arguments}
        end = {"type": "exec_command_end", "exit_code": exit_code, "aggregated_output": output}
        at = f"2026-03-02T10:00:{number:02d}Z"
        records.append({"timestamp": at, "type": "response_item", "payload": call})
        records.append({"timestamp": at, "type": "event_msg", "payload": end})
        call["call_id"] = end["call_id"] = call_id
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def evaluate(transcripts: Path, *args: str) -> dict[str, Any]:
    script = str(REPO / "bench" / "coverage.py")
    result = subprocess.run(
        [sys.executable, script, "--transcripts", str(transcripts), "--json", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_what_an_earlier_session_fixed_counts_as_covered_only_when_the_digest_carried_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "claude").mkdir()
    (tmp_path / "codex").mkdir()
    claude_session(tmp_path / "claude" / "fix.jsonl")
    codex_session(tmp_path / "codex" / "again.jsonl")

    shown = evaluate(tmp_path)
    first, second = shown["sessions"]
    assert (first["transcript"], second["transcript"]) == ("claude/fix.jsonl", "codex/again.jsonl")
    assert first["project"] == second["project"] == "shop"
    # Nothing was fixed or found before the first session.
    assert first["fixed_earlier"] == first["substitutes_known"] == []
    (again,) = second["fixed_earlier"]
    assert again["error"] == ERROR.strip() and again["shown_by"] == ["digest"]
    (substitute,) = second["substitutes_known"]
    assert substitute == {"workflow": "pytest", "instead": VENV, "shown_by": ["digest"]}
    totals = shown["totals"]
    assert (totals["fixed_earlier"], totals["fixed_earlier_shown"]) == (1, 1)
    assert totals["memory_coverage"] == 1.0
    assert (totals["substitutes_known"], totals["substitutes_offered"]) == (1, 1)
    # A third session would start with the error too.
    assert [e["carried"] for e in shown["projects"][0]["fixed"]] == [True]

    unseen = evaluate(tmp_path, "--without-digest")
    (again,) = unseen["sessions"][1]["fixed_earlier"]
    assert again["shown_by"] == []
    totals = unseen["totals"]
    assert (totals["fixed_earlier"], totals["fixed_earlier_shown"]) == (1, 0)
    assert totals["memory_coverage"] == 0.0
    assert (totals["substitutes_known"], totals["substitutes_offered"]) == (1, 0)
    assert [e["carried"] for e in unseen["projects"][0]["fixed"]] == [False]
