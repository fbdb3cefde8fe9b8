"""The project key: one name for a repository on every machine of a team.

It is the URL of the repository's `origin` remote, normalised so that the ways of writing one
remote agree: `git@github.com:org/repo.git`, `https://github.com/org/repo` and
`ssh://git@github.com:22/org/repo/` are all `github.com/org/repo` (host lower-cased; user,
password, port, `.git` and slashes at either end dropped). A remote that is a path on this
machine (`/srv/repo.git`, `../repo`, `file://…`, `ssh://localhost/…`) names nothing a teammate
could share, and a local path must never leave the machine as a key: it has none. Nor has a
repository without an origin. The git config is read without spawning git; `include`
directives are not followed.
Stdlib only.
"""

from __future__ import annotations

import fnmatch
import os
import re

from remem.record.identity import _git_dir, _read_small, read_regular

# scheme://[user[:password]@]host[:port][/path]; the host may be an [IPv6] literal.
_URL = re.compile(
    r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://"
    r"(?:[^@/]*@)?"
    r"(?P<host>\[[^\]]*\]|[^/:?#]*)"
    r"(?::\d*)?"
    r"(?P<path>[^?#]*)"
)
# [user@]host:path, git's scp-like syntax: a colon before any slash.
_SCP = re.compile(r"^(?:[^@/]*@)?(?P<host>\[[^\]]*\]|[^/:]+):(?P<path>.*)$")
_HELPER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
_LOCAL_SCHEMES = {"file"}
_MAX_CONFIG_BYTES = 1 << 20


def normalise_remote(url: str) -> str | None:
    """`host/path` of a remote URL; None for a local path, a remote helper's address
    (`transport::address`) or anything without both a host and a path."""
    url = url.strip()
    if not url or _HELPER.match(url):
        return None
    match = _URL.match(url)
    if match:
        if match["scheme"].lower() in _LOCAL_SCHEMES:
            return None
        return _key(match["host"], match["path"])
    match = _SCP.match(url)
    # A one-letter "host" before ":\" or ":/" is a Windows drive, not a machine.
    if match is None or (len(match["host"]) == 1 and match["path"][:1] in ("/", "\\")):
        return None
    return _key(match["host"], match["path"])


def _key(host: str, path: str) -> str | None:
    host = host.strip("[]").lower().rstrip(".")
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    if parts and parts[-1].endswith(".git"):
        parts[-1] = parts[-1][: -len(".git")]
        parts = [part for part in parts if part]
    if not host or not parts or ".." in parts or _is_loopback(host):
        return None
    return "/".join([host, *parts])


def _is_loopback(host: str) -> bool:
    """This machine under a network name: what it serves is a local path all the same."""
    return host in ("localhost", "::1") or host.endswith(".localhost") or host.startswith("127.")


def project_key(repository_root: str) -> str | None:
    """The key of the repository whose main work tree (or bare repository) is at
    repository_root, read from its git config; None without an origin remote."""
    config = _config_path(repository_root)
    if config is None:
        return None
    url = origin_url(_read_config(config))
    return None if url is None else normalise_remote(url)


def _config_path(root: str) -> str | None:
    """The config of the repository: in the common git dir, which a linked worktree's git dir
    names in `commondir`; a bare repository is its own git dir."""
    dot_git = os.path.join(root, ".git")
    git_dir = _git_dir(dot_git) if os.path.lexists(dot_git) else None
    if git_dir is None and os.path.isfile(os.path.join(root, "HEAD")):
        git_dir = root
    if git_dir is None:
        return None
    common = _read_small(os.path.join(git_dir, "commondir"))
    if common:
        git_dir = os.path.normpath(os.path.join(git_dir, common))
    return os.path.join(git_dir, "config")


def _read_config(path: str) -> str:
    return read_regular(path, _MAX_CONFIG_BYTES) or ""


def is_shared(key: str | None, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether a project's memory goes to the team: only a key some pattern matches (`*` also
    crosses `/`, so `gitlab.com/org/*` takes subgroups); never a project without a key."""
    return key is not None and any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns)


# ---- git config syntax -------------------------------------------------------------------------


def origin_url(text: str) -> str | None:
    """remote.origin.url in git config text: the first value, as git fetches from it."""
    for section, name, value in config_entries(text):
        if section == ("remote", "origin") and name == "url" and value is not None:
            return value
    return None


_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\](.*)$', re.S)
_NAME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(=)?(.*)$", re.S)


def config_entries(text: str) -> list[tuple[tuple[str, str | None], str, str | None]]:
    """((section, subsection), name, value) of every variable, in order. Section and variable
    names are case-insensitive (lower-cased here); subsections are not, except in the old
    `[section.subsection]` form. A name without `=` is a boolean true (value None)."""
    entries: list[tuple[tuple[str, str | None], str, str | None]] = []
    section: tuple[str, str | None] = ("", None)
    for line in _logical_lines(text):
        header = _SECTION.match(line)
        if header:
            section = _section_of(header[1], header[2])
            line = header[3]  # a variable may follow the header on the same line
        entry = _NAME.match(line)
        if entry is None:
            continue
        value = _value(entry[3]) if entry[2] else None
        entries.append((section, entry[1].lower(), value))
    return entries


def _section_of(name: str, subsection: str | None) -> tuple[str, str | None]:
    if subsection is not None:
        return name.lower(), re.sub(r"\\(.)", r"\1", subsection)
    head, dot, rest = name.partition(".")
    return (head.lower(), rest.lower()) if dot else (name.lower(), None)


def _logical_lines(text: str) -> list[str]:
    """Physical lines joined where one ends in a backslash outside quotes (a continuation)."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = pending + raw
        if _continues(line):
            pending = line[:-1]
            continue
        pending = ""
        lines.append(line)
    if pending:
        lines.append(pending)
    return lines


def _continues(line: str) -> bool:
    quoted, escaped = False, False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\":
            if index == len(line) - 1:
                return True
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            return False
    return False


_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def _value(raw: str) -> str:
    """A value as git reads it: quotes removed, escapes applied, a comment after `#` or `;`
    outside quotes cut, whitespace outside quotes trimmed at the ends."""
    out: list[str] = []
    kept = 0  # length of out up to the last character that must survive trimming
    quoted, escaped = False, False
    for char in raw.lstrip():
        if escaped:
            out.append(_ESCAPES.get(char, char))
            kept, escaped = len(out), False
        elif char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
            kept = len(out)
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
            if quoted or not char.isspace():
                kept = len(out)
    return "".join(out[:kept])
