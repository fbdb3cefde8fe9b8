"""How fast `remem import` turns transcripts into events, and whether its memory stays flat.

Writes a synthetic set of Claude Code transcripts and Codex rollouts holding 100,000 shell
commands and edits (outputs of realistic sizes, some carrying secrets to redact), then times
the import library storing them into an empty database (reading, pairing, redaction, identity,
batched writes; the burst after is pipeline.py's figure). Then runs the installed `remem import`
on one large transcript and on one a tenth of its size, and reads each process's peak RSS.
Everything it creates lives in one temporary directory, removed at the end.

    .venv/bin/python bench/importer.py [--runs N] [--json] [--quick]
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
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from common import remem_env

from remem.config import load_settings
from remem.db.engine import make_engine
from remem.transcripts.importer import ImportOptions, discover, import_transcripts

VENV_BIN = Path(sys.executable).parent
EVENTS = 100_000
EVENTS_PER_SESSION = 200
CODEX_SHARE = 0.3
LARGE_FILE_MB = 200
SEED = 20261130
TARGET_EVENTS_PER_S = 5_000
TARGET_RSS_MB = 150
COMMANDS = (
    "make test",
    "pytest -q tests/test_api.py",
    "npm run lint 2>&1 | tail -20",
    "cargo test --workspace",
    "git status",
    "cd web && npm test",
    "curl -H 'Authorization: Bearer sk-live-0123456789abcdefghijklmnop' https://api.example.com",
    "DATABASE_URL=postgres://app:hunter2@db.internal/app mix test",
)


def stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def output_text(rng: random.Random, size: int) -> str:
    lines = [f"tests/test_{rng.randrange(400)}.py::test_case_{i} PASSED" for i in range(size // 48)]
    return "\n".join(lines) + f"\n{rng.randint(1, 300)} passed in 1.2s"


class ClaudeWriter:
    """One Claude Code session: assistant tool_use records, user tool_result records, and the
    progress records between them that a reader skips."""

    def __init__(self, out: IO[str], session: str, cwd: str) -> None:
        self.out, self.session, self.cwd = out, session, cwd

    def record(self, kind: str, at: float, **fields: Any) -> None:
        base = {"type": kind, "sessionId": self.session, "cwd": self.cwd, "gitBranch": "main"}
        self.out.write(json.dumps({**base, "timestamp": stamp(at), **fields}) + "\n")

    def call(self, rng: random.Random, index: int, at: float, output_bytes: int) -> None:
        use_id = f"toolu_{self.session[:8]}_{index:06d}"
        if rng.random() < 0.25:
            name = "Edit"
            tool_input = {
                "file_path": f"{self.cwd}/src/module_{rng.randrange(30)}.py",
                "old_string": "return 1",
                "new_string": f"return {index}",
            }
            result: dict[str, Any] = {"filePath": tool_input["file_path"]}
            content, failed = "The file has been updated.", False
        else:
            name = "Bash"
            tool_input = {"command": rng.choice(COMMANDS)}
            failed = rng.random() < 0.15
            content = output_text(rng, rng.randint(output_bytes // 4, output_bytes))
            result = {"stdout": content, "stderr": "", "interrupted": False, "isImage": False}
            content = f"Exit code 1\n{content}" if failed else content
        use = {"type": "tool_use", "id": use_id, "name": name, "input": tool_input}
        self.record("assistant", at, message={"role": "assistant", "content": [use]})
        self.record("progress", at + 0.1, data={"type": "bash_progress", "output": content[:200]})
        part = {"type": "tool_result", "tool_use_id": use_id, "content": content}
        part["is_error"] = failed
        message = {"role": "user", "content": [part]}
        self.record("user", at + 0.5, message=message, toolUseResult=result)


def write_codex(out: IO[str], rng: random.Random, session: str, cwd: str, events: int) -> None:
    at = time.time() - 86_400
    meta = {"id": session, "cwd": cwd, "git": {"branch": "main"}}
    out.write(json.dumps({"timestamp": stamp(at), "type": "session_meta", "payload": meta}) + "\n")
    for index in range(events):
        at += rng.uniform(2, 20)
        call_id = f"call_{session[:8]}_{index:06d}"
        arguments = json.dumps({"cmd": rng.choice(COMMANDS), "workdir": cwd})
        call = {"type": "function_call", "name": "exec_command", "arguments": arguments}
        item = {**call, "call_id": call_id}
        out.write(json.dumps({"timestamp": stamp(at), "type": "response_item", "payload": item}))
        exit_code = 1 if rng.random() < 0.15 else 0
        end = {
            "type": "exec_command_end",
            "call_id": call_id,
            "exit_code": exit_code,
            "aggregated_output": output_text(rng, rng.randint(200, 2_000)),
        }
        out.write(
            "\n" + json.dumps({"timestamp": stamp(at + 1), "type": "event_msg", "payload": end})
        )
        out.write("\n")


def write_dataset(folder: Path, events: int) -> dict[str, int]:
    """Sessions of EVENTS_PER_SESSION calls over 20 projects; returns files per host."""
    rng = random.Random(SEED)
    (folder / "claude").mkdir(parents=True)
    (folder / "codex").mkdir()
    files = {"claude-code": 0, "codex": 0}
    written = 0
    while written < events:
        size = min(EVENTS_PER_SESSION, events - written)
        session = f"{rng.getrandbits(64):016x}-{files['claude-code'] + files['codex']:05d}"
        cwd = f"/home/dev/project-{rng.randrange(20):02d}"
        if rng.random() < CODEX_SHARE:
            with open(folder / "codex" / f"rollout-{session}.jsonl", "w") as out:
                write_codex(out, rng, session, cwd, size)
            files["codex"] += 1
        else:
            with open(folder / "claude" / f"{session}.jsonl", "w") as out:
                writer, at = ClaudeWriter(out, session, cwd), time.time() - 86_400
                for index in range(size):
                    at += rng.uniform(2, 20)
                    writer.call(rng, index, at, 2_000)
            files["claude-code"] += 1
        written += size
    return files


def write_large(path: Path, megabytes: int) -> int:
    """One long Claude Code session of about `megabytes`, big outputs; returns its calls."""
    rng = random.Random(SEED)
    limit, calls = megabytes * 1024 * 1024, 0
    with open(path, "w") as out:
        writer, at = ClaudeWriter(out, "large-session", "/home/dev/project-large"), 1.7e9
        while out.tell() < limit:
            writer.call(rng, calls, at, 40_000)
            calls, at = calls + 1, at + 5
    return calls


def init_home(home: Path) -> None:
    result = subprocess.run(
        [str(VENV_BIN / "remem"), "init"], env=remem_env(home), text=True, capture_output=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"remem init exited {result.returncode}: {result.stderr}")


def time_import(home: Path, snapshot: Path, dataset: Path) -> tuple[float, float, dict[str, Any]]:
    """Wall and CPU seconds of one import into an empty database, and its summary."""
    for suffix in ("-wal", "-shm"):
        Path(f"{home / 'remem.db'}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(snapshot, home / "remem.db")
    settings = load_settings(remem_env(home))
    engine = make_engine(settings.database_url)
    try:
        sources = discover("claude-code", [str(dataset / "claude")], str(home))
        sources += discover("codex", [str(dataset / "codex")], str(home))
        started, cpu_started = time.perf_counter(), time.process_time()
        summary = import_transcripts(engine, sources, ImportOptions(), time.time())
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    finally:
        engine.dispose()
    return elapsed, cpu, summary.as_json()


def peak_rss_mb(home: Path, transcript: Path) -> tuple[float, dict[str, Any]]:
    """Peak RSS of `remem import claude-code FILE` as a process of its own (its summary too)."""
    argv = [str(VENV_BIN / "remem"), "import", "claude-code", str(transcript)]
    argv += ["--no-promote", "--json", "--since", "36500d"]
    with tempfile.TemporaryFile() as stdout:
        process = subprocess.Popen(argv, env=remem_env(home), stdout=stdout, stderr=subprocess.PIPE)
        assert process.stderr is not None
        error = process.stderr.read()
        _pid, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise RuntimeError(f"remem import exited {process.returncode}: {error.decode()}")
        stdout.seek(0)
        summary = json.loads(stdout.read())
    return usage.ru_maxrss / 1024, summary  # ru_maxrss is in KiB on Linux


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure_rate(tmp: Path, events: int, runs: int) -> dict[str, Any]:
    dataset, home = tmp / "dataset", tmp / "home"
    started = time.perf_counter()
    files = write_dataset(dataset, events)
    size = sum(p.stat().st_size for p in dataset.rglob("*.jsonl"))
    print(
        f"wrote {events:,} calls in {sum(files.values()):,} files ({size / 2**20:.0f} MB)"
        f" in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    init_home(home)
    snapshot = tmp / "snapshot.db"
    shutil.copyfile(home / "remem.db", snapshot)
    seconds, cpu_seconds = [], []
    for run in range(runs):
        elapsed, cpu, summary = time_import(home, snapshot, dataset)
        if summary["events_new"] != events:
            raise RuntimeError(f"stored {summary['events_new']} events, expected {events}")
        seconds.append(elapsed)
        cpu_seconds.append(cpu)
        print(
            f"run {run + 1}: {elapsed:.2f} s, {events / elapsed:,.0f} events/s"
            f" ({events / cpu:,.0f} per CPU second)",
            file=sys.stderr,
        )
    rate = spread([events / s for s in seconds])
    return {
        "events": events,
        "files": files,
        "dataset_mb": round(size / 2**20, 1),
        "import_s": seconds,
        "cpu_s": cpu_seconds,
        # Informational: what the import costs on a machine whose CPUs are shared.
        "events_per_cpu_s": spread([events / s for s in cpu_seconds]),
        "events_per_s": {
            **rate,
            "target": TARGET_EVENTS_PER_S,
            "pass": rate["median"] >= TARGET_EVENTS_PER_S,
        },
    }


def measure_rss(tmp: Path, megabytes: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for label, size in (("small", max(1, megabytes // 10)), ("large", megabytes)):
        home, transcript = tmp / f"rss-{label}", tmp / f"large-{label}.jsonl"
        calls = write_large(transcript, size)
        init_home(home)
        rss, summary = peak_rss_mb(home, transcript)
        if summary["events_new"] != calls:
            raise RuntimeError(f"{label}: stored {summary['events_new']} events of {calls}")
        transcript.unlink()
        figures[label] = {"file_mb": size, "calls": calls, "peak_rss_mb": round(rss, 1)}
        print(f"{size} MB transcript ({calls:,} calls): peak RSS {rss:.1f} MB", file=sys.stderr)
    large = figures["large"]["peak_rss_mb"]
    growth = large - figures["small"]["peak_rss_mb"]
    return {
        **figures,
        "growth_mb": round(growth, 1),
        "target_mb": TARGET_RSS_MB,
        "pass": large <= TARGET_RSS_MB,
    }


def print_table(report: dict[str, Any]) -> None:
    machine, rate, rss = report["machine"], report["rate"], report["rss"]
    figures = rate["events_per_s"]
    print(
        f"Python {machine['python']}, SQLite {machine['sqlite']}, {machine['cpu_count']} CPUs;"
        f" {rate['events']:,} calls in {sum(rate['files'].values()):,} files"
        f" ({rate['dataset_mb']} MB); {report['runs']} runs"
    )
    print(f"{'':<34}{'median':>10}{'min–max':>18}  target")
    spread_text = f"{figures['min']:,.0f}–{figures['max']:,.0f}"
    print(
        f"{'import events/s':<34}{figures['median']:>10,.0f}{spread_text:>18}  "
        f"{'≥ 5,000 events/s':<18}{verdict(figures['pass'])}"
    )
    per_cpu = rate["events_per_cpu_s"]
    print(f"{'import events per CPU second':<34}{per_cpu['median']:>10,.0f}")
    for label in ("small", "large"):
        row = rss[label]
        name = f"peak RSS, {row['file_mb']} MB transcript"
        print(f"{name:<34}{row['peak_rss_mb']:>10.1f}")
    print(
        f"{'peak RSS growth, small → large':<34}{rss['growth_mb']:>10.1f}{'':>18}  "
        f"{'≤ 150 MB at large':<18}{verdict(rss['pass'])}"
    )


def verdict(passed: bool) -> str:
    return "PASS" if passed else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="measured imports")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--quick", action="store_true", help="10,000 calls, one run, a 20 MB transcript"
    )
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    events, runs, megabytes = EVENTS, args.runs, LARGE_FILE_MB
    if args.quick:
        events, runs, megabytes = 10_000, 1, 20
    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-"))
    try:
        rate = measure_rate(tmp, events, runs)
        rss = measure_rss(tmp, megabytes)
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
