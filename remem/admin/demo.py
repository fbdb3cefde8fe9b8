"""The payloads of `remem demo`: a realistic Claude Code session, failing then passing."""

from __future__ import annotations

from typing import Any

DEMO_COMMAND = "python -m pytest -q tests/test_cart.py"


def demo_payloads(project: str) -> list[tuple[str, dict[str, Any]]]:
    """(what happened, Claude Code hook payload) in the order the agent would post them."""

    def base(session: str, tool_use_id: str, event: str) -> dict[str, Any]:
        return {
            "session_id": session,
            "transcript_path": f"/tmp/{session}.jsonl",
            "cwd": project,
            "permission_mode": "default",
            "hook_event_name": event,
            "tool_use_id": tool_use_id,
        }

    first, second = "demo-session-1", "demo-session-2"
    failure = base(first, "toolu_demo_1", "PostToolUseFailure") | {
        "tool_name": "Bash",
        "tool_input": {"command": DEMO_COMMAND},
        "error": "Exit code 1\nFAILED tests/test_cart.py::test_total - AssertionError: 9 != 10",
        "is_interrupt": False,
    }
    edit = base(first, "toolu_demo_2", "PostToolUse") | {
        "tool_name": "Edit",
        "tool_input": {
            "file_path": f"{project}/src/cart.py",
            "old_string": "return sum(p for p in prices)",
            "new_string": "return sum(p * q for p, q in items)",
        },
        "tool_response": {"filePath": f"{project}/src/cart.py", "success": True},
    }

    def success(session: str, tool_use_id: str) -> dict[str, Any]:
        return base(session, tool_use_id, "PostToolUse") | {
            "tool_name": "Bash",
            "tool_input": {"command": DEMO_COMMAND},
            "tool_response": {
                "stdout": "....\n4 passed in 0.41s",
                "stderr": "",
                "interrupted": False,
                "isImage": False,
            },
        }

    return [
        ("session 1: the cart test fails", failure),
        ("session 1: the agent edits src/cart.py", edit),
        ("session 1: the cart test passes", success(first, "toolu_demo_3")),
        ("session 2: the cart test passes again", success(second, "toolu_demo_4")),
    ]
