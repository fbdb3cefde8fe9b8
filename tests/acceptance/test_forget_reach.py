"""What `remem forget` reaches beyond the events, as a user meets it: the drop ledger, the
drafts remem exported, the agents' transcripts, and what comes again afterwards (the hook, an
import of the transcripts) — masked, because the words that held the match are recorded."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.acceptance.test_forget import (
    DEPLOY,
    SECRET,
    bash,
    files_holding,
    forget,
    hook,
    repository,
)
from tests.conftest import Home, hook_imports
from tests.integration.test_import import Claude

HUGE_OUTPUT = "x" * (1024 * 1024 + 10)


def transcript(home: Home, shop: Path, name: str = "resumed.jsonl") -> Path:
    """A Claude Code session file in the agent's own folder, quoting the secret."""
    session = Claude(str(shop), session="7b1d2c3e-0000-4000-8000-00000000abcd")
    session.bash(DEPLOY, stdout="deployed")
    session.bash("make test", stdout="12 passed")
    folder = Path(home.env["HOME"]) / ".claude" / "projects" / "-shop"
    return session.write(folder / name)


def drafted(home: Home, shop: Path) -> Path:
    """The runbook `remem procedures export` writes of the deploy procedure."""
    (deploy,) = [p for p in home.json("procedures", "list") if SECRET in p["command"]]
    home.remem("procedures", "export", str(deploy["id"]), "--format", "runbook")
    (draft,) = (shop / "remem-drafts").glob("runbook-*.md")
    return draft


def stored(home: Home, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(home.db) as connection:
        return connection.execute(sql).fetchall()


def test_forget_reaches_the_drops_the_drafts_and_what_comes_again(
    home: Home, tmp_path: Path
) -> None:
    shop = repository(tmp_path / "shop")
    for _ in range(3):
        hook(home, bash(shop, DEPLOY, output="deployed"))
    hook(home, bash(shop, DEPLOY, output=HUGE_OUTPUT))  # kept with its output cut, and noted
    home.hook(f'{{"tool_input": {{"command": "{DEPLOY}"'.encode())  # refused: not JSON
    home.remem("worker", "--burst")
    draft = drafted(home, shop)
    session_file = transcript(home, shop)
    assert {d["reason"] for d in home.drops()} == {"output_cut", "not_json"}
    assert SECRET in draft.read_text() and SECRET in session_file.read_text()

    planned = json.loads(home.remem("forget", "--match", SECRET, "--dry-run", "--json").stdout)
    shown = home.remem("forget", "--match", SECRET, "--dry-run").stdout
    done = forget(home, "--match", SECRET)

    assert planned["drops"] == 2 and planned["drafts"] == [str(draft)]
    assert planned["transcripts"] == {str(session_file): 1}
    assert planned["words_recorded"] == 1 and planned["matches_unrecorded"] == 0
    assert f"{session_file}: 1 line(s)" in shown and str(draft) in shown
    assert SECRET[:8] not in shown and SECRET[-8:] not in shown
    assert done["drops_deleted"] == 2 and done["drafts_deleted"] == [str(draft)]
    assert done["new_words_recorded"] == 1
    assert home.drops() == [] and not draft.exists()
    assert stored(home, "SELECT count(*) FROM exports") == [(0,)]
    assert files_holding(home.path, SECRET.encode()) == []
    assert SECRET in session_file.read_text()  # named, not rewritten: --transcripts was not given

    # What comes again is masked: the hook, and an import of the transcript that still holds it.
    hook(home, bash(shop, f"echo {SECRET} | ./deploy.sh", output=f"token={SECRET}"))
    home.remem("import", "claude-code", str(session_file))
    home.hook(f'{{"broken": "{SECRET}'.encode())
    home.remem("worker", "--burst")

    assert files_holding(home.path, SECRET.encode()) == []
    commands = {row[0] for row in stored(home, "SELECT command FROM captured_events")}
    assert {"echo [forgotten] | ./deploy.sh", "./deploy.sh --mode [forgotten]"} <= commands
    assert [d["reason"] for d in home.drops()] == ["not_json"]


def test_forget_rewrites_the_transcripts_in_place_when_asked(home: Home, tmp_path: Path) -> None:
    shop = repository(tmp_path / "shop")
    session_file = transcript(home, shop)
    kept = transcript(home, shop, "kept.jsonl")
    kept.chmod(0o640)
    before = session_file.read_text().splitlines()
    session_file.chmod(0o640)

    refused = home.remem("forget", "--match", SECRET, "--backup", "--yes", check=False)
    done = forget(home, "--match", SECRET, "--transcripts")

    assert refused.returncode == 2 and "--backup keeps" in refused.stderr
    assert done["transcripts_rewritten"] == {str(session_file): 1, str(kept): 1}
    after = session_file.read_text().splitlines()
    assert SECRET not in session_file.read_text()
    # Only the line of the Bash call's input changed; the others are kept byte for byte.
    assert [line == old for line, old in zip(after, before, strict=True)] == [
        False,
        True,
        True,
        True,
    ]
    assert json.loads(after[0])["message"]["content"][0]["input"]["command"] == (
        "./deploy.sh --mode [forgotten]"
    )
    assert session_file.stat().st_mode & 0o777 == 0o640
    assert not list(session_file.parent.glob("*.remem-backup"))
    assert not list(session_file.parent.glob(".remem-*"))


def test_a_backup_of_a_rewritten_transcript_is_kept_only_when_asked(
    home: Home, tmp_path: Path
) -> None:
    session_file = transcript(home, repository(tmp_path / "shop"))
    before = session_file.read_bytes()

    forget(home, "--match", SECRET, "--transcripts", "--backup")

    backup = session_file.with_name(session_file.name + ".remem-backup")
    assert backup.read_bytes() == before and backup.stat().st_mode & 0o777 == 0o600
    assert SECRET.encode() not in session_file.read_bytes()


def test_the_hook_tests_words_against_the_records_with_the_stdlib_alone(
    home: Home, tmp_path: Path
) -> None:
    shop = repository(tmp_path / "shop")
    hook(home, bash(shop, DEPLOY, output="deployed"))
    # Nothing forgotten yet: the check costs the hook one read, no module.
    _printed, code, modules = hook_imports(home, bash(shop, "make lint", output="ok"))
    assert code == 0 and {"remem.record.forgotten", "zlib"}.isdisjoint(modules)
    forget(home, "--match", SECRET)

    _printed, code, modules = hook_imports(home, bash(shop, "make test", output="12 passed"))
    _printed, masked_code, masked_modules = hook_imports(home, bash(shop, DEPLOY))

    # A word that passes no record's bucket costs no hash library; the one that does is masked.
    assert code == masked_code == 0
    assert {"hashlib", "sqlalchemy", "typing", "dataclasses"}.isdisjoint(modules)
    assert "hashlib" in masked_modules and "remem.record.forgotten" in modules
    commands = [row[0] for row in stored(home, "SELECT command FROM captured_events")]
    assert commands == ["make lint", "make test", "./deploy.sh --mode [forgotten]"]
