"""How much `remem-hook` costs an agent's tool call, next to a bare Python start-up.

Times the installed `remem-hook` storing a Claude Code PostToolUse event into an empty database
and into one holding a million events, answering a SessionStart with the digest of a project
that has procedures and lessons, and answering a failed command with advice (a failure remem
knows what works instead of, and one it knows nothing of, in a project with advice to give;
and, opt-in, the PreToolUse warning before a command known to fail), and a SessionStart whose
page holds INPUT_PROCEDURES procedures, each a Makefile target whose fingerprint the digest
compares with the file (unchanged, and every target's recipe changed since), against
`python -c "import sqlite3, json"`, the floor any Python hook pays. Everything it creates lives
in one temporary directory, removed at the end.

    .venv/bin/python bench/hook.py [--runs N] [--json] [--advice-only | --inputs-only]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import (
    bytecode_env,
    compile_bytecode,
    print_start_up_table,
    remem_env,
    start_up_figures,
)

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
FIXTURE = Path("hooks", "claude-code", "post_tool_use_bash_success.json")
FAILURE_FIXTURE = Path("hooks", "claude-code", "post_tool_use_failure_bash_exit_code.json")
SESSION_START_FIXTURE = Path("hooks", "claude-code", "session_start.json")
EVENTS = 1_000_000
SESSIONS = 1_000
PROJECTS = 50
DIGEST_PROCEDURES = 20
DIGEST_LESSONS = 2
WARMUP_RUNS = 3
TARGET_RATIO = 1.30
ADVICE_RATIO = 1.50  # a failure answered with advice: the hook reads and prints more
CASES = ("baseline", "hook-empty", "hook-1M", "sessionstart")
# A SessionStart whose page shows INPUT_PROCEDURES procedures (`make tNN`), each with the
# fingerprint of its Makefile target: the file as it was verified ("inputs-same", compared by
# size and time alone), and with every target's recipe changed since ("inputs-changed", each
# read and hashed again). The page's budget is raised so that all of them are on it.
INPUT_CASES = ("inputs-same", "inputs-changed")
INPUT_PROCEDURES = 50
INPUT_PAGE_CHARS = "9000"
# Failures in a project with advice to give, in a database holding only it and in the 1M one:
# answered by the failing command's workflow ("match") or by its error line alone, read with
# the recogniser table ("keymatch"), known nothing of ("nomatch"), and the PreToolUse warning
# ("before").
ADVICE_CASES = (
    "match-empty",
    "match-1M",
    "keymatch-empty",
    "keymatch-1M",
    "nomatch-empty",
    "nomatch-1M",
    "before-empty",
    "before-1M",
)
TARGETS = {
    **dict.fromkeys(("hook-empty", "hook-1M", "sessionstart"), TARGET_RATIO),
    **dict.fromkeys(("nomatch-empty", "nomatch-1M"), TARGET_RATIO),
    **dict.fromkeys(("match-empty", "match-1M", "keymatch-empty", "keymatch-1M"), ADVICE_RATIO),
    **dict.fromkeys(("before-empty", "before-1M"), ADVICE_RATIO),
    "inputs-same": TARGET_RATIO,
    "inputs-changed": ADVICE_RATIO,
}
NOT_FOUND = "Exit code 127\n/bin/bash: line 1: pytest: command not found"
UNKNOWN_ERROR = "Exit code 2\nerror: unused import `os` in app.py"
VENV_PYTEST = ".venv/bin/python -m pytest -q"


def fixture_payload(fixture: Path = FIXTURE) -> dict[str, Any]:
    fixtures = REPO / "tests" / "fixtures"  # the project's copy of the hosts' payload shapes
    if not (fixtures / fixture).is_file() and os.environ.get("REMEM_FIXTURES"):
        fixtures = Path(os.environ["REMEM_FIXTURES"])
    return dict(json.loads((fixtures / fixture).read_text(encoding="utf-8")))


def run_checked(
    argv: list[str], env: dict[str, str], stdin: bytes = b"", expect_stdout: bool = False
) -> float:
    """Seconds the process took; raises if it did not exit 0, or printed nothing when output
    was expected."""
    started = time.perf_counter()
    result = subprocess.run(argv, input=stdin, env=env, capture_output=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(
            f"{argv[0]} exited {result.returncode}: {result.stderr.decode(errors='replace')}"
        )
    if expect_stdout and not result.stdout.strip():
        raise RuntimeError(f"{argv[0]} printed nothing: {result.stderr.decode(errors='replace')}")
    return elapsed


def init_home(home: Path) -> None:
    # Init keeps the caller's PYTHONDONTWRITEBYTECODE: it imports SQLAlchemy and Alembic, whose
    # caches would otherwise land in the virtualenv.
    env = remem_env(home)
    if "PYTHONDONTWRITEBYTECODE" in os.environ:
        env["PYTHONDONTWRITEBYTECODE"] = os.environ["PYTHONDONTWRITEBYTECODE"]
    run_checked([str(VENV_BIN / "remem"), "init"], env)


def event_rows(now: float) -> Iterator[tuple[Any, ...]]:
    per_session = EVENTS // SESSIONS
    for index in range(EVENTS):
        session_id = index // per_session + 1
        project_id = session_id % PROJECTS + 1
        command = f"python -m pytest -q tests/test_module_{index % 997}.py"
        payload = f'{{"tool_input": {{"command": "{command}"}}, "tool_response": "ok"}}'
        at = now - EVENTS + index
        yield (
            index + 1,
            f"claude-code:session-{session_id}:toolu_{index}",
            session_id,
            project_id,
            "claude-code",
            "PostToolUse",
            "command",
            "Bash",
            f"toolu_{index}",
            command,
            "success",
            0,
            "hook_event",
            f"/home/dev/project-{project_id}",
            payload,
            at,
            at,
        )


def fill_database(path: Path) -> None:
    now = time.time()
    per_session = EVENTS // SESSIONS
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA synchronous = OFF")  # a throwaway file: fsyncs buy nothing
    connection.execute("BEGIN")
    connection.executemany(
        "INSERT INTO projects (id, root, created_at) VALUES (?, ?, ?)",
        [(p, f"/home/dev/project-{p}", now - EVENTS) for p in range(1, PROJECTS + 1)],
    )
    connection.executemany(
        "INSERT INTO sessions (id, host, session_key, project_id, started_at, last_event_at)"
        " VALUES (?, 'claude-code', ?, ?, ?, ?)",
        [(s, f"session-{s}", s % PROJECTS + 1, now - EVENTS, now) for s in range(1, SESSIONS + 1)],
    )
    connection.executemany(
        "INSERT INTO captured_events (id, idempotency_key, session_id, project_id, host,"
        " hook_event, kind, tool_name, tool_use_id, command, outcome, exit_code,"
        " exit_code_source, cwd, payload, event_at, captured_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        event_rows(now),
    )
    connection.executemany(
        "INSERT INTO extraction_tasks (idempotency_key, session_id, kind, status, priority,"
        " high_watermark_event_id, cursor_event_id, attempts, run_after, created_at, updated_at)"
        " VALUES (?, ?, 'promote', 'done', 0, ?, ?, 1, ?, ?, ?)",
        [
            (f"{s}:promote", s, s * per_session, s * per_session, now, now, now)
            for s in range(1, SESSIONS + 1)
        ],
    )
    connection.execute("COMMIT")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()


def fill_procedures(home: Path, project: Path) -> None:
    """Procedures and lessons for one project on main, made the way an agent makes them: the
    real hook stores Claude Code events, then one `remem worker --burst` promotes them."""
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    success, failure = fixture_payload(), fixture_payload(FAILURE_FIXTURE)
    hook, env = [str(VENV_BIN / "remem-hook")], remem_env(home)
    for index in range(DIGEST_PROCEDURES):
        # Not a file argument: runs on files of the project are one family, one procedure.
        command = f"python -m pytest -q -k case_{index:02d}"
        session = f"bench-fill-{index % 4}"
        # The first commands fail once before passing: each such streak leaves a lesson.
        runs = [failure] if index < DIGEST_LESSONS else []
        for run, template in enumerate([*runs, success, success]):
            payload = {
                **template,
                "session_id": session,
                "cwd": str(project),
                "tool_use_id": f"toolu_fill_{index}_{run}",
                "tool_input": {"command": command},
            }
            run_checked(hook, env, json.dumps(payload).encode())
    run_checked([str(VENV_BIN / "remem"), "worker", "--burst"], env)
    connection = sqlite3.connect(f"file:{home / 'remem.db'}?mode=ro", uri=True)
    try:
        (procedures,) = connection.execute(
            "SELECT count(*) FROM procedures WHERE status = 'active'"
        ).fetchone()
        (lessons,) = connection.execute("SELECT count(*) FROM lessons").fetchone()
    finally:
        connection.close()
    if (procedures, lessons) != (DIGEST_PROCEDURES, DIGEST_LESSONS):
        raise RuntimeError(f"{home}: {procedures} procedures and {lessons} lessons after burst")


def fill_advice(home: Path, project: Path) -> None:
    """A project where `pytest` is not found and `.venv/bin/python -m pytest -q` passes
    instead, verified: two sessions through the real hook, then one `remem worker --burst`."""
    if not (project / ".git").exists():
        (project / ".git").mkdir(parents=True)
        (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    success, failure = fixture_payload(), fixture_payload(FAILURE_FIXTURE)
    hook, env = [str(VENV_BIN / "remem-hook")], remem_env(home)
    for session in ("bench-advice-1", "bench-advice-2"):
        runs = [(failure, "pytest"), (success, VENV_PYTEST), (success, VENV_PYTEST)]
        for run, (template, command) in enumerate(runs):
            payload = {
                **template,
                "session_id": session,
                "cwd": str(project),
                "tool_use_id": f"toolu_advice_{session}_{run}",
                "tool_input": {"command": command},
            }
            if template is failure:
                payload["error"] = NOT_FOUND
            run_checked(hook, env, json.dumps(payload).encode())
    run_checked([str(VENV_BIN / "remem"), "worker", "--burst"], env)
    connection = sqlite3.connect(f"file:{home / 'remem.db'}?mode=ro", uri=True)
    try:
        (found,) = connection.execute("SELECT count(*) FROM substitutions").fetchone()
    finally:
        connection.close()
    if found != 2:
        raise RuntimeError(f"{home}: {found} substitutions after burst, not 2")


def _makefile(changed: bool) -> str:
    recipe = "pytest -x -q" if changed else "pytest -q"
    targets = (f"t{index:02d}:\n\t{recipe} -k case_{index:02d}\n" for index in range(50))
    return "\n".join(targets)


def fill_inputs(home: Path, project: Path, changed: bool) -> None:
    """INPUT_PROCEDURES procedures `make tNN`, each verified twice through the real hook and
    promoted by one burst with the fingerprint of its target; then, when `changed`, every
    target's recipe edited, as a person's edit leaves the file (a later modification time)."""
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    makefile = project / "Makefile"
    makefile.write_text(_makefile(False), encoding="utf-8")
    success = fixture_payload()
    hook, env = [str(VENV_BIN / "remem-hook")], remem_env(home)
    for index in range(INPUT_PROCEDURES):
        for run in range(2):
            payload = {
                **success,
                "session_id": f"bench-inputs-{index % 4}",
                "cwd": str(project),
                "tool_use_id": f"toolu_inputs_{index}_{run}",
                "tool_input": {"command": f"make t{index:02d}"},
            }
            run_checked(hook, env, json.dumps(payload).encode())
    run_checked([str(VENV_BIN / "remem"), "worker", "--burst"], env)
    if changed:
        makefile.write_text(_makefile(True), encoding="utf-8")
        stat = makefile.stat()
        os.utime(makefile, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    env = {**env, "REMEM_CONTEXT_MAX_CHARS": INPUT_PAGE_CHARS}
    result = subprocess.run(
        [str(VENV_BIN / "remem"), "context", "--cwd", str(project)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    shown = result.stdout.count("\n- `make t")
    said = result.stdout.count("— changed since last verified: Makefile (t")
    if (shown, said) != (INPUT_PROCEDURES, INPUT_PROCEDURES if changed else 0):
        raise RuntimeError(f"{home}: the page shows {shown} procedures, {said} changed")


def advice_payload(case: str, project: Path) -> tuple[dict[str, Any], bool]:
    """The payload of an advice case, in a session of its own (advice is given once per
    session), and whether the hook must print."""
    session = f"bench-{uuid.uuid4()}"
    tool_use_id = f"toolu_bench_{uuid.uuid4().hex}"
    base = {"session_id": session, "cwd": str(project), "tool_use_id": tool_use_id}
    if case.startswith("before"):
        before = {
            **base,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest"},
        }
        return before, True
    match = "match" in case and not case.startswith("nomatch")
    command, error = ("pytest", NOT_FOUND) if match else ("make lint", UNKNOWN_ERROR)
    if case.startswith("keymatch"):
        command = "pytest -q tests"  # another workflow: known by its error line only
    failure = fixture_payload(FAILURE_FIXTURE)
    return {**failure, **base, "tool_input": {"command": command}, "error": error}, match


def time_cases(
    runs: int, homes: dict[str, Path], project: Path, cases: tuple[str, ...] = CASES
) -> tuple[dict[str, list[float]], dict[str, list[str]]]:
    """Wall-clock ms per case over `runs` measured rounds, and the ids sent per home (tool-use
    ids; session ids for sessionstart). The cases take turns within each round so that machine
    noise lands on all of them."""
    template = fixture_payload()
    session_start = {**fixture_payload(SESSION_START_FIXTURE), "cwd": str(project)}
    baseline = [str(VENV_BIN / "python"), "-c", "import sqlite3, json"]
    hook = [str(VENV_BIN / "remem-hook")]
    env = bytecode_env()
    timings: dict[str, list[float]] = {case: [] for case in cases}
    sent: dict[str, list[str]] = {case: [] for case in cases[1:]}
    for round_index in range(WARMUP_RUNS + runs):
        for case in cases:
            tool_use_id = f"toolu_bench_{uuid.uuid4().hex}"
            stdin = json.dumps({**template, "tool_use_id": tool_use_id}).encode()
            if case == "baseline":
                elapsed = run_checked(baseline, env, stdin)
            elif case in ADVICE_CASES:
                payload, prints = advice_payload(case, project)
                stdin = json.dumps(payload).encode()
                home = homes[case]
                elapsed = run_checked(hook, remem_env(home), stdin, expect_stdout=prints)
                if not case.startswith("before"):
                    sent[case].append(payload["tool_use_id"])
            elif case == "sessionstart" or case in INPUT_CASES:
                session_id = f"bench-{uuid.uuid4()}"
                start = {**session_start, "session_id": session_id}
                env = remem_env(homes[case])
                if case in INPUT_CASES:
                    start["cwd"] = str(project.parent / case)
                    env["REMEM_CONTEXT_MAX_CHARS"] = INPUT_PAGE_CHARS
                stdin = json.dumps(start).encode()
                elapsed = run_checked(hook, env, stdin, expect_stdout=True)
                sent[case].append(session_id)
            else:
                elapsed = run_checked(hook, remem_env(homes[case]), stdin)
                sent[case].append(tool_use_id)
            if round_index >= WARMUP_RUNS:
                timings[case].append(elapsed * 1000)
    return timings, sent


_STORED = "SELECT count(*) FROM captured_events WHERE tool_use_id IN ({marks})"
_SESSIONS_STARTED = (
    "SELECT count(*) FROM captured_events e JOIN sessions s ON s.id = e.session_id "
    "WHERE e.kind = 'session_start' AND s.session_key IN ({marks})"
)


def verify_stored(home: Path, ids: list[str], sql: str = _STORED) -> None:
    """A hook that spooled or dropped would time a different path; insist every event landed."""
    connection = sqlite3.connect(f"file:{home / 'remem.db'}?mode=ro", uri=True)
    try:
        marks = ", ".join("?" * len(ids))
        (stored,) = connection.execute(sql.format(marks=marks), ids).fetchone()
    finally:
        connection.close()
    if stored != len(ids):
        raise RuntimeError(f"{home}: {stored} of {len(ids)} hook events in the database")
    # Hidden files are the worker's lock, left by the burst that built the procedures.
    spooled = [name for name in os.listdir(home / "spool") if not name.startswith(".")]
    if spooled:
        raise RuntimeError(f"{home}: spool is not empty: {spooled}")


def summarise(timings: dict[str, list[float]], generate_s: float, runs: int) -> dict[str, Any]:
    figures = start_up_figures(timings, {case: TARGETS[case] for case in list(timings)[1:]})
    return {
        **figures,
        "events": EVENTS,
        "generate_s": generate_s,
        "runs": runs,
        "warmup_runs": WARMUP_RUNS,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="measured runs per case")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--advice-only", action="store_true", help="time the baseline and the advice cases only"
    )
    parser.add_argument(
        "--inputs-only",
        action="store_true",
        help="time the baseline and the SessionStart cases only",
    )
    args = parser.parse_args()
    cases = (*CASES, *ADVICE_CASES, *INPUT_CASES)
    if args.advice_only:
        cases = ("baseline", *ADVICE_CASES)
    elif args.inputs_only:
        cases = ("baseline", "sessionstart", *INPUT_CASES)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    compile_bytecode()
    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-"))
    try:
        big, small = tmp / "big", tmp / "advice"
        homes = {
            "hook-empty": tmp / "empty",
            "hook-1M": big,
            "sessionstart": tmp / "digest",
            **{case: big if case.endswith("1M") else small for case in ADVICE_CASES},
            **{case: tmp / case for case in INPUT_CASES},
        }
        homes = {case: home for case, home in homes.items() if case in cases}
        for home in set(homes.values()):
            init_home(home)
        started = time.perf_counter()
        if big in homes.values():
            fill_database(big / "remem.db")
            generate_s = time.perf_counter() - started
            print(f"generated {EVENTS:,} events in {generate_s:.1f} s", file=sys.stderr)
        generate_s = time.perf_counter() - started
        project = tmp / "projects" / "shop"
        if "sessionstart" in cases:
            fill_procedures(homes["sessionstart"], project)
            print(
                f"promoted {DIGEST_PROCEDURES} procedures with {DIGEST_LESSONS} lessons",
                file=sys.stderr,
            )
        for home in {small, big} & set(homes.values()):
            fill_advice(home, project)
        for case in INPUT_CASES:
            if case in cases:
                fill_inputs(homes[case], project.parent / case, case == "inputs-changed")
                print(f"promoted {INPUT_PROCEDURES} procedures for {case}", file=sys.stderr)
        print(f"timing {WARMUP_RUNS}+{args.runs} runs of {', '.join(cases)}", file=sys.stderr)
        timings, sent = time_cases(args.runs, homes, project, cases)
        for case, ids in sent.items():
            if case == "sessionstart" or case in INPUT_CASES:
                verify_stored(homes[case], ids, _SESSIONS_STARTED)
            elif ids:
                verify_stored(homes[case], ids)
    finally:
        shutil.rmtree(tmp)
    report = summarise(timings, generate_s, args.runs)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_start_up_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
