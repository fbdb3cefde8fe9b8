"""Old history is truthful: a real session older than `promotion.max_age`, imported with the
real `remem`, learns stale procedures that keep their real runs and dates, the import says
so, and the project's digest shows them under their own heading."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

from bench.common import make_repository, session_start
from tests.acceptance.test_import_cli import import_json, workspace_copies
from tests.acceptance.test_real_sessions import hook
from tests.conftest import Home, contract_time

SESSION_DAY = "2026-02-11"  # claude/spotter-fum.jsonl ran then: far older than 14 days


def test_importing_a_session_older_than_max_age_learns_stale_procedures_that_say_when(
    home: Home, tmp_path: Path
) -> None:
    copies = workspace_copies(tmp_path)
    (host, transcript) = copies[0]  # claude/spotter-fum.jsonl, an Elixir worktree
    root = tmp_path / "work" / "s0" / "spotter-worktrees" / "spotter-fum"
    home.env.pop("REMEM_PROMOTION_MAX_AGE", None)

    summary = import_json(home, host, str(transcript), "--since", "3650d")
    listed = json.loads(home.remem("procedures", "list", "--all", "--json").stdout)

    assert summary["procedures"] == [] and summary["max_age_s"] == 14 * 86_400
    assert summary["stale"] == len(listed) >= 2
    for procedure in listed:
        assert procedure["status"] == "stale"
        assert procedure["verified_runs"] >= 2 and procedure["distinct_sessions"] == 1
        assert procedure["last_verified_at"].startswith(SESSION_DAY)
        assert procedure["first_verified_at"].startswith(SESSION_DAY)
        shown = json.loads(home.remem("procedures", "show", str(procedure["id"]), "--json").stdout)
        assert len(shown["evidence"]) == shown["evidence_runs"] == procedure["verified_runs"]
        runs = procedure["verified_runs"]
        said = f"No recent successful run: verified by {runs} successful runs in 1 session, "
        assert shown["body"].splitlines()[1].startswith(said)

    # Imported again as text: the summary says why nothing is active.
    again = home.remem("import", host, str(transcript), "--since", "3650d").stdout
    assert "Promoted 0 procedure(s)." in again
    assert "are stale" not in again  # nothing new was learnt the second time
    assert "No active procedures: " in home.remem("procedures", "list").stdout

    digest = home.remem("context", "--cwd", str(root)).stdout
    lines = digest.splitlines()
    assert lines[0].startswith("remem: no command verified lately in ")
    assert lines[1] == "Verified earlier (not lately):"
    # The block's lines, up to the next heading (known errors, substitutions).
    block = list(itertools.takewhile(lambda line: line.startswith(("- ", "  ")), lines[2:]))
    shown_lines = [line for line in block if line.startswith("- `")]
    assert len(shown_lines) == len(listed)
    for procedure in listed:
        (line,) = [line for line in shown_lines if line.startswith(f"- `{procedure['command']}`")]
        facts = f"{procedure['verified_runs']} runs in 1 session, last verified {SESSION_DAY}, "
        files = len(procedure["variants"])  # a family run on several files says how many
        assert f"({facts}" in line or f"({files} files, {facts}" in line
    earlier = json.loads(home.remem("context", "--cwd", str(root), "--json").stdout)
    assert earlier["procedures"] == []
    assert {e["id"] for e in earlier["verified_earlier"]} == {p["id"] for p in listed}
    assert all(contract_time(e["last_verified_at"]) for e in earlier["verified_earlier"])


def test_an_import_that_learns_stale_procedures_says_so(home: Home, tmp_path: Path) -> None:
    (host, transcript) = workspace_copies(tmp_path)[0]
    home.env.pop("REMEM_PROMOTION_MAX_AGE", None)

    shown = home.remem("import", host, str(transcript), "--since", "3650d").stdout

    stale = len(json.loads(home.remem("procedures", "list", "--all", "--json").stdout))
    assert stale >= 2
    assert (
        f"Promoted 0 procedure(s).\nLearnt {stale} procedure(s), stale: last verified "
        f"{SESSION_DAY}, older than promotion.max_age = 14d."
    ) in shown
    assert "Read calls from the last 3650 days (--since)." in shown


def test_a_digest_of_many_stale_procedures_says_how_many_more_and_how_to_list_them(
    home: Home, tmp_path: Path
) -> None:
    """Thirteen workflows verified a month ago: the digest shows ten and names the rest."""
    project = make_repository(tmp_path / "shop")
    home.env.pop("REMEM_PROMOTION_MAX_AGE", None)
    month_ago = time.time() - 30 * 86_400
    for number in range(13):
        for run in range(2):
            payload = {
                "session_id": f"old-{run}",
                "cwd": str(project),
                "command": f"make target-{number:02d}",
                "exit_code": 0,
                "timestamp": month_ago + number * 60 + run,
                "event_id": f"old-{number}-{run}",
            }
            assert home.hook(payload, "--host", "generic").returncode == 0
    home.remem("worker", "--burst")
    assert [p["status"] for p in home.procedures()] == ["stale"] * 13

    digest = home.remem("context", "--cwd", str(project)).stdout
    lines = digest.splitlines()
    assert lines[1] == "Verified earlier (not lately):"
    assert len([line for line in lines if line.startswith("- `make target-")]) == 10
    listing = f"remem procedures list --status stale --project {project}"
    assert f"… and 3 more: `{listing}`" in lines
    assert hook(home, session_start(project, "next")) == digest
    listed = home.remem(*listing.split()[1:]).stdout
    assert all(f"make target-{n:02d}" in listed for n in range(13))
    as_json = json.loads(home.remem("context", "--cwd", str(project), "--json").stdout)
    assert (len(as_json["verified_earlier"]), as_json["verified_earlier_more"]) == (10, 3)
