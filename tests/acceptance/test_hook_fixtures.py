"""Every documented host payload, through the real remem-hook process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Home, fixtures_dir
from tests.fixture_expectations import EXPECTED

COLUMNS = (
    "e.host, e.kind, e.outcome, e.exit_code, e.exit_code_source, e.command, e.tool_use_id, "
    "e.files, e.cwd, e.branch"
)


def test_every_fixture_is_listed() -> None:
    on_disk = {str(p.relative_to(fixtures_dir())) for p in fixtures_dir().glob("*/*.json")}
    assert on_disk == set(EXPECTED)


def _in_repo(relative: str, repo: Path) -> bytes:
    """The fixture with its project moved to a real work tree on branch feature/cart."""
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/feature/cart\n")
    (repo / "src").mkdir(exist_ok=True)
    text = (fixtures_dir() / relative).read_text().replace("/home/dev/shop", str(repo))
    return text.encode()


def _snapshot(home: Home) -> tuple[object, ...]:
    return (home.status()["events"], home.tasks(), home.drops())


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_fixture_is_captured_once(home: Home, tmp_path: Path, relative: str) -> None:
    repo = tmp_path / "shop"
    payload = _in_repo(relative, repo)
    first = home.hook(payload)
    assert (first.returncode, first.stderr) == (0, b"")

    # Each host's fields as the hook read them: no command shows them all, the row does.
    rows = home.query(
        f"SELECT {COLUMNS}, p.root FROM captured_events e JOIN projects p ON p.id = e.project_id"
    )
    assert len(rows) == 1
    *fields, files, cwd, branch, root = rows[0]
    kind = fields[1]
    assert (*fields, json.loads(files) if files else None) == EXPECTED[relative]
    assert (cwd, branch, root) == (str(repo), "feature/cart", str(repo))
    tasks = [(t["kind"], t["status"], t["high_watermark_event_id"]) for t in home.tasks()]
    assert tasks == ([] if kind == "session_start" else [("promote", "pending", 1)])

    before = _snapshot(home)
    again = home.hook(payload)
    assert again.returncode == 0
    if _has_own_id(relative):  # a re-delivered payload with its host's id is stored once
        assert _snapshot(home) == before
    else:  # without one, the same payload again is the command run again (DESIGN.md §3)
        assert home.status()["events"] == 2


def _has_own_id(relative: str) -> bool:
    payload = json.loads((fixtures_dir() / relative).read_text())
    return bool(payload.get("tool_use_id") or payload.get("event_id"))


def test_fixture_outside_a_work_tree_uses_cwd_and_no_branch(home: Home) -> None:
    payload = (fixtures_dir() / "claude-code/post_tool_use_bash_success.json").read_bytes()
    assert home.hook(payload).returncode == 0
    hits = home.commands().values()
    assert [(hit["project"], hit["branch"]) for hit in hits] == [("/home/dev/shop", None)]


def test_host_flag_overrides_detection(home: Home) -> None:
    payload = json.loads((fixtures_dir() / "codex/post_tool_use_bash.json").read_text())
    payload.pop("turn_id")
    payload["transcript_path"] = "/tmp/rollout.jsonl"
    payload["tool_use_id"] = "toolu_x"
    assert home.hook(payload, "--host", "codex").returncode == 0
    assert home.query("SELECT host, outcome FROM captured_events") == [("codex", "unknown")]


def test_events_of_one_session_share_one_task_whose_watermark_rises(home: Home) -> None:
    for relative in (
        "claude-code/post_tool_use_edit.json",
        "claude-code/post_tool_use_failure_bash_exit_code.json",
        "claude-code/post_tool_use_bash_success.json",
    ):
        assert home.hook((fixtures_dir() / relative).read_bytes()).returncode == 0
    tasks = home.tasks()
    assert [(t["status"], t["high_watermark_event_id"], t["cursor_event_id"]) for t in tasks] == [
        ("pending", 3, 0)
    ]
