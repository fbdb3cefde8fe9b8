"""The project's known errors as the digest, `remem procedures errors`, `procedures show`, MCP
and advice read them (DESIGN.md §6): each distinct error met on any branch and under any
command, with what fixed it (files edited, commands that passed) or how often it was seen not
yet fixed; this machine's from `known_errors`, the team's from its pulled lessons.

Stdlib only, without `typing` or `dataclasses` at run time: the hook imports it.
"""

from __future__ import annotations

from remem.record.frozen import Record, in_list, json_list

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from typing import Any

    from remem.agent.substitutions import Substitution
    from remem.db.snapshot import Execute

LOCAL, TEAM = "local", "team"
KNOWN_ERRORS_SHOWN = 5
_OF_ROOT = " AND pr.root = :root"


class KnownError(Record):
    """An error the project met and what fixed it (the files edited and the commands that
    passed before the first later run that no longer showed it), on whichever branch and
    command, here or, for a shared project, on the team's machines. Not yet fixed while
    `resolved_at` is None."""

    error: str
    fix_files: tuple[str, ...]
    resolved_at: float | None
    source: str = LOCAL
    error_key: str | None = None
    branch: str | None = None
    directory: str | None = None
    workflow: str | None = None  # None for the team's: their attempts stay on the team database
    fix_commands: tuple[str, ...] = ()
    times_seen: int = 1
    sessions: int = 1
    first_seen_at: float | None = None
    last_seen_at: float | None = None
    resolved_by_event_id: int | None = None
    fix_in_command: bool = False  # fixed only by editing files its failing runs named
    id: int | None = None  # its row on this machine
    project: str | None = None  # the project's root on this machine


# This machine's: one row per stretch of attempts showing an error (remem/procedures/known.py),
# newest sighting first. The team's: the last error of each of its lessons.
_LOCAL_KNOWN_ERRORS = (
    "SELECT k.error, k.fix_files, k.resolved_at, k.error_key, k.branch, k.directory, "
    "k.workflow, k.fix_commands, k.times_seen, k.sessions, k.first_seen_at, k.last_seen_at, "
    "k.resolved_by_event_id, k.fix_in_command, k.id, pr.root FROM known_errors k "
    "JOIN projects pr ON pr.id = k.project_id WHERE 1 = 1{where} "
    "ORDER BY k.last_seen_at DESC, k.id DESC{limit}"
)
_TEAM_KNOWN_ERRORS = (
    "SELECT l.last_error, l.fix_files, l.resolved_at, l.error_key, l.branch, l.directory, "
    "l.failed_attempts FROM team_lessons l JOIN projects pr ON pr.id = l.project_id "
    "WHERE l.error_key IS NOT NULL AND pr.root = :root "
    "ORDER BY l.resolved_at DESC, l.id DESC LIMIT 200"
)


def _local_known_errors(
    execute: Execute, where: str, params: dict[str, Any], limit: str = ""
) -> list[KnownError]:
    query = _LOCAL_KNOWN_ERRORS.format(where=where, limit=limit)
    return [
        KnownError(
            line or "", tuple(json_list(files)), resolved_at, LOCAL, key, branch or None,
            directory, workflow, tuple(json_list(commands)), times, sessions, first_at,
            last_at, resolved_by, bool(in_command), row_id, project,
        )
        for (line, files, resolved_at, key, branch, directory, workflow, commands, times,
             sessions, first_at, last_at, resolved_by, in_command, row_id, project)
        in execute(query, params)
    ]  # fmt: skip


def _team_known_errors(execute: Execute, root: str) -> list[KnownError]:
    return [
        KnownError(
            line or "", tuple(json_list(files)), at, TEAM, key, branch or None, directory,
            times_seen=attempts, last_seen_at=at,
        )
        for line, files, at, key, branch, directory, attempts in execute(
            _TEAM_KNOWN_ERRORS, {"root": root}
        )
    ]  # fmt: skip


def read_known_errors(
    execute: Execute, project: str | None = None, error_keys: Sequence[str] | None = None
) -> list[KnownError]:
    """Every known error on this machine, newest sighting first: on which branch, under which
    workflow, how often seen, fixed how (or not yet)."""
    params: dict[str, Any] = {}
    where = ""
    if project is not None:
        where, params["root"] = _OF_ROOT, project
    if error_keys is not None:
        if not error_keys:
            return []
        where += f" AND k.error_key IN ({in_list('k', error_keys, params)})"
    return _local_known_errors(execute, where, params)


def digest_known_errors(
    execute: Execute,
    root: str,
    told: Sequence[Substitution] = (),
    team: bool = True,
    said: Collection[str] = (),
) -> list[KnownError]:
    """The project's distinct errors as the digest shows them, those an agent can act on
    first (see `_rank`), then the newest sighting first: for each, its newest fix on any
    branch, else how often it was seen unfixed; this machine's first, then those only the
    team met. An error not yet fixed whose command has a substitution `told` is said there,
    with what works instead; an error a procedure's pitfall quotes (its key in `said`) is
    said there. `team` False: the team's lessons are known to be none."""
    instead = {(found.directory, found.error_key) for found in told}
    local = [
        error
        for error in fold_known_errors(
            _local_known_errors(execute, _OF_ROOT, {"root": root}, " LIMIT 200")
        )
        if (error.resolved_at is not None or (error.directory, error.error_key) not in instead)
        and error.error_key not in said
    ]
    order = sorted(range(len(local)), key=lambda i: (_rank(local[i]), i))
    found = [local[i] for i in order[:KNOWN_ERRORS_SHOWN]]
    seen = {error.error_key for error in found} | set(said)
    for error in _team_known_errors(execute, root) if team else ():
        if len(found) == KNOWN_ERRORS_SHOWN:
            break
        if error.error_key not in seen and error.error:
            seen.add(error.error_key)
            found.append(error)
    return found


def _rank(error: KnownError) -> int:
    """What an agent can act on first: an error fixed by a command (an install, a formatter,
    a flag) or by a file the failing command did not name (a dependency, a setting), then
    one not yet fixed, then one fixed only by editing the very files the command ran (the
    work at hand: a test being written), which another checkout rarely meets again. One that
    passed again with no edit goes with those not yet fixed: nothing is known to fix it."""
    if error.fix_in_command:
        return 2
    return 0 if error.fix_commands or error.fix_files else 1


def fold_known_errors(rows: Sequence[KnownError]) -> list[KnownError]:
    """One per error key, in the order of the rows (newest sighting first): the newest that
    was fixed, else the newest sighting with every sighting counted."""
    keys: list[str | None] = []
    fixed: dict[str | None, KnownError] = {}
    open_: dict[str | None, KnownError] = {}
    for row in rows:
        if not row.error:
            continue
        if row.error_key not in fixed and row.error_key not in open_:
            keys.append(row.error_key)
        if row.resolved_at is not None:
            fixed.setdefault(row.error_key, row)
        elif row.error_key in open_:
            held = open_[row.error_key]
            open_[row.error_key] = held.but(
                times_seen=held.times_seen + row.times_seen, sessions=held.sessions + row.sessions
            )
        else:
            open_[row.error_key] = row
    return [fixed.get(key) or open_[key] for key in keys]
