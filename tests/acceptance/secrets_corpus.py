"""One realistic command or output per family of secret, each carrying one secret value.

Shared by the acceptance tests of redaction: every value here must be gone from whatever remem
keeps. The values are made up, shaped like the real ones (prefixes, lengths, alphabets) so that a
scanner that knows the real ones recognises them.
"""

from __future__ import annotations

import random
import re
import string

from remem.record.secret_families import FAMILIES

AZURE_ACCOUNT_KEY = (
    "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmF6cQ=="
)
JWT = (
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjaS1ib3QtNDIiLCJpYXQiOjE3MDAwMDAwMDB9"
    ".Qm9ndXNTaWduYXR1cmVGb3JUZXN0czAxMjM0NTY3ODk"
)
PGP_BODY = "lQOYBGZxSecretPgpKeyMaterial0123456789AbCdEfGhIjKlMnOp"
RSA_BODY = "MIIEowIBAAKCAQEA7bq2Secret0PemBodyOnlyForTests0123456789abcdef"
OPENSSH_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"

# (family, text, the secret in it)
CORPUS: tuple[tuple[str, str, str], ...] = (
    (
        "aws_access_key_id",
        "aws configure set aws_access_key_id AKIAZ7Q4R2T9W3X5Y8N1 --profile ci",
        "AKIAZ7Q4R2T9W3X5Y8N1",
    ),
    (
        "aws_configure_secret",
        "aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3x9Kp2Lm",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3x9Kp2Lm",
    ),
    (
        "aws_secret_env",
        "AWS_SECRET_ACCESS_KEY=Zq8vN3mK2pL9xR4tW7yB1cD5fG6hJ0kA3sE8uI2o aws s3 ls s3://acme-backups",
        "Zq8vN3mK2pL9xR4tW7yB1cD5fG6hJ0kA3sE8uI2o",
    ),
    (
        "github_ghp",
        "echo ghp_R2d2C3poBb8Yoda1Luke2Leia3Han4Solo5 | gh auth login --with-token",
        "ghp_R2d2C3poBb8Yoda1Luke2Leia3Han4Solo5",
    ),
    (
        "github_pat",
        "GH_TOKEN=github_pat_11AAAAAAA0abcdefghijklmnop_qrstuvwxyz0123456789ABCDEF gh pr list",
        "github_pat_11AAAAAAA0abcdefghijklmnop_qrstuvwxyz0123456789ABCDEF",
    ),
    (
        "token_only_url",
        "git clone https://9f8e7d6c5b4a39281706f5e4d3c2b1a098765432@github.com/acme/shop.git",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
    ),
    (
        "gitlab_url_password",
        "git push https://oauth2:glpat-Xy7Zk9Qw3Er5Ty1Ui8Op@gitlab.com/acme/shop.git main",
        "glpat-Xy7Zk9Qw3Er5Ty1Ui8Op",
    ),
    (
        "url_password_with_slash_and_at",
        "git clone https://deploy:p@ss/w0rd@Sl4sh@git.acme.test/shop.git",
        "p@ss/w0rd@Sl4sh",
    ),
    (
        "psql_url",
        "psql postgresql://app:PsqlUrlPa55w0rd@db.internal:5432/shop -c 'select 1'",
        "PsqlUrlPa55w0rd",
    ),
    (
        "openai_key",
        "OPENAI_API_KEY=sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1H python eval.py",
        "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1H",
    ),
    (
        "anthropic_key_header",
        "curl https://api.anthropic.com/v1/messages"
        " -H 'x-api-key: sk-ant-api03-Qw3Er5Ty7Ui9Op1As3'",
        "sk-ant-api03-Qw3Er5Ty7Ui9Op1As3",
    ),
    (
        "stripe_live_key",
        "stripe customers list --api-key sk_live_51HxYzAbCdEfGhIjKlMnOpQrSt",
        "sk_live_51HxYzAbCdEfGhIjKlMnOpQrSt",
    ),
    (
        "slack_bot_token",
        "SLACK_BOT=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp ./notify.sh",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
    ),
    (
        "slack_webhook",
        "curl -X POST -d @msg.json "
        "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/cCcCcCcCcCcCcCcCcCcC",
        "T0AAAAAAA/B0BBBBBBB/cCcCcCcCcCcCcCcCcCcC",
    ),
    (
        "bearer_header",
        "curl -H 'Authorization: Bearer eyBearerTok3nValue0123456789' https://api.acme.test/me",
        "eyBearerTok3nValue0123456789",
    ),
    (
        "basic_auth_header",
        "curl -H 'Authorization: Basic dXNlcjpTM2NyM3RQYTU1' https://api.acme.test/me",
        "dXNlcjpTM2NyM3RQYTU1",
    ),
    (
        "cookie_header",
        "curl -H 'Cookie: sessionid=9f8e7d6c5b4a3f2e1d0cAbC' https://shop.acme.test/cart",
        "9f8e7d6c5b4a3f2e1d0cAbC",
    ),
    ("jwt", f"http api.acme.test/me X-Jwt:{JWT}", JWT),
    (
        "google_api_key",
        "curl 'https://maps.googleapis.com/maps/api/geocode/json"
        "?key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q'",
        "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    ),
    (
        "npm_token",
        "echo //npm.internal.example/:_authToken=npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 > .npmrc",
        "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    (
        "npm_config_set",
        "npm config set //npm.internal.example/:_authToken NpmCfgTok3nValue42",
        "NpmCfgTok3nValue42",
    ),
    (
        "huggingface_token",
        'python -c "from huggingface_hub import login; '
        "login('hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789')\"",
        "hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789",
    ),
    (
        "pypi_token",
        "twine upload -u __token__ -p pypi-AgEIcHlwaS5vcmcCJDExYjU4ZmEwLTk2NDQtNGRmNy1iZjQ4LTcxZDEw"
        " dist/*",
        "pypi-AgEIcHlwaS5vcmcCJDExYjU4ZmEwLTk2NDQtNGRmNy1iZjQ4LTcxZDEw",
    ),
    (
        "docker_pat",
        "echo dckr_pat_2b3e36beeb386dfdaacb9b46004ccb7c | docker login -u ci --password-stdin",
        "dckr_pat_2b3e36beeb386dfdaacb9b46004ccb7c",
    ),
    (
        "vault_token",
        "VAULT_TOKEN=hvs.CAESIJlU9JMYEhOPYv4igdhm9PnZDrabYTobQ4Ymnlq1qY vault kv get secret/app",
        "hvs.CAESIJlU9JMYEhOPYv4igdhm9PnZDrabYTobQ4Ymnlq1qY",
    ),
    ("mysql_pwd_env", "MYSQL_PWD=My5qlPwdValue mysql -u root shop -e 'select 1'", "My5qlPwdValue"),
    ("mysql_glued_p", "mysql -h db -u root -pGlu3dMysqlPw shop", "Glu3dMysqlPw"),
    (
        "mysqldump_password",
        "mysqldump --user=root --password=DumpPa55word shop > shop.sql",
        "DumpPa55word",
    ),
    ("pgpassword_env", "PGPASSWORD=PgEnvPa55word psql -h db -U app shop", "PgEnvPa55word"),
    ("db_pass_env", "DB_PASS=DbPassEnvValue9 ./manage.py migrate", "DbPassEnvValue9"),
    ("redis_auth_env", "REDIS_AUTH=R3disEnvAuthPw ./bin/worker", "R3disEnvAuthPw"),
    (
        "redis_cli_a",
        "redis-cli -h cache -a R3disCliAuthPw --no-auth-warning ping",
        "R3disCliAuthPw",
    ),
    ("sshpass", "sshpass -p 'SshPa55Value' ssh deploy@web1 uptime", "SshPa55Value"),
    ("docker_login_p", "docker login -u ci -p DockerLoginPw9 registry.acme.test", "DockerLoginPw9"),
    (
        "docker_login_password",
        "docker login --username ci --password DockerPasswordFlag9 registry.acme.test",
        "DockerPasswordFlag9",
    ),
    ("htpasswd_batch", "htpasswd -bc /etc/nginx/.htpasswd admin HtpasswdPa55", "HtpasswdPa55"),
    ("curl_user", "curl -u admin:CurlUserPa55 https://api.acme.test/admin", "CurlUserPa55"),
    (
        "wget_password",
        "wget --user=ci --password=WgetPa55word https://files.acme.test/x.tgz",
        "WgetPa55word",
    ),
    (
        "azure_connection_string",
        'az storage container list --connection-string "DefaultEndpointsProtocol=https;'
        f'AccountName=acmestore;AccountKey={AZURE_ACCOUNT_KEY};EndpointSuffix=core.windows.net"',
        AZURE_ACCOUNT_KEY,
    ),
    (
        "azure_sas_signature",
        "curl 'https://acmestore.blob.core.windows.net/c/r.csv?sv=2022-11-02&ss=b&srt=o&sp=r"
        "&sig=Qm9ndXNTYXNTaWduYXR1cmU0Mg%3D%3D'",
        "Qm9ndXNTYXNTaWduYXR1cmU0Mg",
    ),
    (
        "s3_presigned_signature",
        "curl 'https://acme.s3.amazonaws.com/r.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Signature=5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592'",
        "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592",
    ),
    (
        "pgp_private_key",
        "gpg --import <<'EOF'\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        f"{PGP_BODY}\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----\nEOF",
        PGP_BODY,
    ),
    (
        "rsa_private_key",
        f"cat > id_rsa <<EOF\n-----BEGIN RSA PRIVATE KEY-----\n{RSA_BODY}\n"
        "-----END RSA PRIVATE KEY-----\nEOF",
        RSA_BODY,
    ),
    (
        "openssh_private_key",
        f"printf '%s\\n' '-----BEGIN OPENSSH PRIVATE KEY-----' '{OPENSSH_BODY}' > deploy_key",
        OPENSSH_BODY,
    ),
    ("token_option", "vercel deploy --prod --token VercelTok3nValue9", "VercelTok3nValue9"),
    ("token_option_equals", "npx wrangler deploy --token=Wr4nglerTok3nVal", "Wr4nglerTok3nVal"),
    (
        "api_key_option",
        "datadog-ci synthetics run-tests --api-key Dd4piKeyValue9xyz",
        "Dd4piKeyValue9xyz",
    ),
    (
        "secret_option",
        "./deploy.sh --client-id app --secret ClientSecretVal9",
        "ClientSecretVal9",
    ),
    (
        "secret_key_base_env",
        "SECRET_KEY_BASE=0a1b2c3d4e5f60718293a4b5c6d7e8f9 bin/rails server",
        "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
    ),
    (
        "kubectl_from_literal",
        "kubectl create secret generic db --from-literal=password=KubeLiteralPw9",
        "KubeLiteralPw9",
    ),
    (
        "json_password",
        """echo '{"user": "bob", "password": "JsonPa55word!"}' > creds.json""",
        "JsonPa55word!",
    ),
    (
        "openssl_passout",
        "openssl pkcs12 -export -in cert.pem -out cert.p12 -passout pass:P12Exp0rtPw",
        "P12Exp0rtPw",
    ),
    (
        "keytool_storepass",
        "keytool -list -keystore app.jks -storepass K3ystorePa55",
        "K3ystorePa55",
    ),
    (
        "ldapsearch_bind",
        "ldapsearch -x -D cn=admin,dc=acme,dc=test -w Ld4pB1ndPw '(uid=bob)'",
        "Ld4pB1ndPw",
    ),
    ("sqlcmd_password", "sqlcmd -S db -U sa -P 'Sql5erverPw' -Q 'SELECT 1'", "Sql5erverPw"),
    (
        "mongosh_password",
        "mongosh --host db -u admin -p M0ngoAdm1nPw --authenticationDatabase admin",
        "M0ngoAdm1nPw",
    ),
    (
        "ssh_keygen_passphrase",
        "ssh-keygen -t ed25519 -N 'K3yPhr4seValue' -f deploy_key",
        "K3yPhr4seValue",
    ),
    ("zip_password", "zip -r -P Z1pArch1vePw backup.zip reports/", "Z1pArch1vePw"),
    ("seven_zip_password", "7z a -pS3venZ1pPw -mhe=on backup.7z reports/", "S3venZ1pPw"),
    (
        "gh_secret_body",
        "gh secret set DEPLOY_KEY --body 'GhS3cretB0dyValue' --repo acme/shop",
        "GhS3cretB0dyValue",
    ),
    (
        "skopeo_creds",
        "skopeo copy --src-creds ci:Sk0peoCredPw docker://a.test/app docker://b.test/app",
        "Sk0peoCredPw",
    ),
)


# The alphabets of the examples' shapes (remem/record/secret_families.py).
ALPHABETS = {
    "a": string.ascii_letters + string.digits,
    "l": string.ascii_lowercase + string.digits,
    "u": string.ascii_uppercase + string.digits,
    "L": string.ascii_lowercase,
    "h": "0123456789abcdef",
    "d": string.digits,
    "w": string.ascii_letters + string.digits + "_-",
    "b": string.ascii_letters + string.digits + "+/",
}


def sample(family: str, example: str) -> tuple[str, str]:
    """(text, secret): a family's example with its shapes filled in, the same on every run and
    built here, so that the repository holds no secret-shaped string."""
    rng = random.Random(family)

    def fill(match: re.Match[str]) -> str:
        alphabet = ALPHABETS[match[1]]
        return "".join(rng.choice(alphabet) for _ in range(int(match[2])))

    text = re.sub(r"\{([a-zA-Z])(\d+)\}", fill, example)
    if "«" not in text:
        return text, text
    before, rest = text.split("«", 1)
    secret, after = rest.split("»", 1)
    return before + secret + after, secret


# Each family of the table, in a command of its own when its example is a bare secret.
TABLE_CORPUS: tuple[tuple[str, str, str], ...] = tuple(
    (family, text if text != secret else f"echo {secret} | ./deploy.sh", secret)
    for family, _keywords, _pattern, example in FAMILIES
    for text, secret in [sample(family, example)]
)
