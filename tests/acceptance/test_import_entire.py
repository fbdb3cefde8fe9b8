"""`remem import entire`: the sessions a repository keeps on its Entire checkpoint branch, read
from git's object store by the real `remem`, in repositories built here with real git."""

from __future__ import annotations

import json
import os
import pty
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.checkpoint_repo import (
    BRANCH_REF,
    Copy,
    add_checkpoint,
    add_checkpoint_ref,
    commit_files,
    git,
    jsonl,
    metadata,
    new_repository,
)
from tests.conftest import REMEM, Home, corpus_dir, wait_for

ELSEWHERE = "/Users/someone/Code/app"  # where the sessions were recorded, on another machine
SINCE = ("--since", "3650d")


def claude_call(
    use_id: str,
    command: str,
    cwd: str = ELSEWHERE,
    session: str = "claude-1",
    branch: str | None = "feature/login",
    failed: bool = False,
    output: str = "ok",
    at: str = "2026-11-20T09:00:00Z",
) -> list[dict[str, Any]]:
    """A Bash call of a Claude Code session: its tool_use, then its tool_result."""
    base: dict[str, Any] = {"sessionId": session, "cwd": cwd, "timestamp": at}
    if branch is not None:
        base["gitBranch"] = branch
    use = {"type": "tool_use", "id": use_id, "name": "Bash", "input": {"command": command}}
    text = f"Exit code 1\n{output}" if failed else output
    result = {"type": "tool_result", "tool_use_id": use_id, "content": text, "is_error": failed}
    return [
        {**base, "type": "assistant", "message": {"role": "assistant", "content": [use]}},
        {
            **base,
            "type": "user",
            "message": {"role": "user", "content": [result]},
            "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False},
        },
    ]


def codex_rollout(session: str, cwd: str, calls: list[tuple[str, str, int, str]]) -> bytes:
    at = "2026-11-20T10:00:00.000Z"
    meta = {"id": session, "cwd": cwd, "git": {"branch": "codex-branch"}}
    records: list[dict[str, Any]] = [{"timestamp": at, "type": "session_meta", "payload": meta}]
    for call_id, command, exit_code, workdir in calls:
        arguments = json.dumps({"cmd": command, "workdir": workdir})
        item = {"type": "function_call", "name": "exec_command", "arguments": arguments}
        records.append(
            {"timestamp": at, "type": "response_item", "payload": {**item, "call_id": call_id}}
        )
        end = {
            "type": "exec_command_end",
            "call_id": call_id,
            "exit_code": exit_code,
            "aggregated_output": "boom" if exit_code else "fine",
        }
        records.append({"timestamp": at, "type": "event_msg", "payload": end})
    return jsonl(records)


def opencode_export(directory: str) -> bytes:
    """`opencode export` of a session: one JSON document, written on many lines."""

    def tool(call_id: str, name: str, state: dict[str, Any]) -> dict[str, Any]:
        times = {"start": 1795166400000, "end": 1795166401000}
        return {"id": f"prt_{call_id}", "type": "tool", "callID": call_id, "tool": name,
                "state": {**state, "time": times}}  # fmt: skip

    parts = [
        {"id": "prt_text", "type": "text", "text": "Running the tests."},
        tool(
            "call_ok",
            "bash",
            {
                "status": "completed",
                "input": {"command": "go test ./...", "workdir": "svc", "description": "Run tests"},
                "output": "ok  app/svc 0.2s",
                "metadata": {"output": "ok  app/svc 0.2s", "exit": 0, "description": "Run tests"},
            },
        ),
        tool(
            "call_red",
            "bash",
            {
                "status": "completed",
                "input": {"command": "go vet ./...", "description": "Vet"},
                "output": "vet: bad",
                "metadata": {"output": "vet: bad", "exit": 1, "description": "Vet"},
            },
        ),
        tool(
            "call_edit",
            "edit",
            {
                "status": "completed",
                "input": {
                    "filePath": f"{directory}/svc/main.go",
                    "oldString": "a",
                    "newString": "b",
                },
                "output": "Edit applied.",
                "metadata": {},
            },
        ),
        tool(
            "call_read",
            "read",
            {
                "status": "completed",
                "input": {"filePath": "svc/main.go"},
                "output": "package main",
            },
        ),
    ]
    message = {"info": {"id": "msg_1", "sessionID": "ses_oc", "role": "assistant",
               "time": {"created": 1795166400000}}, "parts": parts}  # fmt: skip
    info = {"id": "ses_oc", "directory": directory, "title": "tests", "version": "1.3.13"}
    return json.dumps({"info": info, "messages": [message]}, indent=1).encode()


def events(home: Home) -> list[tuple[Any, ...]]:
    """(project root, branch, directory, command, outcome, exit code, host) of every stored
    command, in the order stored."""
    return home.query(
        "SELECT p.root, e.branch, e.directory, e.command, e.outcome, e.exit_code, e.host "
        "FROM captured_events e JOIN projects p ON p.id = e.project_id "
        "WHERE e.kind = 'command' ORDER BY e.id"
    )


def import_entire(home: Home, repository: Path, *args: str) -> dict[str, Any]:
    result = home.remem(
        "import", "entire", str(repository), *SINCE, "--no-promote", "--json", *args
    )
    return dict(json.loads(result.stdout))


def test_sessions_recorded_elsewhere_land_in_this_checkout(home: Home, tmp_path: Path) -> None:
    repository = new_repository(tmp_path / "app")
    (repository / "web").mkdir()
    transcript = jsonl(
        claude_call("toolu_1", "make test")
        + claude_call("toolu_2", "npm test", cwd=f"{ELSEWHERE}/web")
        + claude_call("toolu_3", "npm run lint", cwd=f"{ELSEWHERE}/web", failed=True)
        + claude_call("toolu_4", "ls", cwd="/tmp")  # outside the recorded repository
        + claude_call("toolu_5", "cargo test", branch=None)
    )
    add_checkpoint(
        repository,
        [Copy("a1b2c3d4e5f6", 0, transcript, metadata("claude-1", branch="meta-branch"))],
    )
    head_before = git(repository, "rev-parse", "HEAD")

    summary = import_entire(home, repository)

    root = os.path.realpath(repository)
    assert events(home) == [
        (root, "feature/login", ".", "make test", "success", 0, "claude-code"),
        (root, "feature/login", "web", "npm test", "success", 0, "claude-code"),
        (root, "feature/login", "web", "npm run lint", "failure", 1, "claude-code"),
        (root, "meta-branch", ".", "cargo test", "success", 0, "claude-code"),
    ]
    assert summary["calls_outside_project"] == 1 and summary["events_new"] == 4
    assert summary["ref"] == BRANCH_REF and summary["session_copies"] == 1
    # Nothing was checked out: the work tree and HEAD are as they were.
    assert git(repository, "status", "--porcelain") == ""
    assert git(repository, "rev-parse", "HEAD") == head_before
    assert sorted(p.name for p in repository.iterdir()) == [".git", "README.md", "web"]


def test_a_session_repeated_in_three_checkpoints_is_stored_once_and_again_nothing(
    home: Home, tmp_path: Path
) -> None:
    repository = new_repository(tmp_path / "app")
    calls = [claude_call(f"toolu_{n}", f"make step{n}") for n in range(1, 7)]
    for number, upto in enumerate((2, 4, 6)):
        grown = jsonl([record for call in calls[:upto] for record in call])
        checkpoint = f"{number:02x}{'c' * 10}"
        add_checkpoint(repository, [Copy(checkpoint, 0, grown, metadata("claude-1"))])

    dry = import_entire(home, repository, "--dry-run")
    assert dry["events_new"] == 6 and dry["calls_repeated"] == 6 and events(home) == []
    first = import_entire(home, repository)
    again = import_entire(home, repository)

    assert first["session_copies"] == 3 and first["events_new"] == 6
    assert first["calls_repeated"] == 6 and first["sessions"] == 1
    assert [row[3] for row in events(home)] == [f"make step{n}" for n in range(1, 7)]
    assert again["events_new"] == 0 and again["events_known"] == 6
    assert len(events(home)) == 6


def test_codex_and_opencode_sessions_and_other_agents(home: Home, tmp_path: Path) -> None:
    repository = new_repository(tmp_path / "app")
    rollout = codex_rollout(
        "codex-1", ELSEWHERE, [("call_1", "pytest -q", 0, "api"), ("call_2", "ruff check", 1, ".")]
    )
    gemini = jsonl([{"type": "gemini", "text": "something"}])
    add_checkpoint(
        repository,
        [
            Copy("d1d2d3d4d5d6", 0, rollout, metadata("codex-1", agent="Codex")),
            Copy(
                "d1d2d3d4d5d6",
                1,
                opencode_export("/home/other/app"),
                metadata("ses_oc", agent="OpenCode"),
            ),
            Copy("e1e2e3e4e5e6", 0, gemini, metadata("g-1", agent="Gemini CLI")),
            Copy("e1e2e3e4e5e6", 1, gemini + b"\n", metadata("g-2", agent="Gemini CLI")),
        ],
    )

    summary = import_entire(home, repository)

    root = os.path.realpath(repository)
    assert events(home) == [
        (root, "codex-branch", "api", "pytest -q", "success", 0, "codex"),
        (root, "codex-branch", ".", "ruff check", "failure", 1, "codex"),
        (root, "main", "svc", "go test ./...", "success", 0, "generic"),
        (root, "main", ".", "go vet ./...", "failure", 1, "generic"),
    ]
    edits = home.query("SELECT host, files, directory FROM captured_events WHERE kind = 'edit'")
    assert edits == [("generic", '["svc/main.go"]', ".")]
    assert summary["agents_skipped"] == {"Gemini CLI": 2}
    assert summary["commands"] == 4 and summary["edits"] == 1


def test_invalid_checkpoint_files_are_counted_and_skipped(home: Home, tmp_path: Path) -> None:
    repository = new_repository(tmp_path / "app")
    good = jsonl(claude_call("toolu_1", "make test"))
    add_checkpoint(
        repository,
        [
            Copy("f1f2f3f4f5f6", 0, b"{not json\n" + good + b"[1, 2]\n", metadata("claude-1")),
            Copy("f1f2f3f4f5f6", 1, good, b"{this is not json"),
            Copy("f1f2f3f4f5f6", 2, good, None),  # no metadata.json beside it
            Copy("a9a9a9a9a9a9", 0, b"\x00\xff garbage", metadata("x", agent="OpenCode")),
        ],
    )

    summary = import_entire(home, repository)

    assert [row[3] for row in events(home)] == ["make test"]
    assert summary["invalid_metadata"] == 2
    assert summary["skipped_lines"] == 3  # two broken lines, and the OpenCode file
    assert summary["session_copies"] == 4


def test_the_newer_layout_of_one_ref_per_checkpoint_is_read(home: Home, tmp_path: Path) -> None:
    repository = new_repository(tmp_path / "app")
    transcript = jsonl(claude_call("toolu_9", "bun test", session="claude-9"))
    ref = add_checkpoint_ref(
        repository, "0123456789ab", [Copy("0123456789ab", 0, transcript, metadata("claude-9"))]
    )

    summary = import_entire(home, repository)
    full = jsonl(claude_call("toolu_8", "bun run lint", session="claude-8"))
    copy = Copy("fedcba987654", 0, full, metadata("claude-8"))
    add_checkpoint(repository, [copy], ref="refs/entire/checkpoints/v1/full")
    with_full = import_entire(home, repository)

    assert ref == "refs/entire/checkpoints/ab/0123456789ab"
    assert summary["ref"] is None and summary["checkpoint_refs"] == 1
    assert with_full["ref"] == "refs/entire/checkpoints/v1/full"
    assert with_full["checkpoint_refs"] == 1 and with_full["events_new"] == 1
    assert [row[3] for row in events(home)] == ["bun test", "bun run lint"]


def test_a_clone_with_only_origins_branch_and_fetch(home: Home, tmp_path: Path) -> None:
    origin = new_repository(tmp_path / "origin")
    add_checkpoint(
        origin, [Copy("111111111111", 0, jsonl(claude_call("toolu_a", "make a")), metadata("s"))]
    )
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", "--no-single-branch", str(origin), str(clone))
    assert git(clone, "for-each-ref", "--format=%(refname)", "refs/heads/entire") == ""

    first = import_entire(home, clone)
    add_checkpoint(
        origin, [Copy("222222222222", 0, jsonl(claude_call("toolu_b", "make b")), metadata("s"))]
    )
    stale = import_entire(home, clone)
    fetched = import_entire(home, clone, "--fetch")

    assert first["ref"] == "refs/remotes/origin/entire/checkpoints/v1"
    assert first["events_new"] == 1 and stale["events_new"] == 0
    assert fetched["events_new"] == 1
    assert [row[3] for row in events(home)] == ["make a", "make b"]
    assert all(row[0] == os.path.realpath(clone) for row in events(home))


def test_a_branch_of_another_shape_or_none_is_refused_in_one_line(
    home: Home, tmp_path: Path
) -> None:
    repository = new_repository(tmp_path / "app")
    bare = home.remem("import", "entire", str(repository), check=False)
    missing = home.remem("import", "entire", str(tmp_path / "nowhere"), check=False)
    not_git = home.remem("import", "entire", str(tmp_path), check=False)
    commit_files(repository, BRANCH_REF, [("src/main.py", b"print(1)\n")])
    other = home.remem("import", "entire", str(repository), check=False)

    assert bare.returncode == 1 and len(bare.stderr.strip().splitlines()) == 1
    assert "--fetch" in bare.stderr
    assert other.returncode == 1 and len(other.stderr.strip().splitlines()) == 1
    assert "is not an Entire checkpoint branch" in other.stderr and "src/main.py" in other.stderr
    assert missing.returncode == 1 and "No folder at" in missing.stderr
    assert not_git.returncode == 1 and len(not_git.stderr.strip().splitlines()) == 1
    assert "Traceback" not in other.stderr + bare.stderr + missing.stderr + not_git.stderr


def test_a_forgotten_secret_is_not_brought_back_by_importing_again(
    home: Home, tmp_path: Path
) -> None:
    secret = "zq8Kp2abcXYZ1234"
    repository = new_repository(tmp_path / "app")
    transcript = jsonl(
        claude_call("toolu_s", f"./deploy.sh --mode {secret}") + claude_call("toolu_t", "make")
    )
    add_checkpoint(repository, [Copy("abababababab", 0, transcript, metadata("claude-1"))])
    import_entire(home, repository)
    home.remem("forget", "--match", secret, "--yes")

    again = import_entire(home, repository)

    commands = [row[3] for row in events(home)]
    assert again["events_new"] == 1 and "make" in commands
    assert "./deploy.sh --mode [forgotten]" in commands
    assert not any(secret in str(row) for row in home.query("SELECT * FROM captured_events"))


def test_the_burst_and_the_daemon_import_new_checkpoints(home: Home, tmp_path: Path) -> None:
    repository = new_repository(tmp_path / "app")
    add_checkpoint(
        repository,
        [Copy("121212121212", 0, jsonl(claude_call("toolu_1", "make one")), metadata("a"))],
    )
    import_entire(home, repository)  # the project is known from now on
    home.env.update(REMEM_IMPORT_ENTIRE="true", REMEM_IMPORT_ENTIRE_INTERVAL="1s")
    home.env["REMEM_PROMOTION_MAX_AGE"] = "3650d"
    add_checkpoint(
        repository,
        [Copy("343434343434", 0, jsonl(claude_call("toolu_2", "make two")), metadata("b"))],
    )

    home.remem("worker", "--burst")
    assert [row[3] for row in events(home)] == ["make one", "make two"]

    daemon = subprocess.Popen(
        [REMEM, "worker"], env=home.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        add_checkpoint(
            repository,
            [Copy("565656565656", 0, jsonl(claude_call("toolu_3", "make three")), metadata("c"))],
        )
        wait_for(lambda: len(events(home)) == 3, timeout=60)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
    assert [row[3] for row in events(home)] == ["make one", "make two", "make three"]
    state = json.loads((home.path / "entire-checkpoints.json").read_text())
    head = git(repository, "rev-parse", BRANCH_REF).strip()
    assert state[os.path.realpath(repository)]["branch_commit"] == head


def test_init_and_doctor_name_the_command_in_a_repository_with_checkpoints(
    home: Home, tmp_path: Path
) -> None:
    repository = new_repository(tmp_path / "app")
    plain = new_repository(tmp_path / "plain")
    add_checkpoint(
        repository, [Copy("787878787878", 0, jsonl(claude_call("toolu_1", "make")), metadata("a"))]
    )

    def run(*args: str, cwd: Path) -> str:
        result = subprocess.run(
            [REMEM, *args], cwd=cwd, env=home.env, capture_output=True, text=True
        )
        return result.stdout

    doctor = run("doctor", cwd=repository)
    init = run("init", "--no-hooks", cwd=repository)
    init_json = json.loads(run("init", "--no-hooks", "--json", cwd=repository))
    checks = {c["name"]: c for c in json.loads(run("doctor", "--json", cwd=repository))}

    assert "`remem import entire`" in doctor and "refs/heads/entire/checkpoints/v1" in doctor
    assert "run `remem import entire` to learn from them" in init
    assert init_json["entire_import_command"] == "remem import entire"
    assert checks["entire"]["status"] == "ok"
    assert "entire" not in {c["name"] for c in json.loads(run("doctor", "--json", cwd=plain))}
    assert (
        json.loads(run("init", "--no-hooks", "--json", cwd=plain))["entire_import_command"] is None
    )


# What an event is, whichever way it was imported: all but where it was read from and when.
SAME = (
    "idempotency_key, host, hook_event, kind, tool_name, tool_use_id, command, outcome, "
    "exit_code, exit_code_source, error_excerpt, output_excerpt, branch, cwd, directory, files, "
    "change_hash, event_at, event_at_reported"
)


def test_the_corpus_read_from_a_checkpoint_branch_gives_what_claude_code_import_gives(
    home: Home, template_home: Path, tmp_path: Path
) -> None:
    # The folders the sessions were recorded in are moved below one that exists nowhere: the
    # file import would locate a folder of that name that exists on this machine (a replay of
    # the corpus leaves them), and tell its branch instead of the recorded one.
    gone = f"{tmp_path}/recorded-elsewhere/Users/".encode()
    transcripts = []
    for path in sorted(corpus_dir().glob("*/*.jsonl")):
        copy = tmp_path / "corpus" / path.parent.name / path.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(path.read_bytes().replace(b"/Users/", gone))
        transcripts.append(copy)
    repository = new_repository(tmp_path / "app")
    copies = [
        Copy(f"{number:012x}", 0, path.read_bytes(), metadata(path.stem[-8:], branch=""))
        for number, path in enumerate(transcripts)
    ]
    add_checkpoint(repository, copies)
    shutil.copytree(template_home, tmp_path / "home-2")
    other = Home(tmp_path / "home-2")
    folders = sorted({str(path.parent) for path in transcripts})

    through_git = import_entire(home, repository)
    from_files = json.loads(
        other.remem("import", "claude-code", *folders, *SINCE, "--no-promote", "--json").stdout
    )

    query = f"SELECT {SAME} FROM captured_events ORDER BY idempotency_key"
    assert len(transcripts) >= 60 and through_git["session_copies"] == len(transcripts)
    assert through_git["calls_outside_project"] == 0 and through_git["dropped"] == {}
    assert home.query(query) == other.query(query)
    assert through_git["events_new"] == from_files["events_new"] > 1000
    assert through_git["sessions"] == from_files["sessions"]
    # Every event is of this repository, however many folders the sessions were recorded in.
    assert home.query("SELECT DISTINCT root FROM projects") == [(os.path.realpath(repository),)]
    assert len(other.query("SELECT DISTINCT root FROM projects")) > 1


def test_since_redaction_and_the_progress_bar_as_the_other_imports(
    home: Home, tmp_path: Path
) -> None:
    def days_ago(days: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - days * 86_400))

    repository = new_repository(tmp_path / "app")
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    recent = jsonl(claude_call("toolu_r", f"GITHUB_TOKEN={token} make release", at=days_ago(2)))
    old = jsonl(claude_call("toolu_o", "make old", session="claude-old", at=days_ago(400)))
    add_checkpoint(
        repository,
        [
            Copy("c0c0c0c0c0c0", 0, recent, metadata("claude-1", created_at=days_ago(1))),
            Copy("c1c1c1c1c1c1", 0, old, metadata("claude-old", created_at=days_ago(399))),
        ],
    )
    primary, replica = pty.openpty()
    try:
        process = subprocess.run(
            [
                REMEM,
                "import",
                "entire",
                str(repository),
                "--since",
                "60d",
                "--no-promote",
                "--json",
            ],
            env={**home.env, "COLUMNS": "120"},
            stdout=subprocess.PIPE,
            stderr=replica,
            timeout=120,
        )
        os.close(replica)
        drawn = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the terminal's other end is closed: all was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(primary)
    summary = json.loads(process.stdout)

    assert process.returncode == 0 and b"files 2/2" in drawn
    assert summary["files_too_old"] == 1 and summary["events_new"] == 1
    assert summary["older_calls_command"].startswith(f"remem import entire {repository} --since ")
    (command,) = [row[3] for row in events(home)]
    assert token not in command and "make release" in command


def test_from_a_linked_worktree_the_project_is_the_repository(home: Home, tmp_path: Path) -> None:
    repository = new_repository(tmp_path / "app")
    (repository / "web").mkdir()
    worktree = tmp_path / "app-feature"
    git(repository, "worktree", "add", "--quiet", "-b", "feature", str(worktree))
    transcript = jsonl(
        claude_call("toolu_v", "make") + claude_call("toolu_w", "npm test", cwd=f"{ELSEWHERE}/web")
    )
    add_checkpoint(repository, [Copy("e0e0e0e0e0e0", 0, transcript, metadata("claude-1"))])

    import_entire(home, worktree)

    assert events(home) == [
        (os.path.realpath(repository), "feature/login", ".", "make", "success", 0, "claude-code"),
        (
            os.path.realpath(repository),
            "feature/login",
            "web",
            "npm test",
            "success",
            0,
            "claude-code",
        ),
    ]
