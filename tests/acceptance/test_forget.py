"""`remem forget` as a user runs it: a secret the redactor missed goes into the real hook, the
worker, the spool and the logs, and `remem forget` takes every byte of it out of the home."""

from __future__ import annotations

import hashlib
import itertools
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.conftest import REMEM, Home

# Random, in no key=value and after no secret-named flag: nothing for the redactor to see.
SECRET = "zq8Kp2Vx7Lm4Rt9Wb3Nc6Yh1Jd5Fg0Qs8Ue2Ia7Ox"
DEPLOY = f"./deploy.sh --mode {SECRET}"
_ids = itertools.count(1)


def repository(path: Path, branch: str = "main") -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    return path


def bash(
    cwd: Path, command: str, *, session: str = "s1", output: str = "", failed: bool = False
) -> dict[str, Any]:
    base = {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/x/{session}.jsonl",
        "cwd": str(cwd),
        "tool_name": "Bash",
        "tool_use_id": f"toolu_{next(_ids):06d}",
        "tool_input": {"command": command},
    }
    if failed:
        return {**base, "hook_event_name": "PostToolUseFailure", "error": f"Exit code 1\n{output}"}
    return {
        **base,
        "hook_event_name": "PostToolUse",
        "tool_response": {"stdout": output, "stderr": "", "interrupted": False},
    }


def hook(home: Home, payload: dict[str, Any]) -> None:
    result = home.hook(payload, "--host", "claude-code")
    assert result.returncode == 0, result.stderr


def files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and needle in path.read_bytes()
    )


def procedures(home: Home) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(
        home.remem("procedures", "list", "--all", "--json").stdout
    )
    return found


def forget(home: Home, *args: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(home.remem("forget", *args, "--yes", "--json").stdout)
    return found


def fingerprint(home: Home) -> dict[str, str]:
    return {
        str(path.relative_to(home.path)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(home.path.rglob("*"))
        if path.is_file()
    }


def test_forget_takes_a_secret_out_of_every_file_of_the_home(home: Home, tmp_path: Path) -> None:
    shop = repository(tmp_path / "shop")
    error = f"deploy: mode {SECRET} is not configured"
    hook(home, bash(shop, DEPLOY, output=error, failed=True))
    hook(home, bash(shop, DEPLOY, output="deployed"))
    hook(home, bash(shop, DEPLOY, output="deployed"))
    hook(home, bash(shop, "make test", output="12 passed"))
    hook(home, bash(shop, "make test", output="12 passed"))
    home.remem("worker", "--burst")
    # A writer killed mid-line: ingestion dead-letters the torn line, secret and all.
    (home.spool / "events.jsonl").write_text('{"type": "event", "event": {"command": "' + DEPLOY)
    home.remem("spool", "ingest")
    # The database unavailable: the next event waits in the spool.
    home.db.rename(home.path / "away.db")
    hook(home, bash(shop, DEPLOY, session="s2", output="deployed"))
    (home.path / "away.db").rename(home.db)
    logs = home.path / "logs"
    with (logs / "worker.log").open("a") as log:
        log.write(f"2026-01-01 ERROR analyse_command could not analyse {DEPLOY}\n")
        log.write("2026-01-01 INFO complete completed task 1\n")
    (logs / "worker.log.1").write_text(f"Traceback: {DEPLOY}\n")

    # Un-redacted: three runs of the command, the lesson's error and its failed attempt.
    assert [(h["command"], h["runs"]) for h in home.command_hits(SECRET)] == [(DEPLOY, 3)]
    hits = home.json("recall", SECRET, "--all-projects")["hits"]
    (lesson,) = [hit for hit in hits if hit["kind"] == "lesson"]
    (learnt,) = home.json("procedures", "show", str(lesson["procedure_id"]))["lessons"]
    assert learnt["id"] == lesson["id"] and SECRET in learnt["last_error"]
    assert [SECRET in a["error_excerpt"] for a in learnt["attempts"]] == [True]
    assert SECRET in home.remem("context", "--cwd", str(shop)).stdout
    holding = files_holding(home.path, SECRET.encode())
    assert {"logs/worker.log", "logs/worker.log.1", "spool/dead-letter.jsonl"} < set(holding)
    assert {"remem.db", "spool/events.jsonl"} < set(holding)

    result = home.remem("forget", "--match", SECRET, "--yes")

    assert "Forgot 3 event(s) and 1 procedure(s)" in result.stdout
    assert SECRET not in result.stdout
    assert files_holding(home.path, SECRET.encode()) == []
    assert [(p["command"], p["verified_runs"]) for p in procedures(home)] == [("make test", 2)]
    assert home.status()["events"] == 2
    assert "make test" in home.remem("context", "--cwd", str(shop)).stdout
    assert (logs / "worker.log").read_text().endswith("completed task 1\n")
    assert (logs / "worker.log").stat().st_mode & 0o777 == 0o600
    assert home.scalar("PRAGMA integrity_check") == "ok"
    home.remem("worker", "--burst")  # the spool holds nothing that brings it back
    assert files_holding(home.path, SECRET.encode()) == []


def test_forgetting_events_re_derives_the_procedure_from_the_rest(
    home: Home, tmp_path: Path
) -> None:
    shop = repository(tmp_path / "shop")
    for _ in range(3):
        hook(home, bash(shop, "make build"))
    home.remem("worker", "--burst")
    (before,) = procedures(home)
    first, second, third = before["evidence_event_ids"]

    forgotten = forget(home, "--event", str(first))

    (after,) = procedures(home)
    assert [e["id"] for e in forgotten["events"]] == [first]
    assert forgotten["rederived_procedures"] == [before["id"]]
    assert (after["id"], after["verified_runs"]) == (before["id"], 2)
    assert after["evidence_event_ids"] == [second, third]

    forget(home, "--event", str(second))

    assert procedures(home) == []  # one verified run is not a procedure
    assert home.status()["events"] == 1


def test_a_command_masked_by_forget_is_never_promoted_again_nor_shown_as_runnable(
    home: Home, tmp_path: Path
) -> None:
    """After the forget, the agent runs the same command twice more and fails a build, then
    runs it and the build passes: stored masked, it is no procedure, no fix and no command
    the digest offers; the command beside it is promoted as ever."""
    shop = repository(tmp_path / "shop")
    hook(home, bash(shop, DEPLOY))
    forget(home, "--match", "zq8Kp2[A-Za-z0-9]+")
    for session in ("s2", "s3"):
        hook(home, bash(shop, DEPLOY, session=session))
        hook(home, bash(shop, "make build", session=session))
    hook(home, bash(shop, "make dist", session="s4", failed=True, output="make: *** No rule"))
    hook(home, bash(shop, DEPLOY, session="s4"))
    hook(home, bash(shop, "make dist", session="s4"))
    home.remem("worker", "--burst")

    stored = [cmd for (cmd,) in home.query("SELECT command FROM captured_events")]
    commands = [procedure["command"] for procedure in procedures(home)]
    digest = home.remem("context", "--cwd", str(shop)).stdout
    errors = home.json("procedures", "errors")

    assert stored.count("./deploy.sh --mode [forgotten]") == 3
    assert "make build" in commands
    assert not any("[forgotten]" in command for command in commands)
    assert "deploy.sh" not in digest and "make build" in digest
    assert not any("deploy.sh" in json.dumps(error) for error in errors)


def test_forgetting_a_procedure_takes_its_evidence_and_keeps_the_rest(
    home: Home, tmp_path: Path
) -> None:
    shop = repository(tmp_path / "shop")
    for command in ("make build", "make build", "make lint", "make lint"):
        hook(home, bash(shop, command))
    home.remem("worker", "--burst")
    build, lint = sorted(procedures(home), key=lambda p: p["command"])

    forgotten = forget(home, "--procedure", str(build["id"]))

    assert forgotten["procedures_deleted"] == 1 and forgotten["events_deleted"] == 2
    assert [p["id"] for p in procedures(home)] == [lint["id"]]
    assert [e["command"] for e in home.events()] == ["make lint", "make lint"]
    # The verified runs went with their events and the rest stayed: one more run of each makes
    # no procedure of a single run and a third verified run of the other.
    hook(home, bash(shop, "make build"))
    hook(home, bash(shop, "make lint"))
    home.remem("worker", "--burst")
    assert [(p["id"], p["verified_runs"]) for p in procedures(home)] == [(lint["id"], 3)]


def test_a_dry_run_lists_what_would_go_and_changes_nothing(home: Home, tmp_path: Path) -> None:
    shop = repository(tmp_path / "shop")
    hook(home, bash(shop, DEPLOY))
    hook(home, bash(shop, DEPLOY))
    home.remem("worker", "--burst")
    with (home.path / "logs" / "worker.log").open("a") as log:
        log.write(f"{DEPLOY}\n")
    before = fingerprint(home)

    listed = json.loads(home.remem("forget", "--match", SECRET, "--dry-run", "--json").stdout)
    text = home.remem("forget", "--match", "zq8Kp2", "--dry-run").stdout

    assert fingerprint(home) == before
    assert listed["dry_run"] is True
    assert [e["command"] for e in listed["events"]] == ["…ode [forgotten]…"] * 2
    assert [(p["id"], p["status"]) for p in listed["procedures"]] == [(1, "active")]
    assert listed["log_lines"] == {"worker.log": 1}
    assert "2 event(s)" in text and "procedure 1 (active)" in text
    assert "1 line(s) in worker.log" in text
    assert SECRET[6:12] not in text


def test_a_dry_run_lists_the_lessons_and_known_errors_that_go_with_the_events(
    home: Home, tmp_path: Path
) -> None:
    shop = repository(tmp_path / "shop")
    error = "E   AssertionError: total is 0"
    hook(home, bash(shop, "make test", output=error, failed=True))
    hook(home, bash(shop, "make test"))
    hook(home, bash(shop, "make test"))
    hook(home, bash(shop, "make lint"))
    home.remem("worker", "--burst")
    ((failed,),) = home.query("SELECT id FROM captured_events WHERE outcome = 'failure'")
    ((lesson_id,),) = home.query("SELECT id FROM lessons")
    (known,) = json.loads(home.remem("procedures", "errors", "--json").stdout)
    home.remem("worker", "--burst")  # nothing to do: it closes the database as a writer
    before = fingerprint(home)

    listed = json.loads(home.remem("forget", "--event", str(failed), "--dry-run", "--json").stdout)
    text = home.remem("forget", "--event", str(failed), "--dry-run").stdout

    assert fingerprint(home) == before
    assert listed["lessons"] == [
        {"id": lesson_id, "branch": "main", "error": error.replace("   ", " ")}
    ]
    assert [(k["workflow"], k["error"]) for k in listed["known_errors"]] == [
        ("make test", " ".join(known["error"].split()))  # an excerpt, spaces collapsed
    ]
    assert "1 lesson(s) learnt from them:" in text
    assert f"lesson {lesson_id} (main)  E AssertionError: total is 0" in text
    assert "1 known error(s) seen in them:" in text
    assert "(make test)  E AssertionError: total is 0" in text

    gone = forget(home, "--event", str(failed))
    assert gone["derived_rows_deleted"]["lessons"] == len(listed["lessons"])
    assert gone["derived_rows_deleted"]["known_errors"] == len(listed["known_errors"])
    assert home.json("procedures", "errors") == []
    # Forgetting an event that taught nothing lists no lesson.
    (lint,) = [e["id"] for e in home.events() if e["command"] == "make lint"]
    quiet = json.loads(home.remem("forget", "--event", str(lint), "--dry-run", "--json").stdout)
    assert (quiet["lessons"], quiet["known_errors"]) == ([], [])


def test_an_archived_procedure_that_matches_is_deleted_too(home: Home, tmp_path: Path) -> None:
    shop = repository(tmp_path / "shop")
    hook(home, bash(shop, DEPLOY))
    hook(home, bash(shop, DEPLOY))
    home.remem("worker", "--burst")
    home.remem("procedures", "archive", "1")

    forgotten = forget(home, "--match", "--mode zq8")

    assert [(p["id"], p["status"]) for p in forgotten["procedures"]] == [(1, "archived")]
    assert procedures(home) == []
    assert files_holding(home.path, SECRET.encode()) == []


def test_what_cannot_be_forgotten_is_said_in_one_line(home: Home, tmp_path: Path) -> None:
    hook(home, bash(repository(tmp_path / "shop"), "make build"))

    bad = home.remem("forget", "--match", "([a-z", "--yes", check=False)
    unknown = home.remem("forget", "--event", "99", "--yes", check=False)
    nothing = home.remem("forget", "--match", "no such text", "--yes")
    unconfirmed = subprocess.run(  # stdin is not a terminal, and --yes was not given
        [REMEM, "forget", "--event", "1"], input="", env=home.env, capture_output=True, text=True
    )

    assert bad.returncode != 0 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "is not a regular expression" in bad.stderr
    assert unknown.returncode != 0 and "No event 99" in unknown.stderr
    assert "Nothing to forget" in nothing.stdout
    assert unconfirmed.returncode != 0 and "--yes" in unconfirmed.stderr
    assert home.status()["events"] == 1


def test_a_pattern_runs_on_re2_and_a_catastrophic_one_returns_promptly(
    home: Home, tmp_path: Path
) -> None:
    # `(a+)+$` backtracks 2^40 times over this in Python's `re`: hours; in RE2, linear.
    hook(home, bash(repository(tmp_path / "shop"), "./run.sh " + "a" * 40 + "!"))
    started = time.monotonic()
    found = json.loads(home.remem("forget", "--match", "(a+)+$", "--dry-run", "--json").stdout)
    assert time.monotonic() - started < 30
    assert found["events"] == [] and found["dry_run"]
    taken = json.loads(home.remem("forget", "--match", "(a+)+!", "--dry-run", "--json").stdout)
    assert [event["id"] for event in taken["events"]] == [1]
    backreference = home.remem("forget", "--match", "(a)\\1", "--yes", check=False)
    assert backreference.returncode != 0 and backreference.stderr.count("\n") == 1
    assert "no backreferences or lookaround" in backreference.stderr
    assert home.status()["events"] == 1


def test_the_hook_never_records_remem_forget_itself(home: Home, tmp_path: Path) -> None:
    shop = repository(tmp_path / "shop")
    command = f"cd {shop} && .venv/bin/remem forget --match {SECRET} --yes"

    hook(home, bash(shop, command, output="Forgot 1 event(s)"))

    assert home.status()["events"] == 0
    assert [(d["reason"], d["detail"]) for d in home.drops()] == [
        ("own_command", "remem forget is never recorded")
    ]
    assert files_holding(home.path, SECRET.encode()) == []
