"""The transcript readers on real sessions: every call they yield is the payload the live hook
would have sent, and the counts they report agree with an independent reading of the raw JSON."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.capture.hosts import build_event, detect_host
from remem.record.lines import MAX_LINE_BYTES
from remem.transcripts import ReadStats, TranscriptCall, read_claude, read_codex
from tests.conftest import REPO

NOW = 1_790_000_000.0
IN_REPO = REPO / "tests" / "fixtures" / "transcripts"
SHARED = REPO.parent / "shared" / "fixtures" / "transcripts"
CLAUDE_FILES = ["01.jsonl", "02.jsonl", "03.jsonl", "spotter-fum.jsonl"]
# The copies' SHA-256, taken when they were copied from ../shared: checked whether or not the
# shared originals sit beside the repository (a fresh clone has only the copies).
COPIED = {
    "PROVENANCE.md": "71e9ad01ec066853aa83ff2341b83f6a5898b1e49f879a8a38eb0c92f9f64486",
    "claude/01.jsonl": "70ca651be5d42379c11e7b457b0498cd2c1dd29d459f147e28f0d6deaa05dce2",
    "claude/02.jsonl": "41d3dd5e30d21c58d1d5c3512835c71bbec89bf18a1e708ab054b655d4cd0f41",
    "claude/03.jsonl": "952d5baf992c1a0f80352ceffc0a98ad74e44ba1830cc063422bcae3da1ea479",
    "claude/spotter-fum.jsonl": "1d923022ceceb62510b443358d0d7caa93bd668ef778500908aac990c7d25bc9",
    "codex/01.jsonl": "a97e75729381d6d3e43b5286ca3b82e2388a17b03ea4a51ca4f9be072aac59be",
    "codex/02.jsonl": "e680a3ae1be0f5c243c73b577e3c13b7bc2e641f248144d830905b8ff782187b",
}
EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}


def locate(cwd: str) -> tuple[str, str | None, str, str]:
    """identity.locate outside any repository: the directory is its own project, no branch."""
    return cwd, None, cwd, "."


def transcript(relative: str) -> Path:
    path = IN_REPO / relative
    assert path.is_file(), f"transcript fixture {path} is missing: copy it from {SHARED}"
    return path


def raw_records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)


def claude_tool_uses(path: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    """id -> (tool name, input) of every main-thread tool_use, read straight from the JSON."""
    uses = {}
    for record in raw_records(path):
        if record.get("type") == "assistant":
            for part in record["message"]["content"]:
                if part.get("type") == "tool_use":
                    uses[part["id"]] = (part["name"], part["input"])
    return uses


def claude_results(path: Path) -> dict[str, tuple[bool, Any, Any]]:
    """tool_use_id -> (is_error, the record's toolUseResult, the result's content)."""
    results = {}
    for record in raw_records(path):
        content = record.get("message", {}).get("content") if record.get("type") == "user" else None
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "tool_result":
                results[part["tool_use_id"]] = (
                    part.get("is_error") is True,
                    record.get("toolUseResult"),
                    part.get("content"),
                )
    return results


def expected_claude_outcome(is_error: bool, tool_use_result: Any, content: Any = None) -> str:
    """PROVENANCE.md's judgement of a Bash result; a `<tool_use_error>` is the harness saying
    the command never ran (a sibling call failed first), which is no failure of it."""
    if is_error and isinstance(content, str) and content.startswith("<tool_use_error>"):
        return "interrupted"
    if is_error:
        return "failure"
    if isinstance(tool_use_result, dict) and tool_use_result.get("interrupted") is True:
        return "interrupted"
    if isinstance(tool_use_result, dict) and tool_use_result.get("backgroundTaskId"):
        return "backgrounded"
    return "success"


def read_all(reader: Any, path: Path | str) -> tuple[list[TranscriptCall], ReadStats]:
    stats = ReadStats()
    return list(reader(str(path), stats)), stats


def write_lines(path: Path, lines: list[Any], tail: str = "") -> Path:
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(text + tail, encoding="utf-8")
    return path


@pytest.mark.parametrize("relative", sorted(COPIED))
def test_the_repository_copy_is_byte_for_byte_the_shared_original(relative: str) -> None:
    copy = (IN_REPO / relative).read_bytes()
    assert hashlib.sha256(copy).hexdigest() == COPIED[relative]
    if (SHARED / relative).is_file():  # beside a checkout of the shared material: compare too
        assert copy == (SHARED / relative).read_bytes()


@pytest.mark.parametrize("name", CLAUDE_FILES)
def test_claude_calls_match_an_independent_count(name: str) -> None:
    path = transcript(f"claude/{name}")
    uses, results = claude_tool_uses(path), claude_results(path)
    bash = {i for i, (tool, _) in uses.items() if tool == "Bash" and i in results}
    edits = {i for i, (tool, _) in uses.items() if tool in EDIT_TOOLS and i in results}
    edits = {i for i in edits if not results[i][0]}

    calls, stats = read_all(read_claude, path)

    by_tool = {call.payload["tool_use_id"]: call.payload["tool_name"] for call in calls}
    assert {i for i, tool in by_tool.items() if tool == "Bash"} == bash
    assert {i for i, tool in by_tool.items() if tool in EDIT_TOOLS} == edits
    assert (stats.commands, stats.edits, stats.unpaired, stats.malformed) == (
        len(bash),
        len(edits),
        0,
        0,
    )
    assert stats.lines == sum(1 for _ in raw_records(path))


def test_spotter_fum_has_74_commands_split_by_is_error() -> None:
    path = transcript("claude/spotter-fum.jsonl")
    results = claude_results(path)

    calls, stats = read_all(read_claude, path)

    commands = [call for call in calls if call.payload["tool_name"] == "Bash"]
    failed = {
        c.payload["tool_use_id"] for c in commands if c.payload["hook_event_name"] != "PostToolUse"
    }
    assert stats.commands == len(commands) == 74
    assert failed == {
        c.payload["tool_use_id"] for c in commands if results[c.payload["tool_use_id"]][0]
    }
    assert len(failed) == 11
    assert {c.branch for c in calls} == {"spotter-fum"}
    assert any(c.payload["cwd"].endswith("/spotter-fum/assets") for c in commands)


@pytest.mark.parametrize("name", CLAUDE_FILES)
def test_every_claude_payload_becomes_the_event_the_live_hook_gives(name: str) -> None:
    path = transcript(f"claude/{name}")
    results = claude_results(path)

    for call in read_claude(str(path)):
        payload = call.payload
        assert call.host == detect_host(payload) == "claude-code"
        assert payload["transcript_path"] == os.path.abspath(path)
        assert call.at is not None and call.exit_code is None
        event = build_event(payload, call.host, NOW, locate)
        if payload["tool_name"] == "Bash":
            assert event.kind == "command"
            assert event.outcome == expected_claude_outcome(*results[payload["tool_use_id"]])
        else:
            assert event.kind == "edit" and event.files


def test_claude_failure_keeps_the_error_text_and_its_exit_code() -> None:
    path = transcript("claude/03.jsonl")

    failures = [c for c in read_claude(str(path)) if "error" in c.payload]

    assert len(failures) == 1
    assert failures[0].payload["error"].startswith("Exit code 1\nOn branch master")
    assert failures[0].payload["is_interrupt"] is False
    assert build_event(failures[0].payload, "claude-code", NOW, locate).exit_code == 1


@pytest.mark.parametrize("name", CLAUDE_FILES)
def test_claude_commands_survive_byte_for_byte(name: str) -> None:
    path = transcript(f"claude/{name}")
    uses = claude_tool_uses(path)

    calls = [c for c in read_claude(str(path)) if c.payload["tool_name"] == "Bash"]

    heredocs = [c for c in calls if "<<'EOF'\n" in c.payload["tool_input"]["command"]]
    assert heredocs, "every fixture session commits with a heredoc message"
    for call in calls:
        assert call.payload["tool_input"] == uses[call.payload["tool_use_id"]][1]


def codex_raw(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    calls, ends = {}, {}
    for record in raw_records(path):
        payload = record["payload"]
        if payload.get("type") == "function_call":
            calls[payload["call_id"]] = json.loads(payload["arguments"])
        if payload.get("type") == "exec_command_end":
            ends[payload["call_id"]] = payload
    return calls, ends


def test_codex_rollout_pairs_calls_with_their_exec_command_end() -> None:
    path = transcript("codex/01.jsonl")
    raw_calls, ends = codex_raw(path)

    calls, stats = read_all(read_codex, path)

    assert [c.payload["tool_use_id"] for c in calls] == [i for i in ends if i in raw_calls]
    assert (stats.commands, stats.unpaired, stats.malformed, stats.unknown_records) == (6, 3, 0, 0)
    assert len(set(raw_calls) - set(ends)) == 3
    for call in calls:
        end, arguments = ends[call.payload["tool_use_id"]], raw_calls[call.payload["tool_use_id"]]
        assert call.exit_code == end["exit_code"]
        assert call.payload["tool_input"] == {"command": arguments["cmd"]}
        assert call.payload["cwd"] == arguments["workdir"]
        assert call.payload["turn_id"] == end["turn_id"]
        assert call.payload["tool_response"] == end["aggregated_output"]
        assert call.payload["session_id"] == "019e0489-58a3-7d92-9124-21c2e1150f92"
        assert call.branch == "qvac-integration"
    assert sorted(c.exit_code or 0 for c in calls) == [0, 0, 0, 0, 0, 1]


def test_every_codex_payload_becomes_an_unknown_outcome_like_the_live_hook() -> None:
    path = transcript("codex/01.jsonl")

    for call in read_codex(str(path)):
        assert call.host == detect_host(call.payload) == "codex"
        event = build_event(call.payload, call.host, NOW, locate)
        assert (event.kind, event.outcome, event.exit_code) == ("command", "unknown", None)


CLAUDE_SESSION = {"sessionId": "s-1", "cwd": "/w/shop", "gitBranch": "main"}


def claude_use(use_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    content = [{"type": "tool_use", "id": use_id, "name": name, "input": tool_input}]
    return {
        "type": "assistant",
        "timestamp": "2026-01-02T03:04:05.000Z",
        "message": {"role": "assistant", "content": content},
        **CLAUDE_SESSION,
    }


def claude_result(
    use_id: str, content: Any, is_error: bool, tool_use_result: Any
) -> dict[str, Any]:
    part = {"type": "tool_result", "tool_use_id": use_id, "content": content, "is_error": is_error}
    return {
        "type": "user",
        "timestamp": "2026-01-02T03:04:09.500Z",
        "message": {"role": "user", "content": [part]},
        "toolUseResult": tool_use_result,
        **CLAUDE_SESSION,
    }


def test_claude_reader_skips_and_counts_broken_lines(tmp_path: Path) -> None:
    ok = {"stdout": "ok", "stderr": "", "interrupted": False, "isImage": False}
    path = write_lines(
        tmp_path / "session.jsonl",
        [
            claude_use("toolu_1", "Bash", {"command": "make test"}),
            "this is not json",
            "[1, 2, 3]",
            {"type": "progress", "data": {"type": "bash_progress"}},
            claude_result("toolu_1", "ok", False, ok),
            claude_use("toolu_2", "Bash", {"command": "make lint"}),
        ],
        tail='{"type": "user", "message": {"content": [{"type": "tool_res',
    )

    calls, stats = read_all(read_claude, path)

    assert [c.payload["tool_use_id"] for c in calls] == ["toolu_1"]
    assert calls[0].payload["tool_response"] == ok
    assert calls[0].at == 1767323049.5
    assert (stats.lines, stats.malformed, stats.unknown_records) == (7, 3, 1)
    assert (stats.commands, stats.unpaired) == (1, 1)


def test_claude_result_shapes_become_hook_shapes(tmp_path: Path) -> None:
    background = {"stdout": "", "stderr": "", "interrupted": False, "backgroundTaskId": "b1"}
    interrupt = "Exit code 137\n[Request interrupted by user for tool use]"
    path = write_lines(
        tmp_path / "session.jsonl",
        [
            claude_use("toolu_1", "Bash", {"command": "npm run dev", "run_in_background": True}),
            claude_result("toolu_1", "started", False, background),
            claude_use("toolu_2", "Bash", {"command": "make slow"}),
            claude_result("toolu_2", interrupt, True, f"Error: {interrupt}"),
            claude_use("toolu_3", "Bash", {"command": "ls"}),
            claude_result("toolu_3", [{"type": "text", "text": "a.py"}], False, "a.py"),
            claude_use("toolu_4", "Edit", {"file_path": "/w/shop/a.py", "old_string": "x"}),
            claude_result("toolu_4", "String to replace not found", True, "Error"),
            claude_use("toolu_5", "Read", {"file_path": "/w/shop/a.py"}),
            claude_result("toolu_5", "print(1)", False, {"type": "text"}),
        ],
    )

    calls, stats = read_all(read_claude, path)

    outcomes = [build_event(c.payload, c.host, NOW, locate).outcome for c in calls]
    assert outcomes == ["backgrounded", "interrupted", "success"]
    assert calls[1].payload["is_interrupt"] is True
    assert calls[2].payload["tool_response"] == {
        "stdout": "a.py",
        "stderr": "",
        "interrupted": False,
    }
    assert (stats.commands, stats.edits, stats.unpaired, stats.unknown_records) == (3, 0, 0, 0)


CODEX_META = {
    "timestamp": "2026-11-20T09:12:44.000Z",
    "type": "session_meta",
    "payload": {"id": "sess-1", "cwd": "/home/dev/shop", "git": {"branch": "main"}},
}


def codex_item(payload: dict[str, Any], kind: str = "response_item") -> dict[str, Any]:
    return {"timestamp": "2026-11-20T09:13:02.118Z", "type": kind, "payload": payload}


def codex_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return codex_item(
        {
            "type": "function_call",
            "name": name,
            "arguments": json.dumps(arguments),
            "call_id": call_id,
        }
    )


def codex_end(call_id: str, exit_code: int, output: str) -> dict[str, Any]:
    end = {"type": "exec_command_end", "call_id": call_id, "exit_code": exit_code}
    return codex_item({**end, "aggregated_output": output}, "event_msg")


def test_codex_argv_heredoc_survives_byte_for_byte(tmp_path: Path) -> None:
    heredoc = "cat > notes.txt <<'EOF'\n  two spaces, a tab\there\n$HOME stays literal\nEOF\n"
    path = write_lines(
        tmp_path / "rollout.jsonl",
        [
            CODEX_META,
            codex_call("call_1", "shell", {"command": ["bash", "-lc", heredoc], "workdir": "web"}),
            codex_end("call_1", 0, ""),
            codex_call("call_2", "shell", {"command": ["ls", "-la", "my dir"]}),
            codex_end("call_2", 2, "ls: my dir: No such file"),
        ],
    )

    calls, _ = read_all(read_codex, path)

    assert calls[0].payload["tool_input"]["command"] == heredoc
    assert calls[0].payload["cwd"] == "/home/dev/shop/web"
    assert calls[1].payload["tool_input"]["command"] == "ls -la 'my dir'"
    assert build_event(calls[0].payload, "codex", NOW, locate).command == heredoc


def test_codex_reader_skips_and_counts_broken_lines(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "rollout.jsonl",
        [
            CODEX_META,
            "{not json",
            '"a string"',
            {"timestamp": "2026-11-20T09:13:00.000Z", "type": "compacted", "payload": {}},
            codex_call("call_1", "exec_command", {"cmd": "cargo test"}),
            codex_end("call_1", 101, "error[E0308]"),
        ],
        tail='{"timestamp": "2026-11-20T09:14:00.000Z", "type": "event_msg", "payl',
    )

    calls, stats = read_all(read_codex, path)

    assert [(c.payload["tool_use_id"], c.exit_code) for c in calls] == [("call_1", 101)]
    assert calls[0].payload["turn_id"] == "call_1"  # the rollout named no turn
    assert (stats.lines, stats.malformed, stats.unknown_records, stats.commands) == (7, 3, 1, 1)


def test_codex_exit_code_falls_back_to_the_function_call_output(tmp_path: Path) -> None:
    shell_output = json.dumps({"output": "ok\n", "metadata": {"exit_code": 0}})
    unified_output = (
        "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 3\nOutput:\nno\n"
    )
    running = "Chunk ID: 2\nWall time: 1.0 seconds\nProcess running with session ID 7\nOutput:\n"
    path = write_lines(
        tmp_path / "rollout.jsonl",
        [
            CODEX_META,
            codex_call("call_1", "shell", {"command": ["bash", "-lc", "true"]}),
            codex_item(
                {"type": "function_call_output", "call_id": "call_1", "output": shell_output}
            ),
            codex_call("call_2", "exec_command", {"cmd": "false"}),
            codex_item(
                {"type": "function_call_output", "call_id": "call_2", "output": unified_output}
            ),
            codex_call("call_3", "exec_command", {"cmd": "sleep 60"}),
            codex_item({"type": "function_call_output", "call_id": "call_3", "output": running}),
        ],
    )

    calls, stats = read_all(read_codex, path)

    assert [(c.payload["tool_use_id"], c.exit_code) for c in calls] == [
        ("call_1", 0),
        ("call_2", 3),
    ]
    assert [c.payload["tool_response"] for c in calls] == ["ok\n", "no\n"]
    assert stats.unpaired == 1


def test_codex_apply_patch_becomes_an_edit_unless_it_failed(tmp_path: Path) -> None:
    patch = "*** Begin Patch\n*** Update File: src/cart.py\n@@\n-a\n+b\n*** End Patch\n"
    custom = {"type": "custom_tool_call", "name": "apply_patch", "input": patch}
    path = write_lines(
        tmp_path / "rollout.jsonl",
        [
            CODEX_META,
            codex_item({**custom, "call_id": "call_1"}),
            codex_item(
                {"type": "patch_apply_end", "call_id": "call_1", "success": True}, "event_msg"
            ),
            codex_item({**custom, "call_id": "call_2"}),
            codex_item(
                {"type": "patch_apply_end", "call_id": "call_2", "success": False}, "event_msg"
            ),
            codex_call("call_3", "apply_patch", {"input": patch}),
            codex_item({"type": "function_call_output", "call_id": "call_3", "output": "Success."}),
        ],
    )

    calls, stats = read_all(read_codex, path)

    assert [c.payload["tool_use_id"] for c in calls] == ["call_1", "call_3"]
    for call in calls:
        assert call.payload["tool_name"] == "apply_patch"
        assert call.payload["tool_input"] == {"input": patch}
        event = build_event(call.payload, "codex", NOW, locate)
        assert (event.kind, event.files) == ("edit", ["src/cart.py"])
    assert (stats.edits, stats.commands, stats.unpaired) == (2, 0, 0)


def test_codex_pre_envelope_rollout_is_read(tmp_path: Path) -> None:
    context = "<environment_context>\n  <cwd>/home/dev/old</cwd>\n</environment_context>"
    message = {"type": "input_text", "text": context}
    output = json.dumps({"output": "", "metadata": {"exit_code": 1}})
    path = write_lines(
        tmp_path / "rollout.jsonl",
        [
            {"id": "old-1", "timestamp": "2025-08-18T01:16:13.522Z", "git": {"branch": "dev"}},
            {"record_type": "state"},
            {"type": "message", "role": "user", "content": [message]},
            {
                "type": "function_call",
                "name": "shell",
                "call_id": "c1",
                "arguments": '{"command": ["pytest"]}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": output},
        ],
    )

    calls, stats = read_all(read_codex, path)

    assert len(calls) == 1
    assert (calls[0].payload["session_id"], calls[0].payload["cwd"]) == ("old-1", "/home/dev/old")
    assert (calls[0].exit_code, calls[0].branch, calls[0].at) == (1, "dev", None)
    assert stats.unknown_records == 0
    assert build_event(calls[0].payload, "codex", NOW, locate).command == "pytest"


def _codex_rollout(path: Path, commands: list[str], middle: str = "") -> None:
    """A rollout of these commands, each passing; `middle` goes in a line of its own after the
    first command."""
    lines = [json.dumps(CODEX_META)]
    for number, command in enumerate(commands):
        lines.append(json.dumps(codex_call(f"c{number}", "exec_command", {"cmd": command})))
        lines.append(json.dumps(codex_end(f"c{number}", 0, "")))
        if number == 0 and middle:
            lines.append(middle)
    path.write_text("\n".join(lines) + "\n")


def test_a_file_is_read_line_by_line(tmp_path: Path) -> None:
    """The first call is out before the rest of the file is read."""
    path = tmp_path / "rollout.jsonl"
    _codex_rollout(path, [f"make t{number}" for number in range(2_000)])
    stats = ReadStats()
    calls = read_codex(str(path), stats)
    assert next(calls).payload["tool_input"]["command"] == "make t0"
    assert 0 < stats.bytes_read < path.stat().st_size / 10
    assert len(list(calls)) == 1_999


def test_a_fifo_a_device_or_a_directory_is_refused_without_waiting(tmp_path: Path) -> None:
    """A FIFO no one writes to would block its reader for ever; a device never ends."""
    fifo = tmp_path / "live.jsonl"
    os.mkfifo(fifo)
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    for path, kind in ((fifo, "a FIFO"), ("/dev/zero", "a character device"),
                       (folder, "a directory")):  # fmt: skip
        calls, stats = read_all(read_codex, path)
        assert (calls, stats.refused, stats.lines) == ([], kind, 0)
    assert read_all(read_claude, fifo)[1].refused == "a FIFO"


def test_a_line_over_the_cap_is_skipped_and_counted_the_rest_read(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    huge = json.dumps({"type": "response_item", "payload": {"text": "x" * MAX_LINE_BYTES}})
    _codex_rollout(path, ["make first", "make second"], middle=huge)
    calls, stats = read_all(read_codex, path)
    assert [call.payload["tool_input"]["command"] for call in calls] == [
        "make first",
        "make second",
    ]
    assert (stats.too_long, stats.malformed, stats.refused) == (1, 0, None)
    assert stats.bytes_read == path.stat().st_size


def test_an_older_codex_session_applies_its_patches_through_the_shell_tool() -> None:
    """codex/02.jsonl: 233 `apply_patch` calls through `shell`, as argv or a bash heredoc; the
    206 that succeeded are edits, the rest failed and changed nothing."""
    path = transcript("codex/02.jsonl")
    raw_calls, _ends = codex_raw(path)
    through_shell = [a["command"] for a in raw_calls.values() if "apply_patch" in str(a)]

    calls, stats = read_all(read_codex, path)

    assert len(through_shell) == 233
    assert {c[0] for c in through_shell} == {"apply_patch", "bash"}
    patches = [c for c in calls if c.payload["tool_name"] == "apply_patch"]
    assert (stats.edits, len(patches), stats.commands) == (206, 206, 155)
    for call in patches:
        assert call.payload["tool_input"]["input"].startswith("*** Begin Patch\n")
        event = build_event(call.payload, "codex", NOW, locate)
        assert event.kind == "edit" and event.files and event.command is None
