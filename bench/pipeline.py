"""How fast one worker burst turns captured events into verifications and procedures.

Captures 100,000 generic-host events (1,000 sessions, 50 projects, a few days old) through the
real capture code, then times a burst (`work(burst=True)`, as `remem worker --burst` runs it)
draining the queue, next to a bare `executemany` of the same number of verification rows into a
copy of the same database, in the same run. The target is that ratio, which a faster or slower
machine leaves about where it is; events/s is printed for information. Also times `claim_next`
with 1,000 and with 1,000,000 done tasks in the queue. Everything it creates lives in one
temporary directory, removed at the end.

    .venv/bin/python bench/pipeline.py [--runs N] [--json] [--events N]
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
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import remem_env

from remem.capture.hosts import build_event
from remem.capture.store import store_event
from remem.config import load_settings
from remem.db import sqlite as sqlite_settings
from remem.db.engine import make_engine
from remem.procedures.steps import classify
from remem.queue.store import claim_next
from workers.runner import Worker
from workers.work import work

VENV_BIN = Path(sys.executable).parent
EVENTS = 100_000
EVENTS_PER_SESSION = 100
PROJECTS = 50
DAYS = 3
SEED = 20240611
TARGET_OVER_RAW = 20.0
TARGET_CLAIM_RATIO = 1.5
CLAIMS = 1_000
WARMUP_CLAIMS = 5
DONE_TASKS = {"1k": 1_000, "1M": 1_000_000}
# None of these is in the default ignore list, so every successful run becomes a verification.
SHARED_COMMANDS = (
    "make test",
    "make lint",
    "npm run lint",
    "npm test",
    "npm run build",
    "pytest -q",
    "cargo test",
    "go test ./...",
    "ruff check .",
    "mypy src",
    "tox -e py311",
    "docker compose build",
    "cd web && npm test",
    "MIX_ENV=test mix test 2>&1",
)
INSERT_VERIFICATION = (
    "INSERT INTO verifications (event_id, step, project_id, branch, directory, workflow,"
    " workflow_hash, command, masked, session_id, host, verified_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def init_home(home: Path) -> Path:
    result = subprocess.run(
        [str(VENV_BIN / "remem"), "init"], env=remem_env(home), text=True, capture_output=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"remem init exited {result.returncode}: {result.stderr}")
    return home / "remem.db"


def project_commands(rng: random.Random) -> list[str]:
    tests = [f"pytest -q tests/test_{k}.py" for k in rng.sample(range(40), 2)]
    return rng.sample(SHARED_COMMANDS, 4) + tests


def session_payloads(
    rng: random.Random, session: int, cwd: str, commands: list[str], start_at: float, size: int
) -> list[tuple[float, dict[str, Any]]]:
    """One agent session: edits among runs, passing and failing, of a few of the project's
    commands."""
    session_id = f"sess-{session:04d}-{rng.getrandbits(32):08x}"
    used = rng.sample(commands, rng.randint(3, len(commands)))
    at, payloads = start_at, []
    for index in range(size):
        at += rng.uniform(5, 40)
        payload: dict[str, Any] = {
            "host": "generic",
            "session_id": session_id,
            "cwd": cwd,
            "branch": "main",
            "timestamp": datetime.fromtimestamp(at, UTC).isoformat(),
            "event_id": index,
        }
        if rng.random() < 0.3:
            names = rng.sample(range(30), rng.randint(1, 3))
            payload["files"] = [f"src/module_{n}.py" for n in names]
        else:
            exit_code = rng.choice((1, 2)) if rng.random() < 0.2 else 0
            payload["command"] = rng.choice(used)
            payload["exit_code"] = exit_code
            payload["output"] = (
                f"FAILED tests/test_api.py::test_case_{index} - AssertionError\n"
                f"exit status {exit_code}"
                if exit_code
                else f"{rng.randint(1, 300)} passed in {rng.uniform(0.1, 9):.2f}s"
            )
        payloads.append((at, payload))
    return payloads


def dataset_payloads(events: int, now: float) -> list[tuple[float, dict[str, Any]]]:
    """Sessions spread over the last few days, overlapping, in the order a hook would see them."""
    rng = random.Random(SEED)
    sessions = max(1, events // EVENTS_PER_SESSION)
    projects = min(PROJECTS, sessions)
    commands = [project_commands(rng) for _ in range(projects)]
    span_s = DAYS * 86_400 - 2 * 3_600
    # Pairs of sessions differ in length by the same amount, so the total stays exact.
    sizes = [events // sessions] * sessions
    sizes[-1] += events - sum(sizes)
    for pair in range(0, sessions - 1, 2):
        delta = rng.randint(0, 20)
        sizes[pair] += delta
        sizes[pair + 1] -= delta
    payloads = []
    for session in range(sessions):
        project = session % projects
        start_at = now - DAYS * 86_400 + span_s * session / sessions
        cwd = f"/home/dev/project-{project:02d}"
        payloads += session_payloads(rng, session, cwd, commands[project], start_at, sizes[session])
    payloads.sort(key=lambda item: item[0])
    return payloads


def store_dataset(path: Path, payloads: list[tuple[float, dict[str, Any]]]) -> None:
    connection = sqlite_settings.connect(str(path))

    def execute(sql: str, params: dict[str, Any]) -> list[Any]:
        return connection.execute(sql, params).fetchall()

    try:
        connection.execute("BEGIN IMMEDIATE")
        for at, payload in payloads:
            event = build_event(payload, "generic", at + 0.05, lambda cwd: (cwd, None, cwd, "."))
            if store_event(execute, event) is None:
                raise RuntimeError(f"event {event.idempotency_key} was stored twice")
        connection.execute("COMMIT")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()


def restore(snapshot: Path, path: Path) -> None:
    # A -wal left beside the copy would be replayed over it.
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(snapshot, path)


def query(path: Path, sql: str) -> list[Any]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def verification_rows(path: Path) -> list[tuple[Any, ...]]:
    """One row per successful command event, with the values the worker would store."""
    rows = query(
        path,
        "SELECT id, project_id, branch, command, session_id, host, event_at, cwd, directory,"
        " output_excerpt FROM captured_events WHERE kind = 'command' AND outcome = 'success'"
        " ORDER BY id",
    )
    return [
        (
            event_id,
            run.step,
            project_id,
            branch or "",
            run.directory,
            run.workflow,
            run.workflow_hash,
            run.command,
            int(run.masked),
            session_id,
            host,
            at,
        )
        for event_id, project_id, branch, command, session_id, host, at, cwd, directory, output in (
            rows
        )
        for run in classify(command, True, output, cwd, directory)
    ]


def time_burst(home: Path, snapshot: Path) -> tuple[float, Counter[str]]:
    restore(snapshot, home / "remem.db")
    settings = load_settings(remem_env(home))
    engine = make_engine(settings.database_url)
    try:
        worker = Worker(engine, settings)
        started = time.perf_counter()
        stats = work(worker, burst=True)
        elapsed = time.perf_counter() - started
    finally:
        engine.dispose()
    return elapsed, stats


def check_burst(path: Path, stats: Counter[str], sessions: int, events: int, runs: int) -> None:
    (procedures,), (verifications,) = query(
        path, "SELECT count(*) FROM procedures UNION ALL SELECT count(*) FROM verifications"
    )
    problems = []
    if stats["tasks_done"] != sessions:
        problems.append(f"tasks_done is {stats['tasks_done']}, expected {sessions}")
    if stats["events"] != events:
        problems.append(f"events is {stats['events']}, expected {events}")
    if procedures == 0:
        problems.append("no procedure was promoted")
    if verifications != runs:
        problems.append(f"{verifications} verifications, expected {runs}")
    if problems:
        raise RuntimeError(f"burst went wrong: {'; '.join(problems)} (stats: {dict(stats)})")


def time_raw_insert(snapshot: Path, path: Path, rows: list[tuple[Any, ...]]) -> float:
    restore(snapshot, path)
    # The engine's own PRAGMAs (WAL, synchronous NORMAL, foreign keys), nothing else.
    connection = sqlite_settings.connect(str(path))
    try:
        started = time.perf_counter()
        connection.execute("BEGIN")
        connection.executemany(INSERT_VERIFICATION, rows)
        connection.execute("COMMIT")
        return time.perf_counter() - started
    finally:
        connection.close()


INSERT_TASK = (
    "INSERT INTO extraction_tasks (idempotency_key, session_id, kind, status, priority,"
    " high_watermark_event_id, cursor_event_id, attempts, run_after, created_at, updated_at)"
    " VALUES (?, ?, 'promote', ?, 0, 100, ?, 0, ?, ?, ?)"
)


def task_rows(done_tasks: int, sessions: int, now: float) -> Iterator[tuple[Any, ...]]:
    """`done_tasks` finished tasks from the last day, then one due task per session."""
    for index in range(done_tasks):
        at = now - 86_400 + index * 0.01
        yield f"done-{index}:promote", index % sessions + 1, "done", 100, at, at, at
    for session in range(1, sessions + 1):
        yield f"{session}:promote", session, "pending", 0, now - 1, now - 1, now - 1


def fill_queue(path: Path, done_tasks: int, pending_tasks: int, now: float) -> None:
    connection = sqlite_settings.connect(str(path))
    try:
        connection.execute("BEGIN")
        connection.execute(
            "INSERT INTO projects (id, root, created_at) VALUES (1, '/home/dev/project', ?)",
            (now,),
        )
        connection.executemany(
            "INSERT INTO sessions (id, host, session_key, project_id, started_at, last_event_at)"
            " VALUES (?, 'generic', ?, 1, ?, ?)",
            ((s, f"sess-{s}", now - 3_600, now) for s in range(1, pending_tasks + 1)),
        )
        connection.executemany(INSERT_TASK, task_rows(done_tasks, pending_tasks, now))
        connection.execute("COMMIT")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()


def time_claims(home: Path) -> list[float]:
    """Microseconds per claim_next call, each claiming one pending task."""
    settings = load_settings(remem_env(home))
    engine = make_engine(settings.database_url)
    timings = []
    try:
        for index in range(WARMUP_CLAIMS + CLAIMS):
            started = time.perf_counter()
            task = claim_next(engine, "bench", time.time(), 300)
            elapsed = time.perf_counter() - started
            if task is None:
                raise RuntimeError(f"{home}: claim {index} found no pending task")
            if index >= WARMUP_CLAIMS:
                timings.append(elapsed * 1e6)
    finally:
        engine.dispose()
    return timings


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def generate(home: Path, events: int) -> dict[str, Any]:
    database = init_home(home)
    started = time.perf_counter()
    store_dataset(database, dataset_payloads(events, time.time()))
    generate_s = time.perf_counter() - started
    (sessions,), (projects,) = query(
        database, "SELECT count(*) FROM sessions UNION ALL SELECT count(*) FROM projects"
    )
    print(
        f"generated {events:,} events over {sessions:,} sessions and {projects} projects"
        f" in {generate_s:.1f} s",
        file=sys.stderr,
    )
    return {"events": events, "sessions": sessions, "projects": projects, "generate_s": generate_s}


def measure_pipeline(tmp: Path, events: int, runs: int) -> dict[str, Any]:
    home, database, snapshot = tmp / "home", tmp / "home" / "remem.db", tmp / "snapshot.db"
    dataset = generate(home, events)
    shutil.copyfile(database, snapshot)
    rows = verification_rows(database)
    burst_s, raw_s = [], []
    for run in range(runs):
        # Each burst beside its own raw insert: the ratio of one pair is of one moment.
        elapsed, stats = time_burst(home, snapshot)
        check_burst(database, stats, dataset["sessions"], events, len(rows))
        burst_s.append(elapsed)
        raw_s.append(time_raw_insert(snapshot, tmp / "raw.db", rows))
        print(
            f"run {run + 1}: burst {elapsed:.2f} s, raw insert {raw_s[-1]:.3f} s,"
            f" {elapsed / raw_s[-1]:.1f}×",
            file=sys.stderr,
        )
    return {
        **dataset,
        "verification_rows": len(rows),
        "burst_s": burst_s,
        "raw_insert_s": raw_s,
        "events_per_s": spread([events / s for s in burst_s]),
        "burst_over_raw": {
            **(over_raw := spread([b / r for b, r in zip(burst_s, raw_s, strict=True)])),
            "target": TARGET_OVER_RAW,
            "pass": over_raw["median"] <= TARGET_OVER_RAW,
        },
    }


def measure_claims(tmp: Path) -> dict[str, Any]:
    medians = {}
    for label, done_tasks in DONE_TASKS.items():
        home = tmp / f"claim-{label}"
        fill_queue(init_home(home), done_tasks, WARMUP_CLAIMS + CLAIMS, time.time())
        medians[label] = statistics.median(time_claims(home))
        print(
            f"claim_next with {done_tasks:,} done tasks: {medians[label]:.0f} µs", file=sys.stderr
        )
    ratio = medians["1M"] / medians["1k"]
    return {
        "median_us": medians,
        "ratio": ratio,
        "target": TARGET_CLAIM_RATIO,
        "pass": ratio <= TARGET_CLAIM_RATIO,
    }


def print_table(report: dict[str, Any]) -> None:
    machine, pipeline, claims = report["machine"], report["pipeline"], report["claims"]
    rate, ratio = pipeline["events_per_s"], pipeline["burst_over_raw"]
    print(
        f"Python {machine['python']}, SQLite {machine['sqlite']}, {machine['cpu_count']} CPUs;"
        f" {pipeline['events']:,} events, {pipeline['sessions']:,} sessions,"
        f" {pipeline['projects']} projects; {report['runs']} runs"
    )
    print(f"generation (not measured): {pipeline['generate_s']:.1f} s")
    print()
    rate_range = f"{rate['min']:,.0f}–{rate['max']:,.0f}"
    ratio_range = f"{ratio['min']:.1f}–{ratio['max']:.1f}×"
    print(f"{'':<28}{'median':>10}{'min–max':>16}  target")
    print(f"{'burst events/s':<28}{rate['median']:>10,.0f}{rate_range:>16}")
    print(
        f"{'burst / raw insert':<28}{ratio['median']:>9.1f}×{ratio_range:>16}  "
        f"{'≤ 20×':<18}{verdict(ratio['pass'])} ({pipeline['verification_rows']:,} rows)"
    )
    for label in DONE_TASKS:
        print(f"{'claim_next µs, ' + label + ' done':<28}{claims['median_us'][label]:>10.0f}")
    print(
        f"{'claim_next 1M / 1k':<28}{claims['ratio']:>9.2f}×{'':>16}  "
        f"{'≤ 1.5×':<18}{verdict(claims['pass'])}"
    )


def verdict(passed: bool) -> str:
    return "PASS" if passed else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="measured bursts")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--events", type=int, default=EVENTS, help="captured events to drain")
    args = parser.parse_args()
    if args.runs < 1 or args.events < 1:
        parser.error("--runs and --events must be at least 1")
    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-"))
    try:
        pipeline = measure_pipeline(tmp, args.events, args.runs)
        claims = measure_claims(tmp)
    finally:
        shutil.rmtree(tmp)
    machine = {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "cpu_count": os.cpu_count(),
    }
    report = {"machine": machine, "runs": args.runs, "pipeline": pipeline, "claims": claims}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
