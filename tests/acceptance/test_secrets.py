"""Secrets never reach the database, the spool, the logs or the digest; identities survive.

Every family of the corpus (secrets_corpus.py), and every family of the redaction table, goes
through the real `remem-hook` in each place a secret rides: a Claude Code command, its output, the
error of a failure, and a generic event; and through `remem import` of a transcript. Then
`remem worker --burst`, `remem context`, the SessionStart hook and exported drafts.
detect-secrets, an oracle that knows nothing of remem's rules, scans all that remem keeps and must
find nothing; a bytes search for each secret's literal value, in every file under the home, is
stronger still.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from detect_secrets import SecretsCollection
from detect_secrets.settings import default_settings
from sqlalchemy import text as sql

from remem.db.engine import make_engine
from remem.record.quote import NEEDS_CREDENTIALS as MARK
from remem.record.redact import MASK
from tests.acceptance.secrets_corpus import (
    CORPUS,
    PRINTED,
    RSA_BODY,
    SEED,
    SHAPES,
    TABLE_CORPUS,
    draw,
)
from tests.acceptance.test_team import Machine, clone
from tests.conftest import Home, end_codex_command, load_fixture

SQLITE_FILES = ("remem.db", "remem.db-wal", "remem.db-shm")
FAMILIES = CORPUS + TABLE_CORPUS
# The table's families travel a few to a text (one line each), to keep the hook runs few.
TEXTS = [text for _family, text, _secret in CORPUS] + [
    "\n".join(text for _family, text, _secret in TABLE_CORPUS[start : start + 8])
    for start in range(0, len(TABLE_CORPUS), 8)
]
# The whole corpus in one text.
ALL_TEXTS = "\n".join(TEXTS)


def make_project(tmp_path: Path) -> Path:
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    return project


# Ids are numbers: a family's name in an id ("password", "secret") is what a keyword scanner flags.
def claude_payloads(number: int, text: str, project: Path) -> list[dict[str, Any]]:
    """A failure of the command, then two successes (a procedure with a lesson), the second
    printing the text; one session, in this order."""
    session = {"session_id": f"session-{number:02d}", "cwd": str(project)}
    failure = load_fixture("claude-code/post_tool_use_failure_bash_exit_code.json")
    failure.update(session, tool_use_id=f"toolu_{number:02d}_0", tool_input={"command": text})
    failure["error"] = f"Exit code 1\n{text}"
    payloads = [failure]
    for run, stdout in enumerate(["ok", text], start=1):
        success = load_fixture("claude-code/post_tool_use_bash_success.json")
        success.update(session, tool_use_id=f"toolu_{number:02d}_{run}")
        success["tool_input"] = {"command": text}
        success["tool_response"] = {"stdout": stdout, "stderr": "", "interrupted": False}
        payloads.append(success)
    return payloads


def generic_payload(number: int, text: str, project: Path) -> dict[str, Any]:
    payload = load_fixture("generic/command.json")
    payload.update(session_id=f"term-{number:02d}", cwd=str(project), command=text)
    payload["event_id"] = f"term-{number:02d}-1"
    return payload


EDITED = "SELECT files FROM captured_events WHERE kind = 'edit'"


def send(home: Home, number: int, text: str, project: Path) -> None:
    for payload in [
        *claude_payloads(number, text, project),
        generic_payload(number, text, project),
    ]:
        result = home.hook(payload)
        assert result.returncode == 0, (number, result.stderr)


# Digests remem computes from what it already redacted: an entropy scanner flags every one, so they
# are checked for their shape and shown as it; the rest of each row is scanned as it is.
DIGEST_COLUMNS = {
    "workflow_hash": r"[0-9a-f]{64}",
    "change_hash": r"[0-9a-f]{32}",
    "payload_sha256": r"[0-9a-f]{64}",
    "draft_sha256": r"[0-9a-f]{64}",
    "procedure_sha256": r"[0-9a-f]{64}",
    # A fingerprint of what a procedure runs (remem/record/inputs.py), inside its JSON.
    "sha256": r"[0-9a-f]{64}",
    "topic_key": r"(?P<slug>[a-z0-9-]*)-[0-9a-f]{12}",
    # A session ledger's item: a known error's key hash, or advice's kind and key (hashes).
    "item_key": r"(?:(?P<slug>[a-z_]+):)?[0-9a-f]{32,64}(?:>[0-9a-f]{64})?",
    "key": r"(?:(?P<slug>[a-z_]+):)?[0-9a-f]{32,64}(?:>[0-9a-f]{64})?",  # advice given
}
# JSON lists whose strings are digests, beside ids and directories (digest_shown).
DIGEST_LISTS = {"procedures", "known_errors", "follow"}


def sql_literal(column: str, value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)):
        return repr(value)
    if column in DIGEST_COLUMNS:
        shape = re.fullmatch(DIGEST_COLUMNS[column], value)
        assert shape is not None, f"{column} is no digest: {value!r}"
        value = f"{shape.groupdict().get('slug') or ''}-<digest>"
    if column in DIGEST_LISTS:
        assert isinstance(json.loads(value), list), f"{column} is no list: {value!r}"
        value = re.sub(r'"[0-9a-f]{32}(?:[0-9a-f]{32})?"', '"<digest>"', value)
    return "'" + str(value).replace("'", "''") + "'"


def dump_database(home: Home, into: Path) -> Path:
    """The database as SQL text, like sqlite3's `.dump` (detect-secrets skips binary files)."""
    connection = sqlite3.connect(home.db, timeout=10)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        lines = []
        for (table,) in tables.fetchall():
            rows = connection.execute(f'SELECT * FROM "{table}"')
            columns = [column[0] for column in rows.description]
            for row in rows:
                values = ", ".join(map(sql_literal, columns, row))
                lines.append(f'INSERT INTO "{table}" VALUES({values});')
    finally:
        connection.close()
    path = into / "remem-db-dump.sql"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def digest_pages(home: Home, project: Path, into: Path) -> list[Path]:
    """Every page of `remem context`, and what the SessionStart hook prints."""
    pages = []
    for number in range(1, 100):
        result = home.remem("context", "--cwd", str(project), "--page", str(number), check=False)
        if result.returncode != 0 or not result.stdout:
            break
        pages.append(into / f"digest-page-{number}.md")
        pages[-1].write_text(result.stdout, encoding="utf-8")
    start = {**load_fixture("claude-code/session_start.json"), "cwd": str(project)}
    start["session_id"] = "secrets-session-start"
    result = home.hook(start)
    assert result.returncode == 0, result.stderr
    pages.append(into / "session-start.out")
    pages[-1].write_bytes(result.stdout)
    return pages


def export_drafts(home: Home, into: Path) -> list[Path]:
    """Every procedure remem would export, as a runbook (a draft holding a secret is refused)."""
    listed = json.loads(home.remem("procedures", "list", "--json").stdout)
    for procedure in listed:
        out = into / "drafts"
        home.remem(
            "procedures",
            "export",
            str(procedure["id"]),
            "--format",
            "runbook",
            "--out",
            str(out),
            check=False,
        )
    return text_files(into / "drafts") if (into / "drafts").exists() else []


def write_transcript(path: Path, texts: list[str], cwd: Path) -> None:
    """A Claude Code session running each text as a command that prints it back."""
    common = {"sessionId": "secrets-import", "cwd": str(cwd), "gitBranch": "main"}
    with open(path, "w", encoding="utf-8") as out:
        for number, text in enumerate(texts):
            use_id = f"toolu_import_{number:03d}"
            use = {"type": "tool_use", "id": use_id, "name": "Bash", "input": {"command": text}}
            out.write(json.dumps({**common, "type": "assistant", "message": {"content": [use]}}))
            part = {"type": "tool_result", "tool_use_id": use_id, "content": text}
            result = {"stdout": text, "stderr": "", "interrupted": False}
            record = {**common, "type": "user", "message": {"content": [part]}}
            out.write("\n" + json.dumps({**record, "toolUseResult": result}) + "\n")


def text_files(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and p.name not in SQLITE_FILES]


def oracle_findings(paths: list[Path]) -> list[str]:
    """What detect-secrets flags in the files, each scanned as it is and as a config file (its
    keyword rules are widest there: `password = value` needs no quotes)."""
    scanned = []
    for path in paths:
        # remem's own mark of a redacted command reads as `credentials: <value>` to a keyword
        # rule: it is the project's fixed wording, shown to the oracle as a placeholder.
        text = path.read_bytes()
        if MARK.encode() in text:
            path.write_bytes(text.replace(MARK.encode(), b"<needs-credentials-mark>"))
        scanned.append(path)
        as_config = path.with_name(f"{path.name}.oracle.conf")
        shutil.copyfile(path, as_config)
        scanned.append(as_config)
    try:
        with default_settings():
            secrets = SecretsCollection()
            for path in scanned:
                secrets.scan_file(str(path))
        return [f"{Path(name).name}:{s.line_number}: {s.type}" for name, s in secrets]
    finally:
        for path in scanned[1::2]:
            path.unlink()


def leaked_secrets(root: Path) -> list[str]:
    """Families whose secret's literal bytes are in some file under root (SQLite files too)."""
    data = b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())
    return [family for family, _text, secret in FAMILIES if secret.encode() in data]


@pytest.fixture
def evidence(tmp_path: Path) -> Path:
    path = tmp_path / "evidence"
    path.mkdir()
    return path


def test_the_corpus_covers_every_family_of_the_table() -> None:
    families = [family for family, _text, _secret in FAMILIES]
    assert len(families) == len(set(families)) >= 30 + 150
    assert all(secret in text for _family, text, secret in FAMILIES)
    assert all(any(secret in text for text in TEXTS) for _family, _text, secret in FAMILIES)


def test_the_oracle_flags_a_secret_left_in_a_file(evidence: Path) -> None:
    # Without this, an oracle that flagged nothing (a renamed API, a skipped file) would pass.
    leak = evidence / "leak.log"
    leak.write_text(f"-----BEGIN RSA PRIVATE KEY-----\n{RSA_BODY}\n", encoding="utf-8")

    assert any(finding.endswith("Private Key") for finding in oracle_findings([leak]))


def test_the_oracle_recognises_most_families_unredacted(evidence: Path) -> None:
    for number, (_family, text, _secret) in enumerate(FAMILIES):
        (evidence / f"{number:03d}.txt").write_text(text, encoding="utf-8")

    findings = oracle_findings(sorted(evidence.iterdir()))

    assert len({finding.split(".", 1)[0] for finding in findings}) >= 40


def test_no_secret_of_the_corpus_is_kept_anywhere(
    home: Home, tmp_path: Path, evidence: Path
) -> None:
    project = make_project(tmp_path)
    with ThreadPoolExecutor(max_workers=4) as pool:
        sent = [pool.submit(send, home, n, text, project) for n, text in enumerate(TEXTS)]
    for future in sent:
        future.result()
    home.remem("worker", "--burst")
    pages = digest_pages(home, project, evidence)
    drafts = export_drafts(home, evidence)

    assert home.status()["events"] == home.scalar("SELECT count(*) FROM captured_events")
    assert home.scalar("SELECT count(*) FROM captured_events WHERE kind != 'edit'") == (
        4 * len(TEXTS) + 1
    )
    assert drafts != []
    # A command that writes a file in the project is an edit of it too, stored redacted.
    written = {name for (files,) in home.query(EDITED) for name in json.loads(files)}
    assert {".npmrc", "id_rsa", "creds.json"} <= written
    assert "[REDACTED" in pages[0].read_text(encoding="utf-8")
    kept = [dump_database(home, evidence), *pages, *drafts, *text_files(home.path)]
    assert [path.name for path in kept if path.parent.name == "logs"] != []
    assert oracle_findings(kept) == []
    assert leaked_secrets(home.path) == []
    assert leaked_secrets(evidence) == []


def test_no_secret_reaches_the_spool(home: Home, tmp_path: Path, evidence: Path) -> None:
    project = make_project(tmp_path)
    payloads = [
        payload
        for number, text in enumerate(spool_texts())
        for payload in (
            claude_payloads(number, text, project)[0],
            generic_payload(number, text, project),
        )
    ]
    locker = sqlite3.connect(home.db, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(home.hook, payloads))
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert [result.returncode for result in results] == [0] * len(payloads)
    spooled = text_files(home.spool)
    assert spooled != []
    assert oracle_findings(spooled) == []
    assert leaked_secrets(home.spool) == []

    home.remem("worker", "--burst")

    assert home.scalar("SELECT count(*) FROM captured_events WHERE kind = 'command'") == len(
        payloads
    )
    assert oracle_findings([dump_database(home, evidence), *text_files(home.path)]) == []
    assert leaked_secrets(home.path) == []


def spool_texts() -> list[str]:
    """The corpus in a few texts, each short enough to be kept whole in an event."""
    texts = [""]
    for text in TEXTS:
        if len(texts[-1]) + len(text) > 1800:
            texts.append("")
        texts[-1] = f"{texts[-1]}\n{text}" if texts[-1] else text
    return texts


def test_dropped_payload_keeps_no_secret(home: Home) -> None:
    assert home.hook(f"not json {ALL_TEXTS}").returncode == 0
    assert [drop["reason"] for drop in home.drops()] == ["not_json"]
    assert leaked_secrets(home.path) == []


def test_a_redacted_command_keeps_everything_but_the_secret(home: Home) -> None:
    payload = load_fixture("claude-code/post_tool_use_bash_success.json")
    payload["tool_input"] = {
        "command": "git clone https://x-access-token:ghp_R2d2C3poBb8Yoda1Luke2Leia3Han4Solo5"
        "@github.com/acme/shop && MYSQL_PWD=My5qlPwdValue mysql -u root shop"
    }
    assert home.hook(payload).returncode == 0
    assert list(home.commands()) == [
        "git clone https://x-access-token:[REDACTED]@github.com/acme/shop"
        " && MYSQL_PWD=[REDACTED] mysql -u root shop"
    ]


@pytest.mark.parametrize(
    "command",
    [
        "git cherry-pick 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b",
        "python -m pytest "
        + "/srv/workspaces/acme-platform/services/checkout/" * 2
        + "tests/integration/test_payment_flow.py",
        "pytest tests/test_auth.py::test_token_refresh -k 'token and not slow'",
        "MONKEY=1 AUTHOR=bob PASSTHROUGH=1 KEYBOARD_LAYOUT=us make test",
        "mysql -u root -p shop_development_database_name",
        "git log --author=alice --format='%H %s' -- src/auth/tokens.py",
        "git log --pretty=format:'%h %an %s' --since=2.weeks -- src/session/cookies.py",
        "pytest -k session tests/integration/test_checkout_flow.py",
        "make test PYTEST_ARGS='-k cookie_salt' DATABASE=shop_test",
        "ansible-playbook deploy.yml --private-key ~/.ssh/acme-deploy-2026 -l web",
        "aws dynamodb query --table-name orders --partition-key id --sort-key created",
    ],
    ids=[
        *("git-sha", "long-path", "test-node-id", "look-alike-names", "mysql-prompt", "git-log"),
        *("git-log-pretty", "pytest-k-session", "make-test", "key-file", "sort-key"),
    ],
)
def test_commands_without_secrets_survive_byte_for_byte(home: Home, command: str) -> None:
    payload = load_fixture("claude-code/post_tool_use_bash_success.json")
    payload["tool_input"] = {"command": command}
    assert home.hook(payload).returncode == 0
    assert list(home.commands()) == [command]
    assert len(command) >= 40


def test_no_secret_survives_a_transcript_import(home: Home, tmp_path: Path, evidence: Path) -> None:
    project = make_project(tmp_path)
    transcript = tmp_path / "transcripts" / "secrets-import.jsonl"
    transcript.parent.mkdir()
    write_transcript(transcript, TEXTS, project)

    summary = json.loads(home.remem("import", "claude-code", str(transcript), "--json").stdout)
    home.remem("worker", "--burst")

    assert summary["events_new"] == len(TEXTS)
    kept = [dump_database(home, evidence), *digest_pages(home, project, evidence)]
    assert oracle_findings([*kept, *text_files(home.path)]) == []
    assert leaked_secrets(home.path) == []
    assert leaked_secrets(evidence) == []


# ---- Realistic shapes, drawn afresh each run, through every place remem keeps or shows text -----

TEAM_TEXT_COLUMNS = (
    "SELECT table_name, column_name FROM information_schema.columns "
    "WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'json', 'jsonb') "
    "ORDER BY table_name, ordinal_position"
)
ADVICE_ERROR = (
    "Exit code 2\nImportError while loading conftest '/w/shop/tests/conftest.py'.\n"
    "E   ModuleNotFoundError: No module named 'shop_deps'\n1 error in 0.31s"
)


def shape_batches(drawn: list[tuple[str, str, str, str]], size: int) -> list[tuple[str, str]]:
    """(command, output) of the shapes a few at a time, one line (or lines) each."""
    batches = []
    for start in range(0, len(drawn), size):
        part = drawn[start : start + size]
        command = "\n".join(command for _family, command, _output, _secret in part)
        output = "\n".join(output for _family, _command, output, _secret in part if output)
        batches.append((command, output))
    return batches


def claude_runs(session: str, command: str, output: str, project: str) -> list[dict[str, Any]]:
    """A failure printing the output, then two passes: the second prints the command and the
    output, so that every shape rides as a command and as output."""
    failure = load_fixture("claude-code/post_tool_use_failure_bash_exit_code.json")
    failure.update(session_id=session, cwd=project, tool_use_id=f"toolu_{session}_0")
    failure.update(tool_input={"command": command}, error=f"Exit code 1\n{output}")
    runs = [failure]
    for run, stdout in enumerate([output or "ok", f"{command}\n{output}"], start=1):
        success = load_fixture("claude-code/post_tool_use_bash_success.json")
        success.update(session_id=session, cwd=project, tool_use_id=f"toolu_{session}_{run}")
        success["tool_input"] = {"command": command}
        success["tool_response"] = {"stdout": stdout, "stderr": "", "interrupted": False}
        runs.append(success)
    return runs


def codex_run(
    session: str, command: str, output: str, project: str, rollout: Path, told: bool = True
) -> dict[str, Any]:
    """Codex's hook, whose output the worker reads again from the rollout with its exit code;
    the hook's own payload holds it too when `told`."""
    payload = load_fixture("codex/post_tool_use_bash.json")
    call_id = f"call_{session}"
    payload.update(session_id=session, cwd=project, tool_use_id=call_id)
    payload.update(transcript_path=str(rollout), tool_input={"command": command})
    payload["tool_response"] = f"{command}\n{output}" if told else ""
    end_codex_command(rollout, call_id, 0, f"{command}\n{output}")
    return payload


def shape_sessions(
    shapes: list[tuple[str, str, str, str]],
    printed: list[tuple[str, str, str, str]],
    project: str,
    rollout: Path,
) -> list[list[dict[str, Any]]]:
    """The hook payloads of each session: the shapes a batch at a time, from Claude Code and
    from Codex; each command that prints a secret on its own, since one in a batch would mask
    the others' output too."""
    sessions = []
    for number, (command, output) in enumerate(shape_batches(shapes, 22)):
        sessions.append(claude_runs(f"shape{number}", command, output, project))
        sessions.append([codex_run(f"shape{number}", command, output, project, rollout)])
    for number, (_family, command, output, _secret) in enumerate(printed):
        sessions.append(claude_runs(f"printed{number}", command, output, project)[2:])
        # Only the rollout holds this output: the worker is the one to mask it.
        told = number % 2 == 0
        sessions.append([codex_run(f"printed{number}", command, output, project, rollout, told)])
    return sessions


def run_in_order(home: Home, payloads: list[dict[str, Any]]) -> list[bytes]:
    outs = []
    for payload in payloads:
        result = home.hook(payload)
        assert (result.returncode, result.stderr) == (0, b""), result
        outs.append(result.stdout)
    return outs


def recall_pages(home: Home, project: str, into: Path) -> list[Path]:
    pages = []
    for number in range(1, 50):
        result = home.remem("recall", ".", "--cwd", project, "--page", str(number), check=False)
        if result.returncode != 0 or not result.stdout.strip():
            break
        pages.append(into / f"recall-page-{number}.txt")
        pages[-1].write_text(result.stdout, encoding="utf-8")
        if f"--page {number + 1}" not in result.stdout:
            break
    return pages


def team_values(url: str) -> list[tuple[str, Any]]:
    """(column, value) of every text column of every table of the team database."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            columns = connection.execute(sql(TEAM_TEXT_COLUMNS)).all()
            return [
                (column, value)
                for table, column in columns
                for (value,) in connection.execute(sql(f'SELECT "{column}"::text FROM "{table}"'))
                if value is not None
            ]
    finally:
        engine.dispose()


def local_values(home: Home) -> list[tuple[str, Any]]:
    """(column, value) of every text column of every table of the local database."""
    connection = sqlite3.connect(home.db, timeout=10)
    try:
        values = []
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        for (table,) in tables.fetchall():
            columns = connection.execute(f'PRAGMA table_info("{table}")').fetchall()
            for column in [name for _cid, name, kind, *_rest in columns if kind.upper() == "TEXT"]:
                rows = connection.execute(f'SELECT "{column}" FROM "{table}"')
                values += [(column, value) for (value,) in rows if value is not None]
        return values
    finally:
        connection.close()


def value_lines(column: str, value: Any) -> set[str]:
    """A stored value as the lines an oracle reads: a digest as its shape, JSON as one line
    per string it holds beside its key, any other text as its lines."""
    if column in DIGEST_COLUMNS or column in DIGEST_LISTS:
        return {sql_literal(column, value)}
    text = str(value)
    try:
        parsed = json.loads(text) if text[:1] in "{[" else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict | list):
        return set(text.splitlines())
    lines, pending = set(), [(column, parsed)]
    while pending:
        key, item = pending.pop()
        if isinstance(item, dict):
            pending += list(item.items())
        elif isinstance(item, list):
            pending += [(key, element) for element in item]
        elif isinstance(item, str) and key in DIGEST_COLUMNS:
            lines.add(f"{json.dumps(key)}: {sql_literal(key, item)}")
        elif isinstance(item, str):
            lines |= {f"{json.dumps(key)}: {json.dumps(item)}", *item.splitlines()}
    return lines


def oracle_findings_in_lines(lines: set[str], into: Path) -> list[str]:
    """What the oracle flags in the distinct lines of all that is kept, each with its line:
    the database, its team copy and the pages repeat each text many times over."""
    ordered = sorted(lines)
    every = into / "distinct-lines.txt"
    every.write_text("\n".join(ordered), encoding="utf-8")
    return [
        f"{finding}: {ordered[int(finding.split(':')[1]) - 1][:300]}"
        for finding in oracle_findings([every])
    ]


def test_no_realistic_shape_is_kept_shown_advised_or_shipped(
    template_home: Path, tmp_path: Path, pg_url: str, evidence: Path
) -> None:
    shapes, printed = draw(SHAPES), draw(PRINTED, SEED + 1)
    secrets = {family: secret for family, _c, _o, secret in (*shapes, *printed)}
    seed = f"values drawn with seed {SEED}"
    path = tmp_path / "alice" / "home"
    shutil.copytree(template_home, path)
    (tmp_path / "alice" / "user-home").mkdir()
    alice = Machine(path, "alice", pg_url, promote=True)
    alice.remem("db", "upgrade", "--team")
    project = clone(tmp_path / "alice" / "shop", "git@github.com:acme/shop.git")
    sessions = shape_sessions(shapes, printed, project, tmp_path / "rollout.jsonl")
    # Two secret-bearing commands fix a failure: advice quotes them later.
    fixes = [
        f"pip install --index-url https://ci:{secrets['postgres url']}@pypi.acme.test/simple -e .",
        f"npm config set //npm.acme.test/:_authToken {secrets['npm auth token']}",
    ]
    learn = claude_runs("advice", "pytest -q", ADVICE_ERROR, project)[:1]
    for number, command in enumerate([*fixes, "pytest -q"]):
        passed = claude_runs(f"advice{number}", command, "", project)[1]
        learn.append({**passed, "session_id": "advice"})
    sessions.append(learn)
    with ThreadPoolExecutor(max_workers=4) as pool:
        for future in [pool.submit(run_in_order, alice, runs) for runs in sessions]:
            future.result()
    alice.burst()
    failure = claude_runs("later", "pytest -q", ADVICE_ERROR, project)[0]
    advice = alice.hook(failure)
    alice.burst()  # ships the last events too

    assert advice.returncode == 0
    advice_text = json.loads(advice.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "fixed after running" in advice_text and MASK in advice_text, advice_text
    (evidence / "advice.txt").write_text(advice_text, encoding="utf-8")
    pages = digest_pages(alice, Path(project), evidence)
    assert MASK in pages[0].read_text(encoding="utf-8")
    recalled = recall_pages(alice, project, evidence)
    assert MASK in recalled[0].read_text(encoding="utf-8")
    shipped = team_values(pg_url)
    assert len([value for column, value in shipped if column == "command"]) >= len(sessions)
    stored = [*local_values(alice), *shipped]
    assert len(secrets) >= 200 and len(set(secrets.values())) == len(secrets)
    shown = [*pages, *recalled, evidence / "advice.txt", *text_files(alice.path)]
    lines = {line for column, value in stored for line in value_lines(column, value)}
    lines |= {line for path in shown for line in path.read_text("utf-8").splitlines()}
    everything = "\n".join([*lines, *(str(value) for _column, value in stored)]).encode()
    everything += b"".join(path.read_bytes() for path in alice.path.rglob("*") if path.is_file())
    assert [family for family, s in secrets.items() if s.encode() in everything] == [], seed
    findings = oracle_findings_in_lines(lines, evidence)
    assert findings == [], seed
