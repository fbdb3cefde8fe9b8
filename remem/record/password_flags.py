"""Password options of common clients, the words tools take as secrets, and the commands that
print one, as data (STYLE.md rule 19): which program, which option or place, and a real excerpt
each, walked row by row by the tests. Stdlib only: the hook reads it."""

from __future__ import annotations

# One shell word: quoted (perhaps cut off), or bare. Possessive: a word that fails is not retried
# shorter, which would be quadratic in a long one.
WORD = r"""(?:'[^'\n]*+'?|"(?:[^"\\\n]|\\.)*+"?|[^\s'"|;&<>()`]++)"""
# What may follow a command's last word: `2>&1`, `> out.log`.
REDIRECTIONS = r"(?:[ \t]+\d*[<>]+&?[ \t]*[^\s|;&<>]+)*"
# An option's place: the start of the text or after a blank.
AT = r"(?:^|(?<=[ \t]))"
# A value that is a secret rather than a variable standing for one (`"$TOKEN"`) or an option.
PLAIN = r"""(?!["']?\$)(?!-)"""
# The word a command writes to the next one's input: `echo S |`, `printf '%s' S |`.
PIPED = (
    r"\b(?:echo|printf)(?:[ \t]+-[neE]{1,3})?(?:[ \t]+'%s(?:\\n)?')?[ \t]+"
    rf"{PLAIN}(?P<secret>{WORD})[ \t]*\|[ \t]*"
)

# Password options of common clients: (family, triggers, the command they belong to, the option
# and its value as `secret`, a real excerpt, the secret in it). The option counts only within a
# simple command (up to `|`, `;`, `&` or a new line) of that program; no program means any.
PASSWORD_FLAGS: tuple[tuple[str, tuple[str, ...], str, str, str, str], ...] = (
    # Glued only: `-p` alone prompts, and the word after it is the database.
    (
        "mysql",
        ("mysql", "mariadb"),
        r"(?<![\w.-])(?:mysql\w*|mariadb[\w-]*)\s",
        rf"{AT}-p(?P<secret>{WORD})",
        "mysql -h db -u root -pS3cr3t-Pw shop < dump.sql",
        "S3cr3t-Pw",
    ),
    (
        "sshpass",
        ("sshpass",),
        "",  # its own options only, before the command it runs
        rf"\bsshpass(?:[ \t]+-[fdP][ \t]*\S+|[ \t]+-[ehvV]\S*)*[ \t]+-p[ \t]*(?P<secret>{WORD})",
        "sshpass -p 'hunter2-ssh' ssh deploy@web1 uptime",
        "hunter2-ssh",
    ),
    (
        "registry login",
        ("login",),
        r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm\s+registry|oras|crane)\s+login\s",
        rf"{AT}(?:-p|--password)(?:[ \t]+|=)(?!-)(?P<secret>{WORD})",
        "docker login -u ci -p Dckr-L0gin-Pw registry.acme.test",
        "Dckr-L0gin-Pw",
    ),
    (
        "az login",
        ("login",),
        r"\baz\s+login\s",
        rf"{AT}(?:-p|--password)(?:[ \t]+|=)(?!-)(?P<secret>{WORD})",
        "az login --service-principal -u http://ci.acme.test -p Az-Sp-S3cret --tenant acme.test",
        "Az-Sp-S3cret",
    ),
    (
        "registry credentials",
        ("creds",),
        r"\b(?:skopeo|podman|buildah)\s",
        rf"{AT}--(?:src-|dest-)?creds(?:[ \t]+|=)['\"]?[^\s:'\"]+:(?P<secret>[^\s'\"]+)",
        "skopeo copy --src-creds ci:Sk0peo-Pw docker://a.test/app docker://b.test/app",
        "Sk0peo-Pw",
    ),
    # Batch mode takes the password as the last word: `htpasswd -b[c] [FILE] USER PASSWORD`.
    (
        "htpasswd",
        ("htpasswd",),
        r"\bhtpasswd\s(?:[^\n|;&]*?[ \t])?-[A-Za-z]*b",
        rf"(?<=[ \t])(?<![<>&][ \t])(?!-)(?P<secret>{WORD})"
        rf"(?={REDIRECTIONS}[ \t]*(?:[|;&\n)]|$))",
        "htpasswd -bc /etc/nginx/.htpasswd admin Adm1n-Htpw 2>/dev/null",
        "Adm1n-Htpw",
    ),
    (
        "HTTP client user",
        ("curl", "http", "xh"),
        r"\b(?:curl|https?|xh|xhs)\s",
        rf"{AT}(?:-u[ \t]*|--user(?:[ \t]+|=)|-a[ \t]+|--auth(?:[ \t]+|=))"
        r"['\"]?[^\s:'\"]+:(?P<secret>[^\s'\"]+)",
        "curl -u alice:W0nderl4nd-Pw https://api.shop.test",
        "W0nderl4nd-Pw",
    ),
    (
        "redis-cli",
        ("redis-cli", "valkey-cli", "keydb-cli"),
        r"\b(?:redis|valkey|keydb)-cli\s",
        rf"{AT}(?:-a[ \t]*|--pass[ \t]+)(?!-)(?P<secret>{WORD})",
        "redis-cli -h cache -a R3dis-Auth-Pw --no-auth-warning ping",
        "R3dis-Auth-Pw",
    ),
    (
        "mongo",
        ("mongo",),
        r"\bmongo(?:sh|dump|restore|import|export|stat|top)?\s",
        rf"{AT}-p[ \t]+(?!-)(?P<secret>{WORD})",
        "mongosh --host db -u admin -p M0ngo-Adm1n-Pw --authenticationDatabase admin",
        "M0ngo-Adm1n-Pw",
    ),
    (
        "sqlcmd",
        ("sqlcmd", "bcp", "osql"),
        r"\b(?:sqlcmd|bcp|osql)\s",
        rf"{AT}-P[ \t]*(?!-)(?P<secret>{WORD})",
        "sqlcmd -S db.acme.test -U sa -P 'Sql-Serv3r-Pw' -Q 'SELECT 1'",
        "Sql-Serv3r-Pw",
    ),
    (
        "ldap tools",
        ("ldap",),
        r"\bldap[a-z]+\s",
        rf"{AT}-w[ \t]*(?!-)(?P<secret>{WORD})",
        "ldapsearch -x -D cn=admin,dc=acme,dc=test -w Ld4p-B1nd-Pw '(uid=bob)'",
        "Ld4p-B1nd-Pw",
    ),
    (
        "twine",
        ("twine",),
        r"\btwine\s+upload\s",
        rf"{AT}-p[ \t]*(?!-)(?P<secret>{WORD})",
        "twine upload -u ci -p Tw1ne-Upl0ad-Pw dist/*",
        "Tw1ne-Upl0ad-Pw",
    ),
    (
        "openssl",
        ("pass:",),
        "",
        rf"{AT}-(?:pass|passin|passout)[ \t]+pass:(?P<secret>{WORD})",
        "openssl pkcs12 -export -in cert.pem -out cert.p12 -passout pass:P12-Exp0rt-Pw",
        "P12-Exp0rt-Pw",
    ),
    (
        "keytool",
        ("keytool",),
        r"\bkeytool\s",
        rf"{AT}-(?:src|dest)?(?:store|key)pass[ \t]+(?!-)(?P<secret>{WORD})",
        "keytool -importkeystore -srckeystore a.p12 -srcstorepass K3ystore-Pw -destkeystore b.jks",
        "K3ystore-Pw",
    ),
    # An empty passphrase (-N "") is no secret, and stays as it was.
    (
        "ssh-keygen",
        ("ssh-keygen",),
        r"\bssh-keygen\s",
        rf"{AT}-[NP][ \t]*(?!-)(?P<secret>{WORD})",
        "ssh-keygen -t ed25519 -N 'K3y-Phr4se-Pw' -f deploy_key",
        "K3y-Phr4se-Pw",
    ),
    (
        "zip",
        ("zip",),
        r"(?<![\w.-])(?:zip|unzip|zipcloak)\s",
        rf"{AT}-P[ \t]*(?!-)(?P<secret>{WORD})",
        "zip -r -P Z1p-Arch1ve-Pw backup.zip reports/",
        "Z1p-Arch1ve-Pw",
    ),
    (
        "7-Zip",
        ("7z",),
        r"(?<![\w.-])7z[arz]?\s",
        rf"{AT}-p(?P<secret>{WORD})",
        "7z a -pS3ven-Z1p-Pw -mhe=on backup.7z reports/",
        "S3ven-Z1p-Pw",
    ),
    # Glued too: `-b"VALUE"`.
    (
        "gh secret set",
        ("secret",),
        r"\bgh\s+secret\s+set\s",
        rf"{AT}(?:-b[ \t]*|--body(?:[ \t]+|=))(?!-)(?P<secret>{WORD})",
        'gh secret set DEPLOY_KEY -b"Gh-S3cret-B0dy" --repo acme/shop',
        "Gh-S3cret-B0dy",
    ),
    (
        "doctl",
        ("doctl",),
        r"\bdoctl\s",
        rf"{AT}-t[ \t]+{PLAIN}(?P<secret>{WORD})",
        "doctl auth init -t D0ctl-Acc3ss-T0ken --context ci",
        "D0ctl-Acc3ss-T0ken",
    ),
    (
        "codecov",
        ("codecov",),
        r"\bcodecov(?:cli|\.sh)?\s",
        rf"{AT}-t[ \t]+{PLAIN}(?P<secret>{WORD})",
        "codecovcli upload-process -t C0decov-Upl0ad-T0k -f coverage.xml",
        "C0decov-Upl0ad-T0k",
    ),
    (
        "influx",
        ("influx",),
        r"\binflux\s",
        rf"{AT}-[pt][ \t]+{PLAIN}(?P<secret>{WORD})",
        "influx setup -u admin -p Infl0x-Adm1n-Pw -o acme -b metrics -f",
        "Infl0x-Adm1n-Pw",
    ),
    (
        "cypher-shell",
        ("cypher-shell",),
        r"\bcypher-shell\s",
        rf"{AT}-p[ \t]+{PLAIN}(?P<secret>{WORD})",
        "cypher-shell -a bolt://db:7687 -u neo4j -p Cyph3r-Sh3ll-Pw 'RETURN 1'",
        "Cyph3r-Sh3ll-Pw",
    ),
    (
        "openssl passwd",
        ("openssl",),
        r"\bopenssl\s+passwd\s",
        rf"(?<=[ \t])(?<![<>&][ \t]){PLAIN}(?P<secret>{WORD})"
        rf"(?={REDIRECTIONS}[ \t]*(?:[|;&\n)]|$))",
        "openssl passwd -6 -salt pepper0 0pensslPasswd-Pw | tee hash.txt",
        "0pensslPasswd-Pw",
    ),
    (
        "smbclient",
        ("smbclient", "rpcclient"),
        r"\b(?:smb|rpc)client\s",
        rf"{AT}(?:-U[ \t]*|--user(?:name)?(?:[ \t]+|=))['\"]?[^\s%'\"]{{1,200}}%"
        r"(?P<secret>[^\s'\"]{1,500})",
        "smbclient //files/share -U 'ACME\\bob%Smb-Cl1ent-Pw' -c ls",
        "Smb-Cl1ent-Pw",
    ),
    (
        "lftp",
        ("lftp",),
        r"\blftp\s",
        rf"{AT}-u[ \t]+['\"]?[^\s,'\"]{{1,200}},(?P<secret>[^\s'\"]{{1,500}})",
        "lftp -u deploy,Lftp-Upl0ad-Pw sftp://files.acme.test -e 'mirror -R dist /www; bye'",
        "Lftp-Upl0ad-Pw",
    ),
    # A cookie, not a cookie jar file: a value holding `=`.
    (
        "HTTP client cookie",
        ("curl",),
        r"\bcurl\s",
        rf"{AT}(?:-b|--cookie)(?:[ \t]+|=)(?P<secret>'(?=[^'\n=]*+=)[^'\n]*+'?"
        r"|\"(?=[^\"\n=]*+=)[^\"\n]*+\"?|(?=[^\s'\"|;&<>=]*+=)[^\s'\"|;&<>]++)",
        "curl --cookie 'sessionid=Sess10n-C00kie-V4l' https://shop.acme.test/cart",
        "sessionid=Sess10n-C00kie-V4l",
    ),
    # The secret the command before the pipe writes to a program reading it on its input.
    (
        "registry login from input",
        ("login",),
        "",
        rf"{PIPED}(?:docker|podman|nerdctl|helm[ \t]+registry|oras|crane|buildah|skopeo)"
        r"[ \t]+login\b[^|;&\n]{0,500}--password-stdin",
        "echo 'Dckr-Std1n-Pw' | docker login -u ci --password-stdin registry.acme.test",
        "Dckr-Std1n-Pw",
    ),
    (
        "sudo from input",
        ("sudo",),
        "",
        rf"{PIPED}sudo[ \t]+-[A-Za-z]*S",
        "echo Sud0-St4nd1n-Pw | sudo -S apt-get update",
        "Sud0-St4nd1n-Pw",
    ),
)

# Tools whose secret is a word at its place, with no option before it: (family, triggers, the
# command, where the secret is as `secret`, a real excerpt, the secret in it), as above. Looked
# for in every text, with or without an option in it.
PASSWORD_WORDS: tuple[tuple[str, tuple[str, ...], str, str, str, str], ...] = (
    (
        "snyk auth",
        ("snyk",),
        r"\bsnyk\s",
        rf"(?<=[ \t]auth[ \t])[ \t]*{PLAIN}(?P<secret>{WORD})",
        "snyk auth Snyk-Auth-T0ken-42 && snyk test",
        "Snyk-Auth-T0ken-42",
    ),
    (
        "cargo login",
        ("cargo",),
        r"\bcargo\s",
        r"(?<=[ \t]login[ \t])(?:[ \t]*--registry(?:[ \t]+|=)[^\s|;&]{1,200})?[ \t]*"
        rf"{PLAIN}(?P<secret>{WORD})",
        "cargo login --registry acme Carg0-L0gin-T0ken",
        "Carg0-L0gin-T0ken",
    ),
    (
        "poetry config",
        ("poetry",),
        r"\bpoetry\s+config\s",
        r"(?<=[ \t])(?:http-basic\.[\w.-]{1,100}[ \t]+(?!-)[^\s|;&]{1,200}"
        rf"|pypi-token\.[\w.-]{{1,100}})[ \t]+{PLAIN}(?P<secret>{WORD})",
        "poetry config http-basic.acme ci P0etry-Basic-Pw",
        "P0etry-Basic-Pw",
    ),
    (
        "MinIO client alias",
        ("alias",),
        r"\bmc\s+alias\s+set\s",
        r"(?<=[ \t]set[ \t])[ \t]*(?:[^\s|;&]{1,500}[ \t]+){3}"
        rf"{PLAIN}(?P<secret>{WORD})",
        "mc alias set acme https://s3.acme.test ci-access M1nio-S3cret-K3y --api S3v4",
        "M1nio-S3cret-K3y",
    ),
    (
        "glab variable",
        ("glab",),
        r"\bglab\s+variable\s+(?:set|update)\s",
        r"(?<=[ \t](?:set|ate)[ \t])[ \t]*(?!-)[^\s|;&]{1,200}[ \t]+"
        rf"(?:-v[ \t]+|--value(?:[ \t]+|=))?{PLAIN}(?P<secret>{WORD})",
        "glab variable set DEPLOY_TOKEN Gl4b-V4riable-V4l --masked",
        "Gl4b-V4riable-V4l",
    ),
    (
        "rabbitmqctl",
        ("rabbitmqctl",),
        r"\brabbitmqctl\s",
        r"(?<=[ \t])(?:add_user|change_password)[ \t]+(?!-)[^\s|;&]{1,200}[ \t]+"
        rf"{PLAIN}(?P<secret>{WORD})",
        "rabbitmqctl add_user ci R4bbit-Us3r-Pw && rabbitmqctl set_user_tags ci admin",
        "R4bbit-Us3r-Pw",
    ),
    (
        "neo4j-admin",
        ("neo4j-admin",),
        r"\bneo4j-admin\s",
        rf"(?<=[ \t])set-initial-password[ \t]+{PLAIN}(?P<secret>{WORD})",
        "neo4j-admin dbms set-initial-password N3o4j-Init-Pw",
        "N3o4j-Init-Pw",
    ),
    (
        "twilio login",
        ("twilio",),
        r"\btwilio\s",
        r"(?<=[ \t]login[ \t])[ \t]*(?!-)[^\s|;&]{1,200}[ \t]+"
        rf"{PLAIN}(?P<secret>{WORD})",
        'twilio login "$TWILIO_ACCOUNT_SID" Tw1lio-Auth-T0ken',
        "Tw1lio-Auth-T0ken",
    ),
    (
        "ngrok",
        ("ngrok",),
        r"\bngrok\s",
        rf"(?<=[ \t])(?:add-authtoken|authtoken|add-api-key)[ \t]+{PLAIN}(?P<secret>{WORD})",
        "ngrok config add-authtoken 2Ngr0k-Auth-T0ken_x",
        "2Ngr0k-Auth-T0ken_x",
    ),
    # Only a secret value: `pulumi config set aws:region eu-west-1` is plain configuration.
    (
        "pulumi config",
        ("pulumi",),
        r"\bpulumi\s+config\s+set\s",
        r"(?:(?<=[ \t]--secret[ \t])|(?<=[ \t]set[ \t])(?=[^|;&\n]{0,500}--secret\b))"
        rf"[ \t]*(?!-)[^\s|;&]{{1,200}}[ \t]+{PLAIN}(?P<secret>{WORD})",
        "pulumi config set --secret dbPassword Pulum1-Db-Pw",
        "Pulum1-Db-Pw",
    ),
    (
        "nmcli",
        ("nmcli",),
        r"\bnmcli\s",
        r"(?<=[ \t])(?:password|wifi-sec\.psk|802-11-wireless-security\.psk|802-1x\.password)"
        rf"[ \t]+{PLAIN}(?P<secret>{WORD})",
        "nmcli device wifi connect AcmeGuest password Wifi-Gu3st-Pw",
        "Wifi-Gu3st-Pw",
    ),
    (
        "FreeRDP",
        ("freerdp",),
        r"\b[xw]freerdp3?\s",
        rf"(?<=[ \t])/p(?:assword)?:(?P<secret>{WORD})",
        "xfreerdp /v:win1.acme.test /u:bob /p:Fr33rdp-Pw /cert:ignore",
        "Fr33rdp-Pw",
    ),
    (
        "secret store from input",
        ("secret",),
        "",
        rf"{PIPED}[^|;&\n]{{0,200}}\bsecrets?[ \t]+(?:put|set|add|create)\b",
        "echo Wr4ngler-S3cret | npx wrangler secret put API_KEY",
        "Wr4ngler-S3cret",
    ),
    (
        "chpasswd",
        ("chpasswd",),
        "",
        r"\b(?:echo|printf)(?:[ \t]+-[neE]{1,3})?[ \t]+['\"]?[^\s:'\"|;&]{1,64}:"
        r"(?P<secret>[^\s'\"|;&]{1,500})['\"]?[ \t]*\|[ \t]*(?:sudo[ \t]+)?chpasswd\b",
        "echo 'deploy:Chp4sswd-Pw' | sudo chpasswd",
        "Chp4sswd-Pw",
    ),
)

# Commands whose whole output is a secret, with nothing beside it to say so (a password, a token,
# a fresh key): (family, triggers, the command, a real excerpt). A command that runs one has
# its whole output masked. Bounded: no pattern scans past its own simple command.
SECRET_PRINTERS: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    (
        "registry password",
        ("get-login-password",),
        r"\bget-login-password\b",
        "aws ecr get-login-password --region eu-west-1",
    ),
    ("Heroku token", ("auth:token",), r"\bheroku\s+auth:token\b", "heroku auth:token"),
    (
        "Vault field",
        ("vault",),
        r"\bvault\s+(?:kv\s+get|read)\b[^|;&\n]{0,500}?[ \t]-field[= ]",
        "vault kv get -field=password secret/shop/db",
    ),
    (
        "Terraform output",
        ("output",),
        r"\b(?:terraform|tofu|terragrunt)\s+output\b",
        "terraform output -raw db_password",
    ),
    ("WireGuard key", ("genkey", "genpsk"), r"\bwg\s+gen(?:key|psk)\b", "wg genkey | tee wg0.key"),
    (
        "Kubernetes secret decoded",
        ("secret",),
        r"\bget\s+secrets?\b[^|;&\n]{0,500}\|[ \t]*base64\s+(?:-d|--decode|-D)\b",
        "kubectl get secret db -o jsonpath='{.data.password}' | base64 -d",
    ),
    (
        "Kubernetes secret field",
        ("secret",),
        r"\bget\s+secrets?\b[^|;&\n]{0,500}?(?:-o|--output)[= ]?(?:jsonpath|go-template)",
        "kubectl get secret db -o jsonpath='{.data.password}'",
    ),
    ("1Password", ("op ",), r"\bop\s+(?:read|item\s+get)\b", "op read op://ci/db/password"),
    ("pass", ("pass",), r"\b(?:go)?pass\s+show\b", "pass show acme/db"),
    (
        "macOS keychain",
        ("security",),
        r"\bsecurity\s+find-(?:generic|internet)-password\b[^|;&\n]{0,500}?[ \t]-w\b",
        "security find-generic-password -a ci -s deploy -w",
    ),
    (
        "cloud access token",
        ("print-access-token", "print-identity-token", "get-access-token"),
        r"\b(?:print-access-token|print-identity-token|get-access-token)\b",
        "gcloud auth print-access-token",
    ),
    ("GitHub token", ("gh ",), r"\bgh\s+auth\s+token\b", "gh auth token"),
    (
        "cloud secret store",
        ("secret",),
        r"\b(?:get-secret-value|secrets\s+versions\s+access|keyvault\s+secret\s+show"
        r"|doppler\s+secrets\s+get)\b",
        "aws secretsmanager get-secret-value --secret-id prod/db --query SecretString",
    ),
    (
        "decrypted parameter",
        ("decryption",),
        r"\bssm\s+get-parameters?\b[^|;&\n]{0,500}?--with-decryption\b",
        "aws ssm get-parameter --name /prod/db --with-decryption",
    ),
    ("sops", ("sops",), r"\bsops\s+(?:-d|--decrypt|decrypt)\b", "sops -d secrets.enc.yaml"),
    ("Bitwarden", ("bw ",), r"\bbw\s+get\s+(?:password|totp|item)\b", "bw get password ci"),
    ("random key", ("openssl",), r"\bopenssl\s+rand\b", "openssl rand -hex 32"),
    ("Kubernetes token", ("token",), r"\bkubectl\s+create\s+token\b", "kubectl create token ci"),
)
