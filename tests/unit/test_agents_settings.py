"""Merging remem's hooks into an agent's settings and taking them out: pure documents and text."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from remem.admin.agents_settings import (
    codex_hooks_enabled,
    enable_codex_hooks,
    is_current,
    is_remem_command,
    merge,
    remem_commands,
    render_json,
    unmerge,
)
from remem.admin.hook_settings import AGENTS, settings_for

HOOK = "/opt/remem/.venv/bin/remem-hook"
OLD_HOOK = "/old/checkout/.venv/bin/remem-hook"


def wanted(agent: str, executable: str = HOOK) -> dict[str, Any]:
    return settings_for(agent, "/home/dev/.remem-work", executable)


def user_claude_settings() -> dict[str, Any]:
    return {
        "model": "opus",
        "permissions": {"allow": ["Bash(make test)"]},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}
            ],
            "PostToolUse": [
                {"matcher": "Write", "hooks": [{"type": "command", "command": "prettier -w"}]}
            ],
        },
    }


def user_cursor_hooks() -> dict[str, Any]:
    return {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}


@pytest.mark.parametrize(
    ("command", "is_remem"),
    [
        (f"{HOOK} --host claude-code", True),
        (f"REMEM_HOME=/srv/remem {HOOK} --host codex", True),
        ("remem-hook --host cursor", True),
        ("'/path with space/bin/remem-hook' --host cursor", True),
        ("echo remem-hook-like", False),
        ("/usr/bin/remem --version", False),
        ("guard.sh", False),
        ("unbalanced 'quote remem-hook", True),
        (None, False),
    ],
)
def test_remem_entries_are_the_commands_calling_remem_hook(
    command: str | None, is_remem: bool
) -> None:
    assert is_remem_command(command) is is_remem


def test_merge_keeps_every_other_key_and_hook() -> None:
    before = user_claude_settings()
    merged = merge(before, wanted("claude-code"))
    assert before == user_claude_settings()  # the input is not mutated
    assert merged["model"] == "opus" and merged["permissions"] == before["permissions"]
    assert merged["hooks"]["PreToolUse"] == before["hooks"]["PreToolUse"]
    post = merged["hooks"]["PostToolUse"]
    assert post[0] == before["hooks"]["PostToolUse"][0]
    assert post[1:] == wanted("claude-code")["hooks"]["PostToolUse"]
    assert list(merged["hooks"]) == [
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "SessionStart",
    ]
    assert len(remem_commands(merged)) == 3


def test_cursor_keeps_its_version_and_flat_hook_lists() -> None:
    merged = merge(user_cursor_hooks(), wanted("cursor"))
    assert merged["version"] == 1
    assert merged["hooks"]["afterFileEdit"][0] == {"command": "./format.sh"}
    assert merged["hooks"]["afterFileEdit"][1]["command"].endswith("--host cursor")
    assert set(merged["hooks"]) == {
        "afterFileEdit",
        "postToolUse",
        "postToolUseFailure",
        "sessionStart",
    }
    assert merge({}, wanted("cursor"))["version"] == 1


@pytest.mark.parametrize("agent", AGENTS)
def test_merging_twice_changes_nothing(agent: str) -> None:
    start = user_cursor_hooks() if agent == "cursor" else user_claude_settings()
    once = merge(start, wanted(agent))
    assert merge(once, wanted(agent)) == once
    assert is_current(once, wanted(agent))
    assert not is_current(start, wanted(agent))


@pytest.mark.parametrize("agent", AGENTS)
def test_an_older_remem_entry_is_replaced_in_its_place(agent: str) -> None:
    old = merge(
        user_cursor_hooks() if agent == "cursor" else user_claude_settings(),
        wanted(agent, OLD_HOOK),
    )
    new = merge(old, wanted(agent))
    commands = remem_commands(new)
    assert commands and all(OLD_HOOK not in command for command in commands)
    assert len(commands) == len(remem_commands(merge({}, wanted(agent))))
    assert list(new["hooks"]) == list(old["hooks"])  # same events, same order


def test_a_remem_handler_sharing_a_group_is_taken_out_and_the_group_kept() -> None:
    shared = {
        "hooks": {
            "PostToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "command": "notify.sh"},
                        {"type": "command", "command": f"{OLD_HOOK} --host claude-code"},
                    ],
                },
                {"matcher": "Edit", "hooks": [{"type": "command", "command": "lint.sh"}]},
            ],
            "Stop": [{"hooks": [{"type": "command", "command": f"{OLD_HOOK} --host claude-code"}]}],
        }
    }
    merged = merge(shared, wanted("claude-code"))
    post = merged["hooks"]["PostToolUse"]
    assert post[0] == {"matcher": "Bash", "hooks": [{"type": "command", "command": "notify.sh"}]}
    assert post[1] == wanted("claude-code")["hooks"]["PostToolUse"][0]  # where the old one was
    assert post[2]["matcher"] == "Edit"
    assert "Stop" not in merged["hooks"]  # an event only an old remem used goes


@pytest.mark.parametrize("agent", AGENTS)
def test_uninstall_leaves_the_others_as_they_were(agent: str) -> None:
    original = user_cursor_hooks() if agent == "cursor" else user_claude_settings()
    installed = merge(original, wanted(agent))
    assert unmerge(installed) == original
    assert unmerge(original) == original


def test_uninstall_removes_only_the_containers_it_emptied() -> None:
    document = {"hooks": {"Notification": []}, "env": {"A": "1"}}
    installed = merge(document, wanted("claude-code"))
    assert unmerge(installed) == document
    assert unmerge(merge({}, wanted("claude-code"))) == {}
    assert unmerge(merge({}, wanted("cursor"))) == {"version": 1}


def test_a_document_whose_hooks_is_not_an_object_is_refused() -> None:
    with pytest.raises(ValueError, match="hooks"):
        merge({"hooks": ["not", "an", "object"]}, wanted("codex"))
    with pytest.raises(ValueError, match="JSON object"):
        merge([], wanted("codex"))  # type: ignore[arg-type]
    assert not is_current({"hooks": []}, wanted("codex"))


def test_the_input_document_is_never_mutated() -> None:
    document = merge(user_claude_settings(), wanted("claude-code", OLD_HOOK))
    kept = copy.deepcopy(document)
    merge(document, wanted("claude-code"))
    unmerge(document)
    assert document == kept


def test_json_keeps_the_files_indentation() -> None:
    assert render_json({"a": [1]}, None) == '{\n  "a": [\n    1\n  ]\n}\n'
    assert render_json({"a": 1}, '{\n    "b": 2\n}\n') == '{\n    "a": 1\n}\n'
    assert render_json({"a": 1}, '{\n\t"b": 2\n}') == '{\n\t"a": 1\n}\n'
    assert render_json({"é": "ü"}, None) == '{\n  "é": "ü"\n}\n'


CODEX_CONFIG = """# my Codex settings
model = "gpt-5.5"  # the fast one

[projects."/home/dev/shop"]
trust_level = "trusted"
"""


def test_codex_flag_is_added_and_comments_are_kept() -> None:
    enabled = enable_codex_hooks(CODEX_CONFIG)
    assert enabled.startswith(CODEX_CONFIG)
    assert enabled.endswith("[features]\ncodex_hooks = true\n")
    assert codex_hooks_enabled(enabled) and not codex_hooks_enabled(CODEX_CONFIG)
    assert enable_codex_hooks(enabled) == enabled
    assert enable_codex_hooks("") == "[features]\ncodex_hooks = true\n"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            "[features]\n# keep me\nweb_search = true\n",
            "[features]\n# keep me\nweb_search = true\ncodex_hooks = true\n",
        ),
        ("[features]\ncodex_hooks = false\n", "[features]\ncodex_hooks = true\n"),
        ("[features]\nhooks = true\n", "[features]\nhooks = true\n"),
        (
            "features.web_search = true\n",
            "features.web_search = true\nfeatures.codex_hooks = true\n",
        ),
    ],
)
def test_codex_flag_goes_into_the_existing_features(config: str, expected: str) -> None:
    assert enable_codex_hooks(config) == expected


def test_codex_config_that_is_not_toml_is_refused() -> None:
    with pytest.raises(ValueError, match="TOML"):
        enable_codex_hooks("[features\ncodex_hooks = true\n")
    with pytest.raises(ValueError, match="features"):
        enable_codex_hooks('features = "on"\n')
    assert not codex_hooks_enabled("[features\n")
