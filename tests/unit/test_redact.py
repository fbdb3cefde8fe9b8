from __future__ import annotations

import copy

import pytest

from remem.capture.redact import MASK, is_secret_key, redact_json, redact_text

GITHUB_TOKEN = "ghp_4fK9sLm2Qx7Rt8Vw1Yz3Bc5Nd6Hj0PqAeUi"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM_BODY = "MIIEowIBAAKCAQEA7x9Fak3KeyMaterialOnlyForTests0123456789abcdef"

# (text, secret that must disappear, text around it that must survive)
SECRETS = {
    "aws_access_key": (
        "echo AKIAZ7Q4R2T9W3X5Y8N1 | aws-vault add dev",
        "AKIAZ7Q4R2T9W3X5Y8N1",
        "| aws-vault add dev",
    ),
    "github_ghp": (
        f"git remote set-url origin https://{GITHUB_TOKEN}@github.com/acme/shop.git",
        GITHUB_TOKEN,
        "@github.com/acme/shop.git",
    ),
    "github_pat": (
        "echo github_pat_11ABCDE2F0gHiJkLmNoPqR_s3TuVwXyZ4aBcDeFgHiJkLmNoPq | gh auth login",
        "github_pat_11ABCDE2F0gHiJkLmNoPqR_s3TuVwXyZ4aBcDeFgHiJkLmNoPq",
        "| gh auth login",
    ),
    "openai_sk": (
        "llm -m gpt-4o --key sk-Ab3dEf6hIj9kLm2nOp5qRs8t 'hello'",
        "sk-Ab3dEf6hIj9kLm2nOp5qRs8t",
        "llm -m gpt-4o --key",
    ),
    "openai_sk_proj": (
        "llm --key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z 'hello'",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        "'hello'",
    ),
    "stripe_sk_live": (
        "stripe customers list --live sk_live_51HxYzAbCdEfGhIjKlMnOpQrSt",
        "sk_live_51HxYzAbCdEfGhIjKlMnOpQrSt",
        "stripe customers list --live",
    ),
    "slack_xoxb": (
        "slack-cli post --as xoxb-2048-4096-AbCdEfGhIjKlMnOpQrStUvWx",
        "xoxb-2048-4096-AbCdEfGhIjKlMnOpQrStUvWx",
        "slack-cli post --as",
    ),
    "authorization_bearer": (
        'curl -H "Authorization: Bearer Zm9vYmFyYmF6cXV4MTIzNDU2" https://api.shop.test/v1/orders',
        "Zm9vYmFyYmF6cXV4MTIzNDU2",
        "https://api.shop.test/v1/orders",
    ),
    "bare_bearer": (
        "http GET api.shop.test/me 'Bearer Zm9vYmFyYmF6cXV4MTIzNDU2'",
        "Zm9vYmFyYmF6cXV4MTIzNDU2",
        "http GET api.shop.test/me",
    ),
    "password_assignment": (
        "mysql --host db password=hunter2hunter2",
        "hunter2hunter2",
        "mysql --host db password=",
    ),
    "api_key_assignment": (
        "python sync.py api_key=f00dbabe12345678deadbeef",
        "f00dbabe12345678deadbeef",
        "python sync.py api_key=",
    ),
    "quoted_env_password": (
        'DB_PASSWORD="c0rrect-h0rse-battery" ./manage.py migrate',
        "c0rrect-h0rse-battery",
        "./manage.py migrate",
    ),
    "password_flag": (
        "pg_dump --password Sup3rS3cret! -h db shop",
        "Sup3rS3cret!",
        "-h db shop",
    ),
    "curl_user": (
        "curl -u alice:w0nderl4nd https://api.shop.test",
        "w0nderl4nd",
        "curl -u alice:",
    ),
    "url_userinfo": (
        "psql postgres://bob:s3cret@db/app",
        "s3cret",
        "@db/app",
    ),
    "authorization_basic_header": (
        "curl -H 'Authorization: Basic YWxpY2U6d29uZGVybGFuZA==' https://api.shop.test",
        "YWxpY2U6d29uZGVybGFuZA",
        "https://api.shop.test",
    ),
    "cookie_header": (
        "curl -H 'Cookie: sessionid=9f8e7d6c5b4a3f2e1d0c' https://shop.test/cart",
        "9f8e7d6c5b4a3f2e1d0c",
        "https://shop.test/cart",
    ),
    "jwt": (
        f"http api.shop.test/me X-Jwt:{JWT}",
        JWT,
        "http api.shop.test/me",
    ),
    "google_api_key": (
        "curl 'https://maps.googleapis.com/maps/api/geocode/json"
        "?key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q'",
        "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
        "maps.googleapis.com",
    ),
    "slack_webhook": (
        "curl -X POST -d @msg.json "
        "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/cCcCcCcCcCcCcCcCcCcC",
        "T0AAAAAAA/B0BBBBBBB/cCcCcCcCcCcCcCcCcCcC",
        "curl -X POST -d @msg.json",
    ),
    "json_password_in_text": (
        """echo '{"user": "bob", "password": "tr0ub4dor&3"}' > creds.json""",
        "tr0ub4dor&3",
        '"user": "bob"',
    ),
}


@pytest.mark.parametrize(("text", "secret", "kept"), SECRETS.values(), ids=SECRETS.keys())
def test_secret_is_masked(text: str, secret: str, kept: str) -> None:
    redacted = redact_text(text)

    assert secret not in redacted
    assert MASK in redacted
    assert kept in redacted


def test_terminated_private_key_block_is_masked_and_following_text_kept() -> None:
    text = (
        "cat > id_rsa <<EOF\n-----BEGIN RSA PRIVATE KEY-----\n"
        f"{PEM_BODY}\n-----END RSA PRIVATE KEY-----\nEOF\nchmod 600 id_rsa"
    )

    redacted = redact_text(text)

    assert PEM_BODY not in redacted
    assert "[REDACTED PRIVATE KEY]" in redacted
    assert redacted.startswith("cat > id_rsa <<EOF\n")
    assert redacted.endswith("\nEOF\nchmod 600 id_rsa")


def test_unterminated_private_key_block_is_masked_to_the_end() -> None:
    text = f"printf '-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nMoreKeyMaterial0987"

    redacted = redact_text(text)

    assert PEM_BODY not in redacted
    assert "MoreKeyMaterial0987" not in redacted
    assert "[REDACTED PRIVATE KEY]" in redacted


@pytest.mark.parametrize(
    "text",
    [
        "git checkout 3f9a2b7c8d1e4f5a6b7c8d9e0f1a2b3c4d5e6f70",
        "cat /home/dev/projects/acme-monorepo/services/payments-gateway/internal/adapters"
        "/stripe/webhooks/handlers/test_refunds_integration.py",
        "pytest tests/test_auth.py::test_token -k token",
        "python train.py --max_tokens=100",
        'echo "coração"',
        "python -m pytest -q tests/test_cart.py",
        "....\n4 passed in 0.41s",
        "git checkout -b tokenizer-fix",
        "grep -rn password src/",
        "curl http://localhost:8080/api/health",
    ],
    ids=[
        "git_sha",
        "long_path",
        "pytest_node_id",
        "max_tokens_flag",
        "non_ascii",
        "pytest_command",
        "test_output",
        "branch_name",
        "grep_word",
        "url_without_userinfo",
    ],
)
def test_ordinary_text_survives_byte_for_byte(text: str) -> None:
    assert redact_text(text) == text


def test_docker_user_flag_survives() -> None:
    command = "docker run --rm -u 1000:1000 shop:latest pytest"

    assert redact_text(command) == command


@pytest.mark.parametrize(
    "key",
    ["API_KEY", "password", "client_secret", "AWS_SECRET_ACCESS_KEY", "db_password", "token"],
)
def test_secret_key_names_are_recognised(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    ["tool_use_id", "session_id", "max_tokens", "input_tokens", "transcript_path", "command"],
)
def test_ordinary_key_names_are_not_secret(key: str) -> None:
    assert not is_secret_key(key)


def test_redact_json_masks_secret_named_keys() -> None:
    payload = {
        "API_KEY": "f00dbabe12345678",
        "password": "hunter2hunter2",
        "client_secret": "cs-7a8b9c0d1e2f",
    }

    assert redact_json(payload) == {"API_KEY": MASK, "password": MASK, "client_secret": MASK}


def test_redact_json_masks_secret_keys_in_nested_dicts_and_lists() -> None:
    payload = {"services": [{"name": "db", "auth": {"password": "hunter2hunter2"}}]}

    assert redact_json(payload) == {"services": [{"name": "db", "auth": {"password": MASK}}]}


def test_redact_json_masks_non_string_values_under_secret_keys() -> None:
    assert redact_json({"password": 12345678}) == {"password": MASK}


def test_redact_json_leaves_identifiers_and_counts_alone() -> None:
    payload = {
        "tool_use_id": "toolu_01HkQm3V7sJz9pW2aXyB4cDe",
        "session_id": "7f3c2a10-5b1e-4c8a-9d2f-0a1b2c3d4e5f",
        "max_tokens": 4096,
        "exit_code": 0,
        "ratio": 0.5,
        "interrupted": False,
        "stderr": None,
    }

    assert redact_json(payload) == payload


def test_redact_json_redacts_secrets_inside_string_values() -> None:
    payload = {"tool_input": {"command": f"export GITHUB_TOKEN={GITHUB_TOKEN}"}}

    redacted = redact_json(payload)

    assert GITHUB_TOKEN not in redacted["tool_input"]["command"]
    assert MASK in redacted["tool_input"]["command"]


def test_redact_json_redacts_a_secret_used_as_a_key() -> None:
    redacted = redact_json({GITHUB_TOKEN: "read"})

    assert GITHUB_TOKEN not in redacted
    assert redacted == {MASK: "read"}


def test_redact_json_does_not_modify_its_input() -> None:
    payload = {"password": "hunter2hunter2", "nested": [{"token": "abc123abc123"}]}
    original = copy.deepcopy(payload)

    redact_json(payload)

    assert payload == original


def test_redact_json_masks_a_list_under_a_secret_key() -> None:
    redacted = redact_json({"password": ["hunter2hunter2"]})

    assert "hunter2hunter2" not in repr(redacted)
