"""What an idle `remem worker` daemon costs: CPU time and resident memory over a quiet minute.

Starts the daemon on a fresh home in a temporary directory (removed at the end), waits for its
first heartbeat, then samples /proc for --seconds (default 60). Targets: CPU < 1 s, RSS < 100 MB.

    .venv/bin/python bench/daemon_idle.py [--seconds N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
CPU_TARGET_S = 1.0
RSS_TARGET_MB = 100.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def wait_for_heartbeat(db: Path, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
                if connection.execute("SELECT count(*) FROM worker_heartbeats").fetchone()[0]:
                    return
        except sqlite3.Error:
            pass
        time.sleep(0.1)
    raise RuntimeError("the daemon wrote no heartbeat")


def measure(seconds: float) -> dict[str, float]:
    workdir = Path(tempfile.mkdtemp(prefix="remem-bench-idle-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env["REMEM_HOME"] = str(workdir / "home")
    try:
        subprocess.run([VENV_BIN / "remem", "init"], env=env, check=True, capture_output=True)
        # A file, not a pipe: a pipe nobody reads during the window could fill up and stall it.
        errors = open(workdir / "daemon.err", "w+b")  # noqa: SIM115 - closed below
        daemon = subprocess.Popen(
            [VENV_BIN / "remem", "worker"], env=env, stdout=subprocess.DEVNULL, stderr=errors
        )
        try:
            wait_for_heartbeat(workdir / "home" / "remem.db")
            start_cpu, peak_rss = cpu_seconds(daemon.pid), rss_mb(daemon.pid)
            started = time.monotonic()
            while time.monotonic() - started < seconds:
                time.sleep(1)
                peak_rss = max(peak_rss, rss_mb(daemon.pid))
            cpu = cpu_seconds(daemon.pid) - start_cpu
        finally:
            daemon.send_signal(signal.SIGTERM)
            if daemon.wait(timeout=30) != 0:
                errors.seek(0)
                raise RuntimeError(f"daemon exited {daemon.returncode}: {errors.read().decode()}")
            errors.close()
        return {"seconds": seconds, "cpu_s": round(cpu, 3), "peak_rss_mb": round(peak_rss, 1)}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure(args.seconds)
    figures["cpu_pass"] = figures["cpu_s"] < CPU_TARGET_S
    figures["rss_pass"] = figures["peak_rss_mb"] < RSS_TARGET_MB
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; idle daemon over "
        f"{args.seconds:.0f} s"
    )
    verdict = {True: "PASS", False: "MISS"}
    print(
        f"CPU time   {figures['cpu_s']:7.3f} s   target < {CPU_TARGET_S} s   "
        f"{verdict[bool(figures['cpu_pass'])]}"
    )
    print(
        f"peak RSS   {figures['peak_rss_mb']:7.1f} MB  target < {RSS_TARGET_MB:.0f} MB  "
        f"{verdict[bool(figures['rss_pass'])]}"
    )


if __name__ == "__main__":
    main()
