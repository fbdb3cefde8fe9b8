"""Entire checkpoints kept current: the daemon's duty of `[import] entire = true`, and the state
file under the remem home that remembers, per repository, the checkpoint commits read already
(a file, not a table: what it holds can always be read again, and is stored once)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from remem.paths import write_whole
from remem.transcripts import gitstore
from remem.transcripts.entire import (
    NotCheckpoints,
    State,
    Storage,
    has_checkpoints,
    import_checkpoints,
    sessions,
)
from remem.transcripts.importer import ImportOptions

if TYPE_CHECKING:
    from sqlalchemy import Engine

STATE_FILE = "entire-checkpoints.json"


def read_state(home: str) -> dict[str, State]:
    """The last commits read, per repository root; nothing when the file is gone or unreadable
    (everything is read again, and stored once)."""
    try:
        with open(os.path.join(home, STATE_FILE), encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict):
        return {}
    states = {}
    for root, kept in document.items():
        if isinstance(kept, dict) and isinstance(kept.get("refs", {}), dict):
            branch = kept.get("branch_commit")
            refs = {str(k): str(v) for k, v in kept.get("refs", {}).items()}
            states[root] = State(branch if isinstance(branch, str) else None, refs)
    return states


def write_state(home: str, root: str, storage: Storage) -> None:
    states = read_state(home)
    states[root] = State(storage.branch_commit, dict(storage.checkpoint_refs))
    document = {
        key: {"branch_commit": s.branch_commit, "refs": s.refs} for key, s in states.items()
    }
    write_whole(os.path.join(home, STATE_FILE), json.dumps(document, indent=1).encode())


@dataclass
class Refreshed:
    """What one reading of the known projects' new checkpoints did."""

    repositories: int = 0  # with checkpoints that changed since the last reading
    session_copies: int = 0
    events_new: int = 0
    refused: list[str] = field(default_factory=list)  # one line each: why a repository was not


def refresh(
    engine: Engine, home: str, roots: list[str], options: ImportOptions, now: float
) -> Refreshed:
    """Read the checkpoints each project root's repository got since the last reading (the
    state file under `home` remembers the commits read), and remember the new ones."""
    done = Refreshed()
    states = read_state(home)
    for root in roots:
        storage = has_checkpoints(root) if os.path.isdir(root) else None
        if storage is None:
            continue
        state = states.get(root)
        if state is not None and state == State(
            storage.branch_commit, dict(storage.checkpoint_refs)
        ):
            continue
        try:
            found = sessions(storage, state)
            summary = import_checkpoints(engine, storage, found, options, now)
        except (NotCheckpoints, gitstore.GitFailed) as refused:
            done.refused.append(str(refused))
            continue
        write_state(home, root, storage)
        done.repositories += 1
        done.session_copies += summary.session_copies
        done.events_new += summary.events_new
    return done
