"""The one read model (DESIGN.md §7): what `remem procedures`, `remem status`, recall, export
and the MCP server read, written once against an `execute(sql, params) -> rows` callable and
returned as small frozen records (remem.record.frozen); the digest's own reads, the hook's
road, are in remem.agent.context.

Stdlib only. A SQLite home is read with sqlite3 (remem.db.snapshot); a command that already
holds an SQLAlchemy engine hands over `remem.db.snapshot.engine_reader(engine)`. Times are epoch
seconds here; remem.json_contract writes them out.
"""

from __future__ import annotations

from remem.agent import usage
from remem.agent.known import KnownError, read_known_errors
from remem.agent.substitutions import Substitution, read_substitutions
from remem.db.vocabulary import ACTIVE
from remem.errors import NotFound
from remem.record.frozen import Record, in_list, json_list
from remem.record.inputs import checked_fields, shown_inputs
from remem.record.quote import needs_credentials, pitfall_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from remem.db.snapshot import Execute

EVIDENCE_PAGE = 50


# --- projects --------------------------------------------------------------------------------

_PROJECTS = "SELECT root FROM projects ORDER BY root"


def read_projects(execute: Execute) -> list[str]:
    """Every project's root, in order."""
    return [str(root) for (root,) in execute(_PROJECTS, {})]


# --- procedures ------------------------------------------------------------------------------


class Variant(Record):
    """A form a procedure's workflow ran as: how often, and how often it verified (None in a
    row written before verified runs were kept per variant)."""

    command: str
    runs: int  # every run, failed and unverified ones too
    verified: int | None = None

    def counted(self) -> str:
        """ "5 runs (3 verified)": what its runs are, beside the procedure's verified runs."""
        runs = f"{self.runs} run{'' if self.runs == 1 else 's'}"
        return runs if self.verified is None else f"{runs} ({self.verified} verified)"


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
    variants: tuple[Variant, ...]
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
    inputs: str = "[]"  # the fingerprints of what it runs, as stored (remem/record/inputs.py)
    # Compared with the project's files when read: the paths of those changed or gone since
    # they were read, those gone, and the labels of those changed (`Makefile (test)`).
    changed_inputs: tuple[str, ...] = ()
    missing_inputs: tuple[str, ...] = ()
    changed_tasks: tuple[str, ...] = ()

    @property
    def needs_credentials(self) -> bool:
        """Whether its command had credentials redacted: it cannot run as stored."""
        return needs_credentials(self.command)

    def as_json(self) -> dict[str, Any]:
        data = self.fields()
        data["variants"] = [variant.fields() for variant in self.variants]
        data["needs_credentials"] = self.needs_credentials
        data["inputs"] = shown_inputs(self.inputs)
        return data


_PROCEDURES = (
    "SELECT p.id, pr.root, p.scope, p.branch, p.directory, p.workflow, p.workflow_hash, "
    "p.command, p.variants, p.status, p.confidence, p.verified_runs, p.distinct_sessions, "
    "p.branches, p.evidence_event_ids, p.files, p.files_more, p.first_verified_at, "
    "p.last_verified_at, p.topic_key, p.body, p.inputs FROM procedures p "
    "JOIN projects pr ON pr.id = p.project_id WHERE 1 = 1{where} "
    "ORDER BY p.confidence DESC, p.last_verified_at DESC, p.id"
)


def _fields(kind: type[Record], row: Sequence[Any]) -> dict[str, Any]:
    """A procedure's row of either table as its record's fields: one that holds on every
    branch has no branch, and the lists the table keeps as JSON are tuples."""
    data = dict(zip(kind._fields[: len(row)], row, strict=True))
    if data["scope"] == "project":
        data["branch"] = None
    for name in ("branches", "evidence_event_ids", "files"):
        if name in data:
            data[name] = tuple(json_list(data[name]))
    # What it runs, compared with the files of the project as they are now.
    data.update(checked_fields(data["inputs"], data["project"]))
    return data


def _procedure(row: Sequence[Any]) -> Procedure:
    data = _fields(Procedure, row)
    data["variants"] = tuple(
        Variant(v["command"], int(v["runs"]), v.get("verified"))
        for v in json_list(data["variants"])
    )
    return Procedure(**data)


def read_procedures(
    execute: Execute,
    project: str | None = None,
    branch: str | None = None,
    statuses: Sequence[str] | None = (ACTIVE,),
    limit: int | None = None,
) -> list[Procedure]:
    """By confidence, then most recently verified, then id (a stable order). A branch's are
    its own procedures and those that hold on every branch, one per workflow: where one holds
    on every branch, the branch's row of that workflow is the same procedure, not another."""
    where, params = "", {}
    if project is not None:
        where, params["project"] = " AND pr.root = :project", project
    if branch is not None:
        where += " AND (p.branch = :branch OR p.scope = 'project')"
        params["branch"] = branch
    if statuses:
        where += f" AND p.status IN ({in_list('status', statuses, params)})"
    query = _PROCEDURES.format(where=where)
    if limit is not None:
        query += f" LIMIT {int(limit)}"
    found = [_procedure(row) for row in execute(query, params)]
    if branch is None:
        return found
    wide = {(p.project, p.directory, p.workflow_hash) for p in found if p.scope == "project"}
    return [
        p
        for p in found
        if p.scope == "project" or (p.project, p.directory, p.workflow_hash) not in wide
    ]


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


class EvidencePage(Record):
    """One page of a procedure's evidence, newest first."""

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
    runs = sorted(
        (EvidenceRun(*row) for row in rows), key=lambda run: (run.at, run.event_id), reverse=True
    )
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
        from remem.procedures.lesson_text import AttemptDetail

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
        values[6] = tuple(json_list(values[6]))
        attempts.setdefault(row[0], []).append(Attempt(*values))
    return [
        _lesson(row, tuple(attempts.get(row[0], ())))
        for row in execute(_LESSONS.format(where=where), params)
    ]


def _lesson(row: Sequence[Any], attempts: tuple[Attempt, ...]) -> Lesson:
    (lesson_id, root, branch, directory, failed, first_error, last_error, error_key,
     fix_files, repeats, body, resolved_by, resolved_at, procedure_id, status) = row  # fmt: skip
    fix_files = tuple(json_list(fix_files))
    repeats = tuple((int(n), int(of)) for n, of in json_list(repeats))
    if attempts and len(attempts) == failed:
        from remem.procedures.lesson_text import distill

        # Told again from its whole journal: in the current wording, whenever stored.
        body = distill([a.detail() for a in attempts], fix_files, resolved_at).body
    return Lesson(
        lesson_id, root, branch, directory, failed, first_error, last_error or None, error_key,
        fix_files, repeats, pitfall_text(failed, last_error, repeats, fix_files), body,
        resolved_by, resolved_at, procedure_id, status or "no procedure", attempts,
    )  # fmt: skip


# --- one procedure whole ---------------------------------------------------------------------


class Detail(Record):
    """One procedure with a page of its evidence, its lessons, and where else in the project
    the errors of its lessons were met: `remem procedures show` and the MCP `procedure` tool."""

    procedure: Procedure
    evidence: EvidencePage
    unverified_runs: int
    lessons: tuple[Lesson, ...]
    same_errors_elsewhere: tuple[KnownError, ...]
    known_errors: tuple[KnownError, ...] = ()
    # What passed instead of this workflow where it failed, and what this one replaced.
    substitutions: tuple[Substitution, ...] = ()
    # Followed after the digest showed it, then failed, and not verified since: ranked down.
    followed_then_failed_at: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            **self.procedure.as_json(),
            "followed_then_failed_at": self.followed_then_failed_at,
            "unverified_runs": self.unverified_runs,
            "evidence": [run.as_json() for run in self.evidence.runs],
            "evidence_page": self.evidence.page,
            "evidence_pages": self.evidence.pages,
            "evidence_runs": self.evidence.total,
            "lessons": [lesson.as_json() for lesson in self.lessons],
            "same_errors_elsewhere": [error.as_json() for error in self.same_errors_elsewhere],
            "known_errors": [error.as_json() for error in self.known_errors],
            "substitutions": [found.as_json() for found in self.substitutions],
        }


def read_detail(
    execute: Execute, procedure_id: int, evidence_page: int = 1, per_page: int = EVIDENCE_PAGE
) -> Detail:
    procedure = read_procedure(execute, procedure_id)
    lessons = read_lessons(execute, procedure_id=procedure_id)
    own = [
        error
        for error in read_known_errors(execute, procedure.project)
        if (error.directory, error.workflow) == (procedure.directory, procedure.workflow)
        and (procedure.scope == "project" or error.branch == procedure.branch)
    ]
    keys = sorted(
        {lesson.error_key for lesson in lessons if lesson.error_key}
        | {error.error_key for error in own if error.error_key}
    )
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
        tuple(own),
        tuple(read_substitutions(execute, procedure.project, [procedure.workflow_hash])),
        _followed_then_failed(execute, procedure),
    )


def _followed_then_failed(execute: Execute, procedure: Procedure) -> float | None:
    use = usage.read_use(execute, procedure.project).get(
        (procedure.directory, procedure.workflow_hash)
    )
    if use is None or not usage.failing_since(use, procedure.last_verified_at):
        return None
    return use.failed_at


# --- the team's procedures, as pulled -------------------------------------------------------


class TeamProcedure(Record):
    """A team procedure as it was pulled into this database (remem/team/pull.py), whatever its
    status: what `remem procedures team` shows. `id` is this database's row."""

    id: int
    project: str
    team_procedure_id: int
    scope: str
    branch: str | None  # None when it holds on every branch of the project
    directory: str
    workflow: str
    command: str
    status: str
    confidence: float
    verified_runs: int
    distinct_sessions: int
    machines: int
    branches: tuple[str, ...]
    files: tuple[str, ...]
    files_more: int
    first_verified_at: float
    last_verified_at: float
    body: str
    pulled_at: float
    inputs: str = "[]"  # as a machine of the team read them; compared with this checkout
    changed_inputs: tuple[str, ...] = ()
    missing_inputs: tuple[str, ...] = ()
    changed_tasks: tuple[str, ...] = ()

    @property
    def needs_credentials(self) -> bool:
        return needs_credentials(self.command)

    def as_json(self) -> dict[str, Any]:
        return {
            **self.fields(),
            "needs_credentials": self.needs_credentials,
            "inputs": shown_inputs(self.inputs),
        }


_TEAM_PROCEDURES = (
    "SELECT t.id, pr.root, t.team_procedure_id, t.scope, t.branch, t.directory, t.workflow, "
    "t.command, t.status, t.confidence, t.verified_runs, t.distinct_sessions, t.machines, "
    "t.branches, t.files, t.files_more, t.first_verified_at, t.last_verified_at, t.body, "
    "t.pulled_at, t.inputs FROM team_procedures t JOIN projects pr ON pr.id = t.project_id "
    "WHERE {where} "
    "ORDER BY t.confidence DESC, t.last_verified_at DESC, t.id"
)


def read_team_procedures(execute: Execute, root: str) -> list[TeamProcedure]:
    """The team's procedures pulled for the project, by confidence, then most recently
    verified, then id."""
    rows = execute(_TEAM_PROCEDURES.format(where="pr.root = :root"), {"root": root})
    return [TeamProcedure(**_fields(TeamProcedure, row)) for row in rows]


def read_team_procedure(execute: Execute, row_id: int) -> TeamProcedure | None:
    rows = execute(_TEAM_PROCEDURES.format(where="t.id = :id"), {"id": row_id})
    return TeamProcedure(**_fields(TeamProcedure, rows[0])) if rows else None
