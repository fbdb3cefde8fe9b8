"""Password options of common clients, as data (STYLE.md rule 19): which program, which option,
and a real excerpt each, walked row by row by the tests. Stdlib only: the hook reads it."""

from __future__ import annotations

# One shell word: quoted (perhaps cut off), or bare. Possessive: a word that fails is not retried
# shorter, which would be quadratic in a long one.
WORD = r"""(?:'[^'\n]*+'?|"(?:[^"\\\n]|\\.)*+"?|[^\s'"|;&<>()`]++)"""
# What may follow a command's last word: `2>&1`, `> out.log`.
REDIRECTIONS = r"(?:[ \t]+\d*[<>]+&?[ \t]*[^\s|;&<>]+)*"
# An option's place: the start of the text or after a blank.
AT = r"(?:^|(?<=[ \t]))"

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
    (
        "gh secret set",
        ("secret",),
        r"\bgh\s+secret\s+set\s",
        rf"{AT}(?:-b|--body)(?:[ \t]+|=)(?!-)(?P<secret>{WORD})",
        "gh secret set DEPLOY_KEY --body 'Gh-S3cret-B0dy' --repo acme/shop",
        "Gh-S3cret-B0dy",
    ),
)
