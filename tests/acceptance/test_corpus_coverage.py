"""The development corpus replay (bench/coverage.py --corpus), run as `make bench` runs it, on an
excerpt of the corpus (tests/fixtures/corpus, with its notice): four real sessions of one
project whose figures are known.

- `git pull` passes three times in the first two sessions, so the two later sessions start with
  it as the one procedure line of their digest's first page; it does work (no read, no
  bookkeeping), and the fourth session runs it again, the third does not.
- `gh pr checks 183` fails in the third session on `E2E Tests<TAB>fail<TAB>3m18s<TAB>…`; in the
  fourth, `gh pr checks 185` fails on the same line with another duration. That error came
  back, the digest and the advice at the failure quote it, and that quote is the failure's own
  error: digits aside, the tabs it quotes as `\\t` are the output's tabs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO

CORPUS = REPO / "tests" / "fixtures" / "corpus"
PROJECT = "FSM1+cipher-box"


def coverage(*args: str) -> subprocess.CompletedProcess[str]:
    script = str(REPO / "bench" / "coverage.py")
    return subprocess.run(
        [sys.executable, script, *args], capture_output=True, text=True, timeout=300
    )


def test_the_corpus_replay_counts_what_each_session_was_shown_and_ran() -> None:
    result = coverage("--corpus", str(CORPUS), "--json")
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    (project,) = report["projects"]
    assert (project["project"], project["sessions"], project["commands"]) == (PROJECT, 4, 7)
    # noise: two procedure lines over the sessions (`git pull`, twice), neither a read
    assert (project["procedure_lines"], project["noise_lines"]) == (2, 0)
    # advice: two failures, the second answered, quoting its own error
    assert (project["failures"], project["advised"], project["on_target"]) == (2, 1, 1)
    # errors met again: the second `gh pr checks` failure, which the digest and advice showed
    assert (project["met_again"], project["met_again_shown"]) == (1, 1)
    # substitutions: nothing failed that never passed while another way did
    assert (project["knowable"], project["knowable_shown"]) == (0, 0)
    # first page: `git pull` shown to the last two sessions, run by the last
    assert (project["page_one_lines"], project["page_one_run"]) == (2, 1)
    assert project["misses"] == ["2026-02-21T212740-e67c9434.jsonl: NOT RUN git pull"]


def test_the_corpus_section_says_when_there_is_no_corpus(tmp_path: Path) -> None:
    result = coverage("--corpus", str(tmp_path / "absent"))
    assert result.returncode == 0, result.stderr
    assert f"no corpus at {tmp_path / 'absent'}: skipped" in result.stderr
    assert result.stdout.splitlines()[0] == "## Usefulness on the development corpus"
    assert "no corpus at" in result.stdout
