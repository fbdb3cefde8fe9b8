"""How fast `remem import entire` reads a repository's Entire checkpoints, and whether its memory
stays bounded.

Builds a git repository whose orphan branch `entire/checkpoints/v1` holds 100 checkpoints, each
a Claude Code session of about 1 MB (written by importer.py's ClaudeWriter, committed with `git
fast-import`), then times the import library reading them from git's object store into an empty
database (git's listing and blob stream, reading, redaction, identity, batched writes), beside
the baseline: `remem import claude-code`'s library reading the same transcripts as files, in the
same run. Then runs the installed `remem import entire` on the repository, and on one of a tenth
of its checkpoints, and reads each process's peak RSS. Everything lives in one temporary
directory, removed at the end.

    .venv/bin/python bench/entire.py [--runs N] [--json] [--quick]
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
from pathlib import Path
from typing import Any

from common import remem_env
from importer import SEED, ClaudeWriter, init_home

from remem.config import load_settings
from remem.db.engine import make_engine
from remem.transcripts import entire
from remem.transcripts.importer import ImportOptions, discover, import_transcripts

VENV_BIN = Path(sys.executable).parent
CHECKPOINTS = 100
CHECKPOINT_MB = 1.0
TARGET_EVENTS_PER_S = 5_000
TARGET_RSS_MB = 150
BRANCH_REF = "refs/heads/entire/checkpoints/v1"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(repository: Path, *args: str, data: bytes | None = None) -> None:
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "-C", str(repository), *args], input=data, env=env, check=True)


def write_repository(repository: Path, transcripts: Path, checkpoints: int) -> int:
    """A repository with `checkpoints` session copies on its checkpoint branch, one commit
    each (a branch's next commit in one fast-import stream is its tip's child), and the same
    transcripts as files; the calls they hold."""
    rng, calls = random.Random(SEED), 0
    transcripts.mkdir(parents=True)
    repository.mkdir(parents=True)
    git(repository, "init", "--quiet", "--initial-branch=main")
    git(repository, "commit", "--quiet", "--allow-empty", "-m", "start")
    stream = []
    limit = int(CHECKPOINT_MB * 1024 * 1024)
    for number in range(checkpoints):
        session = f"{number:08x}-bench"
        path = transcripts / f"{session}.jsonl"
        with open(path, "w") as out:
            writer, at = ClaudeWriter(out, session, "/Users/someone/app"), time.time() - 86_400
            while out.tell() < limit:
                writer.call(rng, calls, at, 2_000)  # importer.py's dataset
                calls, at = calls + 1, at + 5
        folder = f"{number:012x}"
        folder = f"{folder[:2]}/{folder[2:]}/0"
        meta = json.dumps(
            {
                "session_id": session,
                "agent": "Claude Code",
                "branch": "main",
                "created_at": "2026-11-20T09:00:00Z",
            }
        ).encode()
        data = path.read_bytes()
        stream.append(
            f"commit {BRANCH_REF}\ncommitter b <b@example.com> 1763629200 +0000\ndata 2\ncp\n"
            f"M 100644 inline {folder}/full.jsonl\ndata {len(data)}\n".encode()
            + data
            + f"\nM 100644 inline {folder}/metadata.json\ndata {len(meta)}\n".encode()
            + meta
            + b"\n"
        )
    git(repository, "fast-import", "--quiet", data=b"".join(stream))
    return calls


def fresh_engine(home: Path, snapshot: Path) -> Any:
    for suffix in ("-wal", "-shm"):
        Path(f"{home / 'remem.db'}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(snapshot, home / "remem.db")
    return make_engine(load_settings(remem_env(home)).database_url)


def time_entire(
    home: Path, snapshot: Path, repository: Path
) -> tuple[float, float, dict[str, Any]]:
    """Wall and CPU seconds of one import of the checkpoints into an empty database."""
    engine = fresh_engine(home, snapshot)
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        storage = entire.find_storage(str(repository))
        found = entire.sessions(storage)
        summary = entire.import_checkpoints(engine, storage, found, ImportOptions(), time.time())
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        return elapsed, cpu, summary.as_json()
    finally:
        engine.dispose()


def time_files(home: Path, snapshot: Path, transcripts: Path) -> tuple[float, dict[str, Any]]:
    engine = fresh_engine(home, snapshot)
    try:
        started = time.perf_counter()
        sources = discover("claude-code", [str(transcripts)], str(home))
        summary = import_transcripts(engine, sources, ImportOptions(), time.time())
        return time.perf_counter() - started, summary.as_json()
    finally:
        engine.dispose()


# Runs the command it is given and prints that process's peak RSS (KiB). A child's peak counts
# the RSS of the process it was forked from (Linux keeps the high-water mark across exec): this
# small parent keeps the bench's own hundreds of MB out of the figure.
RSS_OF = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=open(os.environ["OUT"], "wb"), stderr=subprocess.PIPE)
error = child.stderr.read()
_pid, status, usage = os.wait4(child.pid, 0)
code = os.waitstatus_to_exitcode(status)
print(usage.ru_maxrss if code == 0 else "failed: " + error.decode(errors="replace"))
"""


def peak_rss_mb(home: Path, repository: Path) -> tuple[float, dict[str, Any]]:
    """Peak RSS of `remem import entire REPO` as a process of its own (its summary too)."""
    argv = [str(VENV_BIN / "remem"), "import", "entire", str(repository)]
    argv += ["--no-promote", "--json", "--since", "36500d"]
    out = home.parent / "summary.json"
    env = {**remem_env(home), "OUT": str(out)}
    said = subprocess.run(
        [sys.executable, "-c", RSS_OF, *argv], env=env, capture_output=True, text=True
    ).stdout.strip()
    if not said.isdigit():
        raise RuntimeError(f"remem import entire: {said}")
    return int(said) / 1024, json.loads(out.read_text())  # ru_maxrss is in KiB on Linux


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(tmp: Path, checkpoints: int, runs: int) -> dict[str, Any]:
    repository, transcripts, home = tmp / "repo", tmp / "transcripts", tmp / "home"
    started = time.perf_counter()
    calls = write_repository(repository, transcripts, checkpoints)
    size = sum(p.stat().st_size for p in transcripts.glob("*.jsonl"))
    print(
        f"wrote {checkpoints} checkpoints, {calls:,} calls ({size / 2**20:.0f} MB)"
        f" in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    init_home(home)
    snapshot = tmp / "snapshot.db"
    shutil.copyfile(home / "remem.db", snapshot)
    through_git, from_files, per_cpu = [], [], []
    for run in range(runs):
        seconds, cpu, summary = time_entire(home, snapshot, repository)
        baseline, files_summary = time_files(home, snapshot, transcripts)
        if summary["events_new"] != files_summary["events_new"]:
            raise RuntimeError(f"{summary['events_new']} events, files: {files_summary}")
        events = summary["events_new"]
        through_git.append(events / seconds)
        from_files.append(events / baseline)
        per_cpu.append(events / cpu)
        print(
            f"run {run + 1}: checkpoints {events / seconds:,.0f} events/s,"
            f" files {events / baseline:,.0f} events/s",
            file=sys.stderr,
        )
    rate = spread(through_git)
    ratios = spread([a / b for a, b in zip(through_git, from_files, strict=True)])
    return {
        "checkpoints": checkpoints,
        "dataset_mb": round(size / 2**20, 1),
        "events": events,
        "events_per_s": {
            **rate,
            "target": TARGET_EVENTS_PER_S,
            "pass": rate["median"] >= TARGET_EVENTS_PER_S,
        },
        "files_events_per_s": spread(from_files),
        # Informational: this process's CPU only (git's cat-file runs beside it).
        "events_per_cpu_s": spread(per_cpu),
        "over_files": ratios,
    }


def measure_rss(tmp: Path, checkpoints: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for label, count in (("small", max(1, checkpoints // 10)), ("large", checkpoints)):
        folder = tmp / f"rss-{label}"
        write_repository(folder / "repo", folder / "transcripts", count)
        init_home(folder / "home")
        rss, summary = peak_rss_mb(folder / "home", folder / "repo")
        figures[label] = {
            "checkpoints": count,
            "events": summary["events_new"],
            "peak_rss_mb": round(rss, 1),
        }
        print(f"{count} checkpoints: peak RSS {rss:.1f} MB", file=sys.stderr)
        shutil.rmtree(folder)
    large = figures["large"]["peak_rss_mb"]
    return {
        **figures,
        "growth_mb": round(large - figures["small"]["peak_rss_mb"], 1),
        "target_mb": TARGET_RSS_MB,
        "pass": large <= TARGET_RSS_MB,
    }


def print_table(report: dict[str, Any]) -> None:
    rate, rss = report["rate"], report["rss"]
    figures, ratio = rate["events_per_s"], rate["over_files"]
    print(
        f"{rate['checkpoints']} checkpoints of {CHECKPOINT_MB:g} MB ({rate['dataset_mb']} MB,"
        f" {rate['events']:,} events); {report['runs']} runs"
    )
    print(f"{'':<40}{'median':>10}{'min–max':>18}  target")
    spread_text = f"{figures['min']:,.0f}–{figures['max']:,.0f}"
    print(
        f"{'import entire, events/s':<40}{figures['median']:>10,.0f}{spread_text:>18}  "
        f"≥ {TARGET_EVENTS_PER_S:,}  {'PASS' if figures['pass'] else 'MISS'}"
    )
    print(
        f"{'import entire, events per CPU second':<40}{rate['events_per_cpu_s']['median']:>10,.0f}"
    )
    files = rate["files_events_per_s"]
    print(f"{'import claude-code, same files, events/s':<40}{files['median']:>10,.0f}")
    print(f"{'entire / files':<40}{ratio['median']:>10.2f}{ratio['min']:>9.2f}–{ratio['max']:.2f}")
    for label in ("small", "large"):
        row = rss[label]
        name = f"peak RSS, {row['checkpoints']} checkpoints, MB"
        print(f"{name:<40}{row['peak_rss_mb']:>10.1f}")
    print(
        f"{'peak RSS growth, small → large, MB':<40}{rss['growth_mb']:>10.1f}{'':>18}  "
        f"≤ {TARGET_RSS_MB} MB at large  {'PASS' if rss['pass'] else 'MISS'}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="measured imports")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quick", action="store_true", help="10 checkpoints, one run")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    checkpoints, runs = (10, 1) if args.quick else (CHECKPOINTS, args.runs)
    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-"))
    try:
        rate = measure(tmp, checkpoints, runs)
        rss = measure_rss(tmp, checkpoints)
    finally:
        shutil.rmtree(tmp)
    machine = {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "cpu_count": os.cpu_count(),
    }
    report = {"machine": machine, "runs": runs, "quick": args.quick, "rate": rate, "rss": rss}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
