"""Promotion at scale: the cost of a window in a group with a long history, how long it holds
the write lock, whether hooks fired meanwhile wait past their budget, and how long the
maintenance transactions that age tallies last.

- window cost: one workflow group with 1,000 and with 100,000 prior runs (captured through the
  real capture code, drained by the worker); then new sessions' windows of that group, each
  timed through `Worker.run_once` (prepare + apply); the figure is the ratio of the medians.
- write lock: from BEGIN IMMEDIATE to COMMIT of each window's apply (the worker records it),
  p99 over the windows of the large group.
- hooks: `remem-hook` processes fired one after another throughout a burst of new sessions over
  the large group; events spooled because the lock was held past the hook's 1 s budget.
- maintenance: 1,000 procedures whose groups have 10,000 verified runs each, a day after their
  oldest runs aged out of max_age; `mark_stale` is timed transaction by transaction.

Everything lives in one temporary directory, removed at the end.

    .venv/bin/python bench/scale.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import remem_env
from pipeline import store_dataset

from remem.config import load_settings
from remem.db.engine import make_engine
from remem.procedures import promote
from remem.procedures.steps import workflow_hash
from remem.procedures.tally import VERIFIED, GroupRun, derive, session_lasts
from workers.runner import Worker
from workers.work import work

VENV_BIN = Path(sys.executable).parent
SEED = 20261209
DAY = 86_400.0
CWD = "/home/dev/shop"
SIZES = {"full": (1_000, 100_000), "quick": (1_000, 10_000)}
RUNS_PER_SESSION = 100
WINDOWS = {"full": 40, "quick": 10}
WINDOW_EVENTS = 20
HOOK_SESSIONS = {"full": 100, "quick": 20}
MAINTENANCE = {"full": (1_000, 10_000), "quick": (100, 1_000)}
TARGET_WINDOW_RATIO = 1.5
TARGET_LOCK_P99_MS = 20.0
TARGET_MAINTENANCE_MS = 50.0


def init_home(home: Path) -> Path:
    result = subprocess.run(
        [str(VENV_BIN / "remem"), "init"], env=remem_env(home), text=True, capture_output=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"remem init exited {result.returncode}: {result.stderr}")
    return home / "remem.db"


def session_events(
    rng: random.Random, name: str, start_at: float, size: int
) -> list[tuple[float, dict[str, Any]]]:
    """One session of the group's workflow: mostly passing runs, a failure now and then
    followed by an edit and a pass."""
    at, payloads = start_at, []
    for index in range(size):
        at += rng.uniform(1, 5)
        payload: dict[str, Any] = {
            "host": "generic",
            "session_id": name,
            "cwd": CWD,
            "branch": "main",
            "timestamp": datetime.fromtimestamp(at, UTC).isoformat(),
            "event_id": index,
        }
        if rng.random() < 0.05:
            payload["files"] = [f"src/module_{rng.randrange(20)}.py"]
        else:
            failed = rng.random() < 0.05
            payload.update(
                command="make test",
                exit_code=2 if failed else 0,
                output="FAILED tests/test_api.py::test_cart" if failed else "120 passed in 3.1s",
            )
        payloads.append((at, payload))
    return payloads


class GroupHome:
    """A home whose one workflow group holds `prior_runs` runs, drained by a worker."""

    def __init__(self, tmp: Path, prior_runs: int, now: float) -> None:
        self.home = tmp / f"group-{prior_runs}"
        self.database = init_home(self.home)
        self.rng = random.Random(SEED + prior_runs)
        self.now = now
        self.sessions = 0
        sessions = max(1, prior_runs // RUNS_PER_SESSION)
        payloads = []
        for _ in range(sessions):
            start_at = now - 10 * DAY + 9 * DAY * self.sessions / sessions
            payloads += self.new_session(start_at, RUNS_PER_SESSION)
        store_dataset(self.database, payloads)
        self.settings = load_settings(remem_env(self.home))
        self.engine = make_engine(self.settings.database_url)
        self.worker = Worker(self.engine, self.settings, clock=time.time)
        started = time.perf_counter()
        stats = work(self.worker, burst=True)
        self.drain_s = time.perf_counter() - started
        self.drain_events = stats["events"]

    def new_session(self, start_at: float, size: int) -> list[tuple[float, dict[str, Any]]]:
        self.sessions += 1
        return session_events(self.rng, f"s{self.sessions:06d}", start_at, size)

    def time_windows(self, windows: int) -> tuple[list[float], list[float]]:
        """Seconds per window (prepare + apply) and the write lock each held."""
        elapsed, locks = [], []
        for _ in range(windows):
            store_dataset(self.database, self.new_session(time.time() - 60, WINDOW_EVENTS))
            started = time.perf_counter()
            if not self.worker.run_once():
                raise RuntimeError("the new window was not claimed")
            elapsed.append(time.perf_counter() - started)
            locks.append(self.worker.write_lock_s[-1])
        return elapsed, locks

    def close(self) -> None:
        self.engine.dispose()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def fire_hooks(home: Path, running: threading.Event, results: list[int]) -> None:
    index = 0
    while running.is_set():
        index += 1
        payload = {
            "host": "generic",
            "session_id": "hook-session",
            "cwd": CWD,
            "command": "make lint",
            "exit_code": 0,
            "event_id": f"hook-{index}",
        }
        done = subprocess.run(
            [str(VENV_BIN / "remem-hook")],
            input=json.dumps(payload).encode(),
            env=remem_env(home),
            capture_output=True,
        )
        results.append(done.returncode)


def spooled(home: Path) -> int:
    spool = home / "spool"
    if not spool.is_dir():
        return 0
    return sum(
        len(path.read_text().splitlines()) for path in spool.iterdir() if path.suffix == ".jsonl"
    )


def measure_hooks(group: GroupHome, sessions: int) -> dict[str, Any]:
    """A burst of new sessions over the large group, with hooks fired throughout."""
    payloads = []
    for _ in range(sessions):
        payloads += group.new_session(time.time() - 3_600, RUNS_PER_SESSION)
    store_dataset(group.database, payloads)
    before = spooled(group.home)
    running, results = threading.Event(), []
    running.set()
    thread = threading.Thread(target=fire_hooks, args=(group.home, running, results))
    group.worker.write_lock_s.clear()
    group.worker.stats.clear()  # the worker's counts so far are the drains before
    thread.start()
    started = time.perf_counter()
    stats = work(group.worker, burst=True)
    burst_s = time.perf_counter() - started
    running.clear()
    thread.join()
    locks_ms = [s * 1e3 for s in group.worker.write_lock_s]
    return {
        "events": len(payloads),
        "burst_s": burst_s,
        "events_per_s": stats["events"] / burst_s,
        "hooks": len(results),
        "hooks_failed": sum(1 for code in results if code != 0),
        "spooled": spooled(group.home) - before,
        "lock_p99_ms": percentile(locks_ms, 0.99),
        "lock_max_ms": max(locks_ms),
    }


def measure_windows(tmp: Path, mode: str) -> dict[str, Any]:
    small, large = SIZES[mode]
    figures: dict[str, Any] = {}
    homes = {}
    for label, prior in (("small", small), ("large", large)):
        group = GroupHome(tmp, prior, time.time())
        elapsed, locks = group.time_windows(WINDOWS[mode])
        figures[label] = {
            "prior_runs": prior,
            "drain_events_per_s": group.drain_events / group.drain_s,
            "window_ms": statistics.median(elapsed) * 1e3,
            "window_ms_max": max(elapsed) * 1e3,
            "lock_p99_ms": percentile([s * 1e3 for s in locks], 0.99),
            "lock_max_ms": max(locks) * 1e3,
        }
        print(
            f"{prior:,} prior runs: window {figures[label]['window_ms']:.1f} ms, lock p99 "
            f"{figures[label]['lock_p99_ms']:.1f} ms (drained at "
            f"{figures[label]['drain_events_per_s']:,.0f} events/s)",
            file=sys.stderr,
        )
        homes[label] = group
    ratio = figures["large"]["window_ms"] / figures["small"]["window_ms"]
    hooks = measure_hooks(homes["large"], HOOK_SESSIONS[mode])
    print(
        f"burst over the large group: {hooks['events_per_s']:,.0f} events/s, lock p99 "
        f"{hooks['lock_p99_ms']:.1f} ms, {hooks['hooks']} hooks, {hooks['spooled']} spooled",
        file=sys.stderr,
    )
    for group in homes.values():
        group.close()
    lock_p99 = max(figures["large"]["lock_p99_ms"], hooks["lock_p99_ms"])
    return {
        **figures,
        "window_ratio": {
            "ratio": ratio,
            "target": TARGET_WINDOW_RATIO,
            "pass": ratio <= TARGET_WINDOW_RATIO,
        },
        "lock_p99_ms": {
            "value": lock_p99,
            "target": TARGET_LOCK_P99_MS,
            "pass": lock_p99 <= TARGET_LOCK_P99_MS,
        },
        "hooks": {**hooks, "pass": hooks["spooled"] == 0 and hooks["hooks_failed"] == 0},
    }


def fill_maintenance(path: Path, procedures: int, runs: int, now: float) -> None:
    """`procedures` promoted groups of `runs` verified runs each, spread over max_age, as the
    worker would have left them a day ago: their oldest day of runs ages out now."""
    settings = load_settings({"REMEM_HOME": str(path.parent)})
    rules = promote.rules_of(settings)
    decided_at = now - DAY
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = OFF")
    connection.execute("BEGIN")
    connection.execute("INSERT INTO projects (id, root, created_at) VALUES (1, ?, ?)", (CWD, now))
    connection.execute(
        "INSERT INTO sessions (id, host, session_key, project_id, started_at, last_event_at) "
        "VALUES (1, 'generic', 'bench', 1, ?, ?)",
        (now, now),
    )
    span = rules.max_age_s - 60
    event_id = 0
    for group in range(procedures):
        workflow = f"make test-{group}"
        digest = workflow_hash(workflow)
        group_runs, rows = [], []
        for index in range(runs):
            event_id += 1
            at = decided_at - span + span * index / runs
            group_runs.append(GroupRun(event_id, 1, at, VERIFIED, "main", workflow))
            rows.append(
                (event_id, 0, 1, "main", ".", workflow, digest, workflow, 0, 1, "generic", at)
            )
        connection.executemany(
            "INSERT INTO verifications (event_id, step, project_id, branch, directory, "
            "workflow, workflow_hash, command, masked, session_id, host, verified_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        tally = derive(group_runs, decided_at, rules)
        cursor = connection.execute(
            "INSERT INTO procedures (project_id, scope, branch, directory, workflow, "
            "workflow_hash, command, variants, topic_key, status, confidence, verified_runs, "
            "distinct_sessions, branches, evidence_event_ids, files, files_more, "
            "first_verified_at, last_verified_at, body, created_at, updated_at) VALUES "
            "(1, 'branch', 'main', '.', ?, ?, ?, '[]', ?, 'active', 0.95, ?, 1, '[]', '[]', "
            "'[]', 0, ?, ?, '', ?, ?)",
            (workflow, digest, workflow, f"t-{group}", runs, rows[0][-1], rows[-1][-1], now, now),
        )
        connection.executemany(
            "INSERT INTO procedure_evidence (procedure_id, event_id, verified_at) VALUES (?, ?, ?)",
            ((cursor.lastrowid, row[0], row[-1]) for row in rows),
        )
        state = connection.execute(
            "INSERT INTO group_states (project_id, scope, branch, directory, workflow, "
            "workflow_hash, tally, oldest_fresh_at, version, updated_at) VALUES "
            "(1, 'branch', 'main', '.', ?, ?, ?, ?, 1, ?)",
            (workflow, digest, tally.to_json(), tally.oldest_fresh_at, decided_at),
        )
        connection.executemany(
            "INSERT INTO group_sessions (group_id, session_id, last_verified_at) VALUES (?, ?, ?)",
            ((state.lastrowid, s, at) for s, at in session_lasts(group_runs).items()),
        )
    connection.execute("COMMIT")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()


def measure_maintenance(tmp: Path, mode: str) -> dict[str, Any]:
    procedures, runs = MAINTENANCE[mode]
    home = tmp / "maintenance"
    database = init_home(home)
    now = time.time()
    started = time.perf_counter()
    fill_maintenance(database, procedures, runs, now)
    filled_s = time.perf_counter() - started
    print(f"filled {procedures:,} procedures × {runs:,} runs in {filled_s:.0f} s", file=sys.stderr)
    settings = load_settings(remem_env(home))
    engine = make_engine(settings.database_url)
    transactions: list[float] = []
    original_begin = engine.begin

    def timed_begin() -> Any:
        return _Timed(original_begin(), transactions)

    engine.begin = timed_begin  # type: ignore[method-assign]
    try:
        started = time.perf_counter()
        stats = promote.mark_stale(engine, settings, now)
        total_s = time.perf_counter() - started
    finally:
        engine.dispose()
    if stats["aged_groups"] != procedures:
        raise RuntimeError(f"maintenance aged {stats['aged_groups']} groups of {procedures}")
    worst = max(transactions) * 1e3
    print(
        f"maintenance: {len(transactions)} transactions, longest {worst:.1f} ms, "
        f"{total_s:.1f} s in all",
        file=sys.stderr,
    )
    return {
        "procedures": procedures,
        "runs_per_group": runs,
        "transactions": len(transactions),
        "total_s": total_s,
        "max_transaction_ms": {
            "value": worst,
            "target": TARGET_MAINTENANCE_MS,
            "pass": worst <= TARGET_MAINTENANCE_MS,
        },
    }


class _Timed:
    """A write transaction's context manager that records how long it was open."""

    def __init__(self, inner: Any, into: list[float]) -> None:
        self.inner, self.into = inner, into

    def __enter__(self) -> Any:
        self.started = time.perf_counter()
        return self.inner.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        try:
            return self.inner.__exit__(*exc)
        finally:
            self.into.append(time.perf_counter() - self.started)


def verdict(passed: bool) -> str:
    return "PASS" if passed else "MISS"


def print_table(report: dict[str, Any]) -> None:
    windows, maintenance = report["windows"], report["maintenance"]
    small, large = windows["small"], windows["large"]
    ratio, lock, hooks = windows["window_ratio"], windows["lock_p99_ms"], windows["hooks"]
    worst = maintenance["max_transaction_ms"]
    print(f"{'window, ' + format(small['prior_runs'], ',') + ' prior runs, ms':<44}"
          f"{small['window_ms']:>8.1f}")  # fmt: skip
    print(f"{'window, ' + format(large['prior_runs'], ',') + ' prior runs, ms':<44}"
          f"{large['window_ms']:>8.1f}")  # fmt: skip
    print(f"{'window cost ratio':<44}{ratio['ratio']:>7.2f}×  ≤ 1.5×  {verdict(ratio['pass'])}")
    print(f"{'write lock p99, large group, ms':<44}{lock['value']:>8.1f}  ≤ 20  "
          f"{verdict(lock['pass'])}")  # fmt: skip
    print(f"{'hooks spooled during a burst':<44}{hooks['spooled']:>8}  0 of {hooks['hooks']}  "
          f"{verdict(hooks['pass'])}")  # fmt: skip
    print(f"{'burst over the large group, events/s':<44}{hooks['events_per_s']:>8,.0f}")
    print(f"{'maintenance, longest transaction, ms':<44}{worst['value']:>8.1f}  ≤ 50  "
          f"{verdict(worst['pass'])}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    mode = "quick" if args.quick else "full"
    tmp = Path(tempfile.mkdtemp(prefix="remem-scale-"))
    try:
        windows = measure_windows(tmp, mode)
        maintenance = measure_maintenance(tmp, mode)
    finally:
        shutil.rmtree(tmp)
    machine = {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "cpu_count": os.cpu_count(),
    }
    report = {"machine": machine, "mode": mode, "windows": windows, "maintenance": maintenance}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
