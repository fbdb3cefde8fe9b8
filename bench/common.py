"""What the benchmark scripts share: the environment their remem processes run in."""

from __future__ import annotations

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
    print(f"{'':<12}{'median':>9}{'min':>9}{'max':>9}  (ms)")
    for case, figures in cases.items():
        print(
            f"{case:<12}{figures['median_ms']:>9.1f}{figures['min_ms']:>9.1f}"
            f"{figures['max_ms']:>9.1f}"
        )
    print()
    for case, figures in ratios.items():
        verdict = "PASS" if figures["pass"] else "MISS"
        print(
            f"{case + ' / baseline':<25}{figures['ratio']:.2f}×  "
            f"target ≤ {figures['target']:.2f}×  {verdict}"
        )
