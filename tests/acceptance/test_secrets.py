"""Secrets never reach the database, the spool or the logs; identities survive unchanged."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Home, load_fixture

SECRETS = {
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "ghp": "ghp_R2d2C3poBb8Yoda1Luke2Leia3Han4Solo5",
    "github_pat": "github_pat_11AAAAAAA0abcdefghijklmnop_qrstuvwxyz0123456789ABCDEF",
    "openai": "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1H",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
    "bearer": "eyBearerTok3nValue0123456789",
    "password": "hunter2-Correct-Horse",
    "api_key": "kv8X2mQ9pL4rT7wZ",
    "basic": "s3cr3tPa55",
    "userinfo": "dbPa55w0rd",
    "header": "Basic dXNlcjpwYXNzd29yZA==",
    "pem": "MIIEowIBAAKCAQEA7bq2Secret0PemBody",
}

COMMAND = (
    f"aws configure set aws_access_key_id {SECRETS['aws']} && "
    f"git clone https://x-access-token:{SECRETS['ghp']}@github.com/acme/shop && "
    f"GH_TOKEN={SECRETS['github_pat']} gh pr list && "
    f"OPENAI_API_KEY={SECRETS['openai']} python eval.py && "
    f"SLACK={SECRETS['slack']} notify && "
    f"curl -H 'Authorization: Bearer {SECRETS['bearer']}' https://api.example.com && "
    f"mysql password={SECRETS['password']} && "
    f"deploy --api_key={SECRETS['api_key']} && "
    f"curl -u admin:{SECRETS['basic']} https://example.com && "
    f"psql postgres://app:{SECRETS['userinfo']}@db.internal:5432/shop && "
    f"curl -H 'Authorization: {SECRETS['header']}' https://example.com"
)
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{SECRETS['pem']}\n-----END RSA PRIVATE KEY-----"


def _secret_payloads() -> list[dict[str, object]]:
    success = load_fixture("claude-code/post_tool_use_bash_success.json")
    success["tool_input"] = {"command": COMMAND}
    success["tool_response"] = {"stdout": PEM, "stderr": "", "interrupted": False}
    failure = load_fixture("claude-code/post_tool_use_failure_bash_exit_code.json")
    failure["tool_input"] = {"command": COMMAND}
    failure["error"] = f"Exit code 1\n{PEM}\npassword={SECRETS['password']}"
    return [success, failure]


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def _assert_no_secret(data: bytes) -> None:
    leaked = [name for name, value in SECRETS.items() if value.encode() in data]
    assert leaked == []


def test_secrets_never_reach_the_database(home: Home) -> None:
    for payload in _secret_payloads():
        assert home.hook(payload).returncode == 0
    assert home.scalar("SELECT count(*) FROM captured_events") == 2
    _assert_no_secret(_all_bytes(home.path))
    command = home.scalar("SELECT command FROM captured_events LIMIT 1")
    assert "[REDACTED]" in command
    assert "github.com/acme/shop" in command


def test_secrets_never_reach_the_spool_or_dead_letters(home: Home) -> None:
    locker = sqlite3.connect(home.db, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    try:
        for payload in _secret_payloads():
            assert home.hook(payload).returncode == 0
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    spooled = (home.spool / "events.jsonl").read_bytes()
    assert spooled.count(b"\n") == 2
    _assert_no_secret(spooled)
    home.remem("spool", "ingest")
    _assert_no_secret(_all_bytes(home.path))


def test_dropped_payload_keeps_no_secret(home: Home) -> None:
    assert home.hook(f"not json {SECRETS['ghp']} {SECRETS['password']}").returncode == 0
    assert home.scalar("SELECT reason FROM dropped_payloads") == "not_json"
    _assert_no_secret(_all_bytes(home.path))


@pytest.mark.parametrize(
    "command",
    [
        "git cherry-pick 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b",
        "python -m pytest "
        + "/srv/workspaces/acme-platform/services/checkout/" * 2
        + "tests/integration/test_payment_flow.py",
        "pytest tests/test_auth.py::test_token_refresh -k 'token and not slow'",
    ],
    ids=["git-sha", "long-path", "test-node-id"],
)
def test_commands_without_secrets_survive_byte_for_byte(home: Home, command: str) -> None:
    payload = load_fixture("claude-code/post_tool_use_bash_success.json")
    payload["tool_input"] = {"command": command}
    assert home.hook(payload).returncode == 0
    assert home.scalar("SELECT command FROM captured_events") == command
    assert len(command) >= 40
