"""How long `remem` takes to answer the commands people and agents run most, next to a bare
Python start-up.

Times `remem --help`, `remem context` (a project with procedures and lessons) and `remem status`
(the same home) against `python -c "import sqlite3, json"`, taking turns within each round so
that machine noise lands on every case. Every command must exit 0 and print something. The home
lives in a temporary directory, removed at the end.

    .venv/bin/python bench/cli.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
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
# The ceilings, as ratios of the bare start-up's median.
TARGETS = {"help": 2.0, "context": 2.0, "status": 3.0}
CASES = ("baseline", *TARGETS)


def commands(project: Path) -> dict[str, list[str]]:
    remem = str(VENV_BIN / "remem")
    return {
        "baseline": [str(VENV_BIN / "python"), "-c", "import sqlite3, json"],
        "help": [remem, "--help"],
        "context": [remem, "context", "--cwd", str(project)],
        "status": [remem, "status"],
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


def summarise(timings: dict[str, list[float]], runs: int) -> dict[str, Any]:
    return {**start_up_figures(timings, TARGETS), "runs": runs, "warmup_runs": WARMUP_RUNS}


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
    finally:
        shutil.rmtree(tmp)
    report = summarise(timings, args.runs)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_start_up_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
