"""A new user's first hour, as they live it: agents' folders that already hold real sessions,
all older than the default import window, then `remem init`, `remem import all`, the command
its summary suggests, and what `procedures list`, `status`, the import summary and the digest
then say of the stale procedures learnt; then `remem recall` of an error one of them met."""

from __future__ import annotations

import calendar
import json
import os
import re
import shlex
import shutil
import time
from pathlib import Path

from tests.acceptance.test_import_cli import TRANSCRIPTS, git_dir, workspace_copies
from tests.conftest import Home

OLDEST_CALL = "2025-11-01T01:02:58Z"  # codex/02.jsonl's session began then (PROVENANCE.md)
LAST_VERIFIED = "2026-02-11"  # the latest day any of them verified a command
OPENPRINTKIT = "/home/randy/projects/python-3/OpenPrintKit"  # where codex/02.jsonl ran
OLD_FILE_TIME = time.mktime((2026, 6, 1, 0, 0, 0, 0, 0, 0))  # older than any default window
DAY = 86_400


def _agent_folders(tmp_path: Path, user: Path) -> list[Path]:
    """Each real session in the folder its agent keeps it in, its paths moved into
    repositories that exist here. The Claude Code files were last written long ago (they are
    left out by their time, unread); the Codex rollouts were copied today, their calls are
    old."""
    roots = []
    for host, copy in workspace_copies(tmp_path):
        text = copy.read_text(encoding="utf-8")
        cwd = re.search(r'"cwd":\s*"([^"]+)"', text)
        assert cwd, copy
        roots.append(Path(cwd.group(1)))
        if host == "claude-code":
            folder = user / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd.group(1))
            target = folder / copy.name
        else:
            target = user / ".codex" / "sessions" / "2026" / "05" / "07" / f"rollout-{copy.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(copy, target)
        if host == "claude-code":
            os.utime(target, (OLD_FILE_TIME, OLD_FILE_TIME))
    # A whole Codex session of the older shape, kept where an older release put it.
    project = tmp_path / "work" / "openprintkit"
    git_dir(project, "main")
    text = (TRANSCRIPTS / "codex" / "02.jsonl").read_text(encoding="utf-8")
    rollout = user / ".codex" / "sessions" / "rollout-2025-10-31T19-02-58.jsonl"
    rollout.write_text(text.replace(OPENPRINTKIT, str(project)), encoding="utf-8")
    return [*roots, project]


def _since_days(command: str) -> int:
    words = shlex.split(command)
    assert words[:3] == ["remem", "import", "all"] and words[3] == "--since", command
    assert len(words) == 5 and words[4].endswith("d"), command
    return int(words[4][:-1])


def _covers_the_oldest_call(days: int) -> bool:
    """Far enough back for the oldest call, and not much further: whole tens of days."""
    oldest = calendar.timegm(time.strptime(OLDEST_CALL, "%Y-%m-%dT%H:%M:%SZ"))
    age_days = (time.time() - oldest) / DAY
    return days % 10 == 0 and age_days < days <= age_days + 12


def _stale_in_digest(home: Home, cwd: Path) -> int:
    """How many procedures the digest of a directory shows as verified earlier."""
    lines = home.remem("context", "--cwd", str(cwd)).stdout.splitlines()
    if "Verified earlier (not lately):" not in lines:
        return 0
    assert lines[0].startswith("remem: no command verified lately in ")
    start = lines.index("Verified earlier (not lately):") + 1
    shown = 0
    for line in lines[start:]:
        if line.startswith("- `"):
            assert f"last verified {LAST_VERIFIED}" in line or "last verified 2025-" in line
            shown += 1
        elif not line.startswith("  "):
            break
    return shown


def test_a_new_user_learns_from_old_sessions_and_every_reader_counts_them_alike(
    tmp_path: Path,
) -> None:
    home = Home(tmp_path / "home")
    user = Path(home.env["HOME"])
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "REMEM_PROMOTION_MAX_AGE"):
        home.env.pop(name, None)
    roots = _agent_folders(tmp_path, user)

    said = home.remem("init", "--no-hooks").stdout.rstrip().splitlines()[-1]
    found = re.fullmatch(
        r"Found 4 Claude Code sessions and 2 Codex sessions, the oldest from "
        rf"{OLDEST_CALL[:10]}: run `(remem import all --since \d+d)` to learn from them\.",
        said,
    )
    assert found, said
    assert _covers_the_oldest_call(_since_days(found.group(1)))

    first = home.remem("import", "all").stdout
    assert "Read calls from the last 28 days (--since; by default twice promotion.max_age)." in (
        first.splitlines()
    )
    skipped = re.search(r"Skipped: (\d+) call\(s\) older than --since, 4 file\(s\) older", first)
    assert skipped and int(skipped.group(1)) > 300, first  # the rollouts' calls, all of them
    hint = re.search(
        r"^To read those older ones too: (remem import all --since \d+d)$", first, re.M
    )
    assert hint, first
    assert _covers_the_oldest_call(_since_days(hint.group(1)))
    assert "Promoted 0 procedure(s)." in first and "stale" not in first  # nothing was read

    summary = home.remem(*shlex.split(hint.group(1))[1:]).stdout
    assert "older than --since" not in summary  # the hint reads every call
    days = _since_days(hint.group(1))
    assert f"Read calls from the last {days} days (--since)." in summary.splitlines()
    learnt = re.search(
        rf"^Learnt (\d+) procedure\(s\), stale: last verified {LAST_VERIFIED}, older than "
        r"promotion\.max_age = 14d\. ",
        summary,
        re.M,
    )
    assert learnt, summary
    stale = int(learnt.group(1))
    assert stale >= 3

    # `procedures list`: never "No procedures yet"; the stale ones in their own section, with
    # their real runs, sessions and dates.
    listed = home.remem("procedures", "list").stdout
    assert "No procedures yet" not in listed
    assert listed.startswith("No active procedures: the stale ones below")
    assert (
        f"Stale procedures ({stale}), last verified {LAST_VERIFIED}, older than "
        "promotion.max_age = 14d\n"
    ) in listed
    every = json.loads(home.remem("procedures", "list", "--status", "stale", "--json").stdout)
    assert len(every) == stale
    rows = [line for line in listed.splitlines() if re.match(r"│ \d+ ", line)]
    assert len(rows) == stale
    for procedure in every:
        assert procedure["verified_runs"] >= 2 and procedure["distinct_sessions"] == 1
        (row,) = [line for line in rows if line.startswith(f"│ {procedure['id']} ")]
        cells = [cell.strip() for cell in row.strip("│").split("│")]
        assert cells[6:] == [
            str(procedure["verified_runs"]),
            str(procedure["distinct_sessions"]),
            procedure["last_verified_at"][:10],
        ]
        shown = json.loads(home.remem("procedures", "show", str(procedure["id"]), "--json").stdout)
        assert shown["evidence_runs"] == procedure["verified_runs"]

    # `status`: the same number, said the same way.
    assert home.status()["procedures"]["stale"] == stale
    assert (
        f"{stale} stale: last verified {LAST_VERIFIED}, older than promotion.max_age = 14d"
        in home.remem("status").stdout
    )

    # The digests: where nothing was verified lately, what was verified earlier, each once.
    worktree = tmp_path / "work" / "s0" / "spotter-worktrees" / "spotter-fum"
    directories = [worktree if "spotter" in str(root) else root for root in roots]
    assert sum(_stale_in_digest(home, cwd) for cwd in dict.fromkeys(directories)) == stale

    # Recall finds an error only a failed run held, and prints the text it matched.
    recalled = home.remem("recall", "secret_key_base", "--cwd", str(worktree)).stdout
    assert 'matched: "** (RuntimeError) no :secret_key_base configuration found' in recalled
