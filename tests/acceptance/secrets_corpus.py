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


# ---- Realistic shapes, with values drawn afresh on every run -----------------------------------
# (family, command, output): the secret is `{S}` (twenty letters and digits) or the part between
# `«` and `»` (shapes as above), in the command or in what it printed. Each a way a secret is
# really written: cloud CLIs, VCS and CI tokens, database clients and connection strings, .env,
# YAML, TOML, properties and XML, kube and docker configs, keys, headers, form bodies, query
# strings, and the outputs of commands that print secrets.
SHAPES: tuple[tuple[str, str, str], ...] = (
    # A secret-naming word beside the value
    ("az account key", "az storage blob list -c logs --account-name acme --account-key {S}", ""),
    ("meili master key", "meilisearch --env production --master-key {S}", ""),
    ("netlify auth", "netlify deploy --prod --auth {S} --dir dist", ""),
    ("pw option", "./scripts/backup.sh --pw {S} --target s3://acme-backups", ""),
    ("redis requirepass", "redis-server --port 6380 --requirepass {S}", ""),
    ("redis masterauth", "redis-server --replicaof db1 6379 --masterauth {S}", ""),
    ("signing key option", "cosign sign --signing-key {S} ghcr.io/acme/app:1.4", ""),
    ("encryption key option", "restic backup ./data --encryption-key {S}", ""),
    ("license key option", "./install.sh --license-key {S} --accept-eula", ""),
    ("client secret option", "./oauth-cli login --client-id shop --client-secret {S}", ""),
    ("refresh token option", "./sync --refresh-token {S} --once", ""),
    ("webhook secret option", "stripe listen --webhook-secret {S} --forward-to :8000/hooks", ""),
    ("ngrok authtoken", "ngrok config add-authtoken {S}", ""),
    ("ngrok legacy authtoken", "ngrok authtoken {S}", ""),
    ("pulumi secret", "pulumi config set --secret dbPassword {S}", ""),
    ("pulumi secret after", "pulumi config set apiKey {S} --secret", ""),
    ("gh secret glued", 'gh secret set DEPLOY_KEY -b"{S}" --repo acme/shop', ""),
    ("gh secret body", "gh secret set NPM_TOKEN --body {S} --env production", ""),
    ("gitlab pat env", "GITLAB_PAT={S} ./scripts/mirror.sh", ""),
    ("github pat env", "export GH_PAT={S}", ""),
    ("hmac env", "HMAC={S} node scripts/sign.js", ""),
    ("hmac key env", "WEBHOOK_HMAC_KEY={S} ./verify", ""),
    ("cookie salt env", "COOKIE_SALT={S} bundle exec rails s", ""),
    ("password salt env", "export PASSWORD_SALT={S}", ""),
    ("mnemonic env", "MNEMONIC='«{L6} {L7} {L5} {L8} {L6} {L7}»' npx hardhat run deploy.js", ""),
    ("session secret env", "SESSION_SECRET={S} npm start", ""),
    ("rails session env", "RAILS_SESSION={S} bin/rails s", ""),
    ("cookie env", "AUTH_COOKIE={S} pytest tests/e2e", ""),
    ("odbc pwd", 'sqlcmd -C "Driver={{ODBC Driver 18}};Server=db;UID=sa;PWD={S};"', ""),
    ("odbc pwd braces", "isql -v 'DSN=shop;UID=app;PWD={{«{a20}»}};'", ""),
    ("odbc pwd first", "python etl.py --dsn 'PWD={S};UID=etl;SERVER=db.acme.test'", ""),
    ("curl form pw", "curl -d 'user=ci&pw={S}' https://auth.acme.test/login", ""),
    (
        "curl form password",
        "curl -X POST -d 'username=ci&password={S}' https://acme.test/login",
        "",
    ),
    (
        "curl data urlencode",
        "curl --data-urlencode 'client_secret={S}' https://acme.test/token",
        "",
    ),
    ("curl cookie", "curl --cookie 'sessionid={S}' https://shop.acme.test/cart", ""),
    ("curl b cookie", "curl -b 'csrftoken=x; sessionid={S}' https://shop.acme.test/admin", ""),
    ("httpie token", "http POST api.acme.test/v1/orders Authorization:'Token {S}'", ""),
    ("httpie bearer", 'http api.acme.test/me "Authorization:Bearer {S}"', ""),
    ("httpie api key", "http api.acme.test/v2/items X-API-Key:{S}", ""),
    ("sql alter user", "psql -c \"ALTER USER app WITH PASSWORD '{S}';\"", ""),
    ("sql create role", "psql -c \"CREATE ROLE ci LOGIN PASSWORD '{S}'\"", ""),
    ("sql identified by", "mysql -e \"CREATE USER 'app'@'%' IDENTIFIED BY '{S}'\"", ""),
    (
        "sql identified with",
        "mysql -e \"ALTER USER ci IDENTIFIED WITH caching_sha2_password BY '{S}'\"",
        "",
    ),
    (
        "oracle identified by",
        "echo 'ALTER USER scott IDENTIFIED BY {S};' | sqlplus / as sysdba",
        "",
    ),
    ("nmcli password", "nmcli device wifi connect AcmeGuest password '{S}'", ""),
    ("nmcli psk", "nmcli connection modify office wifi-sec.psk {S}", ""),
    ("xml password", "cat settings.xml", "    <password>{S}</password>"),
    ("xml add", "cat Web.config", '  <add key="ApiSecret" value="{S}" />'),
    ("xml property", "cat applicationContext.xml", '<property name="password" value="{S}"/>'),
    (
        "maven server",
        "cat ~/.m2/settings.xml",
        "<server><id>acme</id><password>{S}</password></server>",
    ),
    ("plist token", "cat Config.plist", "<key>apiToken</key>\n<string>{S}</string>"),
    (
        "vault table",
        "vault kv get secret/shop/db",
        "Key         Value\n---         -----\npassword    {S}",
    ),
    (
        "vault token table",
        "vault token create -policy=ci",
        "Key      Value\n---      -----\ntoken    hvs.«{w90}»",
    ),
    (
        "dockerconfigjson",
        "kubectl get secret regcred -o yaml",
        "  .dockerconfigjson: «eyJhdXRocyI6{b120}»",
    ),
    ("dockercfg", "cat pull-secret.json", '{{".dockercfg": "«eyJyZWdpc3RyeSI6{b90}»"}}'),
    (
        "putty key",
        "cat deploy.ppk",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n«{b64}»\n"
        "Private-MAC: 0a",
    ),
    # Tools' own options and words
    ("doctl", "doctl auth init -t dop_v1_«{h64}» --context ci", ""),
    ("doctl plain", "doctl auth init -t {S}", ""),
    ("codecov", "codecov -t {S} -f coverage.xml", ""),
    ("codecovcli", "codecovcli upload-process -t {S}", ""),
    ("snyk auth", "snyk auth {S}", ""),
    ("cargo login", "cargo login {S}", ""),
    ("cargo login registry", "cargo login --registry acme {S}", ""),
    ("poetry http basic", "poetry config http-basic.acme ci {S}", ""),
    ("poetry pypi token", "poetry config pypi-token.acme {S}", ""),
    ("mc alias", "mc alias set acme https://s3.acme.test ci-access {S}", ""),
    ("glab variable", "glab variable set DEPLOY_TOKEN {S} --masked", ""),
    ("glab variable value", "glab variable set API_KEY -v {S}", ""),
    ("influx setup", "influx setup -u admin -p {S} -o acme -b metrics -f", ""),
    ("influx token", "influx bucket list -t {S} --org acme", ""),
    ("rabbitmq add user", "rabbitmqctl add_user ci {S}", ""),
    ("rabbitmq change password", "rabbitmqctl change_password guest {S}", ""),
    ("neo4j initial password", "neo4j-admin dbms set-initial-password {S}", ""),
    ("cypher-shell", "cypher-shell -u neo4j -p {S} 'MATCH (n) RETURN count(n)'", ""),
    ("twilio login", "twilio login AC{h32} {S}", ""),
    ("docker login stdin", "echo '{S}' | docker login -u ci --password-stdin ghcr.io", ""),
    (
        "helm registry stdin",
        "echo {S} | helm registry login -u ci --password-stdin reg.acme.test",
        "",
    ),
    ("chpasswd", "echo 'deploy:{S}' | sudo chpasswd", ""),
    ("sudo stdin", "echo {S} | sudo -S systemctl restart nginx", ""),
    ("printf sudo stdin", "printf '%s\\n' {S} | sudo -S -v", ""),
    ("openssl passwd", "openssl passwd -6 {S}", ""),
    ("openssl passwd salt", "openssl passwd -1 -salt xyz {S}", ""),
    ("smbclient", "smbclient //files.acme.test/share -U 'ACME\\bob%{S}' -c ls", ""),
    ("rpcclient", "rpcclient -U 'admin%{S}' dc1.acme.test -c enumdomusers", ""),
    ("xfreerdp", "xfreerdp /v:win1.acme.test /u:bob /p:{S} /cert:ignore", ""),
    ("lftp", "lftp -u deploy,{S} sftp://files.acme.test", ""),
    # Database clients and connection strings
    ("mysql glued", "mysql -h db -u root -p{S} shop", ""),
    ("mysql long", "mysql --user=root --password={S} shop", ""),
    ("mysqladmin", "mysqladmin -u root -p{S} status", ""),
    ("mongosh", "mongosh --host db -u admin -p {S} --authenticationDatabase admin", ""),
    ("mongodb url", "mongosh 'mongodb+srv://app:{S}@cluster0.acme.mongodb.net/shop'", ""),
    ("postgres url", "psql postgresql://app:{S}@db.acme.test:5432/shop -c 'select 1'", ""),
    ("redis url", "redis-cli -u redis://default:{S}@cache.acme.test:6379 ping", ""),
    ("redis cli", "redis-cli -h cache -a {S} --no-auth-warning info", ""),
    ("amqp url", "celery -A shop worker -b amqp://shop:{S}@mq.acme.test:5672//", ""),
    ("sqlcmd", "sqlcmd -S db.acme.test -U sa -P '{S}' -Q 'SELECT 1'", ""),
    (
        "jdbc password",
        "java -jar etl.jar 'jdbc:sqlserver://db;user=sa;password={S};database=shop'",
        "",
    ),
    ("pgpassword env", "PGPASSWORD={S} pg_dump -h db -U app shop > shop.sql", ""),
    ("mysql pwd env", "MYSQL_PWD={S} mysql -u root shop -e 'select 1'", ""),
    ("database url env", "DATABASE_URL=postgres://app:{S}@db:5432/shop ./manage.py migrate", ""),
    ("pgpass line", "echo 'db.acme.test:5432:shop:app:{S}' >> ~/.pgpass", ""),
    ("netrc line", "printf 'machine api.acme.test login ci password {S}\\n' >> ~/.netrc", ""),
    ("ldapsearch", "ldapsearch -x -D cn=admin,dc=acme,dc=test -w {S} '(uid=bob)'", ""),
    ("cockroach url", "cockroach sql --url 'postgresql://root:{S}@crdb:26257/defaultdb'", ""),
    ("clickhouse", "clickhouse-client --host ch --user default --password {S}", ""),
    ("influx url", "curl 'http://influx:8086/query?u=admin&p={S}&q=SHOW+DATABASES'", ""),
    # Cloud CLIs
    ("aws configure secret", "aws configure set aws_secret_access_key {S} --profile ci", ""),
    ("aws secret env", "AWS_SECRET_ACCESS_KEY={S} aws s3 ls s3://acme-backups", ""),
    ("aws session token env", "export AWS_SESSION_TOKEN={S}", ""),
    ("aws access key", "aws configure set aws_access_key_id AKIA«{u16}»", ""),
    ("az sp login", "az login --service-principal -u http://ci -p {S} --tenant acme.test", ""),
    (
        "az connection string",
        'az storage container list --connection-string "DefaultEndpointsProtocol=https;'
        'AccountName=acme;AccountKey={S};EndpointSuffix=core.windows.net"',
        "",
    ),
    ("az sas", "az storage blob download --sas-token 'sv=2022-11-02&sig={S}' -c logs -n a.log", ""),
    ("gcloud key json", "cat key.json", '  "private_key_id": "«{h40}»",'),
    ("digitalocean token env", "DIGITALOCEAN_ACCESS_TOKEN={S} terraform apply", ""),
    ("heroku api key env", "HEROKU_API_KEY={S} heroku apps", ""),
    ("cloudflare token", "CLOUDFLARE_API_TOKEN={S} wrangler deploy", ""),
    ("wrangler secret", "echo {S} | wrangler secret put API_KEY", ""),
    ("fly secrets", "fly secrets set DATABASE_PASSWORD={S} -a shop", ""),
    ("vercel token", "vercel deploy --prod --token {S}", ""),
    ("terraform var", "terraform apply -var 'db_password={S}' -auto-approve", ""),
    ("terraform tfvar env", "TF_VAR_db_password={S} terraform plan", ""),
    ("helm set", "helm upgrade shop ./chart --set postgresql.auth.password={S}", ""),
    ("kubectl literal", "kubectl create secret generic db --from-literal=password={S}", ""),
    (
        "kubectl docker registry",
        "kubectl create secret docker-registry reg --docker-username=ci --docker-password={S}",
        "",
    ),
    ("kubeconfig token", "kubectl config set-credentials ci --token={S}", ""),
    ("kubectl token option", "kubectl --token {S} get pods -n shop", ""),
    ("kubeconfig client key", "cat ~/.kube/config", "    client-key-data: «{b120}»"),
    ("kubeconfig token yaml", "cat ~/.kube/config", "    token: {S}"),
    ("k8s secret data", "kubectl get secret db -o yaml", "data:\n  password: «{b24}»"),
    (
        "docker config auth",
        "cat ~/.docker/config.json",
        '{{"auths": {{"ghcr.io": {{"auth": "«{b40}»"}}}}}}',
    ),
    ("docker login p", "docker login -u ci -p {S} registry.acme.test", ""),
    ("docker run env", "docker run -e API_TOKEN={S} acme/app:1.4", ""),
    ("compose env", "cat docker-compose.yml", "      POSTGRES_PASSWORD: {S}"),
    # VCS and CI tokens
    ("github token", "echo ghp_«{a36}» | gh auth login --with-token", ""),
    ("github fine grained", "GH_TOKEN=github_pat_«{a22}_{a59}» gh pr list", ""),
    ("gitlab token", "git push https://oauth2:glpat-«{w20}»@gitlab.com/acme/shop.git", ""),
    ("git url token", "git clone https://x-access-token:{S}@github.com/acme/shop.git", ""),
    ("git credential store", "echo 'https://ci:{S}@github.com' > ~/.git-credentials", ""),
    ("git extraheader", "git -c http.extraheader='AUTHORIZATION: basic «{b40}»' fetch", ""),
    ("npm auth token", "npm config set //npm.acme.test/:_authToken {S}", ""),
    ("npmrc", "cat .npmrc", "//registry.npmjs.org/:_authToken=npm_«{a36}»"),
    ("yarnrc", "cat .yarnrc.yml", 'npmAuthToken: "{S}"'),
    ("pypirc", "cat ~/.pypirc", "[pypi]\nusername = __token__\npassword = {S}"),
    ("twine", "twine upload -u ci -p {S} dist/*", ""),
    ("gem credentials", "cat ~/.gem/credentials", ":rubygems_api_key: {S}"),
    ("circleci token", "CIRCLE_TOKEN={S} circleci config validate", ""),
    ("sonar token", "sonar-scanner -Dsonar.token={S}", ""),
    ("jenkins token", "curl -X POST https://ci.acme.test/job/shop/build --user ci:{S}", ""),
    ("buildkite token", "BUILDKITE_AGENT_TOKEN={S} buildkite-agent start", ""),
    ("drone token", "DRONE_TOKEN={S} drone build ls acme/shop", ""),
    ("travis token", "travis login --github-token {S}", ""),
    ("sentry auth", "SENTRY_AUTH_TOKEN={S} sentry-cli releases new 1.4", ""),
    ("codecov env", "CODECOV_TOKEN={S} bash <(curl -s https://codecov.io/bash)", ""),
    ("gradle properties", "cat gradle.properties", "signing.password={S}"),
    ("gradle publish", "./gradlew publish -PossrhPassword={S}", ""),
    ("maven password", "mvn deploy -Dserver.password={S}", ""),
    # .env, YAML, TOML, properties, INI
    ("dotenv password", "cat .env", "DB_PASSWORD={S}"),
    ("dotenv quoted", "cat .env", 'STRIPE_SECRET="{S}"'),
    ("dotenv export", "cat .env.production", "export API_KEY={S}"),
    ("yaml password", "cat config/database.yml", "  password: {S}"),
    ("yaml quoted", "cat config/secrets.yml", "  secret_key_base: '{S}'"),
    ("yaml client secret", "cat app.yaml", "oauth:\n  client_secret: {S}"),
    ("toml token", "cat pyproject.toml", 'token = "{S}"'),
    ("toml password", "cat Cargo.toml", 'password = "{S}"'),
    ("properties password", "cat application.properties", "spring.datasource.password={S}"),
    ("properties secret", "cat gradle.properties", "app.client.secret = {S}"),
    ("ini password", "cat my.cnf", "[client]\npassword={S}"),
    ("json password", "cat credentials.json", '{{"username": "ci", "password": "{S}"}}'),
    ("json api key", "cat config.json", '{{"apiKey": "{S}"}}'),
    ("json escaped", 'echo \'{{\\"token\\": \\"{S}\\"}}\'', ""),
    (
        "json token output",
        "curl -s https://auth.acme.test/token",
        '{{"access_token":"{S}","expires_in":3600}}',
    ),
    ("json refresh output", "curl -s https://auth.acme.test/refresh", '{{"refresh_token": "{S}"}}'),
    ("php config", "cat wp-config.php", "define('DB_PASSWORD', '{S}');"),
    ("python settings", "cat settings.py", "SECRET_KEY = '{S}'"),
    ("js config", "cat config.js", "  apiSecret: '{S}',"),
    ("htpasswd", "htpasswd -bc .htpasswd admin {S}", ""),
    # Keys and tokens by format
    (
        "rsa key",
        "cat id_rsa",
        "-----BEGIN RSA PRIVATE KEY-----\n«{b64}»\n-----END RSA PRIVATE KEY-----",
    ),
    ("openssh key", "cat ~/.ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n«{b70}»\n"),
    (
        "ec key",
        "openssl ecparam -genkey -name prime256v1",
        "-----BEGIN EC PRIVATE KEY-----\n«{b64}»\n-----END EC PRIVATE KEY-----",
    ),
    ("age key", "cat key.txt", "AGE-SECRET-KEY-1«{u58}»"),
    ("jwt header", "curl -H 'X-Auth-Token: {S}' https://api.acme.test/me", ""),
    ("jwt bare", "./call-api eyJ«{a20}.eyJ{a40}.{a43}»", ""),
    ("slack bot", "SLACK_BOT_TOKEN=xoxb-«{d12}-{d13}-{a24}» ./notify.sh", ""),
    ("stripe key", "stripe customers list --api-key sk_live_«{a24}»", ""),
    ("openai key", "OPENAI_API_KEY=sk-proj-«{w48}» python eval.py", ""),
    (
        "anthropic key",
        "curl https://api.anthropic.com/v1/messages -H 'x-api-key: sk-ant-api03-«{w93}»'",
        "",
    ),
    ("sendgrid key", "SENDGRID_API_KEY=SG.«{w22}.{w43}» ./mail.sh", ""),
    (
        "google api key",
        "curl 'https://maps.googleapis.com/maps/api/geocode/json?key=AIza«{w35}»'",
        "",
    ),
    ("hf token", "huggingface-cli login --token hf_«{a34}»", ""),
    ("keytool", "keytool -list -keystore app.jks -storepass {S}", ""),
    ("openssl pass", "openssl pkcs12 -export -in c.pem -out c.p12 -passout pass:{S}", ""),
    ("zip password", "zip -r -P {S} backup.zip reports/", ""),
    ("7z password", "7z a -p{S} backup.7z reports/", ""),
    ("ssh-keygen passphrase", "ssh-keygen -t ed25519 -N '{S}' -f deploy_key", ""),
    ("sshpass", "sshpass -p '{S}' ssh deploy@web1 uptime", ""),
    (
        "expect",
        'expect -c \'spawn ssh deploy@web1; expect "*assword:"; send "{S}\\r"; interact\'',
        "",
    ),
    # Headers
    ("basic header", "curl -H 'Authorization: Basic «{b32}»' https://api.acme.test", ""),
    ("bearer header", 'curl -H "Authorization: Bearer {S}" https://api.acme.test/me', ""),
    ("cookie header", "curl -H 'Cookie: session={S}' https://shop.acme.test", ""),
    ("proxy auth header", "curl -H 'Proxy-Authorization: Basic «{b32}»' http://example.test", ""),
    ("api key header", "curl -H 'X-Api-Key: {S}' https://api.acme.test/items", ""),
    ("wget header", "wget --header='Authorization: Token {S}' https://files.acme.test/a.tgz", ""),
    (
        "set-cookie output",
        "curl -si https://shop.acme.test/login",
        "HTTP/1.1 302 Found\nSet-Cookie: sid={S}; HttpOnly",
    ),
    ("curl user", "curl -u admin:{S} https://api.acme.test/admin", ""),
    ("wget password", "wget --user=ci --password={S} https://files.acme.test/x.tgz", ""),
    # Query strings and paths
    ("oauth code", "curl 'https://acme.test/oauth/callback?state=xyz&code={S}'", ""),
    ("url t", "curl -O 'https://files.acme.test/download?t={S}'", ""),
    ("url hooks", "curl -X POST https://api.acme.test/hooks/{S} -d @event.json", ""),
    ("build hooks", "curl -X POST -d {{}} https://api.netlify.com/build_hooks/«{h24}»", ""),
    ("zapier hook", "curl -X POST https://hooks.zapier.com/hooks/catch/«{d7}/{l7}»/", ""),
    ("url token param", "curl 'https://api.acme.test/export?format=csv&token={S}'", ""),
    ("url api key param", "curl 'https://api.acme.test/v1?api_key={S}'", ""),
    ("url access token param", "curl 'https://graph.acme.test/me?access_token={S}'", ""),
    ("s3 presigned", "curl 'https://acme.s3.amazonaws.com/r.csv?X-Amz-Signature=«{h64}»'", ""),
    ("slack webhook", "curl -X POST https://hooks.slack.com/services/T«{u8}/B{u8}/{a24}»", ""),
    ("discord webhook", "curl -X POST https://discord.com/api/webhooks/«{d18}/{w68}»", ""),
    ("telegram bot", "curl https://api.telegram.org/bot«{d10}:AA{w33}»/getMe", ""),
)

# (family, command, output) of the commands that print a secret and nothing else.
PRINTED: tuple[tuple[str, str, str], ...] = (
    ("ecr password", "aws ecr get-login-password --region eu-west-1", "«{b200}»"),
    (
        "ecr login pipe",
        "aws ecr get-login-password | docker login -u AWS --password-stdin x.test",
        "«{b90}»",
    ),
    ("heroku token", "heroku auth:token", "{S}"),
    ("vault field", "vault kv get -field=password secret/shop/db", "{S}"),
    ("vault read field", "vault read -field=token auth/token/lookup-self", "{S}"),
    ("terraform output", "terraform output -raw db_password", "{S}"),
    ("terraform json", "terraform output -json", '{{"db": {{"sensitive": true, "value": "{S}"}}}}'),
    ("wg genkey", "wg genkey | tee privatekey", "«{b43}»="),
    ("k8s base64", "kubectl get secret db -o jsonpath='{{.data.password}}' | base64 -d", "{S}"),
    ("k8s jsonpath", "kubectl get secret db -o jsonpath='{{.data.password}}'", "«{b32}»"),
    ("op read", "op read op://ci/db/password", "{S}"),
    ("pass show", "pass show acme/db", "{S}"),
    ("keychain", "security find-generic-password -a ci -s deploy -w", "{S}"),
    ("gcloud token", "gcloud auth print-access-token", "ya29.«{w120}»"),
    ("gcloud identity", "gcloud auth print-identity-token", "«{w160}»"),
    ("az token", "az account get-access-token --query accessToken -o tsv", "«{w200}»"),
    ("gh token", "gh auth token", "gho_«{a36}»"),
    (
        "secrets manager",
        "aws secretsmanager get-secret-value --secret-id prod/db --output text",
        "{S}",
    ),
    (
        "ssm",
        "aws ssm get-parameter --name /prod/db --with-decryption --query Parameter.Value",
        "{S}",
    ),
    ("gcloud secret", "gcloud secrets versions access latest --secret=db", "{S}"),
    ("sops", "sops -d secrets.enc.yaml", "db: «{a24}»"),
    ("openssl rand", "openssl rand -hex 32", "«{h64}»"),
    ("kubectl token", "kubectl create token ci -n shop", "«{w180}»"),
)

# The run's own values: a failure names its seed, which draws them again.
SEED = random.SystemRandom().randrange(2**32)


def draw(
    shapes: tuple[tuple[str, str, str], ...], seed: int = SEED
) -> list[tuple[str, str, str, str]]:
    """(family, command, output, secret) of each shape, its secret drawn at random."""
    rng = random.Random(seed)
    alphabet = ALPHABETS["a"]

    def fill(match: re.Match[str]) -> str:
        letters = ALPHABETS[match[1]]
        return "".join(rng.choice(letters) for _ in range(int(match[2])))

    drawn = []
    for family, *texts in shapes:
        # A letter first: a value starting with a digit or a dash reads as something else.
        generic = rng.choice(string.ascii_letters) + "".join(rng.choices(alphabet, k=19))
        filled = []
        for text in texts:
            text = text.replace("{S}", f"«{generic}»")
            text = re.sub(r"\{([a-zA-Z])(\d+)\}", fill, text)
            filled.append(text.replace("{{", "{").replace("}}", "}"))
        secrets = [part.split("»", 1)[0] for text in filled for part in text.split("«")[1:]]
        assert len(secrets) == 1, family
        command, output = (text.replace("«", "").replace("»", "") for text in filled)
        drawn.append((family, command, output, secrets[0]))
    return drawn
