"""How many events 64 agents' hooks can capture at once, and how long each hook then takes.

Starts 64 threads together, each running --events-per-hook `remem-hook` processes one after
another (a hook is one process per tool call), all writing generic-host events into one fresh
home. Times the whole wave and every hook, then checks that every hook exited 0 and that the
database holds exactly 64 × N events; events spooled because the lock was held past the hook's
1 s timeout are counted, ingested with `remem spool ingest`, and the total checked again. Each
run uses a fresh home in a temporary directory, removed at the end. Informational: no target.

    .venv/bin/python bench/concurrency.py [--runs N] [--events-per-hook N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from common import compile_bytecode, remem_env

VENV_BIN = Path(sys.executable).parent
HOOKS = 64
EVENTS_PER_HOOK = 20
HOOK_TIMEOUT_S = 120
DEAD_LETTER_FILE = "dead-letter.jsonl"
OVERFLOW_FILE = "overflow.json"


def remem(home: Path, *args: str) -> str:
    # Keeps the caller's PYTHONDONTWRITEBYTECODE: remem imports SQLAlchemy and Alembic, whose
    # caches would otherwise land in the virtualenv.
    env = remem_env(home)
    if "PYTHONDONTWRITEBYTECODE" in os.environ:
        env["PYTHONDONTWRITEBYTECODE"] = os.environ["PYTHONDONTWRITEBYTECODE"]
    result = subprocess.run(
        [str(VENV_BIN / "remem"), *args], env=env, text=True, capture_output=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"remem {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result.stdout


def payload(thread: int, index: int) -> bytes:
    return json.dumps(
        {
            "host": "generic",
            "session_id": f"s{thread}",
            "cwd": f"/p/{thread % 4}",
            "command": "make test",
            "exit_code": 0,
            "event_id": f"{thread}-{index}",
        }
    ).encode()


class Wave:
    """64 threads of sequential hooks. Each hook leaves (started, finished) perf_counter
    seconds; failures are kept as messages, since a thread cannot raise to the caller."""

    def __init__(self, home: Path, events_per_hook: int) -> None:
        self.env, self.events_per_hook = remem_env(home), events_per_hook
        self.start_line = threading.Barrier(HOOKS)
        self.lock = threading.Lock()
        self.spans: list[tuple[float, float]] = []
        self.failures: list[str] = []

    def run(self) -> None:
        threads = [threading.Thread(target=self.send, args=(t,)) for t in range(HOOKS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def send(self, thread: int) -> None:
        self.start_line.wait()
        for index in range(self.events_per_hook):
            stdin = payload(thread, index)
            started = time.perf_counter()
            failure = self.run_hook(f"{thread}-{index}", stdin)
            finished = time.perf_counter()
            with self.lock:
                self.spans.append((started, finished))
                if failure:
                    self.failures.append(failure)

    def run_hook(self, event_id: str, stdin: bytes) -> str | None:
        """None when the hook exited 0, else what went wrong."""
        try:
            result = subprocess.run(
                [str(VENV_BIN / "remem-hook")],
                input=stdin,
                env=self.env,
                capture_output=True,
                timeout=HOOK_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return f"hook {event_id} ran past {HOOK_TIMEOUT_S} s"
        if result.returncode != 0:
            stderr = result.stderr.decode(errors="replace").strip()
            return f"hook {event_id} exited {result.returncode}: {stderr}"
        return None


def count_events(home: Path) -> tuple[int, int]:
    connection = sqlite3.connect(f"file:{home / 'remem.db'}?mode=ro", uri=True)
    try:
        rows, keys = connection.execute(
            "SELECT count(*), count(DISTINCT idempotency_key) FROM captured_events"
        ).fetchone()
    finally:
        connection.close()
    return rows, keys


def count_spooled(home: Path) -> int:
    """Records waiting in the spool; raises on any that were dropped or dead-lettered."""
    spool_dir = home / "spool"
    lost = [name for name in (DEAD_LETTER_FILE, OVERFLOW_FILE) if (spool_dir / name).exists()]
    if lost:
        raise RuntimeError(f"{spool_dir}: events were dropped or dead-lettered: {lost}")
    records = 0
    # Hidden files are the spool's locks, not records.
    for name in os.listdir(spool_dir):
        if name.endswith(".jsonl") and not name.startswith("."):
            lines = (spool_dir / name).read_bytes().split(b"\n")
            records += sum(1 for line in lines if line.strip())
    return records


def verify(home: Path, expected: int) -> tuple[int, int]:
    """(events spooled, events ingested from the spool); raises unless the database ends up
    holding exactly `expected` distinct events."""
    spooled, ingested = count_spooled(home), 0
    if spooled:
        report = json.loads(remem(home, "spool", "ingest", "--json"))
        ingested = int(report["events_stored"])
        if count_spooled(home):
            raise RuntimeError(f"{home}: spool not empty after ingestion: {report}")
    rows, keys = count_events(home)
    if rows != expected or keys != expected:
        raise RuntimeError(
            f"{home}: {rows} events ({keys} distinct) in the database, expected {expected}"
            f" ({spooled} spooled, {ingested} ingested)"
        )
    return spooled, ingested


def measure_run(tmp: Path, run: int, events_per_hook: int) -> dict[str, Any]:
    home = tmp / f"home-{run}"
    remem(home, "init")
    wave = Wave(home, events_per_hook)
    wave.run()
    if wave.failures:
        shown = "; ".join(wave.failures[:3])
        raise RuntimeError(f"{len(wave.failures)} hooks failed: {shown}")
    events = HOOKS * events_per_hook
    spooled, ingested = verify(home, events)
    wall_s = max(end for _, end in wave.spans) - min(start for start, _ in wave.spans)
    latencies_ms = [(end - start) * 1000 for start, end in wave.spans]
    figures = {
        "wall_s": wall_s,
        "events_per_s": events / wall_s,
        "latency_median_ms": statistics.median(latencies_ms),
        "latency_p95_ms": statistics.quantiles(latencies_ms, n=20, method="inclusive")[18],
        "latency_max_ms": max(latencies_ms),
        "spooled": spooled,
        "ingested": ingested,
    }
    print(
        f"run {run + 1}: {events:,} events in {wall_s:.2f} s, {figures['events_per_s']:,.0f}"
        f" events/s, p95 {figures['latency_p95_ms']:.0f} ms, {spooled} spooled",
        file=sys.stderr,
    )
    return figures


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarise(runs: list[dict[str, Any]], events_per_hook: int) -> dict[str, Any]:
    machine = {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "cpu_count": os.cpu_count(),
    }
    return {
        "machine": machine,
        "hooks": HOOKS,
        "events_per_hook": events_per_hook,
        "events": HOOKS * events_per_hook,
        "runs": len(runs),
        "per_run": runs,
        "wall_s": spread([r["wall_s"] for r in runs]),
        "events_per_s": spread([r["events_per_s"] for r in runs]),
        "latency_ms": {
            name: spread([r[f"latency_{name}_ms"] for r in runs])
            for name in ("median", "p95", "max")
        },
        "spooled": spread([r["spooled"] for r in runs]),
    }


def print_table(report: dict[str, Any]) -> None:
    machine, latency = report["machine"], report["latency_ms"]
    print(
        f"Python {machine['python']}, SQLite {machine['sqlite']}, {machine['cpu_count']} CPUs;"
        f" {report['hooks']} hooks × {report['events_per_hook']} events at once,"
        f" {report['runs']} run{'s' if report['runs'] != 1 else ''} (fresh home each)"
    )
    print()
    print(f"{'':<26}{'median':>10}{'min–max':>18}")
    rows = [
        ("wall time, s", report["wall_s"], ".2f"),
        ("events/s", report["events_per_s"], ",.0f"),
        ("hook latency median, ms", latency["median"], ".0f"),
        ("hook latency p95, ms", latency["p95"], ".0f"),
        ("hook latency max, ms", latency["max"], ".0f"),
        ("spooled events", report["spooled"], "g"),
    ]
    for label, figures, spec in rows:
        span = f"{figures['min']:{spec}}–{figures['max']:{spec}}"
        print(f"{label:<26}{figures['median']:>10{spec}}{span:>18}")
    print()
    print(
        f"informational, no target; every hook exited 0 and all {report['events']:,} events"
        " were stored (spooled ones after `remem spool ingest`)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="waves, each on a fresh home")
    parser.add_argument(
        "--events-per-hook",
        type=int,
        default=EVENTS_PER_HOOK,
        help="hook processes each of the 64 threads runs in turn",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.runs < 1 or args.events_per_hook < 1:
        parser.error("--runs and --events-per-hook must be at least 1")
    compile_bytecode()
    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-"))
    try:
        runs = [measure_run(tmp, run, args.events_per_hook) for run in range(args.runs)]
    finally:
        shutil.rmtree(tmp)
    report = summarise(runs, args.events_per_hook)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
