"""What becomes a procedure (DESIGN.md §6), as real processes: Claude Code and Codex payloads
through `remem-hook`, a `remem worker --burst`, then what the agent and the person are told.
Reads and inline scripts are never procedures; a message is never a workflow; runs on project
files are one family."""

from __future__ import annotations

import json
from pathlib import Path

from mcp.client import ClientSession

from tests.acceptance.test_mcp import _data, _talk
from tests.acceptance.test_real_sessions import (
    bash_payload,
    hook,
    make_repository,
    session_start,
)
from tests.acceptance.test_truthful_digest import Codex
from tests.conftest import Home


def workflows(home: Home) -> list[str]:
    return sorted(p["workflow"] for p in home.procedures())


# Ten kinds of reads, inline scripts and file writes by heredoc, each as agents run them.
NEVER = [
    "sed -n '1,200p' src/app.py",
    "nl -ba src/app.py | sed -n '40,80p'",
    "cat mix.exs",
    "head -n 40 README.md",
    "rg -n 'def test_' tests",
    "find . -name '*.py' -newer setup.cfg",
    "git log --oneline -5",
    "git diff --stat",
    "jq '.scripts' package.json",
    "wc -l src/app.py",
    "ls -la src",
    "python3 - <<'PY'\nimport json\nprint(json.dumps({'a': 1}))\nPY",
    "python -c 'import app; print(app.__version__)'",
    "node -e 'console.log(process.version)'",
    "cat <<'EOF' > notes.txt\nhello\nEOF",
]


def test_reads_and_inline_scripts_are_never_procedures(home: Home, tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "shop")
    codex = Codex(home, repository, tmp_path / "rollout-s3.jsonl", "codex-s3")
    for _round in range(3):
        for command in NEVER:
            hook(home, bash_payload(repository, command, "s1", "ok"))
            hook(home, bash_payload(repository, command, "s2", "ok"))
            codex.ran(command)
    for session in ("s1", "s2"):  # the same sessions prove a workflow: they were read
        hook(home, bash_payload(repository, "make test", session, "ok"))
    codex.ran("make test")
    home.remem("worker", "--burst")

    assert workflows(home) == ["make test"]
    (procedure,) = home.procedures()
    assert procedure["verified_runs"] == 3 and procedure["distinct_sessions"] == 3
    # They are still commands that ran, each of its nine runs passed.
    ran = home.commands()
    assert {command: (hit["runs"], hit["evidence"]) for command, hit in ran.items()} == {
        **{command: (9, 9) for command in NEVER},
        "make test": (3, 3),
    }
    digest = home.remem("context", "--cwd", str(repository)).stdout
    assert "sed -n" not in digest and "python3 -" not in digest and "`make test`" in digest


MESSAGES = [
    "feat: add the cart total",
    "fix: round the tax per line",
    "docs: explain the checkout flow",
    "Closes the long-standing rounding bug",
]


def test_a_commit_message_is_never_a_workflow(home: Home, tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "shop")
    hook(home, bash_payload(repository, f'git commit -m "{MESSAGES[0]}"', "s1", "[main 1a2b] x"))
    refused = f"⧗   input: {MESSAGES[1]}\n✖   subject may not be empty [subject-empty]"
    hook(home, bash_payload(repository, f"git commit -m '{MESSAGES[1]}'", "s1", refused, True))
    hook(home, bash_payload(repository, f"git commit -m '{MESSAGES[1]}'", "s1", "[main 3c4d] x"))
    codex = Codex(home, repository, tmp_path / "rollout-s2.jsonl", "codex-s2")
    body = f"{MESSAGES[2]}\n\n{MESSAGES[3]}"
    codex.ran(f"git add -A && git commit -m \"$(cat <<'EOF'\n{body}\nEOF\n)\"")
    home.remem("worker", "--burst")

    # A commit keeps books: never a procedure, while its refusal stays a known error.
    assert home.procedures() == []
    shown = [
        home.remem("procedures", "list", "--all", "--json").stdout,
        home.remem("procedures", "errors", "--project", str(repository), "--json").stdout,
        home.remem("context", "--cwd", str(repository)).stdout,
        home.remem("context", "--cwd", str(repository), "--json").stdout,
        hook(home, session_start(repository, "s9")),
    ]
    answers: list[str] = []

    async def ask(session: ClientSession) -> None:
        for tool, arguments in (
            ("procedures", {"cwd": str(repository)}),
            ("lessons", {"cwd": str(repository), "query": "input"}),
        ):
            answers.append(json.dumps(_data(await session.call_tool(tool, arguments))))

    _talk(home, str(repository), tmp_path / "mcp.log", ask)
    shown += answers
    assert "⧗   input: …" in shown[2]
    errors = json.loads(shown[1])
    assert [e["workflow"] for e in errors] == ["git commit -m …"]
    assert errors[0]["error"] == "⧗   input: …"  # the hook's output, its message cleared
    for text in shown:
        for message in MESSAGES:
            assert message not in text and json.dumps(message)[1:-1] not in text, text
    # The captured events stay as they were run; recall shows them as workflows have them.
    stored = [command for (command,) in home.query("SELECT command FROM captured_events")]
    assert any(MESSAGES[0] in command for command in stored if command)
    assert "git commit -m …" in home.commands()


FILES = ["internal/cart.go", "internal/tax.go", "cmd/shop/main.go", "pkg/money/money.go"]


def test_runs_on_project_files_are_one_family(home: Home, tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "shop")
    codex = Codex(home, repository, tmp_path / "rollout-s2.jsonl", "codex-s2")
    for name in FILES:
        hook(home, bash_payload(repository, f"gofmt -w {name}", "s1"))
        codex.ran(f"gofmt -w {repository}/{name}")  # the same file, named by its whole path
    for session in ("s1", "s3"):
        hook(home, bash_payload(repository, "mix test", session))
        hook(home, bash_payload(repository, "mix test test/shop/cart_test.exs:12", session))
    home.remem("worker", "--burst")

    found = {p["workflow"]: p for p in home.procedures()}
    assert sorted(found) == ["gofmt -w <file>", "mix test", "mix test <test file>"]
    gofmt = found["gofmt -w <file>"]
    assert (gofmt["command"], gofmt["verified_runs"]) == ("gofmt -w <file>", 8)
    # Run on one file only, a family shows the command that ran.
    assert found["mix test <test file>"]["command"] == "mix test test/shop/cart_test.exs:12"
    digest = home.remem("context", "--cwd", str(repository)).stdout
    lines = [line for line in digest.splitlines() if "gofmt" in line]
    assert len(lines) == 1 and lines[0].startswith("- `gofmt -w <file>`  (4 files, 8 runs in 2")
    assert "- `mix test test/shop/cart_test.exs:12`  (2 runs" in digest
    assert "- `mix test`  (2 runs" in digest
    show = home.remem("procedures", "show", str(gofmt["id"])).stdout
    for name in FILES:
        assert name in show, show
    variants = json.loads(home.remem("procedures", "show", str(gofmt["id"]), "--json").stdout)
    assert len(variants["variants"]) == 4 and sum(v["runs"] for v in variants["variants"]) == 8
