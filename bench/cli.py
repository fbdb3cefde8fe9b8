"""How long `remem` takes to answer the commands people and agents run most, next to a bare
Python start-up.

Times `remem --help`, `remem context` (a project with procedures and lessons), `remem status`,
`remem procedures list` and `remem procedures show` (of a procedure with a lesson; the same
home) against `python -c "import sqlite3, json"`, taking turns within each round so
that machine noise lands on every case. Every command must exit 0 and print something. Then
times `remem mcp` from its start to its answer to an agent's `initialize`. The home lives in a
temporary directory, removed at the end.

    .venv/bin/python bench/cli.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import (
    bytecode_env,
    compile_bytecode,
    print_start_up_table,
    remem_env,
    start_up_figures,
)
from hook import DIGEST_PROCEDURES, VENV_BIN, fill_procedures, init_home, run_checked

WARMUP_RUNS = 3
MCP_TARGET_MS = 1000.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
# The ceilings, as ratios of the bare start-up's median.
TARGETS = {
    "help": 2.0,
    "context": 2.0,
    "status": 3.0,
    "procedures list": 2.0,
    "procedures show": 2.0,
}
CASES = ("baseline", *TARGETS)


def commands(project: Path) -> dict[str, list[str]]:
    remem = str(VENV_BIN / "remem")
    return {
        "baseline": [str(VENV_BIN / "python"), "-c", "import sqlite3, json"],
        "help": [remem, "--help"],
        "context": [remem, "context", "--cwd", str(project)],
        "status": [remem, "status"],
        "procedures list": [remem, "procedures", "list"],
        # The first procedure filled failed once before passing: it has a lesson to show.
        "procedures show": [remem, "procedures", "show", "1"],
    }


def time_cases(runs: int, home: Path, project: Path) -> dict[str, list[float]]:
    argvs = commands(project)
    timings: dict[str, list[float]] = {case: [] for case in CASES}
    for round_index in range(WARMUP_RUNS + runs):
        for case in CASES:
            env = bytecode_env() if case == "baseline" else remem_env(home)
            env["COLUMNS"] = "100"  # a wide terminal: `--help` is answered as people see it
            elapsed = run_checked(argvs[case], env, expect_stdout=case != "baseline")
            if round_index >= WARMUP_RUNS:
                timings[case].append(elapsed * 1000)
    return timings


def time_mcp(runs: int, home: Path) -> list[float]:
    """Milliseconds from starting `remem mcp` to reading its answer to `initialize`."""
    timings = []
    for round_index in range(WARMUP_RUNS + runs):
        started = time.perf_counter()
        server = subprocess.Popen(
            [str(VENV_BIN / "remem"), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=remem_env(home),
        )
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        server.stdin.flush()
        answer = server.stdout.readline()
        elapsed = time.perf_counter() - started
        server.stdin.close()
        if server.wait(timeout=60) != 0 or json.loads(answer).get("id") != 1:
            raise RuntimeError(f"remem mcp did not answer initialize: {answer!r}")
        if round_index >= WARMUP_RUNS:
            timings.append(elapsed * 1000)
    return timings


def summarise(timings: dict[str, list[float]], mcp_ms: list[float], runs: int) -> dict[str, Any]:
    median = statistics.median(mcp_ms)
    mcp = {
        "median_ms": median,
        "min_ms": min(mcp_ms),
        "max_ms": max(mcp_ms),
        "target_ms": MCP_TARGET_MS,
        "pass": median <= MCP_TARGET_MS,
    }
    figures = start_up_figures(timings, TARGETS)
    return {**figures, "mcp": mcp, "runs": runs, "warmup_runs": WARMUP_RUNS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="measured runs per case")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    compile_bytecode()
    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-cli-"))
    try:
        home, project = tmp / "home", tmp / "projects" / "shop"
        init_home(home)
        fill_procedures(home, project)
        print(f"promoted {DIGEST_PROCEDURES} procedures", file=sys.stderr)
        print(f"timing {WARMUP_RUNS}+{args.runs} runs of {', '.join(CASES)}", file=sys.stderr)
        timings = time_cases(args.runs, home, project)
        print(f"timing {WARMUP_RUNS}+{args.runs} starts of remem mcp", file=sys.stderr)
        mcp_ms = time_mcp(args.runs, home)
    finally:
        shutil.rmtree(tmp)
    report = summarise(timings, mcp_ms, args.runs)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_start_up_table(report)
        mcp = report["mcp"]
        print(
            f"remem mcp to initialize: {mcp['median_ms']:.0f} ms (target ≤ {MCP_TARGET_MS:.0f} ms)"
            f"  {'PASS' if mcp['pass'] else 'MISS'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
