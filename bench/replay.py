"""Real sessions replayed through the real hook, as an agent's hooks would have sent them, on
a remem home of their own: what the agent was shown.

Each transcript (claude/*.jsonl, codex/*.jsonl; or, in a folder with neither, its own *.jsonl:
Claude Code sessions, and Codex rollouts by their name) is one session. A session's directory
becomes a git repository under a scratch directory, as it was on the machine it ran on;
`X-worktrees/Y`, or `…/worktrees/X/…` when another session ran in a folder named X, is a
worktree of repository X, on the session's branch, and sessions of one repository share it.
A replay runs the SessionStart hook (the digest it printed is kept), then each call: for a
Claude Code command PreToolUse first, then PostToolUse or PostToolUseFailure with its outcome
(the advice printed is kept), on the branch the call recorded.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import git, make_repository, relocated, session_start

from remem.transcripts import read_claude, read_codex
from remem.transcripts.common import TranscriptCall

VENV_BIN = Path(sys.executable).parent
READERS = {"claude": ("claude-code", read_claude), "codex": ("codex", read_codex)}
WORKTREES = "-worktrees"


@dataclass(frozen=True)
class Session:
    name: str  # the transcript, relative to the transcripts directory
    path: Path
    host: str
    calls: tuple[TranscriptCall, ...]
    cwd: str
    branch: str

    @property
    def session_id(self) -> str:
        return str(self.calls[0].payload.get("session_id") or self.name)

    @property
    def started_at(self) -> float:
        return min((call.at for call in self.calls if call.at is not None), default=0.0)


@dataclass
class Told:
    """What this session was shown: the digest, then each piece of advice with the index of
    the call it came with."""

    digest: str = ""
    advice: list[tuple[int, str]] = field(default_factory=list)
    # What the hook answered each call's outcome with (PostToolUse, PostToolUseFailure).
    answers: dict[int, str] = field(default_factory=dict)

    def upto(self, index: int) -> list[tuple[str, str]]:
        shown = [("digest", self.digest)] if self.digest else []
        return shown + [("advice", text) for at, text in self.advice if at <= index]


def load_sessions(directory: Path) -> list[Session]:
    """Every transcript's session with at least one call, in the order they started."""
    sessions = []
    for path, (host, read) in transcripts(directory):
        calls = tuple(read(str(path)))
        if not calls:
            continue
        first = calls[0]
        cwd = first.session_cwd or str(first.payload.get("cwd"))
        branch = next((call.branch for call in calls if call.branch), None) or "main"
        name = str(path.relative_to(directory))
        sessions.append(Session(name, path, host, calls, cwd, branch))
    return sorted(sessions, key=lambda s: (s.started_at, s.name))


def transcripts(directory: Path) -> list[tuple[Path, tuple[str, Any]]]:
    """The transcripts of a folder with the host and reader of each: those in its claude/ and
    codex/ folders, else its own (a Codex rollout is named `rollout-…`)."""
    found = [
        (path, reader)
        for folder, reader in READERS.items()
        for path in sorted((directory / folder).glob("*.jsonl"))
    ]
    if found or any((directory / folder).is_dir() for folder in READERS):
        return found
    own = sorted(directory.glob("*.jsonl"))
    return [(p, READERS["codex" if p.name.startswith("rollout") else "claude"]) for p in own]


# --- projects -----------------------------------------------------------------------------------


def repository_of(cwd: str, others: Iterable[str] = ()) -> str:
    """The repository a session directory belongs to: X for `X-worktrees/Y`; for a folder
    under `…/worktrees/NAME/`, the directory named NAME another session ran in (`others`)
    outside any worktrees folder; else itself."""
    parent = Path(cwd).parent
    if parent.name.endswith(WORKTREES):
        return str(parent.parent / parent.name.removesuffix(WORKTREES))
    found = re.search(r"/worktrees/([^/]+)/", cwd)
    if found:
        named = (o for o in sorted(others) if "/worktrees/" not in o)
        return next((o for o in named if Path(o).name == found.group(1)), cwd)
    return cwd


def prepare(session: Session, space: Path, others: Iterable[str] = ()) -> tuple[str, Path, Path]:
    """The session's directories made under `space` as they were on the machine it ran on:
    (the root its paths are moved from, where they are moved to, the project's repository);
    `others`: the directories the project's other sessions ran in."""
    recorded = repository_of(session.cwd, others)
    user_root = os.path.commonpath([str(Path(recorded).parent), session.cwd])
    workspace = space / user_root.lstrip("/")
    repository = workspace / Path(recorded).relative_to(user_root)
    here = workspace / Path(session.cwd).relative_to(user_root)
    if recorded != session.cwd:
        if not repository.exists():
            make_repository(repository)
        if not here.exists():
            git("worktree", "add", "-q", "--detach", str(here), cwd=repository)
    elif not repository.exists():
        make_repository(repository, session.branch)
    on_branch(here, session.branch)
    for call in session.calls:
        cwd = str(call.payload.get("cwd") or "")
        if cwd.startswith(session.cwd + "/"):
            (workspace / Path(cwd).relative_to(user_root)).mkdir(parents=True, exist_ok=True)
    return user_root, workspace, repository.resolve()


def on_branch(folder: Path, branch: str) -> None:
    """The repository or worktree at `folder` on `branch`, as the hook will read it there
    (made from where it stands when it is new or moved)."""
    head = folder / ".git"
    if head.is_file():  # a worktree's: `gitdir: …/.git/worktrees/NAME`
        head = Path(head.read_text().removeprefix("gitdir:").strip())
    if (head / "HEAD").read_text().strip() != f"ref: refs/heads/{branch}":
        git("checkout", "-q", "--ignore-other-worktrees", "-B", branch, cwd=folder)


# --- the replay -----------------------------------------------------------------------------


def hook(env: dict[str, str], host: str, payload: bytes) -> str:
    """What the hook printed for a payload, as the agent reads it."""
    result = subprocess.run(
        [str(VENV_BIN / "remem-hook"), "--host", host],
        input=payload,
        env=env,
        capture_output=True,
        timeout=60,
    )
    if result.returncode != 0:
        raise RuntimeError(f"remem-hook exited {result.returncode}: {result.stderr.decode()}")
    printed = result.stdout.decode()
    if printed.startswith("{"):
        shaped = json.loads(printed)
        return str(shaped.get("hookSpecificOutput", shaped).get("additionalContext", ""))
    return printed


def remem(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [str(VENV_BIN / "remem"), *args], env=env, capture_output=True, text=True, timeout=600
    )
    if result.returncode != 0:
        raise RuntimeError(f"remem {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result.stdout


def before(payload: dict[str, Any]) -> dict[str, Any]:
    """The PreToolUse payload of a command, from its PostToolUse one."""
    dropped = ("tool_response", "error", "is_interrupt")
    return {
        **{k: v for k, v in payload.items() if k not in dropped},
        "hook_event_name": "PreToolUse",
    }


def replay(
    env: dict[str, str], session: Session, user_root: str, workspace: Path, digest: bool
) -> Told:
    """The session through the real hook: SessionStart, then each call (PreToolUse first for
    a Claude Code command); what was printed to the agent."""
    told = Told()
    if digest:
        start = session_start(Path(session.cwd), session.session_id, str(session.path))
        told.digest = hook(env, session.host, relocated(start, user_root, workspace))
    here, branch = Path(session.cwd.replace(user_root, str(workspace), 1)), session.branch
    for index, call in enumerate(session.calls):
        if call.branch and call.branch != branch:
            branch = call.branch  # the session switched branches: so does the hook
            on_branch(here, branch)
        if session.host == "claude-code" and call.payload.get("tool_name") == "Bash":
            said = hook(env, session.host, relocated(before(call.payload), user_root, workspace))
            if said:
                told.advice.append((index, said))
        said = hook(env, session.host, relocated(call.payload, user_root, workspace))
        if said:
            told.advice.append((index, said))
            told.answers[index] = said
    return told
