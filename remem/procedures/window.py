"""A window: the events of one session in a range of ids, read once, with the Codex outcomes
their rollout files hold and every run of a workflow step their commands made.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import text

from remem.config import Settings
from remem.procedures.inputs import GroupInputs, verified_run, window_inputs
from remem.procedures.rollout import Resolution, resolve_exit_codes
from remem.procedures.steps import VERIFIED, StepRun, classify
from remem.record.identity import directory_under
from remem.record.output import output_excerpt, output_text
from remem.record.redact import MASK, prints_secrets

if TYPE_CHECKING:
    from remem.procedures.reads import Reads

log = logging.getLogger("remem.worker")


class WindowEvent(NamedTuple):
    """A stored event as a window reads it: a tuple, made from its row at once (a window
    makes one per event)."""

    id: int
    session_id: int
    project_id: int
    host: str
    kind: str
    command: str | None
    outcome: str | None
    exit_code: int | None
    error_excerpt: str | None
    output_excerpt: str | None
    branch: str | None
    cwd: str
    directory: str | None
    tool_use_id: str | None
    transcript_path: str | None
    event_at: float
    captured_at: float
    files: str | None  # an edit's files (JSON) and the hash of its change
    change_hash: str | None
    inputs: str | None = None  # in a team database: what its steps ran, as shipped
    root: str = ""


@dataclass(frozen=True)
class Window:
    events: tuple[WindowEvent, ...]
    resolutions: dict[int, Resolution]
    steps: dict[int, list[StepRun]]
    # Earlier Codex events of the session whose outcome the rollout file holds only now.
    late: tuple[WindowEvent, ...] = ()
    # What apply needs from the database, read by prepare outside the write transaction.
    reads: Reads | None = None
    # What each workflow's newest verified run runs, read from its work tree.
    inputs: tuple[GroupInputs, ...] = ()


_STORED = [name for name in WindowEvent._fields if name != "root"]
# The stored payload only when an old command event has no output column to read instead.
_COLUMNS = ", ".join(f"e.{name}" for name in _STORED) + (
    ", p.root, CASE WHEN e.output_excerpt IS NULL AND e.kind = 'command' THEN e.payload END"
)
SELECT_WINDOW = text(
    f"SELECT {_COLUMNS} "
    "FROM captured_events e JOIN projects p ON p.id = e.project_id "
    "WHERE e.session_id = :session_id AND e.id > :cursor AND e.id <= :watermark ORDER BY e.id"
)


# A Codex rollout may write a command's end after the hook fired: its outcome is looked for
# again on the session's later windows and by maintenance, for this long.
LATE_RESOLUTION_S = 86_400.0

SELECT_UNRESOLVED = text(
    f"SELECT {_COLUMNS} "
    "FROM captured_events e JOIN projects p ON p.id = e.project_id "
    "WHERE e.session_id = :session_id AND e.id <= :cursor AND e.host = 'codex' "
    "AND e.kind = 'command' AND e.outcome = 'unknown' AND e.captured_at >= :since ORDER BY e.id"
)


def build_window(
    events: tuple[WindowEvent, ...],
    late: tuple[WindowEvent, ...],
    settings: Settings,
    now: float | None = None,
) -> Window:
    """Resolve Codex outcomes and classify every run; `late` events count only once
    resolved. What the verified runs run is read from their work trees at `now`."""
    resolutions = _resolve_codex(events + late)
    steps = {}
    verified = []
    for event in events + late:
        resolution = resolutions.get(event.id)
        if resolution is not None:
            outcome = "success" if resolution.exit_code == 0 else "failure"
            event = event._replace(
                outcome=outcome,
                exit_code=resolution.exit_code,
                output_excerpt=resolution.output,
            )
        runs = _classify(event, settings)
        if runs:
            steps[event.id] = runs
        verified += [
            verified_run(
                event.project_id, event.branch, event.cwd, event.directory, event.root,
                run.directory, run.workflow, run.workflow_hash, event.event_at, event.inputs,
            )
            for run in runs
            if run.verdict == VERIFIED
        ]  # fmt: skip
    resolved_late = tuple(event for event in late if event.id in resolutions)
    read = window_inputs(verified, time.time() if now is None else now) if verified else []
    return Window(events, resolutions, steps, resolved_late, inputs=tuple(read))


def event_of(row: Any) -> WindowEvent:
    """A window event; events stored before directories and outputs were recorded get them
    from their cwd and their stored payload."""
    payload = row[-1]
    event = WindowEvent._make(row[:-1])  # the stored columns, then the project's root
    if event.directory is None:
        event = event._replace(directory=directory_under(event.cwd, event.root))
    if event.output_excerpt is None and payload and event.kind == "command":
        try:
            found = output_text(event.host, json.loads(payload))
        except ValueError:
            found = None
        event = event._replace(output_excerpt=output_excerpt(found))
    return event


def _classify(event: WindowEvent, settings: Settings) -> list[StepRun]:
    if event.kind != "command" or event.outcome not in ("success", "failure"):
        return []
    if not event.command:
        return []
    output = event.output_excerpt or event.error_excerpt
    try:
        return classify(
            event.command,
            event.outcome == "success",
            output,
            event.cwd,
            event.directory or ".",
            settings.ignore_commands,
            event.exit_code,
        )
    except Exception:  # one command no rule can read must not hold up its session's others
        log.exception(
            "could not analyse event %s; it counts as no run",
            event.id,
            extra={"action": "analyse_command", "event_id": event.id},
        )
        return []


def _resolve_codex(events: tuple[WindowEvent, ...]) -> dict[int, Resolution]:
    wanted: dict[str, dict[str, int]] = {}
    secret_outputs: set[int] = set()
    for event in events:
        path, call_id = event.transcript_path, event.tool_use_id
        if event.host == "codex" and event.outcome == "unknown" and path and call_id:
            wanted.setdefault(path, {})[call_id] = event.id
            if event.command is not None and prints_secrets(event.command):
                secret_outputs.add(event.id)
    resolved: dict[int, Resolution] = {}
    for path, by_call in wanted.items():
        for call_id, resolution in resolve_exit_codes(path, set(by_call)).items():
            if by_call[call_id] in secret_outputs:  # as the hook stores its output: masked
                resolution = replace(
                    resolution,
                    excerpt=resolution.excerpt and MASK,
                    output=resolution.output and MASK,
                )
            resolved[by_call[call_id]] = resolution
    return resolved
