"""The inputs of procedures (DESIGN.md §5): when a run verifies a workflow, the worker reads
what the step runs (remem/shell/runs.py) from the work tree it ran in, and the procedures of
its group keep those fingerprints (remem/record/inputs.py); a rebuild reads them for the
procedures it clears, from the files as they are then.

Read outside any write transaction (a window's prepare, before a rebuild's transaction); the
statements that keep them are here too.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, text

from remem.record.identity import spelt_root
from remem.record.inputs import READ_AT_REBUILD, READ_AT_VERIFICATION, fingerprints
from remem.shell.runs import step_inputs

log = logging.getLogger("remem.worker")


class GroupInputs(NamedTuple):
    """What a workflow's newest verified run in a window runs, as read from its work tree."""

    project_id: int
    branch: str
    directory: str
    workflow_hash: str
    verified_at: float
    inputs: str  # JSON list of fingerprints
    read_at: float


def read_inputs(
    work_tree: str, workflow: str, directory: str, now: float, read_by: str
) -> list[dict[str, Any]]:
    """The fingerprints of what a workflow run in `directory` runs, read from the work tree;
    none when the work tree is not on this machine (a team database's events)."""
    if not work_tree or not os.path.isdir(work_tree):
        return []
    try:
        return fingerprints(work_tree, step_inputs(workflow, directory), now, read_by)
    except Exception:  # a file no rule can read must not hold up the window
        log.exception("could not read the inputs of %r", workflow, extra={"action": "read_inputs"})
        return []


class _Run(NamedTuple):
    """A verified run as a window holds it: enough to read what it runs."""

    project_id: int
    branch: str
    directory: str
    workflow: str
    workflow_hash: str
    at: float
    work_tree: str
    shipped: str | None  # what the machine that shipped it read (a team database's event)


def window_inputs(runs: Iterable[_Run], now: float) -> list[GroupInputs]:
    """Per workflow of the window (project, branch, directory), what its newest verified run
    runs: as shipped with it, else read once from its work tree; nothing when neither is
    there."""
    newest: dict[tuple[int, str, str, str], _Run] = {}
    for run in runs:
        key = (run.project_id, run.branch, run.directory, run.workflow_hash)
        if key not in newest or run.at >= newest[key].at:
            newest[key] = run
    found = []
    for run in newest.values():
        if run.shipped is not None:
            read = _shipped(run.shipped).get((run.directory, run.workflow_hash), [])
        elif run.work_tree and os.path.isdir(run.work_tree):
            read = read_inputs(
                run.work_tree, run.workflow, run.directory, now, READ_AT_VERIFICATION
            )
        else:
            continue
        found.append(
            GroupInputs(
                run.project_id,
                run.branch,
                run.directory,
                run.workflow_hash,
                run.at,
                json.dumps(read, sort_keys=True),
                now,
            )
        )
    return found


def _shipped(text: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """An event's shipped inputs by (directory, workflow hash) of its steps."""
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(found, list):
        return {}
    return {
        (str(item.get("directory")), str(item.get("workflow_hash"))): list(item.get("inputs", []))
        for item in found
        if isinstance(item, dict)
    }


def event_inputs(
    command: str, output: str | None, cwd: str, directory: str, root: str, now: float
) -> str:
    """What a passing command's verified steps run, read from this machine's work tree: what
    a shipped event carries to the team database (a JSON list of directory, workflow hash and
    fingerprints)."""
    from remem.procedures.steps import VERIFIED, classify

    work_tree = spelt_root(cwd, directory) or root
    found = [
        {
            "directory": run.directory,
            "workflow_hash": run.workflow_hash,
            "inputs": read_inputs(
                work_tree, run.workflow, run.directory, now, READ_AT_VERIFICATION
            ),
        }
        for run in classify(command, True, output, cwd, directory)
        if run.verdict == VERIFIED
    ]
    return json.dumps(found, sort_keys=True)


def verified_run(
    project_id: int,
    branch: str | None,
    cwd: str,
    event_directory: str | None,
    root: str,
    directory: str,
    workflow: str,
    workflow_hash: str,
    at: float,
    shipped: str | None = None,
) -> _Run:
    work_tree = spelt_root(cwd, event_directory or ".") or root
    return _Run(
        project_id, branch or "", directory, workflow, workflow_hash, at, work_tree, shipped
    )


# A procedure takes the fingerprints of a run newer than those it holds: a window re-derived
# after a rebuild (its runs older than what the rebuild read) leaves them as they are.
UPDATE_INPUTS = text(
    "UPDATE procedures SET inputs = :inputs, inputs_read_at = :read_at "
    "WHERE project_id = :project_id AND directory = :directory "
    "AND workflow_hash = :workflow_hash AND (scope = 'project' OR branch = :branch) "
    "AND (inputs_read_at IS NULL OR inputs_read_at < :verified_at)"
)


def keep(connection: Any, found: Sequence[GroupInputs]) -> None:
    """The window's fingerprints into the procedures of their groups (after they were
    decided, so that a procedure promoted by the window gets them)."""
    if found:
        connection.execute(UPDATE_INPUTS, [row._asdict() for row in found])


# --- rebuild ---------------------------------------------------------------------------------

SELECT_PROCEDURES = text(
    "SELECT q.id, p.root, q.directory, q.workflow FROM procedures q "
    "JOIN projects p ON p.id = q.project_id ORDER BY q.id"
)
SET_INPUTS = text(
    "UPDATE procedures SET inputs = :inputs, inputs_read_at = :read_at WHERE id = :id"
)


def read_for_rebuild(connection: Connection, now: float) -> list[dict[str, Any]]:
    """Every procedure's fingerprints, read from its project's files as they are now and
    marked as read by a rebuild: rows for SET_INPUTS. A project whose work tree is not here
    (a clone deleted; a team database's, known by key) keeps what its procedures hold."""
    rows = []
    for procedure_id, root, directory, workflow in connection.execute(SELECT_PROCEDURES):
        if not os.path.isdir(root):
            continue
        read = read_inputs(root, workflow, directory, now, READ_AT_REBUILD)
        rows.append(
            {"id": procedure_id, "inputs": json.dumps(read, sort_keys=True), "read_at": now}
        )
    return rows
