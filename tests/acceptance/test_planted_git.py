"""What another account or a tarball may plant above a working directory: a FIFO where git
keeps a file, a `.git` in a directory anyone may write to. Through the real processes, each
bounded by a timeout: a read that waited for a FIFO's writer would never end."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from mcp.client import ClientSession

from tests.acceptance.test_mcp import _data, _talk
from tests.conftest import REMEM, Home

BOUND_S = 30
STORED = (
    "SELECT p.root, e.branch, e.directory FROM captured_events e "
    "JOIN projects p ON p.id = e.project_id"
)  # each call below ends in well under a second; a blocked read never does


def _plant_fifo_head(tmp_path: Path) -> Path:
    """A parent directory whose `.git/HEAD` is a FIFO nobody writes to, and a directory in it
    (no repository of its own) where the agent works."""
    parent = tmp_path / "unpacked"
    (parent / ".git").mkdir(parents=True)
    os.mkfifo(parent / ".git" / "HEAD")
    os.mkfifo(parent / ".git" / "commondir")
    work = parent / "shop"
    work.mkdir()
    return Path(os.path.realpath(work))


def test_a_fifo_at_git_head_in_a_parent_hangs_no_hook_nor_reader(
    home: Home, tmp_path: Path
) -> None:
    work = _plant_fifo_head(tmp_path)
    for number in range(2):
        payload = {"session_id": "s1", "cwd": str(work), "command": "make test"}
        result = home.hook({**payload, "exit_code": 0, "event_id": f"e{number}"}, timeout=BOUND_S)
        assert (result.returncode, result.stderr) == (0, b"")
    # The repository is the parent's, with no branch: its HEAD is no file to read.
    assert home.query(STORED) == [(str(work.parent), None, "shop")] * 2
    home.remem("worker", "--burst", timeout=BOUND_S)

    context = home.remem("context", "--cwd", str(work), timeout=BOUND_S).stdout
    assert "`make test`" in context
    recall = subprocess.run(
        [REMEM, "recall", "make"], cwd=work, env=home.env, capture_output=True, text=True,
        timeout=BOUND_S,
    )  # fmt: skip
    assert recall.returncode == 0 and "make test" in recall.stdout, recall

    async def body(session: ClientSession) -> None:
        found = _data(await session.call_tool("procedures", {}))
        assert [p["command"] for p in found["procedures"]] == ["make test"]

    _talk(home, str(work), tmp_path / "mcp.err", body)


def test_a_git_planted_in_a_directory_anyone_may_write_to_is_not_the_project(
    home: Home, tmp_path: Path
) -> None:
    shared = tmp_path / "tmp-like"
    (shared / ".git").mkdir(parents=True)
    (shared / ".git" / "HEAD").write_text("ref: refs/heads/planted\n")
    shared.chmod(0o1777)
    work = Path(os.path.realpath(shared)) / "mine"
    work.mkdir()
    payload = {"session_id": "s1", "cwd": str(work), "command": "make test", "exit_code": 0}
    assert home.hook(payload, timeout=BOUND_S).returncode == 0
    assert home.query(STORED) == [(str(work), None, ".")]
