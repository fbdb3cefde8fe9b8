"""The digest's reads (DESIGN.md §7): per workflow, the procedure that holds on a branch, this
machine's or the team's pulled one, with its pitfalls, and the project's known errors (and,
from remem.agent.substitutions, what passed instead of the commands that fail here). The
SessionStart hook, `remem context`, the MCP `procedures` tool and `remem procedures errors`
read them here; remem.agent.digest renders the pages.

Stdlib only, without `typing` or `dataclasses` at run time: the hook imports it.
"""

from __future__ import annotations

from remem.agent import digest, usage
from remem.agent.known import LOCAL, TEAM, KnownError, digest_known_errors
from remem.agent.substitutions import Substitution, digest_substitutions
from remem.config import Settings
from remem.db.vocabulary import ACTIVE, ARCHIVED, BROKEN, STALE
from remem.record.frozen import Record, in_list, json_list
from remem.record.inputs import checked_fields
from remem.record.quote import family_files, needs_credentials, pitfall_text

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from remem.db.snapshot import Execute

# A local verdict that the workflow fails here, or the user's archive, hides the team's proof
# too; a stale one only says this machine has not run it lately.
HIDES_TEAM = (BROKEN, ARCHIVED)
# When nothing was verified lately, this many of what was verified earlier, with their dates.
EARLIER_SHOWN = 10


_OF_ROOT = " AND pr.root = :root"
_TEAM_HELD = "SELECT EXISTS (SELECT 1 FROM team_procedures), EXISTS (SELECT 1 FROM team_lessons)"
_LESSON_TABLES = {LOCAL: "lessons", TEAM: "team_lessons"}


class Entry(Record):
    """One procedure as the digest shows it, this machine's or the team's."""

    id: int
    command: str
    scope: str
    branch: str | None
    directory: str
    workflow_hash: str
    confidence: float
    verified_runs: int
    distinct_sessions: int
    branches: list[str]
    last_verified_at: float
    files: list[str]
    files_more: int
    inherited: bool = False
    source: str = LOCAL
    machines: int | None = None  # how many machines the team's evidence comes from
    pitfalls: tuple[str, ...] = ()
    pitfall_keys: tuple[str, ...] = ()  # the errors its pitfalls quote: not said again
    # Its runs on the branch read for have failed since it last passed there (red code, or a
    # command that cannot run there): how many, since when, and the latest one's error.
    failing_runs: int = 0
    failing_since_at: float | None = None
    failing_error: str | None = None
    family_files: int = 0  # the sets of files its placeholder form (`<file>`) stands for
    inputs: str = "[]"  # the fingerprints of what it runs, as stored (remem/record/inputs.py)
    # Compared with the work tree's files when read: the paths of those changed or gone since
    # they were read, those gone, and the labels of those changed (`Makefile (test)`).
    changed_inputs: tuple[str, ...] = ()
    missing_inputs: tuple[str, ...] = ()
    changed_tasks: tuple[str, ...] = ()

    @property
    def needs_credentials(self) -> bool:
        return needs_credentials(self.command)

    @property
    def whole(self) -> str:
        """The command that shows this procedure whole."""
        kind = "team" if self.source == TEAM else "show"
        return f"remem procedures {kind} {self.id}"

    def as_json(self) -> dict[str, Any]:
        data = {**self.fields(), "needs_credentials": self.needs_credentials}
        del data["inputs"], data["pitfall_keys"]
        if self.scope == "project":
            data["branch"] = None
        return data


def make_entry(
    row: Sequence[Any], inherited: bool = False, source: str = LOCAL, machines: int | None = None
) -> Entry:
    """An entry from the first 13 columns of `_ENTRIES`, and its inputs (the 16th)."""
    values = list(row[:13])
    values[9], values[11] = json_list(values[9]), json_list(values[11])
    entry = Entry(*values, inherited, source, machines)
    return entry.but(inputs=row[15]) if len(row) > 15 and row[15] != "[]" else entry


# This machine's procedures and the team's pulled ones alike; this machine's add `variants`,
# the team's `machines`.
_ENTRIES = (
    "SELECT p.id, p.command, p.scope, p.branch, p.directory, p.workflow_hash, p.confidence, "
    "p.verified_runs, p.distinct_sessions, p.branches, p.last_verified_at, p.files, "
    "p.files_more, p.status{extra}, p.inputs FROM {table} p "
    "JOIN projects pr ON pr.id = p.project_id "
    "WHERE pr.root = :root AND (p.scope = 'project' OR p.branch IN ({branches}))"
)
# The pitfall is rendered from the lesson's fields, not read from its stored text: rows written
# by an older wording read as the current one does. The team's lessons have the same fields.
_PITFALLS = (
    "SELECT l.failed_attempts, l.last_error, l.repeats, l.fix_files, l.error_key FROM {table} l "
    "JOIN projects pr ON pr.id = l.project_id "
    "WHERE pr.root = :root AND l.directory = :directory AND l.workflow_hash = :workflow_hash "
    "{branch} ORDER BY l.resolved_at DESC, l.id DESC LIMIT 50"
)
# Which of the workflows shown have a lesson at all, in one round trip (served by the lessons'
# workflow index): most have none, and each that has is read on its own.
_TAUGHT = (
    "SELECT DISTINCT l.directory, l.workflow_hash FROM {table} l "
    "JOIN projects pr ON pr.id = l.project_id WHERE pr.root = :root "
    "AND l.directory IN ({directories}) AND l.workflow_hash IN ({hashes})"
)


# The branch's failed runs of each workflow asked for since its last verified run there, in
# one round trip: the IN lists are served by the attempts' group index, and a pair of
# directory and workflow not asked for is ignored.
_FAILING = (
    "SELECT a.directory, a.workflow_hash, count(DISTINCT a.event_id), min(a.failed_at), "
    "max(a.failed_at) FROM attempts a JOIN projects pr ON pr.id = a.project_id "
    "WHERE pr.root = :root AND a.branch = :branch AND a.directory IN ({directories}) "
    "AND a.workflow_hash IN ({hashes}) AND a.failed_at > "
    "COALESCE((SELECT max(v.verified_at) FROM verifications v WHERE v.project_id = a.project_id "
    "AND v.branch = a.branch AND v.directory = a.directory "
    "AND v.workflow_hash = a.workflow_hash), -1) GROUP BY a.directory, a.workflow_hash"
)
_FAILING_ERROR = (
    "SELECT a.salient_error, a.error_excerpt FROM attempts a JOIN projects pr "
    "ON pr.id = a.project_id WHERE pr.root = :root AND a.branch = :branch "
    "AND a.directory = :directory AND a.workflow_hash = :workflow_hash AND a.failed_at = :at "
    "ORDER BY a.id DESC LIMIT 1"
)


def _failing(
    execute: Execute, root: str, branch: str, shown: Sequence[Entry]
) -> dict[tuple[str, str], dict[str, Any]]:
    """Which of the workflows `shown` fail on this branch, keyed by (directory, workflow hash):
    red here says nothing elsewhere, so the procedure stays listed and says so (DESIGN.md §6)."""
    if not shown:
        return {}
    params: dict[str, Any] = {"root": root, "branch": branch}
    directories = in_list("d", sorted({entry.directory for entry in shown}), params)
    hashes = in_list("h", sorted({entry.workflow_hash for entry in shown}), params)
    asked = {(entry.directory, entry.workflow_hash) for entry in shown}
    failing = {}
    for directory, workflow_hash, count, since, latest in execute(
        _FAILING.format(directories=directories, hashes=hashes), params
    ):
        if (directory, workflow_hash) not in asked:
            continue
        at = {"root": root, "branch": branch, "directory": directory}
        found = execute(_FAILING_ERROR, {**at, "workflow_hash": workflow_hash, "at": latest})
        salient, excerpt = found[0] if found else (None, None)
        lines = (line for line in (excerpt or "").splitlines() if line.strip())
        failing[(directory, workflow_hash)] = {
            "failing_runs": count,
            "failing_since_at": since,
            "failing_error": salient or next(lines, None),
        }
    return failing


def read_entries(
    execute: Execute,
    root: str,
    branch: str | None,
    inherit_from: Sequence[str] = Settings.inherit_from,
    directory: str = ".",
    status: str = ACTIVE,
    team: bool = True,
    work_tree: str | None = None,
) -> list[Entry]:
    """The procedure that holds for each workflow on this branch (see `choose`), with its
    pitfalls, whether it fails on this branch and whether what it runs changed in the work
    tree (the project's root unless given). Those of this directory first, then by what
    became of them once shown (remem.agent.usage.use_rank), then by how many sessions
    verified them (what many sessions ran, the next one likely runs; a one-off, however
    recent, comes after), then by confidence, then most recently verified, then this
    machine's before the team's, then id. `status` STALE reads
    what was verified earlier instead, by the same rules. `team` False: the team's procedures
    are known to be none."""
    own = branch or ""
    parents = [parent for parent in inherit_from if parent != own]
    params: dict[str, Any] = {"root": root}
    branches = in_list("b", [own, *parents], params)
    local = execute(
        _ENTRIES.format(extra=", p.variants", table="procedures", branches=branches), params
    )
    team_rows = (
        execute(
            _ENTRIES.format(extra=", p.machines", table="team_procedures", branches=branches),
            params,
        )
        if team
        else []
    )
    chosen = choose(local, team_rows, own, parents, status)
    failing = _failing(execute, root, own, chosen)
    taught = _taught(execute, root, chosen)
    entries = [
        shown.but(
            **(
                _pitfalls(execute, root, shown)
                if (shown.source, shown.directory, shown.workflow_hash) in taught
                else {}
            ),
            **failing.get((shown.directory, shown.workflow_hash), {}),
            **checked_fields(shown.inputs, work_tree or root),
        )
        for shown in chosen
    ]
    use = usage.read_use(execute, root) if entries else {}
    entries.sort(
        key=lambda e: (
            e.directory != directory,
            usage.use_rank(use.get((e.directory, e.workflow_hash)), e.last_verified_at),
            -e.distinct_sessions,
            -e.confidence,
            -e.last_verified_at,
            e.source != LOCAL,
            e.id,
        )
    )
    return entries


def choose(
    local: Sequence[Sequence[Any]],
    team: Sequence[Sequence[Any]],
    own: str,
    parents: Sequence[str],
    status: str = ACTIVE,
) -> list[Entry]:
    """Per workflow (directory, workflow hash), what the branch `own` is shown: this machine's
    choice; where it has none, the team's by the same rules, unless a local procedure of the
    workflow is broken or archived. Rows are `_ENTRIES`'s, of this branch, the project and
    the `parents` it inherits from; those of `status` hold."""
    mine = _holding(local, own, parents, status)
    theirs = _holding(team, own, parents, status)
    hidden = {(row[4], row[5]) for row in local if row[13] in HIDES_TEAM}
    entries = []
    for key in sorted(set(mine) | set(theirs)):
        if key in mine:
            row, inherited = mine[key]
            made = make_entry(row, inherited)
            family = family_files(made.command, json_list(row[14])) if len(row) > 14 else 0
            entries.append(made.but(family_files=family) if family else made)
        elif key not in hidden:
            row, inherited = theirs[key]
            entries.append(make_entry(row, inherited, TEAM, row[14]))
    return entries


def _holding(
    rows: Sequence[Sequence[Any]], own: str, parents: Sequence[str], status: str = ACTIVE
) -> dict[tuple[str, str], tuple[Sequence[Any], bool]]:
    """For each workflow, the row of `status` (active) that holds on the branch and whether it
    is inherited: the branch's own verdict first (its broken, stale or archived procedure hides
    the others), then the project-wide one, then the first default branch's."""
    mine: dict[tuple[str, str], Sequence[Any]] = {}
    project: dict[tuple[str, str], Sequence[Any]] = {}
    inherited: dict[tuple[str, str], tuple[int, Sequence[Any]]] = {}
    for row in rows:
        key = (row[4], row[5])
        if row[2] == "project":
            project[key] = row
        elif row[3] == own:
            mine[key] = row
        elif row[13] == status:
            rank = parents.index(row[3])
            if key not in inherited or rank < inherited[key][0]:
                inherited[key] = (rank, row)
    holding = {}
    for key in set(mine) | set(project) | set(inherited):
        found = inherited.get(key, (0, None))[1]
        chosen = _choose(mine.get(key), project.get(key), found, status)
        if chosen is not None:
            holding[key] = chosen
    return holding


def _choose(
    mine: Sequence[Any] | None,
    project: Sequence[Any] | None,
    inherited: Sequence[Any] | None,
    status: str,
) -> tuple[Sequence[Any], bool] | None:
    if mine is not None and mine[13] != status:
        return None  # the branch's own verdict on this workflow
    if project is not None and project[13] == status:
        return project, False
    if mine is not None:
        return mine, False
    if inherited is not None:
        return inherited, True
    return None


def _taught(execute: Execute, root: str, shown: Sequence[Entry]) -> set[tuple[str, str, str]]:
    """(source, directory, workflow hash) of the workflows `shown` that have a lesson."""
    taught: set[tuple[str, str, str]] = set()
    for source in sorted({entry.source for entry in shown}):
        mine = [entry for entry in shown if entry.source == source]
        params: dict[str, Any] = {"root": root}
        directories = in_list("d", sorted({entry.directory for entry in mine}), params)
        hashes = in_list("h", sorted({entry.workflow_hash for entry in mine}), params)
        query = _TAUGHT.format(table=_LESSON_TABLES[source], directories=directories, hashes=hashes)
        taught.update((source, directory, hashed) for directory, hashed in execute(query, params))
    return taught


def _pitfalls(execute: Execute, root: str, shown: Entry) -> dict[str, tuple[str, ...]]:
    """The newest lesson of each distinct error the workflow met (streaks of one error
    teach one thing, however often each failed), the newest errors first, and those
    errors' keys."""
    params: dict[str, Any] = {
        "root": root,
        "directory": shown.directory,
        "workflow_hash": shown.workflow_hash,
    }
    where = ""
    if shown.scope != "project":
        where, params["branch"] = "AND l.branch = :branch", shown.branch
    query = _PITFALLS.format(table=_LESSON_TABLES[shown.source], branch=where)
    newest: dict[str, tuple[str, str | None]] = {}
    for count, last_error, repeats, fix_files, key in execute(query, params):
        text = pitfall_text(count, last_error, json_list(repeats), json_list(fix_files))
        newest.setdefault(key or text, (text, key))
    pitfalls: list[str] = []
    keys: list[str] = []
    for text, key in newest.values():
        if len(pitfalls) == digest.PITFALLS_SHOWN:
            break
        if text not in pitfalls:
            pitfalls.append(text)
            keys.extend([key] if key else [])
    return {"pitfalls": tuple(pitfalls), "pitfall_keys": tuple(keys)}


class Context(Record):
    """What the digest holds for a directory: the procedures that hold there and the
    project's known errors; when none holds, what was verified earlier (stale). `remem context
    --json` and the MCP `procedures` tool print it."""

    project: str
    branch: str | None
    directory: str
    procedures: list[Entry]
    known_errors: list[KnownError]
    substitutions: list[Substitution]
    verified_earlier: tuple[Entry, ...] = ()
    verified_earlier_more: int = 0  # verified earlier too, left out of verified_earlier
    # Those that would hold but what they run is gone: not offered as verified.
    inputs_gone: tuple[Entry, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            **self.fields(),
            "procedures": [shown.as_json() for shown in self.procedures],
            "known_errors": [error.as_json() for error in self.known_errors],
            "verified_earlier": [shown.as_json() for shown in self.verified_earlier],
            "substitutions": [found.as_json() for found in self.substitutions],
            "inputs_gone": [shown.as_json() for shown in self.inputs_gone],
        }

    def pages(self, max_chars: int, max_lines: int) -> list[str]:
        """The digest's pages: where the SessionStart hook, `remem context` and every other
        reader of the digest get its text."""
        return [text for text, _held in self.pages_held(max_chars, max_lines)]

    def pages_held(self, max_chars: int, max_lines: int) -> list[tuple[str, list[Any]]]:
        """The pages, each with the procedures and known errors it holds."""
        header = digest.header_for(self.project, self.branch, bool(self.procedures), self.directory)
        return digest.paginate_held(
            self.procedures,
            header,
            max_chars,
            max_lines,
            self.known_errors,
            self.verified_earlier,
            self.substitutions,
            self.verified_earlier_more,
            self.project,
            self.inputs_gone,
        )


def read_context(
    execute: Execute,
    root: str,
    branch: str | None,
    directory: str,
    inherit_from: Sequence[str] = Settings.inherit_from,
    work_tree: str | None = None,
) -> Context:
    """What the digest holds for `directory` of the work tree (the project's root unless
    given) on `branch`."""
    # A machine that pulls nothing from a team asks once, cheaply, instead of reading for it.
    ((procedures, lessons),) = execute(_TEAM_HELD, {})
    team = bool(procedures)
    read = read_entries(
        execute, root, branch, inherit_from, directory, team=team, work_tree=work_tree
    )
    entries = [entry for entry in read if not entry.missing_inputs]
    gone = tuple(entry for entry in read if entry.missing_inputs)
    earlier: list[Entry] = []
    if not entries:
        earlier = read_entries(
            execute, root, branch, inherit_from, directory, STALE, team, work_tree
        )
    substitutions = digest_substitutions(execute, root)
    said = {key for entry in [*entries, *earlier[:EARLIER_SHOWN]] for key in entry.pitfall_keys}
    known = digest_known_errors(execute, root, substitutions, team=bool(lessons), said=said)
    return Context(
        root,
        branch,
        directory,
        entries,
        known,
        substitutions,
        tuple(earlier[:EARLIER_SHOWN]),
        max(len(earlier) - EARLIER_SHOWN, 0),
        gone,
    )


def context_text(cwd: str | None, page: int | None, as_json: bool) -> str:
    """What `remem context` prints for a directory: a page of the digest, or every entry as
    JSON. Stdlib only, as the hook reads it."""
    import os

    from remem.config import load_settings
    from remem.db.snapshot import read_snapshot
    from remem.errors import RememError
    from remem.record.identity import locate_given

    page = 1 if page is None else page
    if page < 1:
        raise RememError("--page counts from 1.")
    settings = load_settings()
    if cwd is not None and not os.path.isdir(os.path.expanduser(cwd)):
        raise RememError(f"--cwd {cwd} is not a folder: name one inside the project.")
    root, branch, work_tree, directory = locate_given(cwd)
    with read_snapshot(settings) as execute:
        context = read_context(execute, root, branch, directory, settings.inherit_from, work_tree)
    if as_json:
        from remem.record.quote import json_text

        return json_text(context.as_json())
    pages = context.pages(settings.context_max_chars, settings.context_max_lines)
    if not pages:
        return ""
    if page > len(pages):
        raise RememError(f"The digest has {len(pages)} page(s): ask for --page 1 to {len(pages)}.")
    return pages[page - 1]
