"""remem's hooks in each agent's own settings file: locate the files, merge remem's entries in,
take them out, show the diff, back up and write.

The merge functions are pure (documents and text in, documents and text out); `plan_install`
and `plan_uninstall` read the files and `apply` writes them: a timestamped backup beside a file
that changes, then an atomic replace that keeps the file's mode. Every other key and hook of the
user's file stays as it was; remem's own entries are recognised by their command calling
remem-hook, whichever path it has, so a newer install replaces an older one.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import glob
import json
import os
import re
import shlex
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from remem.admin.hook_settings import settings_for
from remem.errors import RememError
from remem.paths import write_whole

HOOK_NAME = "remem-hook"
AGENT_FOLDERS = {"claude-code": ".claude", "codex": ".codex", "cursor": ".cursor"}
SETTINGS_FILES = {"claude-code": "settings.json", "codex": "hooks.json", "cursor": "hooks.json"}
CODEX_CONFIG = "config.toml"
CODEX_FLAG = "codex_hooks"
BACKUP_INFIX = ".remem-backup-"


class AgentFileInvalid(RememError):
    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"{path} {problem}: fix or move the file, then run again (nothing changed)."
        )
        self.path = path
        self.problem = problem


class AgentFileUnwritable(RememError):
    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(
            f"Cannot write {path} ({reason}): give your user write access to it and its "
            "folder, then run again."
        )


class AgentFileMoved(RememError):
    def __init__(self, path: Path) -> None:
        super().__init__(f"{path} changed while remem was editing it: run the command again.")


def agent_folder(agent: str, user_home: Path) -> Path:
    return user_home / AGENT_FOLDERS[agent]


def settings_file(agent: str, user_home: Path) -> Path:
    return agent_folder(agent, user_home) / SETTINGS_FILES[agent]


def codex_config(user_home: Path) -> Path:
    return agent_folder("codex", user_home) / CODEX_CONFIG


def present_agents(user_home: Path) -> tuple[str, ...]:
    """The agents whose folder exists in the user's home: the ones in use on this machine."""
    return tuple(agent for agent in AGENT_FOLDERS if agent_folder(agent, user_home).is_dir())


# --- pure: JSON documents -------------------------------------------------------------------


def hook_executable(command: str) -> str | None:
    """The remem-hook a hook command calls, as it names it; None when it calls none."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return next((word for word in words if os.path.basename(word) == HOOK_NAME), None)


def is_remem_command(command: object) -> bool:
    return isinstance(command, str) and hook_executable(command) is not None


def _is_remem_handler(item: object) -> bool:
    return isinstance(item, dict) and is_remem_command(item.get("command"))


def remem_commands(document: object) -> list[str]:
    """Every command in the document's hooks that calls remem-hook."""
    found: list[str] = []
    hooks = document.get("hooks") if isinstance(document, dict) else None
    for items in hooks.values() if isinstance(hooks, dict) else ():
        for item in items if isinstance(items, list) else ():
            inner = item.get("hooks") if isinstance(item, dict) else None
            for handler in [item, *(inner if isinstance(inner, list) else ())]:
                if _is_remem_handler(handler):
                    found.append(handler["command"])
    return found


def _strip(items: list[Any]) -> tuple[list[Any], int | None]:
    """The event's items without remem's handlers (a matcher group left empty goes too), and
    where the first of them was, so that a replacement takes its place."""
    kept: list[Any] = []
    first: int | None = None
    for item in items:
        inner = item.get("hooks") if isinstance(item, dict) else None
        if _is_remem_handler(item):
            first = len(kept) if first is None else first
            continue
        if isinstance(inner, list) and any(_is_remem_handler(h) for h in inner):
            others = [h for h in inner if not _is_remem_handler(h)]
            if others:
                kept.append({**item, "hooks": others})
            first = len(kept) if first is None else first
            continue
        kept.append(item)
    return kept, first


def _hooks_of(document: object) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise ValueError("is not a JSON object")
    hooks = document.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError('has a "hooks" that is not an object')
    return hooks


def merge(document: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """`document` with remem's hooks as `wanted` has them, in place of any older remem entry;
    every other key and hook kept in its order. Merging twice equals merging once."""
    hooks = _hooks_of(document)
    result = copy.deepcopy(document)
    for key, value in wanted.items():
        if key != "hooks":
            result.setdefault(key, copy.deepcopy(value))
    wanted_hooks: dict[str, list[Any]] = wanted["hooks"]
    merged: dict[str, Any] = {}
    for event, items in hooks.items():
        if not isinstance(items, list):
            merged[event] = copy.deepcopy(items)
            continue
        kept, first = _strip(copy.deepcopy(items))
        if event in wanted_hooks:
            at = len(kept) if first is None else first
            kept[at:at] = copy.deepcopy(wanted_hooks[event])
        elif first is not None and not kept:
            continue
        merged[event] = kept
    for event, items in wanted_hooks.items():
        merged.setdefault(event, copy.deepcopy(items))
    result["hooks"] = merged
    return result


def unmerge(document: dict[str, Any]) -> dict[str, Any]:
    """`document` without remem's hooks; an event list or `hooks` object emptied by that goes
    too, everything else stays."""
    result = merge(document, {"hooks": {}})
    if not result["hooks"] and document.get("hooks") != {}:  # none left, or none there
        del result["hooks"]
    return result


def is_current(document: object, wanted: dict[str, Any]) -> bool:
    """Whether installing `wanted` would leave the document as it is."""
    try:
        return isinstance(document, dict) and merge(document, wanted) == document
    except ValueError:
        return False


def render_json(document: dict[str, Any], original: str | None) -> str:
    """The document as JSON, indented the way the original file was (2 spaces for a new one)."""
    indent: int | str = 2
    match = re.search(r"^([ \t]+)\S", original or "", re.MULTILINE)
    if match:
        found = match.group(1)
        indent = "\t" if found.startswith("\t") else len(found)
    text = json.dumps(document, indent=indent, ensure_ascii=False) + "\n"
    return re.sub(r'"\\u0000([-+0-9.eE]+)\\u0000"', r"\1", text)


def _number_as_written(literal: str) -> str:
    """A JSON number with a fraction or exponent, kept as its text: a float would turn `1e400`
    into `Infinity` (no JSON at all) and `0.10000000000000000555` into `0.1`. render_json writes
    it back as it was."""
    return f"\0{literal}\0"


# --- pure: Codex's config.toml --------------------------------------------------------------


def codex_hooks_enabled(text: str) -> bool:
    """Whether config.toml turns Codex's hooks on (`codex_hooks`, or its newer name `hooks`)."""
    try:
        features = tomllib.loads(text).get("features")
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(features, dict) and (
        features.get(CODEX_FLAG) is True or features.get("hooks") is True
    )


def enable_codex_hooks(text: str) -> str:
    """config.toml with `[features] codex_hooks = true`, comments and layout kept; unchanged
    when hooks are already on. Raises ValueError for a file that is not TOML."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ValueError(f"is not valid TOML ({exc})") from exc
    if codex_hooks_enabled(text):
        return text
    features = document.get("features")
    if features is None:
        if text and not text.endswith("\n"):
            document.add(tomlkit.nl())
        document.add("features", tomlkit.table())
        features = document["features"]
    elif not isinstance(features, dict):
        raise ValueError('has a "features" that is not a table')
    features[CODEX_FLAG] = True
    return tomlkit.dumps(document)


# --- files ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileChange:
    """One file's text before and after (None: the file is absent, or removed)."""

    path: Path
    before: str | None
    after: str | None
    backup: Path | None = None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def as_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "changed": self.changed,
            "removed": self.before is not None and self.after is None,
            "backup": str(self.backup) if self.backup else None,
        }


@dataclass(frozen=True)
class AgentChange:
    agent: str
    files: tuple[FileChange, ...]
    kept: str | None = None  # what an uninstall left on purpose, and why

    @property
    def changed(self) -> bool:
        return any(change.changed for change in self.files)

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "changed": self.changed,
            "files": [change.as_json() for change in self.files],
            "kept": self.kept,
        }


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentFileInvalid(path, f"cannot be read ({exc})") from exc


def read_settings(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text and its JSON object ({} when it is absent or blank)."""
    text = _read(path)
    if text is None or not text.strip():
        return text, {}
    try:
        document = json.loads(text, parse_float=_number_as_written)
    except ValueError as exc:
        raise AgentFileInvalid(path, f"is not valid JSON ({exc})") from exc
    if not isinstance(document, dict):
        raise AgentFileInvalid(path, "is not a JSON object")
    return text, document


def _json_change(path: Path, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> FileChange:
    before, document = read_settings(path)
    try:
        edited = edit(document)
    except ValueError as exc:
        raise AgentFileInvalid(path, str(exc)) from exc
    if edited == document:
        return FileChange(path, before, before)
    return FileChange(path, before, render_json(edited, before))


def plan_install(agent: str, user_home: Path, wanted: dict[str, Any]) -> AgentChange:
    """What installing `wanted` changes in the agent's files; nothing is written."""
    changes = [_json_change(settings_file(agent, user_home), lambda doc: merge(doc, wanted))]
    if agent == "codex":
        path = codex_config(user_home)
        before = _read(path)
        try:
            after = enable_codex_hooks(before or "")
        except ValueError as exc:
            raise AgentFileInvalid(path, str(exc)) from exc
        changes.append(FileChange(path, before, before if after == (before or "") else after))
    return AgentChange(agent, tuple(changes))


def plan_uninstall(agent: str, user_home: Path, scaffold: dict[str, Any]) -> AgentChange:
    """What taking remem's hooks out changes; a file an install created, left holding nothing but
    what an install adds around the hooks (`scaffold`, e.g. Cursor's `version`), is removed. For
    Codex, the `codex_hooks` flag an install added goes too, when nothing else may need it."""
    path = settings_file(agent, user_home)
    change = _json_change(path, unmerge)
    if change.changed and change.after is not None and not _backups_of(path):
        left = json.loads(change.after)
        if all(key in scaffold and scaffold[key] == value for key, value in left.items()):
            change = dataclasses.replace(change, after=None)
    if agent != "codex":
        return AgentChange(agent, (change,))
    flag, kept = _codex_flag_change(user_home, change)
    return AgentChange(agent, (change, flag), kept)


def _codex_flag_change(user_home: Path, hooks: FileChange) -> tuple[FileChange, str | None]:
    """config.toml as it was before remem turned Codex's hooks on, byte for byte (absent when
    the install created it), when the file is exactly what that install made of it (its backup,
    or no file) and no other hook is left to need the flag; else the file as it is, and why."""
    path = codex_config(user_home)
    now = _read(path)
    if now is None or not codex_hooks_enabled(now):
        return FileChange(path, now, now), None
    kept = f"`[features] {CODEX_FLAG} = true` left in {path}"
    backups = _backups_of(path)
    original = _read(backups[-1]) if backups else None
    try:
        ours = not codex_hooks_enabled(original or "") and now == enable_codex_hooks(original or "")
    except ValueError:
        ours = False
    if not ours:
        why = "remem did not add it, or the file changed since remem did"
        return FileChange(path, now, now), f"{kept}: {why}"
    left = {} if hooks.after is None else json.loads(hooks.after or "{}")
    if left.get("hooks") if isinstance(left, dict) else None:
        return FileChange(path, now, now), f"{kept}: other hooks in {hooks.path} need it"
    return FileChange(path, now, original), None


def _backups_of(path: Path) -> list[Path]:
    """The copies an install kept of the file before changing it: a file with one was there
    before remem (if only as `{}`), and an uninstall leaves it."""
    return sorted(path.parent.glob(f"{glob.escape(path.name)}{BACKUP_INFIX}*"))


def apply(changes: Iterable[AgentChange], now: datetime | None = None) -> list[AgentChange]:
    """Write every changed file: backup first, then an atomic replace (or removal)."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    done: list[AgentChange] = []
    for agent_change in changes:
        files = []
        for change in agent_change.files:
            if change.changed:
                try:
                    backup = _write(change, stamp)
                except PermissionError as exc:
                    raise AgentFileUnwritable(change.path, exc.strerror or str(exc)) from exc
                change = dataclasses.replace(change, backup=backup)
            files.append(change)
        done.append(dataclasses.replace(agent_change, files=tuple(files)))
    return done


def _write(change: FileChange, stamp: str) -> Path | None:
    if _read(change.path) != change.before:
        raise AgentFileMoved(change.path)
    backup = None if change.before is None else _backup(change.path, stamp)
    target = change.path.resolve()  # a symlinked settings file (dotfiles) stays a symlink
    if change.after is None:
        target.unlink()
    else:
        atomic_write(target, change.after)
    return backup


def _backup(path: Path, stamp: str) -> Path:
    data = path.read_bytes()
    mode = path.stat().st_mode & 0o7777
    for attempt in range(100):
        suffix = "" if attempt == 0 else f"-{attempt}"
        backup = path.with_name(f"{path.name}{BACKUP_INFIX}{stamp}{suffix}")
        try:
            descriptor = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(descriptor, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
        return backup
    raise AgentFileInvalid(path, "has too many backups from this second")


def atomic_write(path: Path, text: str) -> None:
    """Replace the file in one step (a temporary file beside it, then os.replace), keeping its
    mode; a new file gets the mode the umask gives."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(str(path), text.encode("utf-8"), mode, sync=True)


def install(
    agents: Iterable[str],
    user_home: Path,
    remem_home: str,
    dry_run: bool = False,
    advice_before: bool = False,
) -> list[AgentChange]:
    """Install remem's hooks for these agents. Every file is planned first, so one invalid
    file stops the lot before anything is written. An install without `advice_before` takes
    an earlier one's `PreToolUse` hook out: it is off unless asked for each time."""
    planned = [
        plan_install(agent, user_home, settings_for(agent, remem_home, None, advice_before))
        for agent in agents
    ]
    return planned if dry_run else apply(planned)


def connected_agents(agents: Iterable[str], user_home: Path, remem_home: str) -> tuple[str, ...]:
    """The agents whose files already hold remem's hooks as an install would write them (with
    or without --advice-before); an agent whose file cannot be read is not connected."""
    connected = []
    for agent in agents:
        try:
            plans = [
                plan_install(agent, user_home, settings_for(agent, remem_home, None, before))
                for before in (False, True)
            ]
        except RememError:
            continue
        if not all(plan.changed for plan in plans):
            connected.append(agent)
    return tuple(connected)


def uninstall(
    agents: Iterable[str], user_home: Path, remem_home: str, dry_run: bool = False
) -> list[AgentChange]:
    planned = []
    for agent in agents:
        wanted = settings_for(agent, remem_home)
        scaffold = {key: value for key, value in wanted.items() if key != "hooks"}
        planned.append(plan_uninstall(agent, user_home, scaffold))
    return planned if dry_run else apply(planned)
