"""Secret redaction, applied before anything is stored, spooled, logged or printed.

Stdlib only and cheap on the hot path: each rule names the substrings without which it cannot
match, and its regular expressions are compiled only when one of them is present. A command with
no secret in it compiles nothing and comes back unchanged, byte for byte (paths and git SHAs
included: a command's identity must not change).
"""

from __future__ import annotations

import re

from remem.record.masking import MASK as MASK
from remem.record.masking import find_keywords, mask_families
from remem.record.masking import masked as _masked
from remem.record.masking import pattern as _pattern
from remem.record.password_flags import PASSWORD_FLAGS, PASSWORD_WORDS, PLAIN, SECRET_PRINTERS, WORD
from remem.record.tree import WALK, copy_json

TYPE_CHECKING = False  # `typing` is not imported on the hot path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from remem.record.masking import Found, Keywords

    Rule = Callable[[str, str, Found], str]
    Gate = tuple[tuple[str, tuple[str, ...]], ...]


# A name (a variable, an option, a JSON key) names a secret when one of its segments, split on
# `_`, `-` and `.`, is one of these words (DB_PASS, MYSQL_PWD, REDIS_AUTH, x-api-key), or ends with
# one of the glued compounds (PGPASSWORD, dbPassword, AccountKey). Whole segments only: MONKEY,
# AUTHOR and PASSTHROUGH merely contain a word, and plurals are counts (max_tokens).
_SECRET_SEGMENTS = frozenset(
    {"pass", "passwd", "password", "passphrase", "pwd", "pw", "secret", "token", "key", "auth"}
    | {"credential", "credentials", "signature", "apikey"}
)
# Words that name a secret as a name's last segment only (GH_PAT, HMAC, COOKIE_SALT, MNEMONIC,
# redis's requirepass): SALT_ROUNDS, SESSION_TIMEOUT and PATCH_LEVEL name something else.
_SECRET_LAST_SEGMENTS = frozenset(
    {"pat", "hmac", "salt", "mnemonic", "cookie", "session", "requirepass", "masterauth"}
)
# Keys that sort, index or name things (DynamoDB's --partition-key, a --public-key file): the
# segment before a last `key`.
_NOT_SECRET_KEY_KINDS = frozenset(
    {"sort", "partition", "primary", "hash", "range", "foreign", "public", "pub", "routing"}
    | {"shard", "cache", "group", "dedup", "deduplication", "idempotency", "index", "lookup"}
    | {"join", "kms", "gpg", "pgp", "host", "row", "object", "s3", "map", "dict"}
)
# A segment that makes a name a switch (--no-auth, SKIP_AUTH, --with-token): it holds no secret.
_SWITCH_SEGMENTS = frozenset(
    {"no", "skip", "disable", "enable", "use", "require", "without", "ignore", "allow", "with"}
)
_SECRET_ENDINGS = (
    *("password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey"),
    *("accountkey", "privatekey", "secretkey", "sessionkey", "signature", "credential"),
    "credentials",
)
# A last segment that makes the name point at a secret rather than hold it (SSH_AUTH_SOCK,
# PASSWORD_FILE, TOKEN_TYPE, credential.helper).
_REFERENCE_SEGMENTS = frozenset(
    {"file", "path", "dir", "sock", "socket", "type", "url", "helper", "cmd", "command"}
    | {"method", "length", "env", "prompt", "stdin"}
)
# Whole names only: Azure's SAS signature.
_SECRET_NAMES = frozenset({"sig"})
# The shell's working directories; the ids and counts of the hosts' payloads.
_NOT_SECRET_NAMES = frozenset(
    {"pwd", "oldpwd", "tool_use_id", "session_id", "transcript_path", "input_tokens"}
)
# As an option, a bare `--key` is a sort field (sort --key=2) or a key file (curl, openssl).
_NOT_SECRET_OPTIONS = frozenset({"key"})
# Substrings without which no secret name can occur, lowercased. A rule runs when one of these
# stems is present, then looks closer: a short word only counts with what may follow it in a
# name ("pass" alone fires on every "4 passed"); glued compounds end in one (APIKEY=).
_NAME_STEMS = (
    *("pass", "pwd", "key", "auth", "sig", "token", "secret", "credential", "pw", "pat"),
    *("hmac", "salt", "mnemonic", "cookie", "session"),
)
# (stem, what may follow it) in a secret name, and in a `--password VALUE` style option; ""
# follows any. Spelled out: the hook would build them at every start.
_NAME_ENDS = ("=", ":", '"', "'", "_", "-", ".", "\\", " =")
# What may follow a word that names a secret only as a name's last segment.
_LAST_ENDS = ("=", ":", '"', "'", "\\", " =")
_NAME_GATE: Gate = (
    ("token", ("",)),
    ("secret", ("",)),
    ("credential", ("",)),
    ("sig", ("nature", *_NAME_ENDS)),
    ("pass", ("word", "wd", "phrase", *_NAME_ENDS)),
    ("pwd", _NAME_ENDS),
    ("key", _NAME_ENDS),
    ("auth", _NAME_ENDS),
    ("pw", _LAST_ENDS),
    *((stem, _LAST_ENDS) for stem in ("pat", "hmac", "salt", "mnemonic", "cookie", "session")),
)
_OPTION_GATE: Gate = (
    ("token", ("",)),
    ("secret", ("",)),
    ("credential", ("",)),
    ("pass", ("word", "wd", "phrase", " ", "\t")),
    ("pwd", (" ", "\t")),
    ("key", (" ", "\t")),
)
# `--account-key VALUE`, `--auth VALUE`, `--pw VALUE`, `--requirepass VALUE`.
_KEY_OPTION_GATE: Gate = (
    ("key", (" ", "\t")),
    ("auth", (" ", "\t")),
    ("pw", (" ", "\t")),
    ("pass", (" ", "\t")),
)
# Past this length a text is split at a stem once rather than scanned for each spelling.
_SPLIT_CHARS = 256


# Whether a stem the text holds (found by _KEYWORDS) is followed by what the gate asks.
def _mentions(lowered: str, found: Found, gate: Gate) -> bool:
    for stem, ends in gate:
        if stem in found:
            if "" in ends:
                return True
            if len(lowered) < _SPLIT_CHARS:
                if any(stem + end in lowered for end in ends):
                    return True
            elif _followed(lowered, found, stem, ends):
                return True
    return False


def _followed(lowered: str, found: Found, stem: str, ends: tuple[str, ...]) -> bool:
    # What follows each place the stem is at (no stem overlaps itself, so splitting finds every
    # place) rules out most ends at once: "pass" is followed by "e" in every "4 passed".
    after = found[stem]
    if after is None:
        after = found[stem] = frozenset([piece[:1] for piece in lowered.split(stem)[1:]])
    firsts = _FIRSTS.get(ends)
    if firsts is None:
        firsts = _FIRSTS[ends] = frozenset(end[:1] for end in ends)
    if after.isdisjoint(firsts):  # no end can follow: each is ruled out at once
        return False
    return any(end[:1] in after and stem + end in lowered for end in ends)


_FIRSTS: dict[tuple[str, ...], frozenset[str]] = {}  # the first characters of a gate's ends


_secret_keys: dict[tuple[str, bool], bool] = {}  # names repeat in every payload


def is_secret_key(key: str, option: bool = False) -> bool:
    """Whether a name (a JSON key, a variable, or an option when `option`) names a secret."""
    known = _secret_keys.get((key, option))
    if known is None:
        if len(_secret_keys) >= _SHORT_KEPT:
            _secret_keys.clear()
        known = _secret_keys[(key, option)] = _names_secret(key, option)
    return known


def _names_secret(key: str, option: bool) -> bool:
    lowered = key.lower()
    if lowered in _NOT_SECRET_NAMES or (option and lowered in _NOT_SECRET_OPTIONS):
        return False
    if lowered in _SECRET_NAMES:
        return True
    segments = lowered.replace("-", "_").replace(".", "_").split("_")
    if len(segments) > 1 and (
        segments[-1] in _REFERENCE_SEGMENTS
        or (segments[-1] == "key" and segments[-2] in _NOT_SECRET_KEY_KINDS)
        or not _SWITCH_SEGMENTS.isdisjoint(segments)
    ):
        return False
    return segments[-1] in _SECRET_LAST_SEGMENTS or any(
        segment in _SECRET_SEGMENTS or segment.endswith(_SECRET_ENDINGS) for segment in segments
    )


def _unquoted_span(match: re.Match[str], group: str) -> tuple[int, int]:
    """The span of a matched shell word without its quotes (closed or cut off)."""
    start, end = match.span(group)
    if start < end and match.string[start] in "'\"":
        quote = match.string[start]
        start += 1
        if end > start and match.string[end - 1] == quote:
            end -= 1
    return start, end


# Any program: `--password VALUE`, `--token VALUE`, `--api-key VALUE`, `--db-secret VALUE`;
# pulumi's `config set --secret` is a switch before the name and the value.
_SECRET_OPTION = (
    r"(?i:(?<![\w-])(?<!config set )--?(?:[\w-]*[_-])?"
    r"(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|auth[_-]?token|session[_-]?key|auth[_-]?key"
    r"|pass|(?<=\w[_-])pwd))"
    rf"[ \t]+(?!-)(?P<secret>{WORD})"
)


# The value of a secret-named setting: `aws configure set aws_secret_access_key VALUE`.
_SETTING_COMMAND = r"\b(?:aws\s+configure|(?:npm|yarn|pnpm)\s+config)\s+set\s"
_SETTING = rf"(?<=\sset[ \t])[ \t]*(?P<name>[^\s=]+)[ \t]+(?P<secret>{WORD})"


# Any program: `--NAME VALUE` where NAME ends in one of these and names a secret.
_KEY_OPTION = rf"(?<![\w-])--(?P<name>[A-Za-z][\w-]{{0,60}})[ \t]+{PLAIN}(?P<secret>{WORD})"
_KEY_OPTION_ENDS = frozenset({"key", "auth", "pw", "requirepass", "masterauth"})
# A value naming where a secret is rather than being one: a path, a key file.
_REFERENCE_STARTS = ("~", "/", "./", "../")
_REFERENCE_ENDS = (".pem", ".key", ".pub", ".json", ".p12", ".pfx", ".jks", ".ppk", ".asc", ".gpg")


def _is_reference(value: str) -> bool:
    value = value.strip("'\"")
    return value.startswith(_REFERENCE_STARTS) or value.lower().endswith(_REFERENCE_ENDS)


_GENERIC_OPTIONS = frozenset({_KEY_OPTION, _SECRET_OPTION})


def _option_names_secret(name: str) -> bool:
    last = name.lower().replace("_", "-").rsplit("-", 1)[-1]
    return last in _KEY_OPTION_ENDS and is_secret_key(name, option=True)


def _mask_options(text: str, command: str, option: str) -> str:
    spans: list[tuple[int, int]] = []
    step = looked = 0  # where the simple command of the last option starts; how far back we looked
    program_ends: dict[int, int] = {}  # a step: where the program's name ends in it, if it does
    for match in _pattern(option).finditer(text):
        start = match.start()
        if command:
            step = max(step, *(text.rfind(separator, looked, start) + 1 for separator in "\n|;&"))
            looked = start
            if step not in program_ends:
                # Looked for within the step only: from each step to the end would be
                # quadratic in a text of many steps.
                stop = _pattern(r"[\n|;&]").search(text, start)
                program = _pattern(command).search(text, step, stop.start() if stop else len(text))
                program_ends[step] = program.end() if program else len(text) + 1
            if program_ends[step] > start:
                continue
        if "name" in match.re.groupindex:
            if option == _KEY_OPTION and not _option_names_secret(match["name"]):
                continue
            if option != _KEY_OPTION and not is_secret_key(match["name"], option=True):
                continue
        if option in _GENERIC_OPTIONS and _is_reference(match["secret"]):
            continue
        secret = _unquoted_span(match, "secret")
        if secret[0] < secret[1] and text[secret[0] : secret[1]] != MASK:
            spans.append(secret)
    return _masked(text, spans)


def _option_rule(command: str, option: str, gate: Gate = ()) -> Rule:
    def rule(text: str, lowered: str, found: Found) -> str:
        if gate and not _mentions(lowered, found, gate):
            return text
        return _mask_options(text, command, option)

    return rule


# A name followed by its value: `NAME=value`, `--name=value`, `name: value`, `"name": "value"`
# (in JSON, or in JSON inside a JSON string).
_NAME = (
    r"(?P<quote>\\?[\"'])(?P<key>[A-Za-z_][\w.-]{0,80})(?P=quote)[ \t]*:[ \t]*"
    r"|(?<![\w.-])(?P<dashes>-{0,2})(?P<name>[A-Za-z_][\w.-]*+)"
    r"(?:[ \t]*(?:=>|=(?![=~]))[ \t]*|:[ \t]+)"
)
_VALUE = (
    r"\\\"(?P<escaped>(?:[^\"\\]|\\[^\"])*)(?:\\\")?"
    r"|\$?'(?P<single>[^'\n]*)'?"
    r"|\"(?P<double>(?:[^\"\\\n]|\\.)*)\"?"
    r"|(?![\[{])(?P<bare>[^\s'\"&;,]+)"
)


def _mask_named_values(text: str, lowered: str, found: Found) -> str:
    if not _mentions(lowered, found, _NAME_GATE):
        return text
    spans: list[tuple[int, int]] = []
    masked_until = 0
    for match in _pattern(_NAME).finditer(text):
        if match.start() < masked_until:  # a name inside a value already masked
            continue
        name = match["key"] or match["name"]
        if not is_secret_key(name, option=bool(match["dashes"])):
            continue
        value = _pattern(_VALUE).match(text, match.end())
        if value is None:
            continue
        group = next(g for g in ("escaped", "single", "double", "bare") if value[g] is not None)
        start, end = value.span(group)
        if start < end and text[start:end] != MASK:
            spans.append((start, end))
            masked_until = end
    return _masked(text, spans)


_DIGESTS = ("sha256:", "sha512:", "sha384:", "sha1:")


def _url_userinfo(scheme: str, rest: str) -> str:
    """A URL with the password of its userinfo, or a token standing alone as the userinfo, masked.
    A password may hold `/`, `:` and `@`: the userinfo ends at the last `@` before the host, one
    not right after a `/` (an npm scope) nor followed by a digest (image@sha256:...)."""
    ats = [
        i
        for i, char in enumerate(rest)
        if char == "@" and i > 0 and rest[i - 1] != "/" and not rest.startswith(_DIGESTS, i + 1)
    ]
    for at in reversed(ats):
        user, colon, password = rest[:at].partition(":")
        if colon:
            if password and not _is_host_and_port(user, password):
                return f"{scheme}{user}:{MASK}{rest[at:]}"
        elif _looks_like_token(user):
            return f"{scheme}{MASK}{rest[at:]}"
    return scheme + rest


def _is_host_and_port(user: str, password: str) -> bool:
    """`host:8080/path?q=a@b`: what came before the `@` was no userinfo at all."""
    if any(char in user for char in "/?#@"):
        return True
    port = password
    for separator in "/?#":
        port = port.split(separator, 1)[0]
    return bool(user) and port.isdigit() and len(port) < len(password)


def _looks_like_token(text: str) -> bool:
    # `git@`, `alice@` and `x-access-token@` name a user; a long run of letters and digits is a key.
    return (
        len(text) >= 16
        and any(char.isdigit() for char in text)
        and any(char.isalpha() for char in text)
        and all(char.isalnum() or char in "._~%+=-" for char in text)
    )


# A word of a text, up to blanks and quotes, that holds an `@`: each word is scanned once, from
# where it starts (the look-behind), to its last `@`, then to its end. A URL's userinfo never
# crosses a blank or a quote, so its scheme and its `@` are in one word.
_AT_WORD = r"(?<![^\s'\"<>`])[^\s'\"<>`]*@[^\s'\"<>`]*+"
_SCHEME = r"\b[A-Za-z][A-Za-z0-9+.-]{0,30}://"


def _word_userinfo(match: re.Match[str]) -> str:
    word = match.group(0)
    if "://" not in word:
        return word
    # The first scheme with an `@` after it; what follows it, to the word's end, is the rest.
    scheme = _pattern(_SCHEME).search(word, 0, word.rindex("@"))
    if scheme is None:
        return word
    start, end = scheme.span()
    return word[:start] + _url_userinfo(word[start:end], word[end:])


def _mask_url_userinfo(text: str, _lowered: str, _found: Found) -> str:
    if "@" not in text:
        return text
    return _pattern(_AT_WORD).sub(_word_userinfo, text)


# SQL: `WITH PASSWORD 'VALUE'`, `IDENTIFIED BY 'VALUE'` (quoted, or bare after IDENTIFIED BY).
_SQL_PASSWORD = (
    r"(?i:\b(?:password|identified[ \t]+(?:with[ \t]+\w{1,40}[ \t]+)?by)[ \t]+)"
    r"(?P<secret>'[^'\n]{1,500}'|\"[^\"\n]{1,500}\"|(?<=[Bb][Yy] )(?!\$)[^\s'\";,)]{1,500})"
)
# XML: `<password>VALUE</password>`, a plist's `<key>password</key><string>VALUE</string>`, and
# `<add key="ApiSecret" value="VALUE"/>`, `<property name="password" value="VALUE"/>`.
_XML_ELEMENT = r"<(?P<name>[A-Za-z_][\w.:-]{0,80})>(?P<secret>[^<\n]{1,500})</(?P=name)>"
_PLIST_ENTRY = (
    r"<key>(?P<name>[^<\n]{1,80})</key>[ \t\r\n]{0,80}<string>(?P<secret>[^<\n]{1,500})</string>"
)
_XML_ATTRIBUTES = (
    r"\b(?:key|name)=(?P<quote>[\"'])(?P<name>[^\"'\n]{1,80})(?P=quote)[ \t\r\n]{1,80}"
    r"value=(?P<secret>\"[^\"\n]{0,500}\"|'[^'\n]{0,500}')"
)
# A quoted name, then its quoted value: `define('DB_PASSWORD', 'VALUE')`, `getenv("TOKEN", "V")`.
_QUOTED_PAIR = (
    r"(?P<quote>['\"])(?P<name>[A-Za-z_][\w.-]{0,80})(?P=quote)[ \t]{0,8},[ \t]{0,8}"
    r"(?P<secret>'[^'\n]{1,500}'|\"[^\"\n]{1,500}\")"
)
# ODBC: `UID=sa;PWD=VALUE;` (PWD alone is the shell's working directory).
_ODBC_PASSWORD = (
    r"(?i:(?<=;)[ \t]{0,8}pwd[ \t]{0,8}=[ \t]{0,8}|(?<![^\s'\"])pwd=(?=[^;'\"\s]{1,500};))"
    r"(?P<secret>\{[^}\n]{0,500}\}?|[^;'\"\n]{1,500})"
)
# A two-column table of names and values, as `vault kv get` prints it: `password    VALUE`.
_NAME_VALUE_LINE = (
    r"(?m:^[ \t]{0,8}(?P<name>[A-Za-z_][\w.-]{0,60})[ \t]{2,40}(?P<secret>[^\s]{1,500})[ \t]*$)"
)


def _mask_url_parts(text: str, _lowered: str, _found: Found) -> str:
    """A URL's secrets that carry no name of one: an OAuth `?code=`, a `?t=` token, the path
    after `/hooks/` of a webhook (its address is its key)."""
    spans: list[tuple[int, int]] = []
    for url in _pattern(r"://[^\s'\"<>`]++").finditer(text):
        start = url.start()
        spans += [
            (start + part.start("secret"), start + part.end())
            for part in _pattern(_URL_PART).finditer(url[0])
        ]
    return _masked(text, spans)


# Eight characters at least: `?t=42` is a moment of a video, `?p=2` a page, `/hooks/12` a hook's
# number.
_URL_PART = r"(?:[?&](?:code|t|p)=|/(?:build_)?hooks/)(?P<secret>[^&#?\[\]]{8,2000})"


def _sub(pattern: str, replacement: str, flags: int = 0) -> Rule:
    return lambda text, _lowered, _found: _pattern(pattern, flags).sub(replacement, text)


# (triggers, rule), in order. Triggers are matched against the lowercased text; a rule gets the
# text, the lowercased text it was given and the keywords found in that (masking adds no
# trigger, so they stay good enough).
_RULES: list[tuple[tuple[str, ...], Rule]] = [
    (
        ("private key",),  # PEM (RSA, EC, OPENSSH, ENCRYPTED) and PGP key blocks
        _sub(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
            "[REDACTED PRIVATE KEY]",
            re.DOTALL,
        ),
    ),
    (
        ("authorization", "cookie", "api-key", "x-auth"),
        _sub(
            r"\b((?:proxy-)?authorization|set-cookie|cookie|x-api-key|api-key|x-auth-token)"
            r"(\s*:\s*['\"]?)([^\r\n'\"]+)",
            rf"\1\2{MASK}",
            re.IGNORECASE,
        ),
    ),
    (
        ("bearer",),
        _sub(r"\b(bearer\s+)[A-Za-z0-9\-._~+/]{8,}=*", rf"\1{MASK}", re.IGNORECASE),
    ),
    (("://",), _mask_url_userinfo),
    (("://",), _mask_url_parts),
    (("password", "identified"), _option_rule("", _SQL_PASSWORD)),
    (("</",), _option_rule("", _XML_ELEMENT)),
    (("</",), _option_rule("", _PLIST_ENTRY)),
    (("value=",), _option_rule("", _XML_ATTRIBUTES)),
    (("pwd",), _option_rule("", _ODBC_PASSWORD)),
    (_NAME_STEMS, _option_rule("", _QUOTED_PAIR, _NAME_GATE)),
    (_NAME_STEMS, _option_rule("", _NAME_VALUE_LINE, _NAME_GATE)),
    (("key", "auth", "pw", "pass"), _option_rule("", _KEY_OPTION, _KEY_OPTION_GATE)),
    (
        ("pass", "pwd", "secret", "token", "key", "credential"),
        _option_rule("", _SECRET_OPTION, _OPTION_GATE),
    ),
    (("config",), _option_rule(_SETTING_COMMAND, _SETTING)),
    (("",), mask_families),
    (_NAME_STEMS, _mask_named_values),
]
# The tools whose secret is a word at its place, looked for in every text.
_RULES += [
    (triggers, _option_rule(command, option))
    for _family, triggers, command, option, _example, _secret in PASSWORD_WORDS
]


# The password options run last, and only in a text with an option in it (" -").
_FIRST_OPTION_RULE = len(_RULES)
_RULES += [
    (triggers, _option_rule(command, option))
    for _family, triggers, command, option, _example, _secret in PASSWORD_FLAGS
]
# Each trigger once, with the rules it calls for; "" calls for its rules in every text.
_TRIGGERS: dict[str, list[int]] = {}
_OPTION_TRIGGERS: dict[str, list[int]] = {}
for _position, (_triggers, _rule) in enumerate(_RULES):
    for _trigger in _triggers:
        _index = _TRIGGERS if _position < _FIRST_OPTION_RULE else _OPTION_TRIGGERS
        _index.setdefault(_trigger, []).append(_position)
_ALWAYS = _TRIGGERS.pop("", [])

# Every trigger, and every keyword of a family looked for anywhere (masking.ANYWHERE), each
# child looked for only where its parent was found: one pass over them tells which rules, which
# families and which gates a text calls for. "_" and "send " are parents only. A test checks
# that these are the triggers and the keywords.
# fmt: off
_KEYWORDS: Keywords = (
    (
        "cookie", "bearer", "://", "pass", "pw", "secret", "token", "key", "credential",
        "config", "auth", "sig", "aiza", "akia", "asia", "q~", "dapi", "eyj", "glpat-",
        "atatt3", "pypi-", "xox", "machine", "_", "send ", "identified", "</", "value=", "pat",
        "hmac", "salt", "mnemonic", "session", "dockerconfigjson", "dockercfg", "snyk", "cargo",
        "poetry", "alias", "glab", "rabbitmqctl", "neo4j-admin", "twilio", "ngrok", "pulumi",
        "nmcli", "freerdp",
    ),
    {
        "pw": ("pwd",),
        "key": ("private key", "api-key"),
        "auth": ("authorization", "x-auth"),
        "pass": ("pgpass", "chpasswd", "password"),
        "_": ("hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "dckr_", "whsec_"),
        "send ": ('send "', "send -- "),
    },
)
# The password options' triggers, looked for in a text with an option in it (" -").
_OPTION_KEYWORDS: Keywords = (
    (
        "mysql", "mariadb", "login", "creds", "curl", "http", "xh", "mongo", "sqlcmd", "bcp",
        "osql", "ldap", "twine", "zip", "7z", "redis-cli", "valkey-cli", "doctl", "codecov",
        "influx", "cypher-shell", "openssl", "smbclient", "rpcclient", "lftp", "sudo",
    ),
    {"pass": ("sshpass", "htpasswd", "pass:"), "key": ("keydb-cli", "keytool", "ssh-keygen")},
)
# fmt: on


# Short strings (keys, ids, paths) repeat in every event of an import: their redaction is kept.
_SHORT = 100
_SHORT_KEPT = 4096
_short_redactions: dict[str, str] = {}
# A longer one is met again within its event: an output is redacted in the stored payload, then
# for its excerpt, a failure's for its error excerpt too. A few are kept, up to a size.
_LONG_KEPT = 4
_LONG_CHARS = 64 * 1024
_long_redactions: dict[str, str] = {}


def redact_text(text: str) -> str:
    size = len(text)
    if size < _SHORT:
        redacted = _short_redactions.get(text)
        if redacted is None:
            if len(_short_redactions) >= _SHORT_KEPT:
                _short_redactions.clear()
            redacted = _short_redactions[text] = _redacted(text)
    elif size <= _LONG_CHARS:
        redacted = _long_redactions.get(text)
        if redacted is None:
            if len(_long_redactions) >= _LONG_KEPT:
                _long_redactions.clear()
            redacted = _long_redactions[text] = _redacted(text)
    else:
        redacted = _redacted(text)
    return redacted


def _redacted(text: str) -> str:
    lowered = text.lower()
    found = find_keywords(lowered, _KEYWORDS)
    due = [position for keyword in found for position in _TRIGGERS.get(keyword, ())]
    if " -" in lowered or "\t-" in lowered:
        find_keywords(lowered, _OPTION_KEYWORDS, found)
        due += [position for keyword in found for position in _OPTION_TRIGGERS.get(keyword, ())]
    for position in sorted({*due, *_ALWAYS}) if due else _ALWAYS:
        text = _RULES[position][1](text, lowered, found)
    return text


# (trigger, the command it calls for) of every secret printer, in one list: one pass over it.
_PRINTER_TRIGGERS = tuple(
    (trigger, found) for _name, triggers, found, _example in SECRET_PRINTERS for trigger in triggers
)


def prints_secrets(command: str) -> bool:
    """Whether a command runs one that prints a secret with nothing beside it to say so
    (SECRET_PRINTERS): its whole output is masked."""
    lowered = command.lower()
    due = [found for trigger, found in _PRINTER_TRIGGERS if trigger in lowered]
    return any(_pattern(found).search(command) for found in due)


def redact_json(value: Any, string: Callable[[str], str] = redact_text) -> Any:
    """A copy of a JSON value with secret-named keys masked and every string, keys included,
    through `string` (redacted), walked without recursion (remem.record.tree: a value nested
    too deeply is left out)."""
    return copy_json(value, string, string, _secret_entry)


def _secret_entry(key: Any, item: Any) -> Any:
    if isinstance(key, str) and is_secret_key(key):
        return MASK if item not in (None, "", False, [], {}) else item
    return WALK
