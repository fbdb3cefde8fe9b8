"""Run every benchmark and write their figures to BENCHMARKS.md at the repository root.

Runs hook.py, hook_output.py, cli.py, pipeline.py, scale.py, daemon_idle.py, concurrency.py,
importer.py, entire.py, team.py, analysis.py and ui.py one after another with --json (their
progress goes to
stderr as it happens), then writes one table (and a section per benchmark with a heading of its
own): median, min–max, target and verdict per figure. Then coverage.py, whose totals go to a
"Memory coverage" section of their own, and `coverage.py --corpus` (the development corpus,
../shared/corpus, 7 minutes on 2 CPUs), whose figures per project follow it (--coverage-only
runs those two alone and rewrites only their sections). A benchmark that fails is reported in
its rows, and the script exits 1 once the file is written. --quick passes small run counts,
for a smoke test of the whole chain, and leaves the corpus out.

    .venv/bin/python bench/report.py [--quick | --coverage-only]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coverage import CORPUS_TITLE, SECTION_TITLE, corpus_markdown, markdown
from daemon_idle import CPU_TARGET_S, RSS_TARGET_MB

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUTPUT = REPO / "BENCHMARKS.md"
NONE = "—"
# One figure's median, min–max, target and result; a Row puts its label in front.
Cells = tuple[str, str, str, str]
Row = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class Bench:
    script: str
    quick_args: tuple[str, ...]
    labels: tuple[str, ...]
    cells: Callable[[dict[str, Any]], list[Cells]]
    describe: Callable[[dict[str, Any]], str]
    heading: str | None = None  # a section of its own after the main table


def verdict(passed: bool) -> str:
    return "PASS" if passed else "MISS"


def count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def span(figures: dict[str, Any], spec: str, unit: str = "") -> str:
    return f"{figures['min']:{spec}}–{figures['max']:{spec}}{unit}"


def cli_cells(report: dict[str, Any]) -> list[Cells]:
    mcp = report["mcp"]
    server = (
        f"{mcp['median_ms']:.0f}",
        f"{mcp['min_ms']:.0f}–{mcp['max_ms']:.0f}",
        f"≤ {mcp['target_ms']:.0f}",
        verdict(mcp["pass"]),
    )
    return [*start_up_cells(report), server]


def start_up_cells(report: dict[str, Any]) -> list[Cells]:
    """hook.py and cli.py: each case's milliseconds, then its ratio to the baseline (the first)."""
    rows: list[Cells] = []
    for case, figures in report["cases"].items():
        rows.append(
            (
                f"{figures['median_ms']:.1f}",
                f"{figures['min_ms']:.1f}–{figures['max_ms']:.1f}",
                NONE,
                NONE,
            )
        )
        if case in report["ratios"]:
            ratio = report["ratios"][case]
            target = f"≤ {ratio['target']:.2f}×"
            rows.append((f"{ratio['ratio']:.2f}×", NONE, target, verdict(ratio["pass"])))
    return rows


def hook_output_cells(report: dict[str, Any]) -> list[Cells]:
    """hook_output.py: the plain case's milliseconds, then each adversarial case's ratio to it."""
    cases = report["cases"]
    plain = cases["plain"]
    rows: list[Cells] = [
        (f"{plain['median_ms']:.0f}", f"{plain['min_ms']:.0f}–{plain['max_ms']:.0f}", NONE, NONE)
    ]
    for name, figures in cases.items():
        if name != "plain":
            target = f"≤ {figures['target']:g}×"
            rows.append((f"{figures['ratio']:.2f}×", NONE, target, verdict(figures["pass"])))
    return rows


def pipeline_cells(report: dict[str, Any]) -> list[Cells]:
    rate, over_raw = report["pipeline"]["events_per_s"], report["pipeline"]["burst_over_raw"]
    claims = report["claims"]
    return [
        (f"{rate['median']:,.0f}", span(rate, ",.0f"), NONE, NONE),
        (
            f"{over_raw['median']:.1f}×",
            span(over_raw, ".1f", "×"),
            f"≤ {over_raw['target']:g}×",
            verdict(over_raw["pass"]),
        ),
        (f"{claims['median_us']['1k']:.0f}", NONE, NONE, NONE),
        (f"{claims['median_us']['1M']:.0f}", NONE, NONE, NONE),
        (
            f"{claims['ratio']:.2f}×",
            NONE,
            f"≤ {claims['target']:.2f}×",
            verdict(claims["pass"]),
        ),
    ]


def scale_cells(report: dict[str, Any]) -> list[Cells]:
    windows, maintenance = report["windows"], report["maintenance"]
    ratio, lock, hooks = windows["window_ratio"], windows["lock_p99_ms"], windows["hooks"]
    worst = maintenance["max_transaction_ms"]
    return [
        (f"{windows['small']['window_ms']:.1f}", NONE, NONE, NONE),
        (f"{windows['large']['window_ms']:.1f}", NONE, NONE, NONE),
        (f"{ratio['ratio']:.2f}×", NONE, f"≤ {ratio['target']:g}×", verdict(ratio["pass"])),
        (f"{lock['value']:.1f}", NONE, f"≤ {lock['target']:g}", verdict(lock["pass"])),
        (f"{hooks['spooled']}", NONE, f"0 of {hooks['hooks']}", verdict(hooks["pass"])),
        (f"{worst['value']:.1f}", NONE, f"≤ {worst['target']:g}", verdict(worst["pass"])),
    ]


def daemon_cells(report: dict[str, Any]) -> list[Cells]:
    return [
        (f"{report['cpu_s']:.3f}", NONE, f"< {CPU_TARGET_S:g} s", verdict(report["cpu_pass"])),
        (
            f"{report['peak_rss_mb']:.1f}",
            NONE,
            f"< {RSS_TARGET_MB:g} MB",
            verdict(report["rss_pass"]),
        ),
    ]


def concurrency_cells(report: dict[str, Any]) -> list[Cells]:
    rate, p95 = report["events_per_s"], report["latency_ms"]["p95"]
    return [
        (f"{rate['median']:,.0f}", span(rate, ",.0f"), NONE, NONE),
        (f"{p95['median']:.0f}", span(p95, ".0f"), NONE, NONE),
    ]


def importer_cells(report: dict[str, Any]) -> list[Cells]:
    rate, rss = report["rate"]["events_per_s"], report["rss"]
    return [
        (
            f"{rate['median']:,.0f}",
            span(rate, ",.0f"),
            f"≥ {rate['target']:,}",
            verdict(rate["pass"]),
        ),
        (f"{rss['small']['peak_rss_mb']:.1f}", NONE, NONE, NONE),
        (
            f"{rss['large']['peak_rss_mb']:.1f}",
            NONE,
            f"≤ {rss['target_mb']:g} MB",
            verdict(rss["pass"]),
        ),
    ]


def entire_cells(report: dict[str, Any]) -> list[Cells]:
    rate, ratio, rss = report["rate"]["events_per_s"], report["rate"]["over_files"], report["rss"]
    return [
        (f"{rate['median']:,.0f}", span(rate, ",.0f"), f"≥ {rate['target']:,}",
         verdict(rate["pass"])),
        (f"{ratio['median']:.2f}×", span(ratio, ".2f", "×"), NONE, NONE),
        (f"{rss['large']['peak_rss_mb']:.1f}", NONE, f"≤ {rss['target_mb']:g} MB",
         verdict(rss["pass"])),
    ]  # fmt: skip


def team_cells(report: dict[str, Any]) -> list[Cells]:
    rate, over_raw = report["ship"]["events_per_s"], report["ship"]["ship_over_raw"]
    promote = report["promote"]
    rows: list[Cells] = [
        (
            f"{rate['median']:,.0f}",
            span(rate, ",.0f"),
            f"≥ {rate['target']:,}",
            verdict(rate["pass"]),
        ),
        (f"{over_raw['median']:.1f}×", span(over_raw, ".1f", "×"), NONE, NONE),
    ]
    for workers in ("1", "2", "4"):
        promoted = promote["workers"][workers]["events_per_s"]
        rows.append((f"{promoted['median']:,.0f}", span(promoted, ",.0f"), NONE, NONE))
    local, over_local = promote["local_events_per_s"], promote["over_local"]
    rows += [
        (f"{local['median']:,.0f}", span(local, ",.0f"), NONE, NONE),
        (
            f"{over_local['median']:.2f}",
            span(over_local, ".2f"),
            f"≥ {over_local['target']:.2f}",
            verdict(over_local["pass"]),
        ),
    ]
    rows += [
        (
            f"{promote['speedup'][w]:.2f}×",
            NONE,
            f"≥ {promote['speedup_target'][w]:.1f}×",
            verdict(promote["speedup_pass"][w]),
        )
        for w in ("2", "4")
    ]
    busy, bound = promote.get("cores_busy_1"), promote.get("speedup_bound")
    rows += [
        (NONE, NONE, NONE, NONE)
        if busy is None
        else (f"{busy['median']:.2f}", span(busy, ".2f"), NONE, NONE),
        (NONE, NONE, NONE, NONE) if bound is None else (f"{bound:.2f}×", NONE, NONE, NONE),
    ]
    return rows


def analysis_cells(report: dict[str, Any]) -> list[Cells]:
    rows: list[Cells] = []
    for figures in report["cases"].values():
        rows.append(
            (
                f"{figures['median_s']:.3f}",
                f"{figures['min_s']:.3f}–{figures['max_s']:.3f}",
                f"< {figures['target_s']:g}",
                verdict(figures["pass"]),
            )
        )
    return rows


def ui_cells(report: dict[str, Any]) -> list[Cells]:
    start = report["start_s"]
    rows: list[Cells] = [
        (
            f"{start:.2f}",
            NONE,
            f"< {report['start_target_s']:g}",
            verdict(start < report["start_target_s"]),
        )
    ]
    for figures in report["pages"].values():
        rows.append(
            (
                f"{figures['median_ms']:.1f}",
                f"{figures['min_ms']:.0f}–{figures['max_ms']:.0f}",
                f"≤ {figures['target_ms']:g}",
                verdict(figures["pass"]),
            )
        )
    return rows


def team_description(report: dict[str, Any]) -> str:
    dataset, machine = report["dataset"], report["machine"]
    return (
        f"team.py {count(report['runs'], 'ship')} of {dataset['events']:,} events"
        f" ({dataset['sessions']:,} sessions, {dataset['projects']} projects) to PostgreSQL"
        f" {machine['postgresql'].split()[0]} on this machine, and"
        f" {count(report['runs'], 'promotion')} of them per team worker count, each run"
        f" beside a local burst of them ({count(machine['cpu_count'], 'CPU')} for the workers"
        " and the server)"
    )


BENCHES = (
    Bench(
        "hook.py",
        ("--runs", "5"),
        (
            "bare interpreter start-up, ms",
            "hook, empty DB, ms",
            "hook / bare interpreter, empty DB",
            "hook, 1M-event DB, ms",
            "hook / bare interpreter, 1M-event DB",
            "SessionStart digest, ms",
            "SessionStart digest / bare interpreter",
            "failure answered with advice, empty DB, ms",
            "failure answered with advice / bare interpreter, empty DB",
            "failure answered with advice, 1M-event DB, ms",
            "failure answered with advice / bare interpreter, 1M-event DB",
            "failure answered by its error line, empty DB, ms",
            "failure answered by its error line / bare interpreter, empty DB",
            "failure answered by its error line, 1M-event DB, ms",
            "failure answered by its error line / bare interpreter, 1M-event DB",
            "failure with no advice, empty DB, ms",
            "failure with no advice / bare interpreter, empty DB",
            "failure with no advice, 1M-event DB, ms",
            "failure with no advice / bare interpreter, 1M-event DB",
            "advice before a command (opt-in), empty DB, ms",
            "advice before a command / bare interpreter, empty DB",
            "advice before a command (opt-in), 1M-event DB, ms",
            "advice before a command / bare interpreter, 1M-event DB",
        ),
        start_up_cells,
        lambda r: (
            f"hook.py {count(r['runs'], 'run')} per case"
            f" after {count(r['warmup_runs'], 'warm-up run')}"
        ),
    ),
    Bench(
        "hook_output.py",
        ("--runs", "3"),
        (
            "hook, 1 MiB of plain output, ms",
            "hook, 1 MiB of URL-userinfo backtracking output / plain",
            "hook, 1 MiB of .netrc backtracking output / plain",
            "hook, 1 MiB of expect backtracking output / plain",
            "hook, 1 MiB of all three / plain",
        ),
        hook_output_cells,
        lambda r: f"hook_output.py {count(r['runs'], 'run')} per case, interleaved",
    ),
    Bench(
        "cli.py",
        ("--runs", "5"),
        (
            "bare interpreter start-up (CLI run), ms",
            "remem --help, ms",
            "remem --help / bare interpreter",
            "remem context, ms",
            "remem context / bare interpreter",
            "remem status, ms",
            "remem status / bare interpreter",
            "remem procedures list, ms",
            "remem procedures list / bare interpreter",
            "remem procedures show, ms",
            "remem procedures show / bare interpreter",
            "remem mcp start-up to its initialize answer, ms",
        ),
        cli_cells,
        lambda r: (
            f"cli.py {count(r['runs'], 'run')} per case"
            f" after {count(r['warmup_runs'], 'warm-up run')}"
        ),
    ),
    Bench(
        "pipeline.py",
        ("--runs", "1", "--events", "20000"),
        (
            "burst pipeline, events/s (for information: the target is the ratio below)",
            "burst / raw sqlite3 insert of the same rows, same run",
            "claim_next, 1k done tasks, µs",
            "claim_next, 1M done tasks, µs",
            "claim_next 1M / 1k",
        ),
        pipeline_cells,
        lambda r: f"pipeline.py {count(r['runs'], 'burst')} of {r['pipeline']['events']:,} events",
    ),
    Bench(
        "scale.py",
        ("--quick",),
        (
            "window, small group, ms",
            "window, large group, ms",
            "window cost, large / small group",
            "write lock per window, p99, large group, ms",
            "hooks spooled during a burst over the large group",
            "maintenance, longest transaction, ms",
        ),
        scale_cells,
        lambda r: (
            f"scale.py {r['windows']['small']['prior_runs']:,} and "
            f"{r['windows']['large']['prior_runs']:,} prior runs, maintenance over "
            f"{r['maintenance']['procedures']:,} procedures × "
            f"{r['maintenance']['runs_per_group']:,} runs"
        ),
    ),
    Bench(
        "daemon_idle.py",
        ("--seconds", "10"),
        ("daemon idle CPU time, s", "daemon idle peak RSS, MB"),
        daemon_cells,
        lambda r: f"daemon_idle.py one {r['seconds']:g} s idle window",
    ),
    Bench(
        "concurrency.py",
        ("--runs", "1", "--events-per-hook", "5"),
        ("64-way concurrent capture, events/s", "64-way concurrent capture, p95 hook latency, ms"),
        concurrency_cells,
        lambda r: (
            f"concurrency.py {count(r['runs'], 'wave')} of {r['hooks']} hooks"
            f" × {count(r['events_per_hook'], 'event')}"
        ),
    ),
    Bench(
        "importer.py",
        ("--quick",),
        (
            "import, events/s (reading, redaction, identity, storing)",
            "import peak RSS, small transcript, MB",
            "import peak RSS, large transcript, MB",
        ),
        importer_cells,
        lambda r: (
            f"importer.py {count(r['runs'], 'import')} of {r['rate']['events']:,} calls"
            f" ({r['rate']['dataset_mb']:g} MB), peak RSS at {r['rss']['small']['file_mb']}"
            f" and {r['rss']['large']['file_mb']} MB"
        ),
    ),
    Bench(
        "entire.py",
        ("--quick",),
        (
            "import entire, events/s (git's object store, 1 MB checkpoints)",
            "import entire / import claude-code of the same transcripts",
            "import entire peak RSS, MB",
        ),
        entire_cells,
        lambda r: (
            f"entire.py {count(r['runs'], 'import')} of {r['rate']['checkpoints']} checkpoints"
            f" ({r['rate']['dataset_mb']:g} MB, {r['rate']['events']:,} events)"
        ),
    ),
    Bench(
        "team.py",
        ("--quick", "--runs", "1"),
        (
            "team ship to a local PostgreSQL, events/s",
            "team ship / raw psycopg executemany",
            "team promote, 1 worker, events/s",
            "team promote, 2 workers, events/s",
            "team promote, 4 workers, events/s",
            "team local burst of the same events, events/s",
            "team promote, 1 worker / local burst",
            "team promote speed-up, 2 / 1 workers",
            "team promote speed-up, 4 / 1 workers",
            "team promote, 1 worker, CPUs kept busy (the worker and the server)",
            "team promote speed-up bound: CPUs / those one worker keeps busy",
        ),
        team_cells,
        team_description,
    ),
    Bench(
        "analysis.py",
        ("--runs", "1"),
        (
            "1 MiB heredoc, s",
            "1 MiB of small heredocs, s",
            "100,000-step && chain, s",
            "10,000 nested $( ), s",
            "10,000 nested subshells, s",
            "largest command the grammar reads, s",
        ),
        analysis_cells,
        lambda r: f"analysis.py {count(r['runs'], 'run')} of each command",
        heading="Command analysis",
    ),
    Bench(
        "ui.py",
        ("--runs", "3"),
        (
            "remem ui, until it prints its address, s",
            "projects page, 1M-event home, ms",
            "branch page (its digest), 1M-event home, ms",
            "procedure page, 1M-event home, ms",
            "report page, 1M-event home, ms",
            "search page, 1M-event home, ms",
            "forget page, 1M-event home, ms",
        ),
        ui_cells,
        lambda r: f"ui.py {count(r['runs'], 'request')} per page on {r['events']:,} events",
        heading="The local site",
    ),
)


@dataclass(frozen=True)
class Outcome:
    rows: list[Row]
    description: str
    failure: str | None


def run_script(bench: Bench, quick: bool) -> dict[str, Any]:
    return run_json(bench.script, *(bench.quick_args if quick else ()))


def run_json(script: str, *args: str) -> dict[str, Any]:
    """The script's JSON figures; raises RuntimeError with the reason when it failed. Its
    stderr is passed through as it comes and the last lines kept for the reason."""
    argv = [sys.executable, str(BENCH / script), "--json", *args]
    print(f"$ {' '.join(argv[1:])}", file=sys.stderr)
    tail: collections.deque[str] = collections.deque(maxlen=5)
    # stdout goes to a file: reading it through a pipe while streaming stderr could deadlock.
    with tempfile.TemporaryFile() as stdout:
        process = subprocess.Popen(argv, cwd=REPO, stdout=stdout, stderr=subprocess.PIPE, text=True)
        assert process.stderr is not None
        for line in process.stderr:
            sys.stderr.write(line)
            if line.strip():
                tail.append(line.strip())
        returncode = process.wait()
        stdout.seek(0)
        output = stdout.read().decode(errors="replace")
    if returncode != 0:
        last = tail[-1] if tail else "no output on stderr"
        raise RuntimeError(f"exited {returncode}: {last}")
    try:
        figures = json.loads(output)
    except ValueError:
        raise RuntimeError("printed no JSON on stdout") from None
    if not isinstance(figures, dict):
        raise RuntimeError("printed JSON that is not an object")
    return figures


def measure(bench: Bench, quick: bool) -> Outcome:
    try:
        figures = run_script(bench, quick)
        cells = bench.cells(figures)
        description = bench.describe(figures)
        rows = [(label, *row) for label, row in zip(bench.labels, cells, strict=True)]
        return Outcome(rows, description, None)
    except RuntimeError as exc:
        failure = f"{bench.script} {exc}"
    except (KeyError, TypeError, ValueError) as exc:
        failure = f"{bench.script} printed unexpected JSON ({type(exc).__name__}: {exc})"
    cell = "FAILED: " + failure.replace("|", "\\|")[:160]
    rows = [(label, cell, NONE, NONE, "FAIL") for label in bench.labels]
    return Outcome(rows, f"{bench.script} failed", failure)


def memory_coverage(quick: bool = False) -> Outcome:
    """The memory coverage sections (bench/coverage.py on the fixtures, then apart on the
    development corpus), as its description: sections of markdown of their own, not rows of
    the speed table."""
    fixtures = coverage_section(SECTION_TITLE, markdown)
    if quick:
        corpus = Outcome([], f"{CORPUS_TITLE}\n\nLeft out by --quick.", None)
    else:
        corpus = coverage_section(CORPUS_TITLE, corpus_markdown, "--corpus")
    failure = "; ".join(o.failure for o in (fixtures, corpus) if o.failure) or None
    return Outcome([], f"{fixtures.description}\n\n{corpus.description}", failure)


def coverage_section(
    title: str, render: Callable[[dict[str, Any]], list[str]], *args: str
) -> Outcome:
    script = " ".join(("coverage.py", *args))
    try:
        return Outcome([], "\n".join(render(run_json("coverage.py", *args))), None)
    except RuntimeError as exc:
        failure = f"{script} {exc}"
    except (KeyError, TypeError, ValueError) as exc:
        failure = f"{script} printed unexpected JSON ({type(exc).__name__}: {exc})"
    return Outcome([], f"{title}\n\nFAILED: {failure}", failure)


def with_section(text: str, section: str) -> str:
    """BENCHMARKS.md with its memory coverage section replaced by `section` (put before the
    earlier figures when it has none), the speed figures left as they are."""
    start = text.find(SECTION_TITLE)
    earlier = text.find(EARLIER_TITLE, max(start, 0))
    end = earlier if earlier != -1 else len(text)
    if start == -1:
        start = end
    return text[:start] + section + "\n\n" + text[end:]


def total_memory() -> str:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return f"{int(line.split()[1]) / 1024**2:.1f} GiB"
    return "unknown"


# Figures of earlier versions that a change is measured against: what it cost shows here.
EARLIER = (
    "burst pipeline before workflows (promotion keyed by the command string, no command "
    "analysis, schema 0003; commit d5baf3b): 6,449 events/s (6,372–6,670), 52.4× raw inserts "
    "in its own `make bench`; run back to back with this version's on 2026-11-30 "
    "(`bench/pipeline.py --runs 2` in a checkout of each): 5,922 events/s against 5,421",
    "hook before the wider redaction: 1.10× a bare interpreter on an empty DB, 1.11× on a "
    "1M-event DB; SessionStart 1.15×",
    "burst pipeline before the incremental group state (schema 0006, commit 4407328): 5,129 "
    "events/s (4,815–5,406), 41.9× raw inserts",
    "promotion through SQLAlchemy's statements, with SQLite checkpointing inside the worker's "
    "commits (commit 9955145): burst 7,283 events/s (7,114–7,375), 30.3× raw inserts; write "
    "lock p99 with hooks firing 23.4 ms",
    "burst with every window prepared in turn by the process that applies it (commit "
    "05ec0e9): 12,988 events/s (12,714–13,252), 17.6× raw inserts",
    "windows prepared ahead and read again under the write lock when they collide (commit "
    "5ae37c8), measured at 00:21 on 2026-12-01: burst 17,324 events/s (16,862–17,538), 13.3× "
    "raw inserts, write lock p99 with hooks firing 13.7 ms, longest maintenance transaction "
    "17.0 ms; run back to back with commit cf5748a at 05:13 (`bench/pipeline.py --runs 2` in a "
    "checkout of each), when raw inserts took 0.65–0.76 s against 0.43 s at 00:21: 9,980 and "
    "10,471 events/s against cf5748a's 9,737 and 12,019",
    "windows caught up before the write lock, which still read their procedures' evidence, "
    "its files and their streak region under it (commit 2d07084; its own `make bench` on "
    "cf5748a at 05:42 on 2026-12-01, on a slower machine: 11,984 events/s): run back to back "
    "with this version right after this version's `make bench` of 09:23 "
    "(`bench/pipeline.py --runs 2` in a checkout of each): 17,166 and 16,445 events/s "
    "against this version's 16,101 and 16,406",
    "burst with windows prepared ahead in a second process (retired with it, commit af3d5e8; "
    "`make bench` of 09:23 on 2026-12-01): 15,610 events/s (14,979–15,662), 14.2× raw "
    "inserts; the one-process burst beside it 12,058 events/s (9,644–12,577)",
    "CLI before the stdlib front door (every command imported click and SQLAlchemy), medians "
    "of 21 runs against a 21.3 ms bare start: `remem --help` 328 ms (15.4×), `remem context` "
    "373 ms (17.5×), `remem status` 380 ms (17.8×)",
    "command analysis before its bounds (commit 4c86525), `analyse()` of `cat <<E > fN` "
    "heredocs one after another: 2,000 of them (39 KB) 0.54 s, 8,000 (159 KB) 5.3 s — four "
    "times the heredocs, ten times the time (each redirection copied every unit read before it)",
    "burst before the checkpoint kept the worker's prepared statements (a checkpoint every "
    "0.25 s on a connection SQLAlchemy set to AUTOCOMMIT, whose `PRAGMA read_uncommitted` on "
    "its way back expired every statement; commit 4c86525, `make bench` of 20:03 on "
    "2026-12-01): 10,673 events/s (10,554–10,801), 23.5× raw inserts",
    "hook before the session ledger and the forgotten words (commit 4c86525, same `make "
    "bench`): SessionStart digest 1.28× a bare interpreter, failure with no advice 1.27×, hook "
    "on an empty database 1.16×",
    "import before the table of secret families, the forgotten words and the one-run-per-tool-"
    "call check (commit 4c86525, `make bench` of 20:03 on 2026-12-01): 5,968 events/s",
    "burst before its windows were classified, read and written in fewer steps (commit bc7829e, "
    "`make bench` of 03:31 on 2026-12-02): 7,256 events/s (7,222–7,280), 24.9× raw inserts; "
    "write lock p99 over the large group 23.8 ms; team promote 1,705 events/s with one worker, "
    "0.33 of the local burst beside it (5,277 events/s), 2 workers 1.64×, 4 workers 1.42×",
    "team promote before PostgreSQL kept its prepared statements and a window's groups read "
    "side by side (commit e913da3, `make bench` of 06:29 on 2026-12-02): 2,528 events/s with "
    "one worker, 0.30 of the local burst beside it (8,033 events/s), 2 workers 1.66×, 4 "
    "workers 1.33×; burst 10,017 events/s, 23.0× raw inserts",
    "windows before they kept what they hold, took a group's streak region and resolvers from its"
    " tally and wrote many rows as one statement on a server (commit c4ac11a, `make bench` of "
    "11:57 on 2026-12-02): burst 12,470 events/s (12,442–12,620), 21.1× raw inserts; team promote"
    " 3,348 events/s with one worker, 0.32 of the local burst beside it (10,319 events/s), 2 "
    "workers 1.65×, 4 workers 1.33×",
)


EARLIER_TITLE = "Earlier figures, for comparison"
TABLE_HEAD = ("| what | median | min–max | target | result |", "|---|--:|--:|--:|:-:|")


def render(outcomes: list[Outcome], coverage: Outcome, quick: bool) -> str:
    command = (
        "`.venv/bin/python bench/report.py --quick` (a smoke test with small run counts; "
        "`make bench` produces the real figures)"
        if quick
        else "`make bench`"
    )
    lines = [
        "# remem benchmarks",
        "",
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- Machine: {platform.platform()}, {os.cpu_count()} CPUs, {total_memory()} memory",
        f"- Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}",
        f"- Produced by: {command}",
        f"- Runs: {'; '.join(outcome.description for outcome in outcomes)}",
        "",
        *TABLE_HEAD,
    ]
    sections = [(bench, outcome) for bench, outcome in zip(BENCHES, outcomes, strict=True)]
    for bench, outcome in sections:
        if bench.heading is None:
            lines += [f"| {' | '.join(row)} |" for row in outcome.rows]
    lines += [
        "",
        "Figures are medians of repeated runs on a shared machine (the daemon's, of one idle "
        "window); ratios are measured against a baseline in the same run.",
    ]
    for bench, outcome in sections:
        if bench.heading is not None:
            lines += ["", f"## {bench.heading}", "", *TABLE_HEAD]
            lines += [f"| {' | '.join(row)} |" for row in outcome.rows]
    lines += ["", coverage.description]
    lines += ["", f"{EARLIER_TITLE} (same machine kind, `make bench`):", ""]
    lines += [f"- {figure}" for figure in EARLIER]
    failures = [outcome.failure for outcome in [*outcomes, coverage] if outcome.failure]
    if failures:
        lines += ["", "**Failed benchmarks:**", ""]
        lines += [f"- {failure}" for failure in failures]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="small run counts: a smoke test, not figures"
    )
    parser.add_argument(
        "--coverage-only",
        action="store_true",
        help="run bench/coverage.py alone (fixtures, then corpus) and rewrite only its sections",
    )
    args = parser.parse_args()
    outcomes = [] if args.coverage_only else [measure(b, args.quick) for b in BENCHES]
    coverage = memory_coverage(args.quick)
    if args.coverage_only:
        text = with_section(OUTPUT.read_text(encoding="utf-8"), coverage.description)
    else:
        text = render(outcomes, coverage, args.quick)
    OUTPUT.write_text(text, encoding="utf-8")
    print(text, end="")
    print(f"\nwrote {OUTPUT}", file=sys.stderr)
    failed = [outcome.failure for outcome in [*outcomes, coverage] if outcome.failure]
    for failure in failed:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
