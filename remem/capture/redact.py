"""Secret redaction, applied before anything is stored, spooled, logged or printed.

Stdlib only and cheap on the hot path: each rule names the substrings without which it cannot
match, and its regular expression is compiled only when one of them is present. A command with
no secret in it compiles nothing and comes back unchanged, byte for byte (paths and git SHAs
included: a command's identity must not change).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from typing import Any

MASK = "[REDACTED]"

_SECRET_WORD = (
    r"(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|client[_-]?secret|credentials?|auth[_-]?token|session[_-]?key)"
)
# A key that names a secret: the secret word may be prefixed (AWS_SECRET_ACCESS_KEY, db_password)
# and suffixed after a separator (token_value), but not pluralised (max_tokens is not a secret).
_SECRET_KEY = rf"[A-Za-z0-9_.-]*{_SECRET_WORD}(?:[_.-][A-Za-z0-9_.-]*)?"
# Every literal spelling _SECRET_WORD can match, lowercased ("pass" alone would fire on every
# "4 passed" in test output and pay for compiling the rule).
_KEY_TRIGGERS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "api_key",
    "api-key",
    "apikey",
    "access_key",
    "access-key",
    "accesskey",
    "private_key",
    "private-key",
    "privatekey",
    "credential",
    "session_key",
    "session-key",
    "sessionkey",
)
_NOT_SECRET_KEYS = frozenset({"tool_use_id", "session_id", "transcript_path", "input_tokens"})

# (triggers, pattern, replacement, flags). Triggers are matched against the lowercased text.
_RULES: list[tuple[tuple[str, ...], str, str, int]] = [
    (
        ("private key",),
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)",
        "[REDACTED PRIVATE KEY]",
        re.DOTALL,
    ),
    (
        ("authorization", "cookie", "api-key", "x-auth"),
        r"\b((?:proxy-)?authorization|set-cookie|cookie|x-api-key|api-key|x-auth-token)"
        r"(\s*:\s*)([^\r\n'\"]+)",
        rf"\1\2{MASK}",
        re.IGNORECASE,
    ),
    (("bearer",), r"\b(bearer\s+)[A-Za-z0-9\-._~+/]{8,}=*", rf"\1{MASK}", re.IGNORECASE),
    (
        ("://",),
        r"\b([a-z][a-z0-9+.-]*://)([^\s/:@'\"]+):([^\s/@'\"]+)@",
        rf"\1\2:{MASK}@",
        re.IGNORECASE,
    ),
    (
        # curl's credentials; docker's `-u 1000:1000` is a uid:gid and must survive.
        ("curl", "wget", "http"),
        r"((?:^|\s)(?:-u\s*|--user(?:\s+|=)))(['\"]?)([^\s:'\"]+):([^\s'\"]+)",
        rf"\1\2\3:{MASK}",
        0,
    ),
    (
        (
            "sk-",
            "sk_",
            "rk_",
            "ghp_",
            "gho_",
            "ghu_",
            "ghs_",
            "ghr_",
            "github_pat_",
            "xox",
            "akia",
            "asia",
            "aiza",
            "eyj",
            "glpat-",
            "npm_",
            "hooks.slack.com",
            "whsec_",
        ),
        # Distinctive prefixes match even glued to other text; short ones need a word boundary.
        r"(?:\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"
        r"|\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
        r"|whsec_[A-Za-z0-9]{16,}"
        r"|gh[pousr]_[A-Za-z0-9]{20,}"
        r"|github_pat_[A-Za-z0-9_]{20,}"
        r"|glpat-[A-Za-z0-9_-]{20,}"
        r"|\bnpm_[A-Za-z0-9]{30,}"
        r"|xox[abposr]-[A-Za-z0-9-]{10,}"
        r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
        r"|\bAIza[0-9A-Za-z_-]{35}"
        r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"
        r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+)",
        MASK,
        0,
    ),
    (
        _KEY_TRIGGERS,
        # key=value and key: value (the colon must be followed by a space, so that pytest node
        # ids such as tests/test_auth.py::test_token survive), quoted JSON pairs, and
        # --password VALUE flags.
        rf"(\"{_SECRET_KEY}\"\s*:\s*\")([^\"]*)(\")"
        rf"|\b({_SECRET_KEY})(\s*=\s*|:\s+)(['\"]?)([^\s'\"&;,]+)"
        rf"|(--?{_SECRET_WORD}\s+)(['\"]?)(?!-)([^\s'\"]+)",
        "",
        re.IGNORECASE,
    ),
]
_KEY_RULE = len(_RULES)
_RULES.append(((), _SECRET_KEY, "", re.IGNORECASE))  # matched by is_secret_key only
_compiled: dict[int, re.Pattern[str]] = {}


def _key_value_replacement(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return f"{match.group(1)}{MASK}{match.group(3)}"
    if match.group(4) is not None:
        return f"{match.group(4)}{match.group(5)}{match.group(6)}{MASK}"
    return f"{match.group(8)}{match.group(9)}{MASK}"


def redact_text(text: str) -> str:
    lowered = text.lower()
    for index, (triggers, _pattern_text, replacement, _flags) in enumerate(_RULES):
        if not any(trigger in lowered for trigger in triggers):
            continue
        compiled = _pattern(index)
        if replacement:
            text = compiled.sub(replacement, text)
        else:
            text = compiled.sub(_key_value_replacement, text)
        lowered = text.lower()
    return text


def _pattern(index: int) -> re.Pattern[str]:
    compiled = _compiled.get(index)
    if compiled is None:
        _triggers, pattern, _replacement, flags = _RULES[index]
        compiled = _compiled[index] = re.compile(pattern, flags)
    return compiled


def is_secret_key(key: str) -> bool:
    lowered = key.lower()
    if key in _NOT_SECRET_KEYS or not any(trigger in lowered for trigger in _KEY_TRIGGERS):
        return False
    return _pattern(_KEY_RULE).fullmatch(key) is not None


def redact_json(value: Any) -> Any:
    """A copy of a JSON value with secret-named keys masked and every string redacted."""
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            safe_key = redact_text(key) if isinstance(key, str) else key
            if isinstance(key, str) and is_secret_key(key):
                result[safe_key] = MASK if item not in (None, "", False, [], {}) else item
            else:
                result[safe_key] = redact_json(item)
        return result
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
