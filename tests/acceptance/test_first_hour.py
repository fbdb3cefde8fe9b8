"""What a new user meets before any memory exists: every failure has a voice, the answers that
matter come at once and from one implementation, and the empty tables say what comes next."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REMEM, REPO, Home, wait_for

COMMANDS = (
    ["init"],
    ["status"],
    ["context"],
    ["doctor"],
    ["procedures", "list"],
    ["tasks"],
    ["worker", "--burst"],
    ["db", "current"],
    ["drops"],
    ["recall", "pytest"],
)


def _env(home: Path, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env.update({"REMEM_HOME": str(home), "HOME": str(tmp_path / "user")})
    return env


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: " ".join(args))
def test_a_home_that_is_a_file_is_one_line_naming_it(tmp_path: Path, args: list[str]) -> None:
    home = tmp_path / "not-a-folder"
    home.write_text("a file where the home should be\n")
    result = subprocess.run(
        [REMEM, *args], env=_env(home, tmp_path), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1, result
    said = (result.stdout + result.stderr).strip()
    assert "Traceback" not in said
    assert str(home) in said and "is a file, not a folder" in said
    if args != ["doctor"]:  # doctor prints its checks; every other command one line
        assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
    assert home.read_text() == "a file where the home should be\n"


def _start_daemon(home: Home) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [REMEM, "worker"], env=home.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def _heartbeats(home: Home) -> tuple[int, int | None]:
    """How many workers `remem status` sees beating, and the newest one's pid."""
    worker = home.status()["worker"]
    return worker["workers"], worker["pid"]


def test_a_killed_daemon_is_dead_at_once_and_its_heartbeat_is_cleared_by_the_next_start(
    home: Home,
) -> None:
    first = _start_daemon(home)
    try:
        wait_for(lambda: _heartbeats(home) == (1, first.pid), timeout=60)
    finally:
        first.kill()
        first.wait(timeout=30)
    # No waiting for the heartbeat to age: the process is gone, and so is its lock.
    worker = json.loads(home.remem("status", "--json").stdout)["worker"]
    assert (worker["state"], worker["pid"]) == ("dead", first.pid)
    assert "dead: pid" in home.remem("status").stdout
    checks = {c["name"]: c for c in json.loads(home.remem("doctor", "--json", check=False).stdout)}
    assert checks["worker"]["status"] == "warn" and "gone" in checks["worker"]["detail"]

    second = _start_daemon(home)
    try:
        wait_for(lambda: _heartbeats(home) == (1, second.pid), timeout=60)
        worker = json.loads(home.remem("status", "--json").stdout)["worker"]
        assert (worker["state"], worker["pid"], worker["workers"]) == ("running", second.pid, 1)
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=60) == 0
    assert _heartbeats(home) == (0, None)


def _feed_two_passing_runs(home: Home, project: Path) -> None:
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for session, tool_use in (("s1", "toolu_1"), ("s2", "toolu_2")):
        payload = {
            "session_id": session,
            "cwd": str(project),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": tool_use,
            "tool_input": {"command": "python -m pytest -q"},
            "tool_response": {"stdout": "3 passed in 0.01s", "stderr": "", "interrupted": False},
        }
        assert home.hook(payload).returncode == 0
    home.remem("worker", "--burst")


def _through_click(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    """The same command line, parsed and run by the click group instead of the front door."""
    program = "import sys; from remem.cli.commands import cli; cli(sys.argv[1:], prog_name='remem')"
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        env={**home.env, "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_front_door_answers_as_click_does_without_loading_it(
    home: Home, tmp_path: Path
) -> None:
    project = tmp_path / "shop"
    _feed_two_passing_runs(home, project)
    for args in (
        ["context", "--cwd", str(project)],
        ["context", f"--cwd={project}", "--json"],
        ["--help"],
        ["procedures", "list"],
        ["procedures", "list", "--all", f"--project={project}", "--branch", "main"],
        ["procedures", "list", "--status", "active", "--json"],
        ["procedures", "show", "1"],
        ["procedures", "show", "--evidence-page", "1", "1", "--json"],
    ):
        fast = subprocess.run(
            [REMEM, *args],
            env={**home.env, "COLUMNS": "100"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert fast.returncode == 0, fast.stderr
        assert fast.stdout.strip(), args
        assert fast.stdout == _through_click(home, *args).stdout, args
    assert "python -m pytest -q" in fast.stdout or "Usage: remem" in fast.stdout
    fast_status = json.loads(subprocess.check_output([REMEM, "status", "--json"], env=home.env))
    click_status = json.loads(_through_click(home, "status", "--json").stdout)
    for key in ("home", "database", "schema_revision", "events", "tasks", "procedures"):
        assert fast_status[key] == click_status[key], key
    assert fast_status["procedures"]["active"] == 1

    probe = (
        "import sys; from remem.cli.fast import main; main(sys.argv[1:]); "
        "loaded = [m for m in ('click', 'sqlalchemy', 'rich', 'alembic') if m in sys.modules]; "
        "sys.stderr.write(repr(loaded))"
    )
    for args in (
        ["context", "--cwd", str(project)],
        ["status"],
        ["--help"],
        ["procedures", "list", "--all"],
        ["procedures", "show", "1", "--json"],
    ):
        result = subprocess.run(
            [sys.executable, "-c", probe, *args],
            env={**home.env, "COLUMNS": "100"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0 and result.stdout, result
        assert result.stderr == "[]", (args, result.stderr)


def test_the_rendered_help_is_what_click_renders() -> None:
    from remem.cli.commands import top_help
    from remem.cli.help_text import TOP_HELP

    assert top_help() == TOP_HELP, "commands changed: run `make help-text`"


def test_anything_the_front_door_does_not_know_goes_to_click(home: Home, tmp_path: Path) -> None:
    zero = home.remem("context", "--page", "0", check=False)
    assert zero.returncode == 2 and "--page" in zero.stderr and "Traceback" not in zero.stderr
    for args in (["recall", "pytest", "--page", "0"], ["tasks", "--limit", "0"]):
        refused = home.remem(*args, check=False)
        assert refused.returncode == 2 and "range x>=1" in refused.stderr, args
    zero_id = home.remem("procedures", "show", "0", check=False)
    assert zero_id.returncode == 2 and "PROCEDURE_ID" in zero_id.stderr
    missing_id = home.remem("procedures", "show", "7", check=False)
    assert missing_id.returncode == 1 and "No procedure 7" in missing_id.stderr
    stale = home.remem("procedures", "list", "--status", "stale-ish", check=False)
    assert stale.returncode == 2 and "--status" in stale.stderr
    unknown = home.remem("status", "--verbose", check=False)
    assert unknown.returncode == 2 and "No such option '--verbose'" in unknown.stderr
    beyond = home.remem("context", "--cwd", str(tmp_path), "--page", "2", check=False)
    assert beyond.returncode == 0 and beyond.stdout == ""  # nothing learnt: no digest at all
    (home.path / "remem.db").unlink()
    missing = home.remem("context", check=False)
    assert missing.returncode == 1 and "run `remem init`" in missing.stderr


def test_empty_tables_say_what_comes_next(home: Home) -> None:
    assert home.remem("procedures", "list").stdout == (
        "No procedures yet: they appear after a command passes twice.\n"
    )
    assert "No tasks yet" in home.remem("tasks").stdout
    assert "No failed tasks." in home.remem("tasks", "--status", "failed").stdout
    assert "No known errors yet" in home.remem("procedures", "errors").stdout
    assert "procedures list --all" in home.remem("procedures", "list", "--status", "stale").stdout


def test_config_problems_name_the_file_and_line(home: Home) -> None:
    config = home.path / "config.toml"
    config.unlink()
    checks = {c["name"]: c for c in json.loads(home.remem("doctor", "--json", check=False).stdout)}
    assert checks["config"]["detail"] == f"{config} missing (defaults in use)"

    config.write_text('[worker]\npoll_interval = "5s"\n\n[capture\nlock_timeout = "1s"\n')
    result = home.remem("status", check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(f"remem: {config}, line 4 is not valid TOML")
    assert len(result.stderr.strip().splitlines()) == 1
    checks = {c["name"]: c for c in json.loads(home.remem("doctor", "--json", check=False).stdout)}
    assert checks["config"]["fix"] == "fix the file at that line"

    config.write_text('[worker]\npoll_interval = "5s"\npoll_intervall = "5s"\n')
    result = home.remem("status", check=False)
    assert f"{config}, line 3: `worker.poll_intervall` is not a remem setting" in result.stderr
    config.write_text("# tuned\n[worker]\n\npoll_interval = 5\n")
    result = home.remem("status", check=False)
    assert f"{config}, line 4: `worker.poll_interval` must be a duration" in result.stderr
    # Every problem at once, on one line: fixing one need not reveal the next.
    config.write_text("[worker]\npoll_interval = 5\nmax_attempts = 0\nspeed = 3\n")
    result = home.remem("status", check=False)
    assert result.stderr.startswith("remem: 3 settings cannot be used: ")
    assert len(result.stderr.strip().splitlines()) == 1
    for line, key in ((2, "poll_interval"), (3, "max_attempts"), (4, "speed")):
        assert f"{config}, line {line}: `worker.{key}`" in result.stderr
    checks = {c["name"]: c for c in json.loads(home.remem("doctor", "--json", check=False).stdout)}
    assert checks["config"]["fix"] == "fix or remove those settings"


def _make_with_path(
    tmp_path: Path, interpreters: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`make` in a copy of the repository's Makefile, with only these interpreters on PATH."""
    work, bin_dir = tmp_path / "checkout", tmp_path / "bin"
    work.mkdir(parents=True)
    bin_dir.mkdir(parents=True)
    shutil.copy(REPO / "Makefile", work / "Makefile")
    (work / "pyproject.toml").write_text("")
    for name, script in interpreters.items():
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o755)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    return subprocess.run(
        [
            "/usr/bin/make" if Path("/usr/bin/make").exists() else shutil.which("make") or "make",
            "-n",
            "-B",
            ".venv/.installed",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _interpreter(version: tuple[int, int]) -> str:
    """A stand-in interpreter that answers the version check as that version would."""
    return f"#!/bin/sh\nexit {0 if version >= (3, 11) else 1}\n"


def test_make_picks_the_newest_interpreter_that_runs(tmp_path: Path) -> None:
    result = _make_with_path(
        tmp_path,
        {
            "python3.13": "#!/bin/sh\necho 'pyenv: python3.13: command not found' >&2\nexit 127\n",
            "python3.12": _interpreter((3, 12)),
            "python3.11": _interpreter((3, 11)),
        },
    )
    assert result.returncode == 0, result.stderr
    assert "python3.12 -m venv .venv" in result.stdout


def test_make_falls_back_to_python3_only_when_it_is_new_enough(tmp_path: Path) -> None:
    found = _make_with_path(tmp_path / "new", {"python3": _interpreter((3, 12))})
    assert "python3 -m venv .venv" in found.stdout
    old = _make_with_path(tmp_path / "old", {"python3": _interpreter((3, 10))})
    assert 'test -n ""' in old.stdout  # no interpreter chosen: the recipe stops with the advice
    assert "needs Python 3.11" in old.stdout


def _normalised(text: str) -> str:
    text = re.sub(r"/\S*?/remem-demo-[A-Za-z0-9_]{8}", "/tmp/remem-demo-XXXXXXXX", text)
    text = re.sub(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", "YYYY-MM-DDThh:mm:ssZ", text)
    text = re.sub(r"\d{4}-\d{2}-\d{2}", "YYYY-MM-DD", text)
    return "\n".join(line.rstrip() for line in text.splitlines())


def test_the_readme_demo_is_what_remem_demo_prints(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```console\n\$ remem demo\n(.*?)```", readme, re.S)
    assert block, "README.md has no `remem demo` block"
    env = _env(tmp_path / "unused-home", tmp_path)
    env["TMPDIR"] = "/tmp"  # the README shows /tmp paths; a path's length shapes the table
    env["COLUMNS"] = "120"
    result = subprocess.run([REMEM, "demo"], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert _normalised(result.stdout) == _normalised(block.group(1))


def test_init_offers_to_import_the_sessions_the_agents_already_wrote(tmp_path: Path) -> None:
    user = tmp_path / "user"
    for name in ("one", "two"):
        session = user / ".claude" / "projects" / "-src-shop" / f"{name}.jsonl"
        session.parent.mkdir(parents=True, exist_ok=True)
        session.write_text("{}\n")
    rollout = user / ".codex" / "sessions" / "2026" / "11" / "30" / "rollout-1.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text("{}\n")
    env = _env(tmp_path / "home", tmp_path)
    result = subprocess.run(
        [REMEM, "init", "--no-hooks"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    today = time.strftime("%Y-%m-%d", time.gmtime())  # files without times: their own
    assert result.stdout.rstrip().endswith(
        f"Found 2 Claude Code sessions and 1 Codex session, the oldest from {today}: run "
        "`remem import all` to learn from them."
    )
    report = json.loads(
        subprocess.check_output([REMEM, "init", "--no-hooks", "--json"], env=env, text=True)
    )
    assert report["sessions_to_import"] == {"claude-code": 2, "codex": 1}
    assert report["import_command"] == "remem import all"
    assert report["oldest_session_at"].startswith(today)
    empty = _env(tmp_path / "home2", tmp_path / "nobody")
    quiet = subprocess.run([REMEM, "init"], env=empty, capture_output=True, text=True, timeout=120)
    assert "remem import" not in quiet.stdout
