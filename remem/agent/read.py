"""The one read model (DESIGN.md §7): what the digest, `remem procedures`, `remem status`,
recall, export and the MCP server read, written once against an `execute(sql, params) -> rows`
callable and returned as small frozen records.

Stdlib only, without `typing` or `dataclasses` at run time: the SessionStart hook reads its
digest page through it. A SQLite home is read with sqlite3 (remem.db.snapshot); a command that
already holds an SQLAlchemy engine hands over `remem.db.snapshot.engine_reader(engine)`. Times
are epoch seconds here; remem.agent.json_contract writes them out.
"""

from __future__ import annotations

import json

from remem.db.vocabulary import PROCEDURE_STATUSES
from remem.errors import NotFound
from remem.procedures import digest
from remem.procedures.digest import needs_credentials, pitfall_text

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from remem.db.snapshot import Execute

ACTIVE = "active"
LOCAL, TEAM = "local", "team"
# A local verdict that the workflow fails here, or the user's archive, hides the team's proof
# too; a stale one only says this machine has not run it lately.
HIDES_TEAM = ("broken", "archived")
KNOWN_ERRORS_SHOWN = 5
EVIDENCE_PAGE = 50


class Record:
    """A small frozen record, as a frozen dataclass would be, without importing `dataclasses`
    (which costs the hook more than its whole capture): the fields are the class's own
    annotations, in order; a class attribute is a field's default."""

    _fields: tuple[str, ...] = ()

    def __init_subclass__(cls) -> None:
        # Not inspect.get_annotations: importing inspect costs the hook what dataclasses would.
        cls._fields = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063

    def __init__(self, *values: Any, **named: Any) -> None:
        if len(values) > len(self._fields):
            raise TypeError(f"{type(self).__name__} takes {len(self._fields)} fields")
        for name, value in zip(self._fields, values, strict=False):
            object.__setattr__(self, name, value)
        for name in self._fields[len(values) :]:
            if name not in named and not hasattr(type(self), name):
                raise TypeError(f"{type(self).__name__} needs {name}")
            object.__setattr__(self, name, named.pop(name, getattr(type(self), name, None)))
        if named:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(named)}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._fields}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(tuple(self.fields().values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.fields().items())
        return f"{type(self).__name__}({shown})"


def _list(text: str | None) -> list[Any]:
    return json.loads(text) if text else []


# --- procedures ------------------------------------------------------------------------------


class Procedure(Record):
    """A procedure of this machine, whatever its status: what `remem procedures` shows."""

    id: int
    project: str
    scope: str
    branch: str | None  # None when the procedure holds on every branch of the project
    directory: str
    workflow: str
    workflow_hash: str
    command: str
    variants: tuple[tuple[str, int], ...]
    status: str
    confidence: float
    verified_runs: int
    distinct_sessions: int
    branches: tuple[str, ...]
    evidence_event_ids: tuple[int, ...]  # the newest 20; evidence_page pages through all
    files: tuple[str, ...]
    files_more: int
    first_verified_at: float
    last_verified_at: float
    topic_key: str
    body: str

    @property
    def needs_credentials(self) -> bool:
        """Whether its command had credentials redacted: it cannot run as stored."""
        return needs_credentials(self.command)

    def as_json(self) -> dict[str, Any]:
        data = self.fields()
        data["variants"] = [{"command": command, "runs": runs} for command, runs in self.variants]
        data["needs_credentials"] = self.needs_credentials
        return data


_PROCEDURES = (
    "SELECT p.id, pr.root, p.scope, p.branch, p.directory, p.workflow, p.workflow_hash, "
    "p.command, p.variants, p.status, p.confidence, p.verified_runs, p.distinct_sessions, "
    "p.branches, p.evidence_event_ids, p.files, p.files_more, p.first_verified_at, "
    "p.last_verified_at, p.topic_key, p.body FROM procedures p "
    "JOIN projects pr ON pr.id = p.project_id WHERE 1 = 1{where} "
    "ORDER BY p.confidence DESC, p.last_verified_at DESC, p.id"
)


def _procedure(row: Sequence[Any]) -> Procedure:
    values = list(row)
    if values[2] == "project":
        values[3] = None
    values[8] = tuple((v["command"], int(v["runs"])) for v in _list(values[8]))
    for index in (13, 14, 15):
        values[index] = tuple(_list(values[index]))
    return Procedure(*values)


def read_procedures(
    execute: Execute,
    project: str | None = None,
    branch: str | None = None,
    statuses: Sequence[str] | None = (ACTIVE,),
    limit: int | None = None,
) -> list[Procedure]:
    """By confidence, then most recently verified, then id (a stable order). A branch's are
    its own procedures and those that hold on every branch."""
    where, params = "", {}
    if project is not None:
        where, params["project"] = " AND pr.root = :project", project
    if branch is not None:
        where += " AND (p.branch = :branch OR p.scope = 'project')"
        params["branch"] = branch
    if statuses:
        where += f" AND p.status IN ({_names('status', statuses, params)})"
    query = _PROCEDURES.format(where=where)
    if limit is not None:
        query += f" LIMIT {int(limit)}"
    return [_procedure(row) for row in execute(query, params)]


def _names(prefix: str, values: Sequence[Any], params: dict[str, Any]) -> str:
    """`:prefix0, :prefix1, …` for an IN list, the values added to params."""
    params.update({f"{prefix}{i}": value for i, value in enumerate(values)})
    return ", ".join(f":{prefix}{i}" for i in range(len(values)))


def read_procedure(execute: Execute, procedure_id: int) -> Procedure:
    rows = execute(_PROCEDURES.format(where=" AND p.id = :id"), {"id": procedure_id})
    if not rows:
        raise NotFound(f"No procedure {procedure_id}: see `remem procedures list --all`.")
    return _procedure(rows[0])


# --- evidence --------------------------------------------------------------------------------


class EvidenceRun(Record):
    event_id: int
    host: str
    session_key: str
    outcome: str
    exit_code: int | None
    at: float
    branch: str | None

    def as_json(self) -> dict[str, Any]:
        return self.fields()


class EvidencePage(Record):
    """One page of a procedure's evidence, newest page first, each page in time order."""

    runs: tuple[EvidenceRun, ...]
    page: int
    pages: int
    total: int


_EVIDENCE_COUNT = "SELECT count(*) FROM procedure_evidence WHERE procedure_id = :id"
_EVIDENCE_PAGE = (
    "SELECT e.id, e.host, s.session_key, e.outcome, e.exit_code, e.event_at, e.branch "
    "FROM procedure_evidence pe JOIN captured_events e ON e.id = pe.event_id "
    "JOIN sessions s ON s.id = e.session_id WHERE pe.procedure_id = :id "
    "ORDER BY pe.verified_at DESC, pe.event_id DESC LIMIT :limit OFFSET :offset"
)


def read_evidence(
    execute: Execute, procedure: Procedure, page: int = 1, per_page: int = EVIDENCE_PAGE
) -> EvidencePage:
    """The verified runs a procedure cites (its fresh ones, or all when none is fresh), a page
    at a time: a procedure may cite thousands."""
    total = procedure.verified_runs
    if not total:
        total = int(execute(_EVIDENCE_COUNT, {"id": procedure.id})[0][0])
    pages = max(1, -(-total // per_page))
    if not 1 <= page <= pages:
        raise NotFound(
            f"Procedure {procedure.id} has {pages} evidence page(s): ask for 1 to {pages}."
        )
    offset = (page - 1) * per_page
    params = {"id": procedure.id, "limit": min(per_page, total - offset), "offset": offset}
    rows = execute(_EVIDENCE_PAGE, params) if total else []
    runs = sorted((EvidenceRun(*row) for row in rows), key=lambda run: (run.at, run.event_id))
    return EvidencePage(tuple(runs), page, pages, total)


_UNVERIFIED = (
    "SELECT count(*) FROM unverified_runs u JOIN procedures p ON p.project_id = u.project_id "
    "AND p.directory = u.directory AND p.workflow_hash = u.workflow_hash "
    "AND (p.scope = 'project' OR p.branch = u.branch) WHERE p.id = :id"
)


def unverified_count(execute: Execute, procedure_id: int) -> int:
    """Runs of the workflow whose status was hidden and whose output showed no summary."""
    return int(execute(_UNVERIFIED, {"id": procedure_id})[0][0])


# --- lessons ---------------------------------------------------------------------------------


class Attempt(Record):
    """One failed attempt of a lesson's streak."""

    attempt_number: int
    event_id: int
    command: str
    exit_code: int | None
    error_excerpt: str | None
    salient_error: str | None
    files: tuple[str, ...]
    duplicate_of: int | None
    failed_at: float

    def detail(self) -> Any:
        from remem.procedures.lessons import AttemptDetail

        return AttemptDetail(
            self.attempt_number,
            self.exit_code,
            self.error_excerpt,
            self.duplicate_of,
            self.salient_error,
        )

    @property
    def has_output(self) -> bool:
        """Whether its output says anything: a failure with none is shown as such."""
        return self.detail().error() is not None

    def as_json(self) -> dict[str, Any]:
        return {**self.fields(), "has_output": self.has_output}


class Lesson(Record):
    """A closed streak of failed attempts and what fixed it, with the procedure it belongs to."""

    id: int
    project: str
    branch: str
    directory: str
    failed_attempts: int
    first_error: str | None
    last_error: str | None
    error_key: str | None
    fix_files: tuple[str, ...]
    repeats: tuple[tuple[int, int], ...]
    pitfall: str
    body: str
    resolved_by_event_id: int
    resolved_at: float
    procedure_id: int | None
    status: str  # its procedure's status, or "no procedure"
    attempts: tuple[Attempt, ...]

    @property
    def command(self) -> str:
        return self.attempts[-1].command if self.attempts else ""

    def recorded_texts(self) -> list[str]:
        """Every recorded text it holds: the commands tried and what they printed."""
        texts = [self.first_error, self.last_error, self.pitfall, *self.fix_files]
        for attempt in self.attempts:
            texts += [attempt.command, attempt.error_excerpt, attempt.salient_error]
        return [text for text in texts if text]

    def as_json(self) -> dict[str, Any]:
        data = self.fields()
        data.update(command=self.command, attempts=[a.as_json() for a in self.attempts])
        return data


_ATTACHED = (
    "q.project_id = l.project_id AND q.directory = l.directory "
    "AND q.workflow_hash = l.workflow_hash AND (q.scope = 'project' OR q.branch = l.branch)"
)
_LESSONS = (
    "SELECT l.id, pr.root, l.branch, l.directory, l.failed_attempts, l.first_error, "
    "l.last_error, l.error_key, l.fix_files, l.repeats, l.body, l.resolved_by_event_id, "
    "l.resolved_at, p.id, p.status FROM lessons l JOIN projects pr ON pr.id = l.project_id "
    f"LEFT JOIN procedures p ON p.id = (SELECT q.id FROM procedures q WHERE {_ATTACHED} "
    "ORDER BY q.scope = 'project' DESC, q.id LIMIT 1) WHERE 1 = 1{where} "
    "ORDER BY l.resolved_at DESC, l.id DESC"
)
_LESSON_ATTEMPTS = (
    "SELECT l.id, a.attempt_number, a.event_id, a.command, a.exit_code, a.error_excerpt, "
    "a.salient_error, a.files, a.duplicate_of, a.failed_at FROM attempts a "
    "JOIN lessons l ON l.project_id = a.project_id AND l.branch = a.branch "
    "AND l.directory = a.directory AND l.workflow_hash = a.workflow_hash "
    "AND l.resolved_by_event_id = a.resolved_by_event_id "
    "JOIN projects pr ON pr.id = l.project_id WHERE 1 = 1{where} ORDER BY l.id, a.attempt_number"
)


def read_lessons(
    execute: Execute,
    root: str | None = None,
    since_at: float | None = None,
    procedure_id: int | None = None,
) -> list[Lesson]:
    """Lessons newest first: of a project (None: of every project), or of one procedure."""
    params: dict[str, Any] = {}
    where = ""
    if root is not None:
        where, params["root"] = " AND pr.root = :root", root
    if since_at is not None:
        where, params["since"] = where + " AND l.resolved_at >= :since", since_at
    if procedure_id is not None:
        params["procedure_id"] = procedure_id
        where += (
            f" AND EXISTS (SELECT 1 FROM procedures q WHERE q.id = :procedure_id AND {_ATTACHED})"
        )
    attempts: dict[int, list[Attempt]] = {}
    for row in execute(_LESSON_ATTEMPTS.format(where=where), params):
        values = list(row[1:])
        values[6] = tuple(_list(values[6]))
        attempts.setdefault(row[0], []).append(Attempt(*values))
    return [
        _lesson(row, tuple(attempts.get(row[0], ())))
        for row in execute(_LESSONS.format(where=where), params)
    ]


def _lesson(row: Sequence[Any], attempts: tuple[Attempt, ...]) -> Lesson:
    (lesson_id, root, branch, directory, failed, first_error, last_error, error_key,
     fix_files, repeats, body, resolved_by, resolved_at, procedure_id, status) = row  # fmt: skip
    fix_files = tuple(_list(fix_files))
    repeats = tuple((int(n), int(of)) for n, of in _list(repeats))
    if attempts and len(attempts) == failed:
        from remem.procedures.lessons import distill

        # Told again from its whole journal: in the current wording, whenever stored.
        body = distill([a.detail() for a in attempts], fix_files, resolved_at).body
    return Lesson(
        lesson_id, root, branch, directory, failed, first_error, last_error or None, error_key,
        fix_files, repeats, pitfall_text(failed, last_error, repeats, fix_files), body,
        resolved_by, resolved_at, procedure_id, status or "no procedure", attempts,
    )  # fmt: skip


# --- known errors ----------------------------------------------------------------------------


class KnownError(Record):
    """An error the project met and what fixed it, on whichever branch and command, here or,
    for a shared project, on the team's machines."""

    error: str
    fix_files: tuple[str, ...]
    resolved_at: float
    source: str = LOCAL
    error_key: str | None = None
    branch: str | None = None
    directory: str | None = None
    workflow: str | None = None  # None for the team's: their attempts stay on the team database

    def as_json(self) -> dict[str, Any]:
        return self.fields()


_KNOWN_ERRORS = (
    "SELECT l.last_error, l.fix_files, l.resolved_at, l.error_key, l.branch, l.directory, "
    "{workflow} FROM {table} l JOIN projects pr ON pr.id = l.project_id "
    "WHERE l.error_key IS NOT NULL{where} ORDER BY l.resolved_at DESC, l.id DESC{limit}"
)
_WORKFLOW = (
    "(SELECT a.workflow FROM attempts a WHERE a.project_id = l.project_id "
    "AND a.directory = l.directory AND a.workflow_hash = l.workflow_hash LIMIT 1)"
)
_TABLES = {LOCAL: ("lessons", _WORKFLOW), TEAM: ("team_lessons", "NULL")}
_OF_ROOT = " AND pr.root = :root"


def _known_errors(
    execute: Execute, source: str, where: str, params: dict[str, Any], limit: str = ""
) -> list[KnownError]:
    table, workflow = _TABLES[source]
    query = _KNOWN_ERRORS.format(workflow=workflow, table=table, where=where, limit=limit)
    return [
        KnownError(line or "", tuple(_list(fix_files)), at, source, key, branch, directory, flow)
        for line, fix_files, at, key, branch, directory, flow in execute(query, params)
    ]


def read_known_errors(
    execute: Execute, project: str | None = None, error_keys: Sequence[str] | None = None
) -> list[KnownError]:
    """Every lesson's error on this machine, newest first: on which branch, under which
    workflow, fixed how."""
    params: dict[str, Any] = {}
    where = ""
    if project is not None:
        where, params["project"] = " AND pr.root = :project", project
    if error_keys is not None:
        if not error_keys:
            return []
        where += f" AND l.error_key IN ({_names('k', error_keys, params)})"
    return _known_errors(execute, LOCAL, where, params)


def digest_known_errors(execute: Execute, root: str) -> list[KnownError]:
    """The project's newest distinct errors with what fixed them, on any branch, as the digest
    shows them: this machine's first, then those only the team met."""
    found: list[KnownError] = []
    seen: set[str | None] = set()
    for source in (LOCAL, TEAM):
        for error in _known_errors(execute, source, _OF_ROOT, {"root": root}, " LIMIT 200"):
            if error.error_key in seen or not error.error:
                continue
            seen.add(error.error_key)
            found.append(error)
            if len(found) == KNOWN_ERRORS_SHOWN:
                return found
    return found


# --- one procedure whole ---------------------------------------------------------------------


class Detail(Record):
    """One procedure with a page of its evidence, its lessons, and where else in the project
    the errors of its lessons were met: `remem procedures show` and the MCP `procedure` tool."""

    procedure: Procedure
    evidence: EvidencePage
    unverified_runs: int
    lessons: tuple[Lesson, ...]
    same_errors_elsewhere: tuple[KnownError, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            **self.procedure.as_json(),
            "unverified_runs": self.unverified_runs,
            "evidence": [run.as_json() for run in self.evidence.runs],
            "evidence_page": self.evidence.page,
            "evidence_pages": self.evidence.pages,
            "evidence_runs": self.evidence.total,
            "lessons": [lesson.as_json() for lesson in self.lessons],
            "same_errors_elsewhere": [error.as_json() for error in self.same_errors_elsewhere],
        }


def read_detail(
    execute: Execute, procedure_id: int, evidence_page: int = 1, per_page: int = EVIDENCE_PAGE
) -> Detail:
    procedure = read_procedure(execute, procedure_id)
    lessons = read_lessons(execute, procedure_id=procedure_id)
    keys = sorted({lesson.error_key for lesson in lessons if lesson.error_key})
    elsewhere = [
        error
        for error in read_known_errors(execute, procedure.project, keys)
        if error.workflow != procedure.workflow
    ]
    return Detail(
        procedure,
        read_evidence(execute, procedure, evidence_page, per_page),
        unverified_count(execute, procedure_id),
        tuple(lessons),
        tuple(elsewhere),
    )


# --- the digest ------------------------------------------------------------------------------


class Entry:
    """One procedure as the digest shows it, this machine's or the team's."""

    __slots__ = (
        "branch",
        "branches",
        "command",
        "confidence",
        "directory",
        "distinct_sessions",
        "files",
        "files_more",
        "id",
        "inherited",
        "last_verified_at",
        "machines",
        "needs_credentials",
        "pitfalls",
        "scope",
        "source",
        "verified_runs",
        "workflow_hash",
    )

    def __init__(
        self,
        row: Sequence[Any],
        inherited: bool = False,
        source: str = LOCAL,
        machines: int | None = None,
    ) -> None:
        (
            self.id,
            self.command,
            self.scope,
            self.branch,
            self.directory,
            self.workflow_hash,
            self.confidence,
            self.verified_runs,
            self.distinct_sessions,
            branches,
            self.last_verified_at,
            files,
            self.files_more,
        ) = row
        self.branches: list[str] = _list(branches)
        self.files: list[str] = _list(files)
        self.inherited = inherited
        self.source = source
        self.machines = machines  # how many machines the team's evidence comes from
        self.needs_credentials = needs_credentials(self.command)
        self.pitfalls: list[str] = []

    @property
    def whole(self) -> str:
        """The command that shows this procedure whole."""
        kind = "team" if self.source == TEAM else "show"
        return f"remem procedures {kind} {self.id}"

    def as_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__slots__}
        if self.scope == "project":
            data["branch"] = None
        return data


# This machine's procedures and the team's pulled ones alike; the team's add `machines`.
_ENTRIES = (
    "SELECT p.id, p.command, p.scope, p.branch, p.directory, p.workflow_hash, p.confidence, "
    "p.verified_runs, p.distinct_sessions, p.branches, p.last_verified_at, p.files, "
    "p.files_more, p.status{machines} FROM {table} p JOIN projects pr ON pr.id = p.project_id "
    "WHERE pr.root = :root AND (p.scope = 'project' OR p.branch IN ({branches}))"
)
# The pitfall is rendered from the lesson's fields, not read from its stored text: rows written
# by an older wording read as the current one does. The team's lessons have the same fields.
_PITFALLS = (
    "SELECT l.failed_attempts, l.last_error, l.repeats, l.fix_files FROM {table} l "
    "JOIN projects pr ON pr.id = l.project_id "
    "WHERE pr.root = :root AND l.directory = :directory AND l.workflow_hash = :workflow_hash "
    "{branch} ORDER BY l.resolved_at DESC, l.id DESC LIMIT 3"
)
_LESSON_TABLES = {LOCAL: "lessons", TEAM: "team_lessons"}


def read_entries(
    execute: Execute,
    root: str,
    branch: str | None,
    inherit_from: Sequence[str] = ("main", "master"),
    directory: str = ".",
) -> list[Entry]:
    """The procedure that holds for each workflow on this branch (see `choose`), with its
    pitfalls. Those of this directory first, then by confidence, then most recently verified,
    then this machine's before the team's, then id."""
    own = branch or ""
    parents = [parent for parent in inherit_from if parent != own]
    params: dict[str, Any] = {"root": root}
    branches = _names("b", [own, *parents], params)
    local = execute(_ENTRIES.format(machines="", table="procedures", branches=branches), params)
    team = execute(
        _ENTRIES.format(machines=", p.machines", table="team_procedures", branches=branches),
        params,
    )
    entries = choose(local, team, own, parents)
    for entry in entries:
        entry.pitfalls = _pitfalls(execute, root, entry)
    entries.sort(
        key=lambda e: (
            e.directory != directory,
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
) -> list[Entry]:
    """Per workflow (directory, workflow hash), what the branch `own` is shown: this machine's
    choice; where it has none, the team's by the same rules, unless a local procedure of the
    workflow is broken or archived. Rows are `_ENTRIES`'s, of this branch, the project and
    the `parents` it inherits from."""
    mine = _holding(local, own, parents)
    theirs = _holding(team, own, parents)
    hidden = {(row[4], row[5]) for row in local if row[13] in HIDES_TEAM}
    entries = []
    for key in sorted(set(mine) | set(theirs)):
        if key in mine:
            row, inherited = mine[key]
            entries.append(Entry(row[:13], inherited))
        elif key not in hidden:
            row, inherited = theirs[key]
            entries.append(Entry(row[:13], inherited, TEAM, row[14]))
    return entries


def _holding(
    rows: Sequence[Sequence[Any]], own: str, parents: Sequence[str]
) -> dict[tuple[str, str], tuple[Sequence[Any], bool]]:
    """For each workflow, the active row that holds on the branch and whether it is inherited:
    the branch's own verdict first (its broken, stale or archived procedure hides the others),
    then the project-wide one, then the first default branch's."""
    mine: dict[tuple[str, str], Sequence[Any]] = {}
    project: dict[tuple[str, str], Sequence[Any]] = {}
    inherited: dict[tuple[str, str], tuple[int, Sequence[Any]]] = {}
    for row in rows:
        key = (row[4], row[5])
        if row[2] == "project":
            project[key] = row
        elif row[3] == own:
            mine[key] = row
        elif row[13] == ACTIVE:
            rank = parents.index(row[3])
            if key not in inherited or rank < inherited[key][0]:
                inherited[key] = (rank, row)
    holding = {}
    for key in set(mine) | set(project) | set(inherited):
        chosen = _choose(mine.get(key), project.get(key), inherited.get(key, (0, None))[1])
        if chosen is not None:
            holding[key] = chosen
    return holding


def _choose(
    mine: Sequence[Any] | None, project: Sequence[Any] | None, inherited: Sequence[Any] | None
) -> tuple[Sequence[Any], bool] | None:
    if mine is not None and mine[13] != ACTIVE:
        return None  # the branch's own verdict on this workflow
    if project is not None and project[13] == ACTIVE:
        return project, False
    if mine is not None:
        return mine, False
    if inherited is not None:
        return inherited, True
    return None


def _pitfalls(execute: Execute, root: str, entry: Entry) -> list[str]:
    params = {"root": root, "directory": entry.directory, "workflow_hash": entry.workflow_hash}
    where = ""
    if entry.scope != "project":
        where, params["branch"] = "AND l.branch = :branch", entry.branch
    query = _PITFALLS.format(table=_LESSON_TABLES[entry.source], branch=where)
    return [
        pitfall_text(count, last_error, _list(repeats), _list(fix_files))
        for count, last_error, repeats, fix_files in execute(query, params)
    ]


class Context:
    """What the digest holds for a directory: the procedures that hold there and the
    project's known errors. `remem context --json` and the MCP `procedures` tool print it."""

    __slots__ = ("branch", "directory", "known_errors", "procedures", "project")

    def __init__(
        self,
        project: str,
        branch: str | None,
        directory: str,
        procedures: list[Entry],
        known_errors: list[KnownError],
    ) -> None:
        self.project, self.branch, self.directory = project, branch, directory
        self.procedures, self.known_errors = procedures, known_errors

    def as_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "branch": self.branch,
            "directory": self.directory,
            "procedures": [entry.as_json() for entry in self.procedures],
            "known_errors": [error.as_json() for error in self.known_errors],
        }

    def pages(self, max_chars: int, max_lines: int) -> list[str]:
        """The digest's pages: where the SessionStart hook, `remem context` and every other
        reader of the digest get its text."""
        header = digest.header_for(self.project, self.branch, bool(self.procedures))
        return digest.paginate(self.procedures, header, max_chars, max_lines, self.known_errors)


def read_context(
    execute: Execute,
    root: str,
    branch: str | None,
    directory: str,
    inherit_from: Sequence[str] = ("main", "master"),
) -> Context:
    entries = read_entries(execute, root, branch, inherit_from, directory)
    return Context(root, branch, directory, entries, digest_known_errors(execute, root))


# --- counts for `remem status` ---------------------------------------------------------------

# Codex commands whose rollout never showed their end within a day: they never count.
UNRESOLVED_CODEX = (
    "SELECT count(*) FROM captured_events WHERE host = 'codex' AND kind = 'command' "
    "AND outcome = 'unknown' AND captured_at < :before"
)
_EVENTS = "SELECT count(*) FROM captured_events"
_PROCEDURE_COUNTS = "SELECT status, count(*) FROM procedures GROUP BY status"
_DROP_REASONS = "SELECT reason, count(*) FROM dropped_payloads GROUP BY reason"


class Counts(Record):
    events: int
    drops: dict[str, int]  # by reason
    unresolved_codex_events: int
    procedures: dict[str, int]  # by status, every status named


def read_counts(execute: Execute, now: float) -> Counts:
    drops = {str(reason): int(count) for reason, count in execute(_DROP_REASONS, {})}
    procedures = {str(status): int(count) for status, count in execute(_PROCEDURE_COUNTS, {})}
    return Counts(
        int(execute(_EVENTS, {})[0][0]),
        drops,
        int(execute(UNRESOLVED_CODEX, {"before": now - 86_400})[0][0]),
        {status: procedures.get(status, 0) for status in PROCEDURE_STATUSES},
    )
