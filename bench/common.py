"""What the benchmark scripts share: the environment their remem processes run in, and the
projects and sessions replayed through the real hook (by bench/coverage.py and the acceptance
tests alike)."""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def bytecode_env() -> dict[str, str]:
    """This environment minus PYTHONDONTWRITEBYTECODE, so processes read the .pyc files as an
    installed wheel would."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def remem_env(home: Path) -> dict[str, str]:
    # A stray REMEM_DATABASE_URL or REMEM_CONFIG from the caller would point remem elsewhere.
    env = {k: v for k, v in bytecode_env().items() if not k.startswith("REMEM_")}
    env["REMEM_HOME"] = str(home)
    return env


def compile_bytecode() -> None:
    """Byte-compile remem/ as pip does for a wheel, so start-up costs what it costs a user."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "remem")],
        env=bytecode_env(),
        check=True,
    )


def start_up_figures(timings: dict[str, list[float]], targets: dict[str, float]) -> dict[str, Any]:
    """Median, min and max milliseconds per case (the first is the baseline), and each targeted
    case's median as a ratio of the baseline's."""
    cases = {
        case: {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms)}
        for case, ms in timings.items()
    }
    baseline = next(iter(cases.values()))["median_ms"]
    ratios = {}
    for case, target in targets.items():
        ratio = cases[case]["median_ms"] / baseline
        ratios[case] = {"ratio": ratio, "target": target, "pass": ratio <= target}
    machine = {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "cpu_count": os.cpu_count(),
    }
    return {"machine": machine, "cases": cases, "ratios": ratios}


def print_start_up_table(report: dict[str, Any]) -> None:
    machine, cases, ratios = report["machine"], report["cases"], report["ratios"]
    print(
        f"Python {machine['python']}, SQLite {machine['sqlite']}, {machine['cpu_count']} CPUs; "
        f"{report['runs']} runs after {report['warmup_runs']} warm-up runs each"
    )
    print()
    names = max(12, *(len(case) + 1 for case in cases))
    print(f"{'':<{names}}{'median':>9}{'min':>9}{'max':>9}  (ms)")
    for case, figures in cases.items():
        print(
            f"{case:<{names}}{figures['median_ms']:>9.1f}{figures['min_ms']:>9.1f}"
            f"{figures['max_ms']:>9.1f}"
        )
    print()
    for case, figures in ratios.items():
        verdict = "PASS" if figures["pass"] else "MISS"
        print(
            f"{case + ' / baseline':<{names + 13}}{figures['ratio']:.2f}×  "
            f"target ≤ {figures['target']:.2f}×  {verdict}"
        )


# --- projects and sessions replayed through the real hook (bench/coverage.py, the tests) -------


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def make_repository(path: Path, branch: str = "main") -> Path:
    path.mkdir(parents=True)
    git("init", "-q", "-b", branch, cwd=path)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=path)
    return path


def add_worktree(repository: Path, path: Path, branch: str) -> Path:
    git("worktree", "add", "-q", str(path), "-b", branch, cwd=repository)
    return path


def relocated(payload: dict[str, Any], user_root: str, workspace: Path) -> bytes:
    """A recorded payload with its paths under `user_root` moved into `workspace`, as the
    hook reads it; the transcript it names stays where it is (a rollout is read there)."""
    moved = json.loads(json.dumps(payload).replace(user_root, str(workspace)))
    if "transcript_path" in payload:
        moved["transcript_path"] = payload["transcript_path"]
    return json.dumps(moved).encode()


def session_start(cwd: Path, session: str, transcript_path: str | None = None) -> dict[str, Any]:
    """The SessionStart payload of a session starting in `cwd` (Claude Code's and Codex's
    share these fields)."""
    return {
        "session_id": session,
        "transcript_path": transcript_path or f"/home/dev/.claude/projects/x/{session}.jsonl",
        "cwd": str(cwd),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
