"""Edits made through the shell, captured by the real `remem-hook`: a patch that Codex applies
with its shell tool is an edit, and a heredoc or redirection that writes a file of the project is
an edit beside its command, whichever host sent it and whichever way it was stored."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.conftest import Home, load_fixture

PATCH = "*** Begin Patch\n*** Update File: src/cart.py\n@@\n-return 0\n+return total\n*** End Patch"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def repository(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "web").mkdir()
    return root


def codex(cwd: Path, call_id: str, command: Any) -> dict[str, Any]:
    payload = load_fixture("codex/post_tool_use_bash.json")
    payload.update(cwd=str(cwd), tool_use_id=call_id, tool_input={"command": command})
    return payload


def claude(cwd: Path, use_id: str, command: str, failed: bool = False) -> dict[str, Any]:
    name = "post_tool_use_failure_bash_exit_code" if failed else "post_tool_use_bash_success"
    payload = load_fixture(f"claude-code/{name}.json")
    payload.update(cwd=str(cwd), tool_use_id=use_id, tool_input={"command": command})
    return payload


def stored(home: Home) -> list[tuple[str, str | None, list[str] | None, str | None]]:
    """(kind, command, files, outcome) of every captured event, in the order stored."""
    rows = home.query(
        "SELECT kind, command, files, outcome FROM captured_events "
        "WHERE kind != 'session_start' ORDER BY id"
    )
    return [(k, c, json.loads(f) if f else None, o) for k, c, f, o in rows]


def test_codex_patches_applied_through_the_shell_are_edits(home: Home, tmp_path: Path) -> None:
    root = repository(tmp_path)
    heredoc = f"apply_patch <<'EOF'\n{PATCH}\nEOF\n"

    for number, command in enumerate(
        (["apply_patch", PATCH], ["bash", "-lc", heredoc], heredoc), start=1
    ):
        assert home.hook(codex(root, f"call_patch{number}", command)).returncode == 0

    assert stored(home) == [("edit", None, ["src/cart.py"], None)] * 3
    hashes = home.query("SELECT DISTINCT change_hash FROM captured_events WHERE kind = 'edit'")
    assert len(hashes) == 1  # one patch, however it was handed over


def test_a_heredoc_write_is_an_edit_beside_its_command(home: Home, tmp_path: Path) -> None:
    root = repository(tmp_path)
    write_app = "cat > app.js <<'EOF'\nexport const total = 0;\nEOF"
    write_message = "cat > /tmp/message.txt <<'EOF'\nfix: total\nEOF"

    for payload in (
        codex(root, "call_write1", "mkdir -p src && cat <<'EOF' > src/cart.py\nx = 1\nEOF"),
        claude(root / "web", "toolu_write2", write_app),
        claude(root, "toolu_write3", write_message),
        claude(root, "toolu_write4", "printf 'x' > src/failed.py", failed=True),
        claude(root, "toolu_write5", "python -m pytest -q > report.txt"),
    ):
        assert home.hook(payload).returncode == 0

    assert stored(home) == [
        ("command", "mkdir -p src && cat <<'EOF' > src/cart.py\nx = 1\nEOF", None, "unknown"),
        ("edit", None, ["src/cart.py"], None),
        ("command", write_app, None, "success"),
        ("edit", None, ["web/app.js"], None),
        ("command", write_message, None, "success"),  # outside the project: no edit
        ("command", "printf 'x' > src/failed.py", None, "failure"),  # it wrote nothing
        ("command", "python -m pytest -q > report.txt", None, "success"),
    ]
    # Each session's task reaches its last event, a command's edit included: the window the
    # worker reads ends there.
    tasks = home.query(
        "SELECT t.high_watermark_event_id, max(e.id) FROM extraction_tasks t "
        "JOIN captured_events e ON e.session_id = t.session_id GROUP BY t.session_id"
    )
    assert tasks and all(watermark == last for watermark, last in tasks), tasks


def test_a_spooled_write_brings_its_edit_and_its_secrets_stay_out(
    home: Home, tmp_path: Path
) -> None:
    root = repository(tmp_path)
    command = f"cat > .env.example <<'EOF'\nGITHUB_TOKEN={TOKEN}\nEOF"
    locker = sqlite3.connect(home.db, isolation_level=None, timeout=1)
    locker.execute("BEGIN IMMEDIATE")
    try:
        assert home.hook(claude(root, "toolu_spooled", command)).returncode == 0
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert stored(home) == []

    home.remem("spool", "ingest")

    assert [(kind, files) for kind, _c, files, _o in stored(home)] == [
        ("command", None),
        ("edit", [".env.example"]),
    ]
    for row in home.query("SELECT command, payload, files FROM captured_events"):
        assert all(TOKEN not in (column or "") for column in row)
