"""How long each page of `remem ui` takes to render on a home of a million events: the
projects, a branch (its digest), a procedure, the report, a search and the forget form, each
asked for in turn over HTTP from a running `remem ui`, the median per page. Target: ≤ 200 ms.
Before them, the start as a person meets it, the median of STARTS starts: how long until the
address is printed (≤ 1 s), and how long its first page takes (≤ 500 ms) when the printed
address is opened once the site is up, and (for the record) when it is opened the instant it
is printed, while the site is still starting behind the listening socket.

The home is bench/hook.py's: a million captured events over 1,000 sessions and 50 projects,
plus one project whose procedures and lessons the real hook and worker made.

    .venv/bin/python bench/ui.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

from common import remem_env
from hook import fill_database, fill_procedures, init_home

VENV_BIN = Path(sys.executable).parent
TARGET_MS = 200.0
START_TARGET_S = 1.0
FIRST_PAGE_TARGET_MS = 500.0
STARTS = 5


def start(home: Path) -> tuple[subprocess.Popen[str], str, float]:
    """`remem ui` on a free port: the process, the address it printed (its one-time token in
    it), and seconds until it printed."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(VENV_BIN / "remem"), "ui", "--port", "0"],
        env=remem_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    printed_s = time.perf_counter() - started
    if not line.startswith("remem ui: http://127.0.0.1:"):
        process.kill()
        raise RuntimeError(f"remem ui printed {line!r}: {process.communicate()[1]}")
    return process, line.split()[2], printed_s


def enter(address: str) -> tuple[int, str, float]:
    """The printed address opened as a browser opens it: the token exchanged for the cookie,
    then the page it leads to. The port, the cookie, and the seconds until that page was
    answered whole."""
    parts = urlsplit(address)
    port = int(parts.netloc.rsplit(":", 1)[1])
    token = parse_qs(parts.query)["token"][0]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        started = time.perf_counter()
        connection.request("GET", f"/?token={token}", headers={"Host": parts.netloc})
        answer = connection.getresponse()
        answer.read()  # a page that leads on to /
        if answer.status != 200:
            raise RuntimeError(f"the printed address answered {answer.status}")
        cookie = (answer.getheader("Set-Cookie") or "").split(";", 1)[0]
    finally:
        connection.close()
    return port, cookie, fetch(port, cookie, "/", started)


def fetch(port: int, cookie: str, path: str, started: float | None = None) -> float:
    """Seconds for one page, answered whole (since `started` when given)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        started = time.perf_counter() if started is None else started
        connection.request("GET", path, headers={"Host": f"127.0.0.1:{port}", "Cookie": cookie})
        answer = connection.getresponse()
        answer.read()
        elapsed = time.perf_counter() - started
    finally:
        connection.close()
    if answer.status != 200:
        raise RuntimeError(f"{path} answered {answer.status}")
    return elapsed


def up(address: str) -> bool:
    """Whether the site answers: a request without the token or the cookie is refused."""
    netloc = urlsplit(address).netloc
    connection = http.client.HTTPConnection("127.0.0.1", int(netloc.rsplit(":", 1)[1]), timeout=5)
    try:
        connection.request("GET", "/", headers={"Host": netloc})
        return connection.getresponse().status == 403
    finally:
        connection.close()


def measure_starts(home: Path) -> dict[str, float]:
    """Medians over STARTS starts: seconds to the printed address, then milliseconds of the
    first page opened at once, and opened once the site is up."""
    printed, at_once, once_up = [], [], []
    for _ in range(STARTS):
        for waits, kept in ((False, at_once), (True, once_up)):
            process, address, printed_s = start(home)
            try:
                while waits and not up(address):
                    time.sleep(0.01)
                kept.append(enter(address)[2] * 1000)
                printed.append(printed_s)
            finally:
                process.terminate()
                process.communicate(timeout=30)
    return {
        "start_s": statistics.median(printed),
        "first_page_ms": statistics.median(once_up),
        "first_page_at_once_ms": statistics.median(at_once),
    }


def pages(database: Path, project: Path) -> dict[str, str]:
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        (procedure_id,) = connection.execute(
            "SELECT min(p.id) FROM procedures p JOIN lessons l ON l.project_id = p.project_id"
        ).fetchone()
    finally:
        connection.close()
    root = quote(str(project), safe="")
    return {
        "projects": "/",
        "branch": f"/branch?project={root}&branch=main",
        "procedure": f"/procedure/{procedure_id}",
        "report": "/report",
        "search": f"/search?q=case_0&project={root}",
        "forget": "/forget",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-ui-"))
    try:
        home, project = tmp / "home", tmp / "work" / "shop"
        init_home(home)
        started = time.perf_counter()
        fill_database(home / "remem.db")
        fill_procedures(home, project)
        print(f"built the 1M-event home in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        starts = measure_starts(home)
        process, address, _printed_s = start(home)
        try:
            port, cookie, _first_s = enter(address)
            report = {"events": 1_000_000, "runs": args.runs, "starts": STARTS, **starts,
                      "start_target_s": START_TARGET_S,
                      "first_page_target_ms": FIRST_PAGE_TARGET_MS, "pages": {}}  # fmt: skip
            for name, path in pages(home / "remem.db", project).items():
                fetch(port, cookie, path)  # the first answer warms the file cache
                timings = [fetch(port, cookie, path) * 1000 for _ in range(args.runs)]
                median = statistics.median(timings)
                report["pages"][name] = {
                    "median_ms": median,
                    "min_ms": min(timings),
                    "max_ms": max(timings),
                    "target_ms": TARGET_MS,
                    "pass": median <= TARGET_MS,
                }
                print(f"{name}: {median:.1f} ms", file=sys.stderr)
        finally:
            process.terminate()
            process.communicate(timeout=30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"remem ui printed its address in {report['start_s']:.2f} s")
        print(
            f"its first page in {report['first_page_ms']:.0f} ms once up, "
            f"{report['first_page_at_once_ms']:.0f} ms when opened the instant it printed"
        )
        print(f"{'page':<12}{'median ms':>10}{'min–max ms':>16}  target")
        for name, figures in report["pages"].items():
            spread = f"{figures['min_ms']:.0f}–{figures['max_ms']:.0f}"
            print(f"{name:<12}{figures['median_ms']:>10.1f}{spread:>16}  ≤ {TARGET_MS:.0f}")
    passed = (
        all(f["pass"] for f in report["pages"].values())
        and report["start_s"] < START_TARGET_S
        and report["first_page_ms"] < FIRST_PAGE_TARGET_MS
    )
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
