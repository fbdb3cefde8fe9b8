"""How fast a machine ships its events to the team's PostgreSQL, and how fast team workers
promote them.

- ship: 20,000 events (400 sessions × 50: runs of a few workflows, a sixth of them failing,
  and a few edits, on branch main) in 4 git work trees whose origins are github.com/acme/*,
  captured through the real capture code and promoted locally once. `ship()` then sends them
  all into a fresh team database on a throwaway local PostgreSQL cluster (fsync off), from
  fresh cursors each run; next to it, in the same run, a bare psycopg `executemany` of the
  same rows, batch by batch, into a table with no index (and a COPY of them, for context).
- promote: copies of the shipped, unpromoted team database (CREATE DATABASE … TEMPLATE, after
  one VACUUM ANALYZE of it, autovacuum off), one per case, drained by 1, 2 and 4 team worker
  processes started together (each this script with --promote-worker: the daemon's team
  promote loop, workers.team.TeamPromoter, a project at a time, until the queue is empty).
  Tasks/s and events/s run from the first claim to the last worker's end; every task must be
  done exactly once. Before each run's cases, the same events are promoted by a local burst
  on SQLite (from the unpromoted local database): one team worker must promote at least a
  third as fast, and 2 and 4 workers 1.7× and 2.5× as fast as one, where the machine has a
  core for each worker and the server beside them (the CPU count is printed with them).

Everything lives in one temporary directory and one cluster, both removed at the end.

    .venv/bin/python bench/team.py [--runs N] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from common import REPO, remem_env
from pipeline import init_home, spread, store_dataset, time_burst, verdict
from sqlalchemy import text

from remem.config import Settings, load_settings
from remem.db.engine import make_engine
from remem.db.migrate import upgrade
from remem.queue.store import ClaimedTask
from remem.team.ship import BATCH_EVENTS, ship
from workers.handlers import PromoteHandler
from workers.runner import Worker
from workers.team import TeamPromoter
from workers.work import run_burst

if TYPE_CHECKING:
    from tests.pg_server import PostgresServer

SEED = 20261201
DAYS = 3
# (sessions, events per session)
SIZES = {"full": (400, 50), "quick": (24, 25)}
PROJECTS = ("shop", "api", "web", "infra")
SHARE = "github.com/acme/*"
MACHINE = "bench"
WORKFLOWS = (
    "make test",
    "make lint",
    "pytest -q tests/test_cart.py",
    "npm run build",
    "ruff check .",
    "cargo test",
)
WORKERS = (1, 2, 4)
WORKER_TIMEOUT_S = 1_800
TARGET_SHIP_EVENTS_PER_S = 5_000
# One team worker against the local burst on the same events, and workers against one.
TARGET_OVER_LOCAL = 0.33
TARGET_SPEEDUP = {"2": 1.7, "4": 2.5}
# The columns ship() inserts into the team's captured_events, with their types there.
RAW_COLUMNS = (
    ("idempotency_key", "text"),
    ("session_id", "integer"),
    ("project_id", "integer"),
    ("host", "text"),
    ("hook_event", "text"),
    ("kind", "text"),
    ("tool_name", "text"),
    ("tool_use_id", "text"),
    ("command", "text"),
    ("outcome", "text"),
    ("exit_code", "integer"),
    ("exit_code_source", "text"),
    ("error_excerpt", "text"),
    ("output_excerpt", "text"),
    ("branch", "text"),
    ("cwd", "text"),
    ("directory", "text"),
    ("files", "text"),
    ("change_hash", "text"),
    ("transcript_path", "text"),
    ("payload", "text"),
    ("event_at", "double precision"),
    ("captured_at", "double precision"),
    ("event_at_reported", "text"),
)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def clone(path: Path, name: str) -> str:
    """A work tree as git lays it out, its origin on github.com/acme."""
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (path / ".git" / "config").write_text(
        '[core]\n\trepositoryformatversion = 0\n[remote "origin"]\n'
        f"\turl = git@github.com:acme/{name}.git\n"
    )
    return str(path.resolve())


def session_payloads(
    rng: random.Random, session: int, cwd: str, start_at: float, size: int
) -> list[tuple[float, dict[str, Any]]]:
    """One agent session: runs of three workflows, a sixth of them failing, a few edits."""
    used = rng.sample(WORKFLOWS, 3)
    at, payloads = start_at, []
    for index in range(size):
        at += rng.uniform(5, 40)
        payload: dict[str, Any] = {
            "host": "generic",
            "session_id": f"team-{session:04d}",
            "cwd": cwd,
            "branch": "main",
            "timestamp": datetime.fromtimestamp(at, UTC).isoformat(),
            "event_id": index,
        }
        if rng.random() < 0.05:
            payload["files"] = [f"src/module_{rng.randrange(20)}.py"]
        else:
            failed = rng.random() < 0.15
            payload.update(
                command=rng.choice(used),
                exit_code=2 if failed else 0,
                output=f"FAILED tests/test_api.py::test_case_{index} - AssertionError"
                if failed
                else f"{rng.randint(1, 300)} passed in {rng.uniform(0.1, 9):.2f}s",
            )
        payloads.append((at, payload))
    return payloads


def generate(tmp: Path, sessions: int, size: int) -> dict[str, Any]:
    """A local home holding the dataset, promoted once as the daemon would have."""
    home = tmp / "home"
    database = init_home(home)
    roots = [clone(tmp / "src" / name, name) for name in PROJECTS]
    rng, now = random.Random(SEED), time.time()
    payloads = []
    for session in range(sessions):
        start_at = now - DAYS * 86_400 + (DAYS * 86_400 - 7_200) * session / sessions
        cwd = roots[session % len(roots)]
        payloads += session_payloads(rng, session, cwd, start_at, size)
    payloads.sort(key=lambda item: item[0])
    started = time.perf_counter()
    store_dataset(database, payloads)
    generate_s = time.perf_counter() - started
    snapshot = tmp / "unpromoted.db"
    shutil.copyfile(database, snapshot)
    settings = load_settings(remem_env(home))
    local = make_engine(settings.database_url)
    try:
        started = time.perf_counter()
        stats = run_burst(Worker(local, settings))
        burst_s = time.perf_counter() - started
    finally:
        local.dispose()
    progress(
        f"generated {len(payloads):,} events over {sessions} sessions and {len(roots)} projects"
        f" in {generate_s:.1f} s; local burst {burst_s:.1f} s,"
        f" {stats['promoted']} procedures promoted"
    )
    return {
        "home": home,
        "snapshot": snapshot,
        "events": len(payloads),
        "sessions": sessions,
        "projects": len(roots),
        "generate_s": generate_s,
        "local_burst_s": burst_s,
        "local_promoted": stats["promoted"],
    }


def team_env(home: Path, url: str) -> dict[str, str]:
    env = remem_env(home)
    env.update(
        REMEM_TEAM_DATABASE_URL=url,
        REMEM_TEAM_MACHINE=MACHINE,
        REMEM_TEAM_SHARE=SHARE,
        REMEM_TEAM_PROMOTE="true",
    )
    return env


def start_cluster() -> PostgresServer:
    # tests/ is not a package the wheel installs: the repository root must be importable.
    if str(REPO) not in sys.path:
        sys.path.append(str(REPO))
    from tests.pg_server import PostgresServer

    server = PostgresServer()
    server.start()
    return server


def fetch(server: PostgresServer, database: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(server.dsn(database)) as connection:
        return connection.execute(sql).fetchall()


def raw_rows(home: Path) -> list[tuple[Any, ...]]:
    """What ship() inserts for each local event, as plain tuples in RAW_COLUMNS' order."""
    settings = load_settings(remem_env(home))
    local = make_engine(settings.database_url)
    try:
        with local.connect() as connection:
            roots: dict[str, str] = dict(
                connection.execute(text("SELECT root, project_key FROM projects")).all()
            )
            rows = connection.execute(
                text(
                    "SELECT idempotency_key, session_id, project_id, host, hook_event, kind,"
                    " tool_name, tool_use_id, command, outcome, exit_code, exit_code_source,"
                    " error_excerpt, output_excerpt, branch, cwd, directory, files, change_hash,"
                    " event_at, captured_at, event_at_reported FROM captured_events"
                    " WHERE kind != 'session_start' ORDER BY id"
                )
            ).all()
    finally:
        local.dispose()
    return [
        (f"{MACHINE}/{row[0]}", *row[1:15], roots[row[15]], *row[16:19], None, "{}", *row[19:])
        for row in rows
    ]


def raw_statements(table: str) -> tuple[str, str, str]:
    names = ", ".join(name for name, _ in RAW_COLUMNS)
    columns = ", ".join(f"{name} {kind}" for name, kind in RAW_COLUMNS)
    placeholders = ", ".join(["%s"] * len(RAW_COLUMNS))
    return (
        f"CREATE TABLE {table} ({columns})",
        f"INSERT INTO {table} ({names}) VALUES ({placeholders})",
        f"COPY {table} ({names}) FROM STDIN",
    )


def time_raw(
    server: PostgresServer, database: str, run: int, rows: list[tuple[Any, ...]]
) -> dict[str, float]:
    """Seconds for a bare executemany of the rows, one transaction per ship batch, and for one
    COPY of them, each into a new table without an index."""
    timings = {}
    with psycopg.connect(server.dsn(database)) as connection:
        create, insert, _ = raw_statements(f"raw_insert_{run}")
        connection.execute(create)
        connection.commit()
        started = time.perf_counter()
        for start in range(0, len(rows), BATCH_EVENTS):
            with connection.cursor() as cursor:
                cursor.executemany(insert, rows[start : start + BATCH_EVENTS])
            connection.commit()
        timings["executemany_s"] = time.perf_counter() - started
        create, _, copy_from = raw_statements(f"raw_copy_{run}")
        connection.execute(create)
        connection.commit()
        started = time.perf_counter()
        with connection.cursor() as cursor, cursor.copy(copy_from) as copy:
            for row in rows:
                copy.write_row(row)
        connection.commit()
        timings["copy_s"] = time.perf_counter() - started
    return timings


def time_ship(
    server: PostgresServer, template: str, dataset: dict[str, Any]
) -> tuple[str, float, dict[str, int]]:
    """Ship every local event into a new copy of the migrated, empty team database, from
    fresh cursors; that database's name, the seconds ship() took, and its report."""
    name = server.create_database(template=template)
    url = server.url(name)
    settings = load_settings(team_env(dataset["home"], url))
    local, team = make_engine(settings.database_url), make_engine(url)
    try:
        with local.begin() as connection:
            connection.execute(text("DELETE FROM team_links"))
        with team.connect() as connection:
            connection.execute(text("SELECT 1"))  # connected outside the timing
        started = time.perf_counter()
        report = asdict(ship(local, team, settings, time.time()))
        elapsed = time.perf_counter() - started
    finally:
        local.dispose()
        team.dispose()
    (events,), (tasks,) = fetch(
        server,
        name,
        "SELECT count(*) FROM captured_events UNION ALL"
        " SELECT count(*) FROM extraction_tasks WHERE status = 'pending'",
    )
    expected = (dataset["events"], 0, dataset["events"], dataset["sessions"])
    if (report["events"], report["already_there"], events, tasks) != expected:
        raise RuntimeError(
            f"ship went wrong: report {report}, {events} events and {tasks} pending tasks in"
            f" the team database, expected {dataset['events']} and {dataset['sessions']}"
        )
    return name, elapsed, report


def migrated_database(server: PostgresServer) -> str:
    name = server.create_database()
    engine = make_engine(server.url(name))
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    return name


def measure_ship(
    server: PostgresServer, dataset: dict[str, Any], runs: int
) -> tuple[dict[str, Any], str]:
    """The figures, and the team database the last run shipped into (left unpromoted)."""
    template, raw_database = migrated_database(server), server.create_database()
    ship_s: list[float] = []
    raw: list[dict[str, float]] = []
    rows: list[tuple[Any, ...]] = []
    shipped = ""
    for run in range(runs):
        if shipped:
            server.drop_database(shipped)
        shipped, elapsed, report = time_ship(server, template, dataset)
        ship_s.append(elapsed)
        # After a ship: the local projects now hold the keys the rows carry.
        rows = rows or raw_rows(dataset["home"])
        raw.append(time_raw(server, raw_database, run, rows))
        progress(
            f"ship run {run + 1}: {elapsed:.2f} s ({dataset['events'] / elapsed:,.0f} events/s,"
            f" {report['batches']} batches); raw executemany {raw[-1]['executemany_s']:.2f} s,"
            f" COPY {raw[-1]['copy_s']:.2f} s"
        )
    server.drop_database(raw_database)
    rate = spread([dataset["events"] / s for s in ship_s])
    executemany_s = [r["executemany_s"] for r in raw]
    figures = {
        "events": dataset["events"],
        "raw_rows": len(rows),
        "batches": report["batches"],
        "batch_events": BATCH_EVENTS,
        "ship_s": ship_s,
        "events_per_s": {
            **rate,
            "target": TARGET_SHIP_EVENTS_PER_S,
            "pass": rate["median"] >= TARGET_SHIP_EVENTS_PER_S,
        },
        "raw_executemany_s": executemany_s,
        "raw_executemany_events_per_s": spread([len(rows) / s for s in executemany_s]),
        "raw_copy_events_per_s": spread([len(rows) / r["copy_s"] for r in raw]),
        "ship_over_raw": spread([s / r for s, r in zip(ship_s, executemany_s, strict=True)]),
    }
    return figures, shipped


class RecordingHandler(PromoteHandler):
    """The promote handler, noting each task whose window it applied (the transaction that
    also completes the task)."""

    def __init__(self) -> None:
        self.applied: list[int] = []

    def apply(
        self, connection: Any, task: ClaimedTask, prepared: Any, settings: Settings, now: float
    ) -> Counter[str]:
        result = super().apply(connection, task, prepared, settings, now)
        self.applied.append(task.id)
        return result


def promote_worker(url: str) -> int:
    """One team worker process: ready, then (on a line from stdin) drain the team queue as the
    daemon's team promote job does, a project at a time, and print what it did as JSON."""
    settings = load_settings()
    engine = make_engine(url)
    handler = RecordingHandler()
    worker = Worker(
        engine,
        settings,
        f"{MACHINE}:team:{os.getpid()}",
        handlers={"promote": handler},
        queue_name="team ",
    )
    worker.reap()
    print("ready", flush=True)
    sys.stdin.readline()
    started_at, cpu_started = time.time(), time.process_time()
    TeamPromoter(engine, worker).drain()
    tasks = handler.applied
    ended_at, cpu_s = time.time(), time.process_time() - cpu_started
    engine.dispose()
    print(
        json.dumps(
            {
                "pid": os.getpid(),
                "tasks": tasks,
                "events": worker.stats["events"],
                "started_at": started_at,
                "ended_at": ended_at,
                "cpu_s": cpu_s,
                "stats": dict(worker.stats),
            }
        )
    )
    return 0


def server_cpu_s(server: PostgresServer) -> float | None:
    """CPU seconds the cluster's processes have used: the postmaster's own and those of its
    children, ended ones included (Linux /proc; None elsewhere)."""
    try:
        postmaster = int(Path(server.data_dir, "postmaster.pid").read_text().split()[0])
        ticks = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # ended meanwhile: its time is in the postmaster's children's
                continue
            pid, parent = int(entry.name), int(fields[1])
            if pid == postmaster:
                ticks += sum(int(field) for field in fields[11:15])  # its own and its children's
            elif parent == postmaster:
                ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


def run_workers(
    count: int, url: str, home: Path, server: PostgresServer
) -> tuple[list[dict[str, Any]], float | None]:
    """`count` team workers over one team database, let go together once all are ready; their
    reports, and the CPU seconds the server used meanwhile."""
    argv = [sys.executable, __file__, "--promote-worker", url]
    env = team_env(home, url)
    processes: list[subprocess.Popen[str]] = []
    try:
        for _ in range(count):
            processes.append(
                subprocess.Popen(
                    argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
                )
            )
        for process in processes:
            assert process.stdout is not None
            if process.stdout.readline().strip() != "ready":
                raise RuntimeError(f"team worker {process.pid} exited before it was ready")
        server_started = server_cpu_s(server)
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        outputs = [process.communicate(timeout=WORKER_TIMEOUT_S)[0] for process in processes]
        server_ended = server_cpu_s(server)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    for process in processes:
        if process.returncode != 0:
            raise RuntimeError(f"team worker {process.pid} exited {process.returncode}")
    server_s = None
    if server_started is not None and server_ended is not None:
        server_s = server_ended - server_started
    return [json.loads(output) for output in outputs], server_s


def check_promotion(
    server: PostgresServer,
    database: str,
    reports: list[dict[str, Any]],
    dataset: dict[str, Any],
    server_s: float | None,
) -> dict[str, Any]:
    """Every task done once, by one worker, and every event seen; the case's figures."""
    done = Counter(task for report in reports for task in report["tasks"])
    statuses = dict(fetch(server, database, "SELECT id, status FROM extraction_tasks"))
    (procedures,) = fetch(server, database, "SELECT count(*) FROM procedures")[0]
    events = sum(report["events"] for report in reports)
    problems = []
    if twice := sorted(task for task, times in done.items() if times > 1):
        problems.append(f"tasks done more than once: {twice[:5]}")
    if set(done) != set(statuses):
        problems.append(f"{len(set(statuses) - set(done))} tasks never done by a worker")
    if not_done := Counter(status for status in statuses.values() if status != "done"):
        problems.append(f"tasks not done: {dict(not_done)}")
    if events != dataset["events"]:
        problems.append(f"{events} events promoted, expected {dataset['events']}")
    if procedures == 0:
        problems.append("no procedure was promoted")
    if problems:
        raise RuntimeError(f"team promotion went wrong: {'; '.join(problems)}")
    window_s = max(r["ended_at"] for r in reports) - min(r["started_at"] for r in reports)
    workers_s = sum(report["cpu_s"] for report in reports)
    return {
        "window_s": window_s,
        "workers_cpu_s": workers_s,
        "server_cpu_s": server_s,
        # The CPUs the workers and the server kept busy together, on average.
        "cores_busy": None if server_s is None else (workers_s + server_s) / window_s,
        "tasks": len(done),
        "events": events,
        "procedures": procedures,
        "tasks_per_worker": [len(report["tasks"]) for report in reports],
    }


def freeze_statistics(server: PostgresServer, database: str) -> None:
    """One VACUUM ANALYZE, then no autovacuum in the database or its copies: its ANALYZE, when
    it lands in the middle of a case, changes the plan of a statement that promotion runs a
    thousand times, and that case's speed with it (by up to 2× on the machine it was written
    on)."""
    with psycopg.connect(server.dsn(database), autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")
        tables = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        ).fetchall()
        for (table,) in tables:
            connection.execute(f'ALTER TABLE "{table}" SET (autovacuum_enabled = false)')


def measure_promote(
    server: PostgresServer, shipped: str, dataset: dict[str, Any], runs: int
) -> dict[str, Any]:
    freeze_statistics(server, shipped)
    cases: dict[int, list[dict[str, Any]]] = {count: [] for count in WORKERS}
    local_s: list[float] = []
    for run in range(runs):
        # The local burst of the same events, beside this run's cases: the baseline.
        elapsed, stats = time_burst(dataset["home"], dataset["snapshot"])
        if stats["events"] != dataset["events"]:
            raise RuntimeError(f"the local burst promoted {stats['events']} events")
        local_s.append(elapsed)
        progress(
            f"local burst run {run + 1}: {elapsed:.2f} s"
            f" ({dataset['events'] / elapsed:,.0f} events/s)"
        )
        for count in WORKERS:
            database = server.create_database(template=shipped)
            try:
                reports, server_s = run_workers(
                    count, server.url(database), dataset["home"], server
                )
                case = check_promotion(server, database, reports, dataset, server_s)
            finally:
                server.drop_database(database)
            cases[count].append(case)
            busy = (
                ""
                if case["cores_busy"] is None
                else (
                    f"; CPU s: workers {case['workers_cpu_s']:.2f}, server"
                    f" {case['server_cpu_s']:.2f}, {case['cores_busy']:.2f} CPUs busy"
                )
            )
            progress(
                f"promote run {run + 1}, {count} worker(s): {case['tasks']} tasks,"
                f" {case['events']:,} events in {case['window_s']:.2f} s"
                f" ({case['events'] / case['window_s']:,.0f} events/s;"
                f" tasks per worker {case['tasks_per_worker']}{busy})"
            )
    workers = {str(count): summarise_case(done) for count, done in cases.items()}
    base = workers["1"]["events_per_s"]["median"]
    speedup = {
        key: figures["events_per_s"]["median"] / base
        for key, figures in workers.items()
        if key != "1"
    }
    # Each run's one worker against that run's local burst.
    over_local = spread(
        [
            case["events"] / case["window_s"] / (dataset["events"] / seconds)
            for case, seconds in zip(cases[1], local_s, strict=True)
        ]
    )
    return {
        "workers": workers,
        "local_burst_s": local_s,
        "local_events_per_s": spread([dataset["events"] / s for s in local_s]),
        "over_local": {
            **over_local,
            "target": TARGET_OVER_LOCAL,
            "pass": over_local["median"] >= TARGET_OVER_LOCAL,
        },
        "speedup": speedup,
        # One worker with its server keeps this many CPUs busy: no number of workers can go
        # faster than the CPUs over it, times one worker.
        "cores_busy_1": workers["1"]["cores_busy"],
        "speedup_bound": None
        if workers["1"]["cores_busy"] is None
        else (os.cpu_count() or 1) / workers["1"]["cores_busy"]["median"],
        "speedup_target": TARGET_SPEEDUP,
        "speedup_pass": {key: speedup[key] >= TARGET_SPEEDUP[key] for key in speedup},
        "cpu_count": os.cpu_count(),
    }


def summarise_case(runs: list[dict[str, Any]]) -> dict[str, Any]:
    first = runs[0]
    return {
        "tasks": first["tasks"],
        "events": first["events"],
        "procedures": first["procedures"],
        "window_s": [run["window_s"] for run in runs],
        "tasks_per_s": spread([run["tasks"] / run["window_s"] for run in runs]),
        "events_per_s": spread([run["events"] / run["window_s"] for run in runs]),
        "tasks_per_worker": [run["tasks_per_worker"] for run in runs],
        "cores_busy": None
        if any(run["cores_busy"] is None for run in runs)
        else spread([run["cores_busy"] for run in runs]),
    }


def print_table(report: dict[str, Any]) -> None:
    machine, dataset, ship_figures = report["machine"], report["dataset"], report["ship"]
    promote = report["promote"]
    rate, over_raw = ship_figures["events_per_s"], ship_figures["ship_over_raw"]
    print(
        f"Python {machine['python']}, PostgreSQL {machine['postgresql']},"
        f" {machine['cpu_count']} CPUs; {dataset['events']:,} events, {dataset['sessions']}"
        f" sessions, {dataset['projects']} projects; {report['runs']} runs"
    )
    print()
    print(f"{'':<36}{'median':>10}{'min–max':>18}  target")
    print(
        f"{'ship events/s':<36}{rate['median']:>10,.0f}{range_of(rate, ',.0f'):>18}  "
        f"≥ {rate['target']:,} events/s  {verdict(rate['pass'])}"
    )
    for label, key in (("raw executemany", "executemany"), ("raw COPY", "copy")):
        figures = ship_figures[f"raw_{key}_events_per_s"]
        print(
            f"{label + ' events/s':<36}{figures['median']:>10,.0f}{range_of(figures, ',.0f'):>18}"
        )
    print(
        f"{'ship / raw executemany':<36}{over_raw['median']:>9.1f}×{range_of(over_raw, '.1f'):>18}"
    )
    for count, figures in promote["workers"].items():
        label = f"promote, {count} worker{'s' if count != '1' else ''}"
        for unit in ("tasks", "events"):
            value = figures[f"{unit}_per_s"]
            print(
                f"{label + ', ' + unit + '/s':<36}{value['median']:>10,.1f}"
                f"{range_of(value, ',.1f'):>18}"
            )
    local, over_local = promote["local_events_per_s"], promote["over_local"]
    print(f"{'local burst, events/s':<36}{local['median']:>10,.0f}{range_of(local, ',.0f'):>18}")
    print(
        f"{'promote, 1 worker / local burst':<36}{over_local['median']:>10.2f}"
        f"{range_of(over_local, '.2f'):>18}  ≥ {over_local['target']:.2f}"
        f"  {verdict(over_local['pass'])}"
    )
    for count, speedup in promote["speedup"].items():
        print(
            f"{'promote speed-up, ' + count + ' / 1 workers':<36}{speedup:>9.2f}×{'':>18}"
            f"  ≥ {promote['speedup_target'][count]:.1f}×"
            f"  {verdict(promote['speedup_pass'][count])}"
        )
    busy, bound = promote["cores_busy_1"], promote["speedup_bound"]
    if busy is not None:
        print(
            f"{'promote, 1 worker, CPUs busy':<36}{busy['median']:>10.2f}"
            f"{range_of(busy, '.2f'):>18}  (the worker and the server)"
        )
        print(f"{'promote speed-up bound, CPUs / that':<36}{bound:>9.2f}×")
    print()
    print(f"this machine has {promote['cpu_count']} CPUs for the workers and the server")


def range_of(figures: dict[str, float], spec: str) -> str:
    return f"{figures['min']:{spec}}–{figures['max']:{spec}}"


def measure(runs: int, mode: str) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="remem-team-"))
    server = None
    try:
        dataset = generate(tmp, *SIZES[mode])
        server = start_cluster()
        (version,) = fetch(server, "postgres", "SHOW server_version")[0]
        ship_figures, shipped = measure_ship(server, dataset, runs)
        promote = measure_promote(server, shipped, dataset, runs)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp)
    machine = {"python": sys.version.split()[0], "postgresql": version, "cpu_count": os.cpu_count()}
    del dataset["home"], dataset["snapshot"]
    return {
        "machine": machine,
        "mode": mode,
        "runs": runs,
        "dataset": dataset,
        "ship": ship_figures,
        "promote": promote,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="ships, and promotions per case")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--promote-worker", metavar="URL", help="internal: be one team worker over URL"
    )
    args = parser.parse_args()
    if args.promote_worker:
        return promote_worker(args.promote_worker)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    report = measure(args.runs, "quick" if args.quick else "full")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
