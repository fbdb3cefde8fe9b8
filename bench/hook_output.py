"""What a tool's printout costs `remem-hook`: a megabyte of output that made redaction rules
backtrack, against a megabyte of plain text.

Times the installed `remem-hook` storing a Claude Code PostToolUse event whose stdout is 1 MiB
of plain log lines, and 1 MiB of each text that once made a rule restart its scan (URL
userinfo: `x@y ` + `a://`…; the .netrc family: `machine m` + ` login default`…; the expect
family: `send "x" expect "` + `assw`…; all three at once), each event then checked to be
stored. The target: each adversarial case within 1.5× the plain one, measured in the same run.
Everything it creates lives in one temporary directory, removed at the end.

    .venv/bin/python bench/hook_output.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import compile_bytecode, remem_env

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
FIXTURE = REPO / "tests" / "fixtures" / "hooks" / "claude-code" / "post_tool_use_bash_success.json"
MIB = 1 << 20
TARGET_RATIO = 1.5
WARMUP_RUNS = 2
# (case, prefix, what repeats); "plain" is the baseline.
TEXTS = (
    ("plain", "", "2026-12-07 19:00:00 INFO worker: processed batch 1841 in 12 ms\n"),
    ("url userinfo", "x@y ", "a://"),
    (".netrc", "machine m", " login default"),
    ("expect", 'send "x" expect "', "assw"),
)


def output_of(case: str) -> str:
    """1 MiB of the case's text; "all three" is a third of each adversarial one."""
    if case == "all three":
        third = MIB // 3
        return "\n".join(output_of(name)[:third] for name, _p, _t in TEXTS[1:])
    prefix, token = next((p, t) for name, p, t in TEXTS if name == case)
    return (prefix + token * (MIB // len(token) + 1))[:MIB]


def run_hook(env: dict[str, str], payload: dict[str, Any]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [str(VENV_BIN / "remem-hook"), "--host", "claude-code"],
        input=json.dumps(payload).encode(),
        env=env,
        check=True,
        capture_output=True,
        timeout=600,
    )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="measured runs per case")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    compile_bytecode()
    cases = [name for name, _p, _t in TEXTS] + ["all three"]
    template = json.loads(FIXTURE.read_text(encoding="utf-8"))
    workdir = Path(tempfile.mkdtemp(prefix="remem-bench-output-"))
    try:
        home = workdir / "home"
        env = remem_env(home)
        subprocess.run([str(VENV_BIN / "remem"), "init"], env=env, check=True, capture_output=True)
        outputs = {case: output_of(case) for case in cases}
        timings: dict[str, list[float]] = {case: [] for case in cases}
        for run in range(-WARMUP_RUNS, args.runs):
            for case in cases:  # interleaved: a slow moment of the machine hits every case
                payload = {**template, "tool_use_id": f"toolu_{case}_{run}", "cwd": str(workdir)}
                payload["tool_response"] = {"stdout": outputs[case], "interrupted": False}
                elapsed = run_hook(env, payload)
                if run >= 0:
                    timings[case].append(elapsed)
        connection = sqlite3.connect(f"file:{home / 'remem.db'}?mode=ro", uri=True)
        stored = connection.execute("SELECT count(*) FROM captured_events").fetchone()[0]
        connection.close()
        expected = len(cases) * (args.runs + WARMUP_RUNS)
        if stored != expected:
            print(f"{stored} events stored of {expected}", file=sys.stderr)
            return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    plain = statistics.median(timings["plain"])
    report: dict[str, Any] = {"runs": args.runs, "output_bytes": MIB, "cases": {}}
    for case in cases:
        median = statistics.median(timings[case])
        ratio = median / plain
        report["cases"][case] = {
            "median_ms": median * 1000,
            "min_ms": min(timings[case]) * 1000,
            "max_ms": max(timings[case]) * 1000,
            "ratio": ratio,
            "target": None if case == "plain" else TARGET_RATIO,
            "pass": case == "plain" or ratio <= TARGET_RATIO,
        }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{'case':<14}{'median ms':>10}{'min–max ms':>16}{'/ plain':>9}")
        for case, figures in report["cases"].items():
            spread = f"{figures['min_ms']:.0f}–{figures['max_ms']:.0f}"
            print(
                f"{case:<14}{figures['median_ms']:>10.0f}{spread:>16}{figures['ratio']:>8.2f}×"
                + ("" if figures["pass"] else "  over target")
            )
    return 0 if all(figures["pass"] for figures in report["cases"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
