"""`remem import` as the user runs it: real transcripts, the real `remem` and `remem-hook`
processes, and what the agent is then told."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from remem.transcripts import read_claude, read_codex
from tests.conftest import REMEM, REPO, Home

TRANSCRIPTS = REPO / "tests" / "fixtures" / "transcripts"
# The fixtures are months old: every run counts, in both homes alike.
LONG_AGO = {"REMEM_PROMOTION_MAX_AGE": "3650d"}
# Where each real session ran, and on which branch (PROVENANCE.md).
SESSIONS = (
    ("claude", "spotter-fum.jsonl", "/home/USER/projects", "spotter-fum"),
    ("claude", "01.jsonl", "/tmp/tmpqwh7888i", "master"),
    ("claude", "02.jsonl", "/Users/macbook/subsidized-energy-solana-dapp", "main"),
    ("claude", "03.jsonl", "/tmp/tmpw6sk2trg", "master"),
    (
        "codex",
        "01.jsonl",
        "/Users/brijeshagal/Projects/Brijesh/Projects/cusp/cusp-fi",
        "qvac-integration",
    ),
)


def second_home(template_home: Path, tmp_path: Path) -> Home:
    path = tmp_path / "home-2"
    shutil.copytree(template_home, path)
    return Home(path)


def with_env(home: Home) -> Home:
    """Months-old runs count; the agents' folders are those under the test's HOME."""
    home.env.update(LONG_AGO)
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        home.env.pop(name, None)
    return home


def git_dir(root: Path, branch: str) -> None:
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n")


def worktree(repository: Path, root: Path, branch: str) -> None:
    """A linked worktree as `git worktree add` lays it out."""
    meta = repository / ".git" / "worktrees" / root.name
    meta.mkdir(parents=True)
    (meta / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    (meta / "commondir").write_text("../..\n")
    root.mkdir(parents=True)
    (root / ".git").write_text(f"gitdir: {meta}\n")


def workspace_copies(tmp_path: Path) -> list[tuple[str, Path]]:
    """Each real transcript with its paths moved into repositories that exist here, on the
    branch it recorded, so the hook and the import locate the same projects."""
    workspace = tmp_path / "work"
    copies = []
    for number, (kind, name, root, branch) in enumerate(SESSIONS):
        target = workspace / f"s{number}"
        if name == "spotter-fum.jsonl":
            git_dir(target / "spotter", "main")
            fum = target / "spotter-worktrees" / "spotter-fum"
            worktree(target / "spotter", fum, "spotter-fum")
            (fum / "assets").mkdir()
        else:
            git_dir(target, branch)
        text = (TRANSCRIPTS / kind / name).read_text(encoding="utf-8")
        copy = tmp_path / "transcripts" / kind / f"{number}-{name}"
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text.replace(root, str(target)), encoding="utf-8")
        copies.append(("codex" if kind == "codex" else "claude-code", copy))
    return copies


def replay(home: Home, host: str, transcript: Path) -> int:
    reader = read_codex if host == "codex" else read_claude
    count = 0
    for call in reader(str(transcript)):
        result = home.hook(call.payload, "--host", host)
        assert result.returncode == 0, result.stderr
        count += 1
    return count


def procedures(home: Home) -> list[tuple[Any, ...]]:
    """What was learnt, without ids and times (an import keeps each run's own time)."""
    found = json.loads(home.remem("procedures", "list", "--all", "--json").stdout)
    return sorted(
        (
            p["project"],
            p["branch"],
            p["directory"],
            p["workflow"],
            p["command"],
            p["status"],
            p["verified_runs"],
            p["distinct_sessions"],
            json.dumps(p["variants"], sort_keys=True),
            tuple(p["files"]),
        )
        for p in found
    )


def import_json(home: Home, *args: str) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads(home.remem("import", *args, "--json").stdout)
    return summary


def test_importing_real_transcripts_learns_what_replaying_them_through_the_hook_learns(
    home: Home, template_home: Path, tmp_path: Path
) -> None:
    copies = workspace_copies(tmp_path)
    replayed, imported = with_env(home), with_env(second_home(template_home, tmp_path))
    calls = sum(replay(replayed, host, path) for host, path in copies)
    replayed.remem("worker", "--burst")

    first = [import_json(imported, host, str(path)) for host, path in copies]
    learnt = procedures(imported)
    events = (imported.status()["events"], imported.command_hits())
    second = [import_json(imported, host, str(path)) for host, path in copies]

    assert learnt == procedures(replayed)
    assert len(learnt) >= 3 and any(p[3] == "mix test" for p in learnt)
    assert sum(s["events_new"] for s in first) == calls
    assert sum(len(s["procedures"]) for s in first) == sum(p[5] == "active" for p in learnt)
    # Twice: nothing new, nothing changed.
    assert [s["events_new"] for s in second] == [0] * len(copies)
    assert sum(s["events_known"] for s in second) == calls
    assert [s["promoted"] for s in second] == [0] * len(copies)
    assert procedures(imported) == learnt
    assert (imported.status()["events"], imported.command_hits()) == events
    # The agent in the worktree is told the same commands either way.
    fum = tmp_path / "work" / "s0" / "spotter-worktrees" / "spotter-fum"
    digests = [h.remem("context", "--cwd", str(fum)).stdout for h in (replayed, imported)]
    told = [{line.split("`")[1] for line in d.splitlines() if "`" in line} for d in digests]
    assert told[0] == told[1] and "mix test" in told[1]  # the command it runs, not a spelling


def test_import_all_reads_the_agents_own_folders_and_prints_a_summary(home: Home) -> None:
    user_home = Path(home.env["HOME"])
    claude = user_home / ".claude" / "projects" / "-tmp-tmpqwh7888i"
    claude.mkdir(parents=True)
    shutil.copyfile(TRANSCRIPTS / "claude" / "01.jsonl", claude / "c7d3d95c.jsonl")
    codex = user_home / ".codex" / "sessions" / "2026" / "05" / "07"
    codex.mkdir(parents=True)
    shutil.copyfile(TRANSCRIPTS / "codex" / "01.jsonl", codex / "rollout-2026-05-07-x.jsonl")
    with_env(home)

    dry = import_json(home, "all", "--dry-run")
    assert home.status()["events"] == 0
    shown = home.remem("import", "all").stdout
    again = home.remem("import", "all", "--since", "1d", "--no-promote").stdout

    assert (dry["files"], dry["sessions"], dry["dry_run"]) == (2, 2, True)
    assert "procedures" not in dry
    stored = home.status()["events"]
    assert stored == dry["events_new"] == dry["commands"] + dry["edits"] > 20
    assert shown.startswith(f"Imported 2 file(s), 2 session(s): {dry['commands']} command(s)")
    assert "Promoted" in shown
    assert "0 new event(s)" in again and "older than --since" in again
    assert "No burst ran" in again


def test_a_missing_path_or_a_bad_duration_is_one_line_saying_what_to_do(home: Home) -> None:
    missing = home.remem("import", "codex", "/nonexistent/rollouts", check=False)
    bad = home.remem("import", "all", "--since", "30", check=False)

    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        "remem: No transcript file or folder at /nonexistent/rollouts: give a .jsonl or a folder."
    ]
    assert bad.returncode == 2 and "--since" in bad.stderr and "14d" in bad.stderr


def test_a_fifo_a_device_or_a_folder_among_transcripts_is_refused_and_counted(
    home: Home, tmp_path: Path
) -> None:
    """A FIFO no one writes to would block the import for ever, a device never ends."""
    folder = tmp_path / "rollouts"
    folder.mkdir()
    shutil.copyfile(TRANSCRIPTS / "codex" / "01.jsonl", folder / "rollout-a.jsonl")
    os.mkfifo(folder / "rollout-fifo.jsonl")
    (folder / "rollout-zero.jsonl").symlink_to("/dev/zero")
    with_env(home)

    summary = import_json(home, "codex", str(folder), "--no-promote")
    shown = home.remem("import", "codex", str(folder), "--no-promote").stdout
    named = home.remem("import", "codex", str(folder / "rollout-fifo.jsonl"), check=False)

    assert (summary["files"], summary["files_refused"]) == (1, 2)
    assert summary["events_new"] > 0
    assert "2 file(s) not regular or unreadable" in shown
    assert (named.returncode, named.stdout) == (1, "")
    assert named.stderr == (
        f"remem: {folder / 'rollout-fifo.jsonl'} is a FIFO, not a transcript: give a .jsonl "
        "or a folder.\n"
    )


def write_large_transcript(path: Path, megabytes: int) -> int:
    """A long synthetic Claude Code session with big outputs, named after its file; returns
    its calls."""
    rng = random.Random(7)
    calls = 0
    with open(path, "w", encoding="utf-8") as out:
        while out.tell() < megabytes * 1024 * 1024:
            calls += 1
            use_id = f"toolu_{path.stem}_{calls:07d}"
            stdout = "\n".join(f"line {i} {rng.getrandbits(64):x}" for i in range(1500))
            common = {"sessionId": path.stem, "cwd": "/home/dev/large", "gitBranch": "main"}
            use = {"type": "tool_use", "id": use_id, "name": "Bash"}
            use["input"] = {"command": f"make test-{calls % 50}"}
            out.write(json.dumps({**common, "type": "assistant", "message": {"content": [use]}}))
            progress = {"type": "progress", "data": {"output": stdout[:20000]}}
            out.write("\n" + json.dumps({**common, **progress}) + "\n")
            part = {"type": "tool_result", "tool_use_id": use_id, "content": stdout}
            result = {"stdout": stdout, "stderr": "", "interrupted": False}
            record = {**common, "type": "user", "message": {"content": [part]}}
            out.write(json.dumps({**record, "toolUseResult": result}) + "\n")
    return calls


def peak_rss_mb(home: Home, transcript: Path) -> tuple[float, dict[str, Any]]:
    argv = [REMEM, "import", "claude-code", str(transcript), "--no-promote", "--json"]
    process = subprocess.Popen(argv, env=home.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    output, error = process.stdout.read(), process.stderr.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, error
    return usage.ru_maxrss / 1024, json.loads(output)


@pytest.mark.skipif(not hasattr(os, "wait4"), reason="needs os.wait4 for a child's peak RSS")
def test_a_50_mb_transcript_is_streamed_in_flat_memory(
    home: Home, tmp_path: Path, record_property: Any
) -> None:
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small_calls, large_calls = write_large_transcript(small, 5), write_large_transcript(large, 50)
    with_env(home)

    small_rss, small_summary = peak_rss_mb(home, small)
    large_rss, large_summary = peak_rss_mb(home, large)
    record_property("peak_rss_mb", {"5 MB": round(small_rss, 1), "50 MB": round(large_rss, 1)})

    assert small_summary["events_new"] == small_calls
    assert large_summary["events_new"] == large_calls > 9 * small_calls
    assert large_summary["bytes_read"] == large.stat().st_size
    assert large_rss < small_rss + 25, (small_rss, large_rss)
