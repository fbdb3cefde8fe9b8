from __future__ import annotations

import copy
from pathlib import Path

import pytest

from remem.record import masking, redact
from remem.record.password_flags import PASSWORD_FLAGS, PASSWORD_WORDS, SECRET_PRINTERS
from remem.record.redact import MASK, is_secret_key, prints_secrets, redact_json, redact_text
from remem.record.secret_families import FAMILIES
from tests.acceptance.secrets_corpus import CORPUS, PRINTED, SEED, SHAPES, draw, sample

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
    payload = {"services": [{"name": "db", "connection": {"password": "hunter2hunter2"}}]}

    assert redact_json(payload) == {"services": [{"name": "db", "connection": {"password": MASK}}]}


def test_redact_json_masks_a_whole_object_under_a_secret_key() -> None:
    payload = {"auth": {"user": "bob", "pin": "4096"}, "name": "db"}

    assert redact_json(payload) == {"auth": MASK, "name": "db"}


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


@pytest.mark.parametrize(
    ("text", "secret"),
    [(text, secret) for _family, text, secret in CORPUS],
    ids=[family for family, _text, _secret in CORPUS],
)
def test_every_family_of_the_corpus_is_masked(text: str, secret: str) -> None:
    redacted = redact_text(text)

    assert secret not in redacted
    assert "[REDACTED" in redacted
    assert redact_text(redacted) == redacted


@pytest.mark.parametrize(
    ("example", "secret"),
    [(example, secret) for *_row, example, secret in (*PASSWORD_FLAGS, *PASSWORD_WORDS)],
    ids=[row[0] for row in (*PASSWORD_FLAGS, *PASSWORD_WORDS)],
)
def test_each_password_option_masks_its_value_and_nothing_else(example: str, secret: str) -> None:
    redacted = redact_text(example)

    assert secret not in redacted
    assert redacted.replace(MASK, secret) == example


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MYSQL_PWD=s3cr3t mysql -u root", "MYSQL_PWD=[REDACTED] mysql -u root"),
        ("mysql -u root -pSECRET99 shop", "mysql -u root -p[REDACTED] shop"),
        ("mysql -u root --password=SECRET99 shop", "mysql -u root --password=[REDACTED] shop"),
        ("sshpass -p hunter22 ssh web1", "sshpass -p [REDACTED] ssh web1"),
        ("docker login -u ci -p dockpw1 reg.io", "docker login -u ci -p [REDACTED] reg.io"),
        (
            "docker login -u ci --password dockpw1 reg.io",
            "docker login -u ci --password [REDACTED] reg.io",
        ),
        ("docker login --password=dockpw1 reg.io", "docker login --password=[REDACTED] reg.io"),
        ("htpasswd -b .htpasswd bob pw1 2>&1", "htpasswd -b .htpasswd bob [REDACTED] 2>&1"),
        ("htpasswd -nbB bob 'p w1' | tee x", "htpasswd -nbB bob '[REDACTED]' | tee x"),
        ("redis-cli -a R3dis ping", "redis-cli -a [REDACTED] ping"),
        ("deploy --token tok1 --api-key k2", "deploy --token [REDACTED] --api-key [REDACTED]"),
        ("deploy --token=tok1 --secret s3", "deploy --token=[REDACTED] --secret [REDACTED]"),
        (
            "aws configure set aws_secret_access_key wJalr/K7MD",
            "aws configure set aws_secret_access_key [REDACTED]",
        ),
        (
            "Endpoint=x;AccountName=a;AccountKey=Zm9v+/YmFy==;EndpointSuffix=y",
            "Endpoint=x;AccountName=a;AccountKey=[REDACTED];EndpointSuffix=y",
        ),
        ("token:hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789", "token:[REDACTED]"),
        (
            "git clone https://9f8e7d6c5b4a39281706f5e4@github.com/a/b.git",
            "git clone https://[REDACTED]@github.com/a/b.git",
        ),
        (
            "git clone https://u:p@ss/w0rd@git.acme.test/shop.git",
            "git clone https://u:[REDACTED]@git.acme.test/shop.git",
        ),
        ("redis-cli -u redis://:s3cret@cache:6379", "redis-cli -u redis://:[REDACTED]@cache:6379"),
        (
            "npm i https://u:pw1@registry.test/@scope/pkg",
            "npm i https://u:[REDACTED]@registry.test/@scope/pkg",
        ),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGZx\n"
            "-----END PGP PRIVATE KEY BLOCK-----\nok",
            "[REDACTED PRIVATE KEY]\nok",
        ),
        ('{"user": "bob", "db_pass": "a b c"}', '{"user": "bob", "db_pass": "[REDACTED]"}'),
        ('echo "{\\"password\\": \\"pw1\\"}"', 'echo "{\\"password\\": \\"[REDACTED]\\"}"'),
        ("docker run --env=DB_PASS=pw1 app", "docker run --env=DB_PASS=[REDACTED] app"),
    ],
)
def test_secret_is_masked_exactly(text: str, expected: str) -> None:
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "name",
    [
        "API_KEY",
        "DB_PASS",
        "MYSQL_PWD",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "REDIS_AUTH",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "PASSWORD",
        "SECRET_KEY_BASE",
        "PGPASSWORD",
        "x-api-key",
        "spring.datasource.password",
        "AccountKey",
        "X-Amz-Signature",
        "sig",
        "authToken",
        "NPM_CONFIG__AUTH",
        "GH_PAT",
        "HMAC",
        "COOKIE_SALT",
        "MNEMONIC",
        "DB_PW",
        "requirepass",
        "account-key",
        "DEPLOY_SSH_KEY",
    ],
)
def test_secret_names_are_recognised_by_segment(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize(
    "name",
    [
        "MONKEY",
        "TURKEY",
        "AUTHOR",
        "PASSTHROUGH",
        "KEYBOARD_LAYOUT",
        "max_tokens",
        "PWD",
        "OLDPWD",
        "SSH_AUTH_SOCK",
        "PASSWORD_FILE",
        "TOKEN_TYPE",
        "credential.helper",
        "sort-key",
        "PARTITION_KEY",
        "public_key",
        "no-auth",
        "SKIP_AUTH",
        "SALT_ROUNDS",
        "SESSION_TIMEOUT",
        "PasswordAuthentication",
        "SSH_ASKPASS",
    ],
)
def test_names_that_only_contain_a_word_are_not_secret(name: str) -> None:
    assert not is_secret_key(name)


@pytest.mark.parametrize(
    "command",
    [
        "mix test",
        "make test",
        'pytest -k "key_error"',
        "git log --author=x",
        "grep -r token src/",
        "npm run build",
        "MONKEY=1 TURKEY=1 AUTHOR=bob PASSTHROUGH=1 KEYBOARD_LAYOUT=us make",
        "mysql -u root -p shop",
        "ssh -o PasswordAuthentication=no -o StrictHostKeyChecking=no deploy@web1",
        "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1 PWD=/home/dev OLDPWD=/srv ssh web1",
        "sort --key=2,2 data.tsv",
        "git config --global credential.helper store",
        "echo $T | docker login -u ci --password-stdin reg.io",
        "sshpass -f pw.txt ssh -p 2222 web1",
        'ssh-keygen -t ed25519 -N "" -f deploy_key',
        "htpasswd -c .htpasswd bob",
        "git clone ssh://git@github.com/acme/shop.git",
        "pip install git+ssh://git@github.com/acme/lib.git@v1.0",
        "skopeo copy docker://localhost:5000/app@sha256:4f2a docker://b.test/app",
        "curl 'https://api.test/users?email=bob@acme.test'",
        "docker run -u 1000:1000 app curl http://localhost:8080",
        "if [[ $TOKEN == x ]]; then make; fi",
        "tests/test_cart.py::test_total PASSED [ 42%]\n4 passed in 0.41s",
    ],
)
def test_ordinary_commands_survive_byte_for_byte(command: str) -> None:
    assert redact_text(command) == command


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("./deploy --db-pass S3cret-Db-Pw --env prod", "S3cret-Db-Pw"),
        ("./tool --db-pwd hunter22-pwd", "hunter22-pwd"),
        ("./sync --auth-key abc123-auth-key", "abc123-auth-key"),
    ],
)
def test_a_secret_named_option_is_masked_with_a_space_as_with_an_equals_sign(
    text: str, secret: str
) -> None:
    spaced, joined = redact_text(text), redact_text(text.replace(f" {secret}", f"={secret}"))

    assert secret not in spaced and secret not in joined
    assert MASK in spaced and MASK in joined


@pytest.mark.parametrize(
    ("family", "example"),
    [(family, example) for family, _keywords, _pattern, example in FAMILIES],
    ids=[family for family, *_row in FAMILIES],
)
def test_each_family_of_the_table_masks_its_example_and_nothing_else(
    family: str, example: str
) -> None:
    text, secret = sample(family, example)
    if text == secret:
        text = f"echo {secret} | ./deploy.sh"

    redacted = redact_text(text)

    assert redacted == text.replace(secret, MASK)


@pytest.mark.parametrize(
    ("family", "keywords", "example"),
    [(family, keywords, example) for family, keywords, _pattern, example in FAMILIES],
    ids=[family for family, *_row in FAMILIES],
)
def test_each_family_needs_one_of_its_keywords(
    family: str, keywords: tuple[str, ...], example: str
) -> None:
    # A keyword missing from the example would leave the family's pattern never run.
    text, _secret = sample(family, example)

    assert any(keyword.removeprefix("*") in text.lower() for keyword in keywords)
    assert all(keyword == keyword.lower() for keyword in keywords)


def test_the_table_covers_the_families_of_the_common_scanners() -> None:
    assert len(FAMILIES) >= 150
    assert len({family for family, *_row in FAMILIES}) == len(FAMILIES)


# The formats a review found passing redaction untouched (issue 28), each by its prefix or shape.
NAMED = (
    *("SG.", "/bot", "ya29.", "glrt-", "gldt-", "dop_v1_", "ATATT3", "AGE-SECRET-KEY-1", "tskey-"),
    *("gsk_", "xai-", "r8_", "glsa_", "sntrys_", "ntn_", "pscale_pw_", "rubygems_", "figd_"),
    *("pat-na1-", "dp.st.", "shpat_", "xapp-", "lin_api_", "hvs.", "s.", "MT", "SK"),
)


@pytest.mark.parametrize("start", NAMED)
def test_the_formats_that_passed_are_masked(start: str) -> None:
    samples = [sample(family, example) for family, _keywords, _pattern, example in FAMILIES]
    secrets = [(text, secret) for text, secret in samples if secret.startswith(start)]
    secrets += [(text, secret) for text, secret in samples if start in text and start == "/bot"]

    assert secrets != []
    assert all(secret not in redact_text(text) for text, secret in secrets)


@pytest.mark.parametrize(
    "text",
    [
        "tests/test_cart.py::test_total_is_rounded PASSED [ 12%]\n" * 40,
        "npm WARN deprecated react-dom@16.14.0: use v18.2.0 in src/app/main-view.tsx\n" * 40,
        "Successfully installed pydantic_core-2.14.5 typing_extensions-4.9.0 scikit-learn\n" * 40,
    ],
    ids=["pytest", "npm", "pip"],
)
def test_ordinary_output_calls_for_no_family(text: str) -> None:
    # The cost of a text with no keyword: one pass, and not one family's pattern run.
    assert masking._families_due(text.lower()) == []
    assert redact_text(text) == text


def test_the_keywords_spelled_before_the_table_loads_are_the_tables() -> None:
    by_piece, by_keyword, _anywhere = masking.family_index()

    assert set(by_piece) == masking.PIECES
    assert set(by_keyword) == set(masking.ANYWHERE)
    assert len(masking.ANYWHERE) == len(set(masking.ANYWHERE))


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (
            "cat > ~/.netrc <<EOF\nmachine api.acme.test\n  login ci\n  password N3trc-Pw\nEOF",
            "N3trc-Pw",
        ),
        ("echo 'default login ci password N3trcDef4ult' >> ~/.netrc # machine", "N3trcDef4ult"),
        ("cat >> ~/.pgpass <<'EOF'\ndb.acme.test:5432:*:app:PgP4ss-Line\nEOF", "PgP4ss-Line"),
        (
            "printf '%s\\n' 'db:6432:shop:app:PgPr1ntf' > ~/.pgpass && chmod 600 ~/.pgpass",
            "PgPr1ntf",
        ),
        (
            "expect <<'EOF'\nspawn psql -h db -U app\nexpect \"Password for user app:\"\n"
            'send "Exp3ct-Pw\\r"\nEOF',
            "Exp3ct-Pw",
        ),
        ('expect -re "(P|p)assphrase" { send -- "K3y-Phr4se\\r" }', "K3y-Phr4se"),
        ("az login --service-principal -u ci -p=Az-Eq-S3cret --tenant acme.test", "Az-Eq-S3cret"),
    ],
    ids=[
        "netrc-heredoc",
        "netrc-default",
        "pgpass-heredoc",
        "pgpass-printf",
        "expect-heredoc",
        "expect-braces",
        "az-login-equals",
    ],
)
def test_client_password_files_and_scripts_are_masked(text: str, secret: str) -> None:
    assert redact_text(text) == text.replace(secret, MASK)


def test_no_host_payload_calls_for_a_family_by_its_field_names() -> None:
    # Every hook run pays for a family its payload's own fields call for (Claude Code names one
    # noOutputExpected): the hosts' fixtures, which hold no secret, call for none.
    fixtures = sorted(Path(__file__).parents[1].glob("fixtures/hooks/*/*.json*"))

    assert len(fixtures) >= 10
    assert {f.name: masking._families_due(f.read_text().lower()) for f in fixtures} == {
        f.name: [] for f in fixtures
    }


def test_the_tools_words_need_no_option_in_the_text() -> None:
    # Looked for in every text: a positional secret has no " -" before it.
    assert [example for *_row, example, _secret in PASSWORD_WORDS if " -" not in example] != []


@pytest.mark.parametrize(
    "example",
    [example for *_row, example in SECRET_PRINTERS],
    ids=[row[0] for row in SECRET_PRINTERS],
)
def test_each_command_that_prints_a_secret_is_known_and_its_neighbours_are_not(
    example: str,
) -> None:
    program = example.split()[0]

    assert prints_secrets(example)
    assert prints_secrets(f"cd infra && {example} > /tmp/out")
    assert not prints_secrets(f"{program} --help")


@pytest.mark.parametrize(
    "command",
    [
        "kubectl get secrets -n prod",
        "terraform plan -out tfplan",
        "vault kv list secret/",
        "op signin",
        "security list-keychains",
        "aws ecr describe-repositories",
        "gcloud auth list",
        "git log --pretty=oneline",
    ],
)
def test_commands_near_the_printers_print_no_secret(command: str) -> None:
    assert not prints_secrets(command)


# (text, secret): a secret-naming word right beside the value (issue 44).
BESIDE = {
    "account-key": (
        "az storage blob list --account-key Acc0unt-K3y-V4l -c logs",
        "Acc0unt-K3y-V4l",
    ),
    "master-key": ("meilisearch --master-key M4ster-K3y-V4l --env production", "M4ster-K3y-V4l"),
    "auth": ("netlify deploy --prod --auth N3tlify-Auth-T0k", "N3tlify-Auth-T0k"),
    "pw": ("./backup.sh --pw B4ckup-Pw-V4l --target s3", "B4ckup-Pw-V4l"),
    "requirepass": ("redis-server --port 6380 --requirepass R3dis-Srv-Pw", "R3dis-Srv-Pw"),
    "sql-password": ("psql -c \"ALTER USER app WITH PASSWORD 'Sql-Alt3r-Pw';\"", "Sql-Alt3r-Pw"),
    "identified-by": (
        "mysql -e \"CREATE USER 'app'@'%' IDENTIFIED BY 'Sql-Cr3ate-Pw'\"",
        "Sql-Cr3ate-Pw",
    ),
    "xml-element": ("<password>Xml-Elem3nt-Pw</password>", "Xml-Elem3nt-Pw"),
    "xml-add": ('<add key="ApiSecret" value="Xml-Add-S3cret"/>', "Xml-Add-S3cret"),
    "plist": (
        "<key>apiToken</key>\n  <string>Pl1st-T0ken-V4l</string>",
        "Pl1st-T0ken-V4l",
    ),
    "pat": ("GITLAB_PAT=Gl-P4t-V4lue-42 ./mirror.sh", "Gl-P4t-V4lue-42"),
    "hmac": ("HMAC=Hm4c-K3y-V4lue-42 node sign.js", "Hm4c-K3y-V4lue-42"),
    "salt": ("COOKIE_SALT=C00kie-S4lt-V4l rails s", "C00kie-S4lt-V4l"),
    "mnemonic": (
        "MNEMONIC='abandon ability able about' npx hardhat run",
        "abandon ability able about",
    ),
    "odbc": (
        'sqlcmd -C "Driver={ODBC Driver 18};Server=db;UID=sa;PWD=0dbc-Pwd-V4l;"',
        "0dbc-Pwd-V4l",
    ),
    "form-pw": ("curl -d 'user=ci&pw=F0rm-Pw-V4l' https://acme.test/login", "F0rm-Pw-V4l"),
    "httpie-token": (
        "http POST api.acme.test/v1 Authorization:'Token Htt9ie-T0k-V4l'",
        "Htt9ie-T0k-V4l",
    ),
    "vault-table": (
        "Key         Value\n---         -----\npassword    V4ult-T4ble-Pw\n",
        "V4ult-T4ble-Pw",
    ),
    "oauth-code": (
        "curl 'https://acme.test/callback?state=x&code=0auth-C0de-V4l'",
        "0auth-C0de-V4l",
    ),
    "url-t": ("wget 'https://files.acme.test/get?t=Url-T0ken-V4l42'", "Url-T0ken-V4l42"),
    "quoted-pair": ("define('DB_PASSWORD', 'Php-Def1ne-Pw');", "Php-Def1ne-Pw"),
    "piped-secret-store": (
        "echo Wr4ngler-S3cret | npx wrangler secret put API_KEY",
        "Wr4ngler-S3cret",
    ),
    "url-p": ("curl 'http://influx:8086/query?u=admin&p=Infl0x-Url-Pw&q=x'", "Infl0x-Url-Pw"),
    "hooks-path": ("curl -X POST https://api.acme.test/hooks/H00k-Path-S3cret", "H00k-Path-S3cret"),
}


@pytest.mark.parametrize(("text", "secret"), BESIDE.values(), ids=BESIDE.keys())
def test_a_secret_beside_a_word_naming_it_is_masked(text: str, secret: str) -> None:
    redacted = redact_text(text)

    assert secret not in redacted
    assert MASK in redacted
    assert redacted.split(MASK, 1)[0] == text[: len(redacted.split(MASK, 1)[0])]
    assert redact_text(redacted) == redacted


@pytest.mark.parametrize(
    "command",
    [
        "git log --pretty=format:'%h %s' --author=alice",
        "pytest -k session",
        "pytest -k 'session and not cookie'",
        "make test",
        "aws dynamodb query --table-name t --partition-key id --sort-key ts",
        "redis-cli --no-auth-warning ping",
        "ansible-playbook site.yml --private-key ~/.ssh/deploy",
        "gh api --hostname github.acme.test --ssh-key ~/.ssh/id_ed25519.pub",
        "SESSION_TIMEOUT=30 SALT_ROUNDS=12 PATCH_LEVEL=2 make test",
        "curl -b cookies.txt https://shop.acme.test",
        "git commit -m 'keep the session cookie'",
        "pulumi config set aws:region eu-west-1",
        "cargo test -- --nocapture",
        "poetry install --with dev",
        "echo $PASSWORD | docker login -u ci --password-stdin reg.acme.test",
        "curl 'https://www.youtube.com/watch?v=abc&t=42'",
        "cp hooks/pre-commit-config .git/hooks/pre-commit",
        "version            3\ncreated_time       2026-12-01T10:00:00Z",
        "python -m pytest /srv/ci/acme/services/checkout/tests/test_session_cookie.py",
    ],
)
def test_ordinary_commands_beside_the_new_rules_survive_byte_for_byte(command: str) -> None:
    assert redact_text(command) == command


@pytest.mark.parametrize(
    ("family", "command", "output", "secret"), draw(SHAPES), ids=[row[0] for row in SHAPES]
)
def test_each_realistic_shape_is_masked(
    family: str, command: str, output: str, secret: str
) -> None:
    # Values drawn afresh each run (SEED): the acceptance test takes the same shapes through
    # the hook, this one says which rule failed.
    redacted = (redact_text(command), redact_text(output))

    assert secret not in "\n".join(redacted), f"seed {SEED}"
    assert "[REDACTED" in "\n".join(redacted)
    assert not prints_secrets(command)


@pytest.mark.parametrize(
    ("family", "command", "output", "secret"), draw(PRINTED), ids=[row[0] for row in PRINTED]
)
def test_each_command_printing_a_secret_is_known(
    family: str, command: str, output: str, secret: str
) -> None:
    assert prints_secrets(command)
    assert secret in output and secret not in redact_text(command)


def test_a_long_text_met_again_is_redacted_alike_and_few_are_kept() -> None:
    # An output is redacted in its event's payload, then for its excerpt: the second reading
    # is the first one's, and the texts kept for it stay few.
    texts = [f"{'x' * 200}\nexport API_TOKEN=hidden{n}value\n" for n in range(10)]
    for text in texts + texts[::-1]:
        redacted = redact_text(text)
        assert redacted == text.replace(text[text.index("hidden") : -1], MASK)
    assert len(redact._long_redactions) <= redact._LONG_KEPT
