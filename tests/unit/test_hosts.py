from __future__ import annotations

import json
from typing import Any

import pytest

from remem.capture.fields import STORED_STRING_CHARS, change_hash, edit_change, exit_code_value
from remem.capture.hosts import (
    CUT_OUTPUT_KEEP_CHARS,
    build_event,
    cut_output,
    detect_host,
    payload_excerpt,
    written_edit,
)
from remem.record.event import DROP_EXCERPT_CHARS, OUTPUT_TAIL_CHARS, CapturedEvent, Dropped
from remem.record.output import OUTPUT_FIELDS, output_excerpt, output_text
from remem.record.redact import MASK
from tests.conftest import fixtures_dir
from tests.fixture_expectations import EXPECTED

NOW = 1_790_000_000.0
ROOT = "/home/dev/shop"
GITHUB_TOKEN = "ghp_4fK9sLm2Qx7Rt8Vw1Yz3Bc5Nd6Hj0PqAeUi"
REMOVE = object()


FIXTURES = fixtures_dir()


Located = tuple[str, str | None, str, str]


def locate(cwd: str) -> Located:
    return ROOT, "main", ROOT, "."


def load(name: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return payload


def changed(payload: dict[str, Any], **changes: Any) -> dict[str, Any]:
    result = dict(payload)
    for key, value in changes.items():
        if value is REMOVE:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def build(payload: dict[str, Any], host: str | None = None) -> CapturedEvent:
    detected = host or detect_host(payload)
    assert detected is not None
    return build_event(payload, detected, NOW, locate)


def dropped_reason(payload: dict[str, Any], host: str) -> str:
    with pytest.raises(Dropped) as caught:
        build_event(payload, host, NOW, locate)
    return caught.value.reason


def test_every_fixture_has_an_expectation() -> None:
    on_disk = {path.relative_to(FIXTURES).as_posix() for path in FIXTURES.glob("*/*.json")}

    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize(("name", "expected"), EXPECTED.items(), ids=[name for name in EXPECTED])
def test_fixture_is_normalised(name: str, expected: tuple[Any, ...]) -> None:
    host, kind, outcome, exit_code, exit_code_source, command, tool_use_id, files = expected
    payload = load(name)

    event = build(payload)

    assert detect_host(payload) == host
    assert event.host == host
    assert event.kind == kind
    assert event.outcome == outcome
    assert event.exit_code == exit_code
    assert event.exit_code_source == exit_code_source
    assert event.command == command
    assert event.tool_use_id == tool_use_id
    assert event.files == files
    assert (event.change_hash is not None) == (kind == "edit")
    assert (event.project_root, event.branch, event.directory) == (ROOT, "main", ".")
    assert event.captured_at == NOW


def test_edit_change_hash_ignores_whitespace() -> None:
    edit = load("claude-code/post_tool_use_edit.json")
    reflowed = changed(
        edit,
        tool_input={
            **edit["tool_input"],
            "new_string": "return sum(p * q\n    for p, q in  items)\n",
        },
    )

    assert build(reflowed).change_hash == build(edit).change_hash


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("new_string", "return sum(p * q for p, q in basket)"),
        ("file_path", "/home/dev/shop/src/checkout.py"),
    ],
)
def test_edit_change_hash_differs_for_a_different_edit(field: str, value: str) -> None:
    edit = load("claude-code/post_tool_use_edit.json")
    other = changed(edit, tool_input={**edit["tool_input"], field: value})

    assert build(other).change_hash != build(edit).change_hash


def test_claude_failure_keeps_the_error_excerpt() -> None:
    event = build(load("claude-code/post_tool_use_failure_bash_exit_code.json"))

    assert event.error_excerpt is not None
    assert event.error_excerpt.startswith("Exit code 1")


def test_claude_backgrounded_by_task_id_alone() -> None:
    payload = load("claude-code/post_tool_use_bash_backgrounded.json")
    payload = changed(payload, tool_input={"command": "npm run dev"})

    assert build(payload).outcome == "backgrounded"


def test_claude_backgrounded_by_run_in_background_alone() -> None:
    payload = load("claude-code/post_tool_use_bash_success.json")
    payload = changed(payload, tool_input={"command": "npm run dev", "run_in_background": True})

    assert build(payload).outcome == "backgrounded"


def test_claude_failure_with_is_interrupt_is_interrupted() -> None:
    payload = load("claude-code/post_tool_use_failure_bash_exit_code.json")

    event = build(changed(payload, is_interrupt=True))

    assert (event.outcome, event.exit_code) == ("interrupted", None)


@pytest.mark.parametrize(
    "error",
    [
        "<tool_use_error>Sibling tool call errored</tool_use_error>",
        "  <tool_use_error>Permission to use Bash has been denied.</tool_use_error>",
    ],
)
def test_claude_failure_of_a_command_that_never_ran_is_no_failure(error: str) -> None:
    payload = load("claude-code/post_tool_use_failure_bash_exit_code.json")

    event = build(changed(payload, error=error))

    assert (event.outcome, event.exit_code) == ("interrupted", None)


def test_codex_argv_command_is_unwrapped_from_bash_lc() -> None:
    payload = load("codex/post_tool_use_bash.json")
    payload = changed(payload, tool_input={"command": ["bash", "-lc", "cargo test"]})

    assert build(payload).command == "cargo test"


def test_codex_apply_patch_lists_the_patched_files() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: src/a.py\n@@\n-old\n+new\n"
        "*** Add File: src/b.py\n+created\n*** End Patch"
    )
    payload = changed(
        load("codex/post_tool_use_bash.json"),
        tool_name="apply_patch",
        tool_input={"input": patch},
    )

    event = build(payload)

    assert event.kind == "edit"
    assert event.files == ["src/a.py", "src/b.py"]
    assert event.change_hash is not None


@pytest.mark.parametrize(
    "command",
    [
        [
            "apply_patch",
            "*** Begin Patch\n*** Update File: src/a.py\n@@\n-old\n+new\n*** End Patch",
        ],
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/a.py\n@@\n-old\n+new\n"
        "*** End Patch\nEOF",
    ],
)
def test_a_patch_applied_through_the_shell_is_the_same_edit_as_the_patch_tool(
    command: Any,
) -> None:
    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-old\n+new\n*** End Patch"
    codex = load("codex/post_tool_use_bash.json")
    by_tool = build(changed(codex, tool_name="apply_patch", tool_input={"input": patch}))

    event = build(changed(codex, tool_input={"command": command}))

    assert (event.kind, event.command, event.outcome) == ("edit", None, None)
    assert (event.files, event.change_hash) == (["src/a.py"], by_tool.change_hash)


def _written(command: str, cwd: str = ROOT, **changes: Any) -> CapturedEvent | None:
    payload = load("claude-code/post_tool_use_bash_success.json")
    payload = changed(payload, cwd=cwd, tool_input={"command": command}, **changes)
    directory = cwd[len(ROOT) + 1 :] if cwd != ROOT else "."
    return written_edit(
        build_event(payload, "claude-code", NOW, lambda _: (ROOT, "main", ROOT, directory))
    )


def test_a_heredoc_write_is_an_edit_beside_its_command() -> None:
    command = "cat > src/app.py <<'EOF'\nprint('hi')\nEOF"
    same_as_write = {"file_path": "src/app.py", "content": "print('hi')"}

    edit = _written(command)

    assert edit is not None and edit.kind == "edit"
    assert (edit.files, edit.command, edit.outcome) == (["src/app.py"], None, None)
    assert edit.idempotency_key.endswith(":edit") and edit.tool_use_id is not None
    assert edit.change_hash == change_hash(*edit_change("Write", same_as_write))


@pytest.mark.parametrize(
    ("cwd", "command", "files"),
    [
        (f"{ROOT}/web", "cat > app.js <<'EOF'\nx\nEOF", ["web/app.js"]),
        (ROOT, f"cat > {ROOT}/src/a.py <<'EOF'\nx\nEOF", ["src/a.py"]),
        (ROOT, "printf 'x' > a.txt && tee -a b.txt <<EOF\ny\nEOF", ["a.txt", "b.txt"]),
        (ROOT, "cat > /tmp/message.txt <<'EOF'\nfix\nEOF", None),
        (ROOT, "cat > ../elsewhere/a.py <<'EOF'\nx\nEOF", None),
        (ROOT, "cat > ~/notes.md <<'EOF'\nx\nEOF", None),
        (ROOT, "python -m pytest -q > out.txt", None),
    ],
)
def test_only_files_inside_the_work_tree_are_written_edits(
    cwd: str, command: str, files: list[str] | None
) -> None:
    edit = _written(command, cwd)

    assert (edit.files if edit else None) == files


def test_a_write_that_failed_or_was_interrupted_edits_nothing() -> None:
    command = "cat > src/app.py <<'EOF'\nx\nEOF"
    failure = load("claude-code/post_tool_use_failure_bash_exit_code.json")
    failure = changed(failure, tool_input={"command": command})

    assert written_edit(build(failure)) is None
    assert _written(command, tool_response={"interrupted": True}) is None


@pytest.mark.parametrize(("exit_code", "outcome"), [(0, "success"), (1, "failure")])
def test_cursor_after_shell_execution_with_an_exit_code(exit_code: int, outcome: str) -> None:
    payload = changed(load("cursor/after_shell_execution.json"), exit_code=exit_code)

    event = build(payload)

    assert (event.outcome, event.exit_code, event.exit_code_source) == (
        outcome,
        exit_code,
        "payload",
    )


def test_cursor_without_cwd_uses_the_first_workspace_root() -> None:
    payload = load("cursor/after_shell_execution.json")
    payload = changed(payload, cwd=REMOVE, workspace_roots=["/home/dev/admin", "/home/dev/shop"])
    seen: list[str] = []

    def recording_locate(cwd: str) -> Located:
        seen.append(cwd)
        return cwd, None, cwd, "."

    event = build_event(payload, "cursor", NOW, recording_locate)

    assert seen == ["/home/dev/admin"]
    assert event.cwd == "/home/dev/admin"


@pytest.mark.parametrize(
    ("exit_code", "outcome", "source"),
    [(0, "success", "payload"), (3, "failure", "payload"), (REMOVE, "unknown", None)],
)
def test_generic_outcome_follows_exit_code(exit_code: Any, outcome: str, source: Any) -> None:
    event = build(changed(load("generic/command.json"), exit_code=exit_code))

    assert (event.outcome, event.exit_code_source) == (outcome, source)
    assert event.exit_code == (None if exit_code is REMOVE else exit_code)


def test_generic_timestamp_sets_event_time() -> None:
    event = build(changed(load("generic/command.json"), timestamp="2026-09-01T10:00:00Z"))

    assert (event.event_at, event.event_at_reported) == (1788256800.0, None)


@pytest.mark.parametrize(
    ("timestamp", "reported"),
    [
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (-float("inf"), "-Infinity"),
        (1e12, "1000000000000.0"),
        (10**400, "1" + "0" * 99),
        (-5, "-5"),
        (NOW + 301, repr(NOW + 301)),
        ("2026-11-20T10:00:00Z", '"2026-11-20T10:00:00Z"'),  # after NOW: in the future
    ],
)
def test_an_unusable_event_time_is_clamped_to_the_capture_time_and_recorded(
    timestamp: Any, reported: str
) -> None:
    event = build(changed(load("generic/command.json"), timestamp=timestamp))

    assert event.event_at == NOW
    assert event.event_at_reported == reported


@pytest.mark.parametrize("timestamp", [0, NOW - 86400, NOW, NOW + 299])
def test_a_usable_event_time_is_kept(timestamp: float) -> None:
    event = build(changed(load("generic/command.json"), timestamp=timestamp))

    assert (event.event_at, event.event_at_reported) == (float(timestamp), None)


def test_event_time_defaults_to_now() -> None:
    event = build(changed(load("generic/command.json"), timestamp=REMOVE))

    assert event.event_at == NOW


def test_generic_event_id_is_the_idempotency_key() -> None:
    payload = load("generic/command.json")

    assert "term-4411-17" in build(payload).idempotency_key
    assert build(changed(payload, exit_code=1)).idempotency_key == build(payload).idempotency_key


def test_generic_branch_overrides_the_located_branch() -> None:
    event = build(changed(load("generic/command.json"), branch="release/2.0"))

    assert event.branch == "release/2.0"


@pytest.mark.parametrize(
    "name", ["claude-code/post_tool_use_bash_success.json", "claude-code/session_start.json"]
)
def test_redelivered_payload_has_the_same_key(name: str) -> None:
    assert build(load(name)).idempotency_key == build(load(name)).idempotency_key


def test_key_does_not_depend_on_field_order() -> None:
    payload = load("claude-code/session_start.json")
    reordered = dict(reversed(list(payload.items())))

    assert build(reordered).idempotency_key == build(payload).idempotency_key


def test_payloads_differing_in_tool_use_id_have_different_keys() -> None:
    payload = load("claude-code/post_tool_use_bash_success.json")
    rerun = changed(payload, tool_use_id="toolu_01Zz9Yy8Xx7Ww6Vv5Uu4Tt3S")

    assert build(rerun).idempotency_key != build(payload).idempotency_key


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [
        ("claude-code/session_start.json", "source", "resume"),
        ("claude-code/session_start.json", "model", "claude-opus-4-1"),
        ("cursor/after_shell_execution.json", "duration", 2310.5),
        ("cursor/after_shell_execution.json", "output", "built in 2.40s"),
        ("generic/command.json", "timestamp", "2026-11-20T10:00:01Z"),
    ],
)
def test_payloads_without_ids_differing_in_any_field_have_different_keys(
    name: str, field: str, value: Any
) -> None:
    payload = changed(load(name), event_id=REMOVE)

    other = changed(payload, **{field: value})

    assert build(other).idempotency_key != build(payload).idempotency_key


@pytest.mark.parametrize(
    ("name", "changes", "reason"),
    [
        ("claude-code/post_tool_use_bash_success.json", {"session_id": REMOVE}, "missing_session"),
        ("cursor/post_tool_use_shell.json", {"conversation_id": REMOVE}, "missing_session"),
        ("generic/command.json", {"session_id": ""}, "missing_session"),
        ("claude-code/post_tool_use_bash_success.json", {"tool_input": "ls"}, "invalid_field"),
        ("claude-code/post_tool_use_bash_success.json", {"tool_name": 7}, "invalid_field"),
        ("generic/command.json", {"exit_code": "abc"}, "invalid_field"),
        ("generic/command.json", {"exit_code": "1.5"}, "invalid_field"),
        ("generic/command.json", {"exit_code": True}, "invalid_field"),
        ("generic/command.json", {"files": "src/cart.py"}, "invalid_field"),
        ("generic/command.json", {"timestamp": "yesterday"}, "invalid_field"),
        (
            "claude-code/post_tool_use_bash_success.json",
            {"hook_event_name": "PreToolUse"},
            "ignored_event",
        ),
        ("codex/post_tool_use_bash.json", {"hook_event_name": "Stop"}, "ignored_event"),
        ("claude-code/post_tool_use_bash_success.json", {"tool_name": "Read"}, "ignored_tool"),
        ("claude-code/post_tool_use_bash_success.json", {"cwd": REMOVE}, "missing_field"),
        ("codex/post_tool_use_bash.json", {"tool_input": {}}, "missing_field"),
        ("generic/command.json", {"command": REMOVE}, "missing_field"),
    ],
)
def test_payload_is_dropped_with_a_reason(name: str, changes: dict[str, Any], reason: str) -> None:
    payload = load(name)
    host = detect_host(payload)
    assert host is not None

    assert dropped_reason(changed(payload, **changes), host) == reason


def test_drop_names_host_and_event() -> None:
    payload = changed(load("claude-code/post_tool_use_bash_success.json"), tool_name="Read")

    with pytest.raises(Dropped) as caught:
        build(payload)

    assert (caught.value.host, caught.value.hook_event) == ("claude-code", "PostToolUse")
    assert "Read" in str(caught.value)


CODEX_ARGV = ["/usr/bin/remem", "forget", "--match", "x"]


def bash(command: Any) -> dict[str, Any]:
    payload = load("claude-code/post_tool_use_bash_success.json")
    return changed(payload, tool_input={**payload["tool_input"], "command": command})


@pytest.mark.parametrize(
    "command",
    [
        "remem forget --match x --yes",
        "cd /x && .venv/bin/remem forget --event 3",
        "REMEM_HOME=/tmp/h remem  forget --dry-run",
        "uv run remem forget --procedure 7",
        'bash -lc "remem forget --match zq8Kp2"',
        "ls; $(remem forget --event 1)",
    ],
)
def test_a_remem_forget_command_is_never_recorded(command: str) -> None:
    with pytest.raises(Dropped) as caught:
        build(bash(command))

    assert (caught.value.reason, caught.value.detail) == (
        "own_command",
        "remem forget is never recorded",
    )
    assert "zq8Kp2" not in str(caught.value)


@pytest.mark.parametrize(
    "payload",
    [
        changed(load("codex/post_tool_use_bash.json"), tool_input={"command": CODEX_ARGV}),
        changed(load("cursor/after_shell_execution.json"), command="remem forget --event 2"),
        changed(load("generic/command.json"), command="remem forget --match x --yes"),
    ],
)
def test_no_host_records_remem_forget(payload: dict[str, Any]) -> None:
    host = detect_host(payload)
    assert host is not None

    assert dropped_reason(payload, host) == "own_command"


@pytest.mark.parametrize(
    "command",
    [
        'git commit -m "forget it"',
        "remember forget",
        "echo remem",
        "remem forgetful",
        "remem status && git forget",
        "python -m myremem forget",
    ],
)
def test_commands_that_do_not_run_remem_forget_are_kept(command: str) -> None:
    assert build(bash(command)).command == command


@pytest.mark.parametrize("payload", [{"foo": 1}, {}, {"session_id": "s", "cwd": "/tmp"}])
def test_unrecognised_payload_has_no_host(payload: dict[str, Any]) -> None:
    assert detect_host(payload) is None


def test_generic_is_detected_without_a_host_field() -> None:
    payload = changed(load("generic/command.json"), host=REMOVE)

    assert detect_host(payload) == "generic"


def test_secret_in_a_command_is_redacted_everywhere() -> None:
    payload = load("claude-code/post_tool_use_bash_success.json")
    payload = changed(
        payload,
        tool_input={"command": f"export GITHUB_TOKEN={GITHUB_TOKEN} && gh pr list"},
        tool_response={"stdout": f"token {GITHUB_TOKEN} accepted", "stderr": ""},
    )

    event = build(payload)

    assert event.command is not None
    assert GITHUB_TOKEN not in event.command
    assert MASK in event.command
    assert event.command.endswith("&& gh pr list")
    assert GITHUB_TOKEN not in event.payload


def test_secret_in_an_error_excerpt_is_redacted() -> None:
    payload = load("claude-code/post_tool_use_failure_bash_exit_code.json")
    payload = changed(payload, error=f"Exit code 128\nfatal: bad credentials {GITHUB_TOKEN}")

    event = build(payload)

    assert event.exit_code == 128
    assert event.error_excerpt is not None
    assert GITHUB_TOKEN not in event.error_excerpt


def test_a_token_cut_by_the_excerpt_limit_is_not_partly_kept() -> None:
    key_block = (
        "-----BEGIN RSA PRIVATE KEY-----\n" + "A" * 900 + "\n-----END RSA PRIVATE KEY-----\n"
    )
    head = f"Exit code 1\n{key_block}"
    error = head + "y" * (990 - len(head)) + GITHUB_TOKEN
    payload = changed(load("claude-code/post_tool_use_failure_bash_exit_code.json"), error=error)

    event = build(payload)

    assert event.error_excerpt is not None
    assert "ghp_" not in event.error_excerpt


def test_long_strings_in_the_stored_payload_are_shortened() -> None:
    payload = load("claude-code/post_tool_use_bash_success.json")
    long_output = "collected 1 item\n" + "." * 5000
    payload = changed(payload, tool_response={"stdout": long_output, "stderr": ""})

    stored = json.loads(build(payload).payload)["tool_response"]["stdout"]

    assert stored.startswith(long_output[:STORED_STRING_CHARS])
    assert len(stored) < len(long_output)
    assert len(stored) <= STORED_STRING_CHARS + 20


def test_stored_payload_keeps_ordinary_fields() -> None:
    payload = load("claude-code/post_tool_use_bash_success.json")

    stored = json.loads(build(payload).payload)

    assert stored["tool_input"] == payload["tool_input"]
    assert stored["tool_use_id"] == payload["tool_use_id"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/home/dev/shop/src/cart.py", "src/cart.py"),
        ("src/cart.py", "src/cart.py"),
        ("/etc/hosts", "/etc/hosts"),
        ("/home/dev/shop-legacy/app.py", "/home/dev/shop-legacy/app.py"),
    ],
)
def test_edited_files_are_relative_to_the_project_root(path: str, expected: str) -> None:
    edit = load("claude-code/post_tool_use_edit.json")
    payload = changed(edit, tool_input={**edit["tool_input"], "file_path": path})

    assert build(payload).files == [expected]


def test_a_dotdot_named_file_inside_the_root_is_made_relative() -> None:
    edit = load("claude-code/post_tool_use_edit.json")
    payload = changed(edit, tool_input={**edit["tool_input"], "file_path": f"{ROOT}/..env"})

    assert build(payload).files == ["..env"]


def test_generic_files_become_relative_and_sorted() -> None:
    payload = changed(
        load("generic/command.json"),
        files=["/home/dev/shop/src/z.py", "src/a.py", "/home/dev/shop/src/a.py"],
    )

    assert build(payload).files == ["src/a.py", "src/z.py"]


def test_captured_event_is_immutable() -> None:
    event = build(load("generic/command.json"))

    with pytest.raises(AttributeError):
        event.command = "rm -rf /"
    assert event.command == "make check"


def test_captured_event_rejects_unknown_fields() -> None:
    fields = build(load("generic/command.json")).as_dict()

    with pytest.raises(TypeError, match="surprise"):
        CapturedEvent(**fields, surprise=1)


def test_captured_event_fields_are_the_event_columns_in_order() -> None:
    from remem.db.columns import EVENT_FIELDS

    assert tuple(build(load("generic/command.json")).as_dict()) == EVENT_FIELDS


def test_captured_events_compare_by_value() -> None:
    event = build(load("generic/command.json"))

    assert CapturedEvent(**event.as_dict()) == event
    assert CapturedEvent(**{**event.as_dict(), "command": "make lint"}) != event


def test_dropped_carries_its_reason_and_detail() -> None:
    drop = Dropped("missing_field", "cwd", "codex", "PostToolUse")

    assert (drop.reason, drop.detail, drop.host, drop.hook_event) == (
        "missing_field",
        "cwd",
        "codex",
        "PostToolUse",
    )
    assert str(drop) == "missing_field: cwd"


# --- the command's output, as each host reports it -------------------------------------------

CLAUDE_FAILURE_ERROR = (
    "Exit code 1\nF...\nFAILED tests/test_cart.py::test_total - AssertionError: 9 != 10\n"
    "1 failed, 3 passed in 0.44s"
)


@pytest.mark.parametrize(
    ("name", "changes", "expected"),
    [
        ("claude-code/post_tool_use_bash_success.json", {}, "....\n4 passed in 0.41s"),
        (
            "claude-code/post_tool_use_bash_success.json",
            {"tool_response": {"stdout": "collected 4 items", "stderr": "DeprecationWarning: x"}},
            "collected 4 items\nDeprecationWarning: x",
        ),
        ("claude-code/post_tool_use_bash_interrupted.json", {}, "starting..."),
        ("claude-code/post_tool_use_bash_backgrounded.json", {}, None),
        ("claude-code/post_tool_use_failure_bash_exit_code.json", {}, CLAUDE_FAILURE_ERROR),
        (
            "claude-code/post_tool_use_failure_bash_status_code.json",
            {},
            "Command exited with non-zero status code 2",
        ),
        (
            "codex/post_tool_use_bash.json",
            {},
            "running 12 tests\n............\ntest result: ok. 12 passed; 0 failed",
        ),
        ("codex/post_tool_use_bash.json", {"tool_response": {"output": "Finished"}}, "Finished"),
        ("codex/post_tool_use_bash.json", {"tool_response": REMOVE}, None),
        ("cursor/after_shell_execution.json", {}, "built in 2.31s"),
        ("cursor/post_tool_use_shell.json", {}, "Test Files  8 passed (8)"),
        ("cursor/post_tool_use_failure_shell.json", {}, "Command failed with exit code 1"),
        ("generic/command.json", {}, None),
        ("generic/command.json", {"output": "ok: 12 checks"}, "ok: 12 checks"),
        (
            "generic/command.json",
            {"exit_code": 2, "output": "compiling", "error": "error: no rule"},
            "compiling\nerror: no rule",
        ),
    ],
)
def test_output_excerpt_of_each_host(
    name: str, changes: dict[str, Any], expected: str | None
) -> None:
    event = build(changed(load(name), **changes))

    assert event.output_excerpt == expected


def test_every_host_has_its_output_fields() -> None:
    assert set(OUTPUT_FIELDS) == {"claude-code", "codex", "cursor", "generic"}


def test_output_text_joins_the_fields_in_order_and_skips_empty_ones() -> None:
    payload = {"tool_response": {"stdout": "", "stderr": "warning: x"}, "error": "Exit code 1"}

    assert output_text("claude-code", payload) == "warning: x\nExit code 1"
    assert output_text("claude-code", {"tool_response": "not a dict"}) is None
    assert output_text("no-such-host", {"output": "x"}) is None


def long_output() -> str:
    lines = [f"tests/test_cart.py::test_case_{index:05d} PASSED" for index in range(400)]
    return "\n".join([*lines, "=== 1 failed, 399 passed in 9.10s ==="])


def test_a_long_output_keeps_its_head_and_its_tail() -> None:
    text = long_output()
    cut = len(text) - 1000 - 3000
    assert cut > 0

    excerpt = output_excerpt(text)

    assert excerpt is not None
    assert excerpt == f"{text[:1000]}\n…[{cut} characters cut]…\n{text[-3000:]}"
    assert excerpt.splitlines()[-1] == "=== 1 failed, 399 passed in 9.10s ==="


def test_a_long_output_in_an_event_keeps_its_last_line() -> None:
    payload = changed(
        load("claude-code/post_tool_use_bash_success.json"),
        tool_response={"stdout": long_output(), "stderr": ""},
    )

    excerpt = build(payload).output_excerpt

    assert excerpt is not None
    assert excerpt.startswith("tests/test_cart.py::test_case_00000 PASSED\n")
    assert "characters cut]…" in excerpt
    assert excerpt.splitlines()[-1] == "=== 1 failed, 399 passed in 9.10s ==="


@pytest.mark.parametrize(
    ("length", "is_cut"), [(3999, False), (4000, False), (4001, True), (50_000, True)]
)
def test_an_output_is_cut_only_past_head_and_tail(length: int, is_cut: bool) -> None:
    text = "x" * length

    excerpt = output_excerpt(text)

    assert excerpt is not None
    assert (excerpt != text) is is_cut
    if is_cut:
        assert f"…[{length - 4000} characters cut]…" in excerpt


@pytest.mark.parametrize("empty", [None, ""])
def test_no_output_no_excerpt(empty: str | None) -> None:
    assert output_excerpt(empty) is None


def test_secrets_in_the_output_are_redacted() -> None:
    payload = changed(
        load("claude-code/post_tool_use_bash_success.json"),
        tool_response={
            "stdout": f"token {GITHUB_TOKEN} accepted\npushing to https://bob:s3cretpw@git.example",
            "stderr": "curl: Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
        },
    )

    excerpt = build(payload).output_excerpt

    assert excerpt is not None
    for secret in (GITHUB_TOKEN, "s3cretpw", "abcdefghijklmnopqrstuvwxyz012345"):
        assert secret not in excerpt
    assert MASK in excerpt
    assert excerpt.startswith("token ")


def test_a_secret_across_the_cut_is_not_partly_kept() -> None:
    # The token straddles where the head is cut: redacting after cutting would keep its start.
    head = "x" * 990 + " "
    stdout = head + GITHUB_TOKEN + "\n" + long_output()
    payload = changed(
        load("claude-code/post_tool_use_bash_success.json"),
        tool_response={"stdout": stdout, "stderr": ""},
    )

    excerpt = build(payload).output_excerpt

    assert excerpt is not None
    assert "characters cut]…" in excerpt
    assert "ghp_" not in excerpt


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("claude-code/post_tool_use_edit.json", {}),
        ("claude-code/post_tool_use_write.json", {"error": "Exit code 1"}),
        ("generic/command.json", {"command": REMOVE, "files": ["a.py"], "output": "hi"}),
        ("claude-code/session_start.json", {"error": "boom"}),
    ],
)
def test_events_that_are_not_commands_have_no_output_excerpt(
    name: str, changes: dict[str, Any]
) -> None:
    event = build(changed(load(name), **changes))

    assert event.kind != "command"
    assert event.output_excerpt is None


# --- where a command ran: project, work tree and directory from locate ------------------------


def test_directory_comes_from_locate() -> None:
    payload = changed(load("generic/command.json"), cwd=f"{ROOT}/src/cart")

    event = build_event(payload, "generic", NOW, lambda cwd: (ROOT, "main", ROOT, "src/cart"))

    assert (event.project_root, event.cwd, event.directory) == (
        ROOT,
        f"{ROOT}/src/cart",
        "src/cart",
    )


def test_a_worktree_event_names_the_project_and_its_own_branch_and_directory() -> None:
    worktree = "/home/dev/shop-wt"
    payload = changed(
        load("generic/command.json"),
        cwd=f"{worktree}/web",
        files=[f"{worktree}/web/a.ts", f"{ROOT}/web/b.ts"],
    )

    event = build_event(payload, "generic", NOW, lambda cwd: (ROOT, "feat", worktree, "web"))

    assert (event.project_root, event.branch, event.directory) == (ROOT, "feat", "web")
    # Files are relative to the worktree the agent edited; the main checkout is another tree.
    assert event.files == [f"{ROOT}/web/b.ts", "web/a.ts"]


LINK_ROOT = "/home/link/shop"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (f"{LINK_ROOT}/src/x.py", "src/x.py"),  # the spelling the agent used
        (f"{ROOT}/src/x.py", "src/x.py"),  # the real path
        (f"{LINK_ROOT}/README.md", "README.md"),
        ("/home/link/other.py", "/home/link/other.py"),
        ("/etc/hosts", "/etc/hosts"),
    ],
)
def test_files_named_through_a_symlinked_root_are_relative_to_the_work_tree(
    path: str, expected: str
) -> None:
    payload = changed(load("generic/command.json"), cwd=f"{LINK_ROOT}/src", files=[path])

    event = build_event(payload, "generic", NOW, lambda cwd: (ROOT, "main", ROOT, "src"))

    assert event.files == [expected]


MONO = "/home/dev/src/mono"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (f"{MONO}/frontend/b.ts", "frontend/b.ts"),
        ("/home/dev/proj-frontend/App.tsx", "frontend/App.tsx"),
        ("/home/dev/notes.txt", "/home/dev/notes.txt"),
    ],
)
def test_files_under_a_symlink_to_a_subdirectory_are_relative_to_the_work_tree(
    path: str, expected: str
) -> None:
    # ~/proj-frontend -> ~/src/mono/frontend: the agent's cwd is not "<root>/frontend", so the
    # root cannot be found by dropping the directory's components from it.
    payload = changed(load("generic/command.json"), cwd="/home/dev/proj-frontend", files=[path])

    event = build_event(payload, "generic", NOW, lambda cwd: (MONO, "main", MONO, "frontend"))

    assert event.files == [expected]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (2, 2),
        (-1, -1),
        ("0", 0),
        (" 2 ", 2),
        ("-1", -1),
        ("+3", 3),
        ("\t127\n", 127),
        ("3.0", 3),
        ("4.", 4),
        (5.0, 5),
    ],
)
def test_exit_code_as_number_or_numeric_text_is_an_integer(value: Any, expected: int) -> None:
    assert exit_code_value(value) == expected


@pytest.mark.parametrize(
    "value",
    ["abc", "1.5", "", "  ", "1_000", "0x1", "1e2", "٣", "--1", "1 2", 1.5, float("nan"), True,
     False, None, [0], {"code": 0}],
)  # fmt: skip
def test_exit_code_that_is_no_integer_is_refused(value: Any) -> None:
    assert exit_code_value(value) is None


@pytest.mark.parametrize(
    ("exit_code", "outcome", "stored"),
    [("0", "success", 0), (" 2 ", "failure", 2), ("-1", "failure", -1), (1.0, "failure", 1)],
)
def test_exit_code_as_text_is_taken_by_every_adapter_that_reads_one(
    exit_code: Any, outcome: str, stored: int
) -> None:
    generic = build(changed(load("generic/command.json"), exit_code=exit_code))
    cursor = build(changed(load("cursor/after_shell_execution.json"), exit_code=exit_code))
    cursor_camel = build(changed(load("cursor/after_shell_execution.json"), exitCode=exit_code))

    for event in (generic, cursor, cursor_camel):
        assert (event.outcome, event.exit_code, event.exit_code_source) == (
            outcome,
            stored,
            "payload",
        )


def test_cursor_exit_code_that_is_no_integer_leaves_the_outcome_unknown() -> None:
    event = build(changed(load("cursor/after_shell_execution.json"), exit_code="abc"))

    assert (event.outcome, event.exit_code) == ("unknown", None)


def test_cut_output_keeps_head_and_tail_of_long_output_only() -> None:
    payload = load("claude-code/post_tool_use_bash_success.json")
    keep = CUT_OUTPUT_KEEP_CHARS
    stdout = "H" * keep + "m" * 500_000 + "T" * keep
    payload["tool_response"]["stdout"] = stdout
    payload["tool_response"]["stderr"] = "short"

    cut = cut_output(payload, "claude-code")

    kept = payload["tool_response"]["stdout"]
    assert cut == len(stdout) - len(kept)
    assert kept.startswith("H" * keep + "\n…[500000 characters cut]…\n")
    assert kept.endswith("T" * keep) and "m" not in kept
    assert payload["tool_response"]["stderr"] == "short"
    assert payload["tool_input"]["command"] == "python -m pytest -q tests/test_cart.py"


def test_output_cut_before_the_event_is_counted_in_its_excerpt() -> None:
    payload = load("claude-code/post_tool_use_bash_success.json")
    payload["tool_response"]["stdout"] = "x" * (3 * CUT_OUTPUT_KEEP_CHARS) + f"\n{GITHUB_TOKEN}"
    cut = cut_output(payload, "claude-code")

    event = build_event(payload, "claude-code", NOW, locate, cut)

    assert event.output_excerpt is not None
    assert event.output_excerpt.endswith(f"\n{MASK}")
    # Characters of the output as printed: the token is counted as it was, not as masked.
    total_cut = 3 * CUT_OUTPUT_KEEP_CHARS + 1 + len(GITHUB_TOKEN) - 1000 - OUTPUT_TAIL_CHARS
    assert f"…[{total_cut} characters cut]…" in event.output_excerpt
    assert (event.outcome, event.exit_code) == ("success", 0)


def test_payload_excerpt_is_redacted_before_it_is_cut() -> None:
    raw = ("x" * (DROP_EXCERPT_CHARS - 10) + GITHUB_TOKEN).encode()

    excerpt = payload_excerpt(raw)

    assert excerpt is not None and len(excerpt) == DROP_EXCERPT_CHARS
    assert excerpt.endswith(MASK[:10]) and "ghp_" not in excerpt


def test_payload_excerpt_shows_no_control_characters_and_survives_bad_bytes() -> None:
    excerpt = payload_excerpt(b"\x1b[31mred\x00\xff\nline\ttab")

    assert excerpt == "\ufffd[31mred\ufffd\ufffd\nline\ttab"
    assert payload_excerpt(b"") is None
