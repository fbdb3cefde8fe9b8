"""Re-deriving memory from the captured events, after a change in how it is derived.

Everything below the events is derived: runs, the fix journal, lessons and procedures. A
rebuild deletes it and rewinds every promote task to the session's first event, so the worker
re-derives it through the ordinary queue, window by window, in short transactions. Archived
procedures are the user's verdicts, not derived: they stay, re-keyed by workflow, so the
re-derivation finds them and never revives them. A cleared procedure leaves its id and
creation time behind, keyed by its group, so the one re-derived for that group keeps both.
Running it twice changes nothing more.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, text

from remem.capture.hosts import shell_patch
from remem.db.engine import READ_ONLY
from remem.db.schema import metadata
from remem.procedures import inputs
from remem.procedures.steps import group_workflow, workflow_hash
from remem.queue.store import rewind_promote_tasks
from remem.record.identity import directory_under, locate
from remem.shell.analysis import analyse, resolve_directory

REBUILD_JOB = "rebuild_procedures"
# The tables a rebuild clears whole (remem/db/schema.py marks them), referring rows first.
DERIVED_TABLES = tuple(
    table.name for table in reversed(metadata.sorted_tables) if table.info.get("derived")
)


@dataclass(frozen=True)
class RebuildReport:
    projects_merged: int
    directories_filled: int
    archived_kept: int
    procedures_cleared: int
    tasks_rewound: int
    patches_read: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def pending(engine: Engine) -> bool:
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        row = connection.execute(
            text("SELECT 1 FROM pending_jobs WHERE name = :name"), {"name": REBUILD_JOB}
        ).first()
    return row is not None


def rebuild(engine: Engine, now: float, ignore_commands: tuple[str, ...] = ()) -> RebuildReport:
    """Clear derived memory and queue its re-derivation, in one transaction. What each
    procedure runs is read from the files first, outside it: the procedure derived again for
    its group takes those fingerprints, marked as read by the rebuild."""
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        read = inputs.read_for_rebuild(connection, now)
    with engine.begin() as connection:
        if read:
            connection.execute(inputs.SET_INPUTS, read)
        filled = _fill_directories(connection)
        _clamp_times(connection)
        patches = _patches_as_edits(connection)
        for table in DERIVED_TABLES:
            connection.execute(text(f"DELETE FROM {table}"))
        merged = _merge_worktrees(connection, now)
        kept = _rekey(connection, ignore_commands)
        connection.execute(_KEEP_IDENTITIES)
        cleared = connection.execute(
            text("DELETE FROM procedures WHERE status != 'archived'")
        ).rowcount
        connection.execute(_CLEAR_EVIDENCE)
        rewound = rewind_promote_tasks(connection, now)
        connection.execute(
            text("DELETE FROM pending_jobs WHERE name = :name"), {"name": REBUILD_JOB}
        )
    return RebuildReport(merged, filled, kept, cleared, rewound, patches)


# Events stored before their times were clamped (DESIGN.md §5): a time in the future or before
# the epoch becomes the capture time, and what was claimed is kept.
_UNCLAMPED_TIMES = text(
    "SELECT id, event_at FROM captured_events WHERE event_at > captured_at + 300 OR event_at < 0"
)
_CLAMP_TIME = text(
    "UPDATE captured_events SET event_at_reported = :reported, event_at = captured_at "
    "WHERE id = :id"
)


def _clamp_times(connection: Connection) -> None:
    """The claimed time is written as capture writes it (as JSON): each database spells a
    number cast to text its own way."""
    rows = connection.execute(_UNCLAMPED_TIMES).all()
    if rows:
        connection.execute(
            _CLAMP_TIME,
            [{"id": event_id, "reported": json.dumps(at)[:100]} for event_id, at in rows],
        )


# Commands stored before a patch applied through the shell was read as the edit it is.
_PATCH_COMMANDS = text(
    "SELECT id, command, cwd, directory FROM captured_events WHERE kind = 'command' "
    "AND (command LIKE '%apply_patch%' OR command LIKE '%applypatch%')"
)
_AS_EDIT = text(
    "UPDATE captured_events SET kind = 'edit', files = :files, change_hash = :change_hash, "
    "command = NULL, outcome = NULL, exit_code = NULL, exit_code_source = NULL, "
    "error_excerpt = NULL, output_excerpt = NULL WHERE id = :id"
)


def _patches_as_edits(connection: Connection) -> int:
    """Such a command becomes, in place, the edit capture makes of it today: its id keeps its
    place among the session's runs, so the lesson of the streak it fixed names its files."""
    edits = []
    for event_id, command, cwd, directory in connection.execute(_PATCH_COMMANDS):
        found = shell_patch(command, cwd, directory or ".")
        if found is not None and found[0]:
            edits.append({"id": event_id, "files": json.dumps(found[0]), "change_hash": found[1]})
    if edits:
        connection.execute(_AS_EDIT, edits)
    return len(edits)


def _fill_directories(connection: Connection) -> int:
    """Events captured before directories were recorded: cwd relative to the project root,
    which was then the work tree's own root."""
    rows = connection.execute(
        text(
            "SELECT e.id, e.cwd, p.root FROM captured_events e JOIN projects p "
            "ON p.id = e.project_id WHERE e.directory IS NULL"
        )
    ).all()
    if rows:  # one statement for them all: a database upgraded to 0004 may hold millions
        connection.execute(
            text("UPDATE captured_events SET directory = :directory WHERE id = :id"),
            [
                {"directory": directory_under(cwd, root), "id": event_id}
                for event_id, cwd, root in rows
            ],
        )
    return len(rows)


# An archived verdict moves to the merged project unless that project has one for the same
# workflow already.
_MOVE_ARCHIVED = text(
    "UPDATE procedures SET project_id = :target WHERE project_id = :source AND NOT EXISTS ("
    "SELECT 1 FROM procedures t WHERE t.project_id = :target AND t.scope = procedures.scope "
    "AND t.branch = procedures.branch AND t.directory = procedures.directory "
    "AND t.workflow_hash = procedures.workflow_hash)"
)


def _merge_worktrees(connection: Connection, now: float) -> int:
    """Projects that are worktrees of one repository become that repository's project (for the
    roots still on disk: the others cannot be told apart and stay as they are)."""
    merged = 0
    # By id: the order decides the ids of the projects merged into (rows lie in any order).
    projects = connection.execute(text("SELECT id, root FROM projects ORDER BY id")).all()
    for project_id, root in projects:
        if not os.path.isdir(root):
            continue
        canonical = locate(root)[0]
        if canonical == root:
            continue
        target = connection.execute(
            text(
                "INSERT INTO projects (root, created_at) VALUES (:root, :now) "
                "ON CONFLICT (root) DO UPDATE SET root = excluded.root RETURNING id"
            ),
            {"root": canonical, "now": now},
        ).scalar_one()
        moved = {"target": target, "source": project_id}
        for table in ("captured_events", "sessions"):
            connection.execute(
                text(f"UPDATE {table} SET project_id = :target WHERE project_id = :source"), moved
            )
        connection.execute(_MOVE_ARCHIVED, moved)
        connection.execute(text("DELETE FROM procedures WHERE project_id = :source"), moved)
        connection.execute(text("DELETE FROM projects WHERE id = :id"), {"id": project_id})
        merged += 1
    return merged


# An archived procedure keeps its evidence; every other one's is derived again.
_CLEAR_EVIDENCE = text(
    "DELETE FROM procedure_evidence WHERE procedure_id NOT IN "
    "(SELECT id FROM procedures WHERE status = 'archived')"
)
_KEEP_IDENTITIES = text(
    "INSERT INTO procedure_identities (project_id, scope, branch, directory, workflow_hash, "
    "procedure_id, created_at, inputs, inputs_read_at) SELECT project_id, scope, branch, "
    "directory, workflow_hash, id, created_at, inputs, inputs_read_at FROM procedures "
    "WHERE status != 'archived' ON CONFLICT DO NOTHING"
)


def _rekey(connection: Connection, ignore_commands: tuple[str, ...]) -> int:
    """Procedures keyed by their first workflow step, as the current rules derive it: an
    archived one so the user's verdict holds for the workflow, the others so their ids go to
    the procedures re-derived for their workflows. Two that now name one workflow keep one
    row, an archived one first. Returns how many archived procedures were kept."""
    rows = connection.execute(
        text(
            "SELECT a.id, a.project_id, a.scope, a.branch, a.directory, a.command, a.variants, "
            "a.status, p.root FROM procedures a JOIN projects p ON p.id = a.project_id "
            "ORDER BY a.status != 'archived', a.id"
        )
    ).all()
    keepers: dict[tuple[Any, ...], tuple[Any, tuple[str, str, str]]] = {}
    for row in rows:
        key = _workflow_key(row, ignore_commands)
        group = (row.project_id, row.scope, row.branch, key[0], key[2])
        if group in keepers:
            connection.execute(text("DELETE FROM procedures WHERE id = :id"), {"id": row.id})
        else:
            keepers[group] = (row, key)
    # In two passes: a keeper's new key may be another keeper's old one.
    for row, _key in keepers.values():
        connection.execute(
            text("UPDATE procedures SET workflow_hash = :hash WHERE id = :id"),
            {"hash": f"rekey:{row.id}", "id": row.id},
        )
    for row, (directory, workflow, digest) in keepers.values():
        connection.execute(
            text(
                "UPDATE procedures SET directory = :directory, workflow = :workflow, "
                "workflow_hash = :workflow_hash WHERE id = :id"
            ),
            {"directory": directory, "workflow": workflow, "workflow_hash": digest, "id": row.id},
        )
    return sum(1 for row, _key in keepers.values() if row.status == "archived")


def _workflow_key(row: Any, ignore_commands: tuple[str, ...]) -> tuple[str, str, str]:
    """A family's command is its placeholder form (`gofmt -w <file>`): one of the commands
    that ran stands for it."""
    work_tree = row.root
    variants = json.loads(row.variants or "[]")
    command = variants[0]["command"] if variants else row.command
    for step in analyse(command, ignore_commands).workflow_steps():
        directory = resolve_directory(row.directory, work_tree, step.chdir)
        if directory is not None:
            workflow = group_workflow(step, directory, work_tree)
            return directory, workflow, workflow_hash(workflow)
    return row.directory, row.command, workflow_hash(row.command)
