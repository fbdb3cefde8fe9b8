"""A workflow group -> its procedure: the tally decides, the row is written only when
something changed.

A branch group is (project, branch, directory, workflow); its project group is the same
workflow on every branch of the project, promoted when it was verified on at least two.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from sqlalchemy import bindparam, text

from remem.db.driver import Driver, Rounds
from remem.procedures import evidence, policy
from remem.procedures.tally import Tally, variant_rows
from remem.procedures.tally import decide as decide_from_tally
from remem.record.quote import needs_credentials
from remem.shell.analysis import analyse
from remem.shell.arguments import file_identity

BRANCH, PROJECT = "branch", "project"
VARIANTS_KEPT = 10
# A family's variants are the files it ran on: more are kept, so that their count is told.
FAMILY_VARIANTS_KEPT = 100
PROJECT_MIN_BRANCHES = 2


@dataclass(frozen=True)
class Group:
    project_id: int
    scope: str
    branch: str  # '' for a project group
    directory: str
    workflow: str
    workflow_hash: str
    root: str = ""  # the project's root, for the body; not part of the key

    def params(self) -> dict[str, Any]:
        params = {
            "project_id": self.project_id,
            "directory": self.directory,
            "workflow_hash": self.workflow_hash,
        }
        if self.scope == BRANCH:
            params["branch"] = self.branch
        return params

    def where(self, alias: str = "") -> str:
        prefix = f"{alias}." if alias else ""
        names = ["project_id", "directory", "workflow_hash"]
        if self.scope == BRANCH:
            names.append("branch")
        return " AND ".join(f"{prefix}{name} = :{name}" for name in names)

    def key(self) -> dict[str, Any]:
        return {**self.params(), "scope": self.scope, "branch": self.branch}

    def project_wide(self) -> Group:
        return replace(self, scope=PROJECT, branch="")

    def min_branches(self) -> int:
        return PROJECT_MIN_BRANCHES if self.scope == PROJECT else 1

    def sort_key(self) -> tuple[int, str, str, str, str]:
        return (self.project_id, self.scope, self.branch, self.directory, self.workflow_hash)


@lru_cache(maxsize=64)
def scoped_statement(template: str, scope: str) -> Any:
    """A statement over one scope's group key (`{where}` in the template), built once: the
    driver compiles each statement object once."""
    return text(template.format(where=Group(0, scope, "", "", "", "").where()))


def send_by_group(
    connection: Driver, statement: Any, groups: Iterable[Group]
) -> Callable[[], dict[Group, Any]]:
    """Each group's row (None when it has none) by a statement over one project's workflow
    hashes (`:project_id`, `IN :hashes`, selecting scope, branch, directory and
    workflow_hash): one statement per project, sent; the rows once called."""
    by_project: dict[int, list[Group]] = {}
    for group in groups:
        by_project.setdefault(group.project_id, []).append(group)
    sent = []
    for project_id, members in by_project.items():
        params = {"project_id": project_id, "hashes": sorted({g.workflow_hash for g in members})}
        sent.append((members, connection.execute(statement, params)))

    def rows() -> dict[Group, Any]:
        found: dict[Group, Any] = {}
        for members, result in sent:
            wanted = {(g.scope, g.branch, g.directory, g.workflow_hash): g for g in members}
            found.update(dict.fromkeys(members))
            for row in result:
                match = wanted.get((row.scope, row.branch, row.directory, row.workflow_hash))
                if match is not None:
                    found[match] = row
        return found

    return rows


def recommended(found: list[tuple[str, bool, int, int]], workflow: str) -> str:
    """The unmasked variant verified most often; else the workflow itself, which is the masked
    variants' command without the filter that hid its status. One that runs as stored comes
    before one whose credentials were redacted, whatever their counts."""
    unmasked = [v for v in found if not v[1] and v[2] > 0]
    if not unmasked:
        return workflow
    best = min(unmasked, key=lambda v: (needs_credentials(v[0]), -v[2], -v[3], len(v[0]), v[0]))
    verified_masked = any(v[1] and v[2] > 0 for v in found)
    if needs_credentials(best[0]) and verified_masked and not needs_credentials(workflow):
        return workflow  # the redaction was in the filter a verified masked variant dropped
    return _as_it_runs(best[0], workflow)


def _as_it_runs(command: str, workflow: str) -> str:
    """A variant that is its workflow but for how one run spelt it (spaces, `2>&1`, a wrapper
    such as `timeout 60`) shows as the workflow: the next session runs the command, not the
    spelling, and one spelling is no better than another."""
    steps = analyse(command).steps
    if len(steps) == 1 and steps[0].workflow == workflow:
        return workflow
    return command


def variant_counts(found: list[tuple[str, bool, int, int]]) -> list[dict[str, Any]]:
    ordered = sorted(found, key=lambda v: (-v[3], v[0]))
    return [_counts(command, runs, verified) for command, _m, verified, runs in ordered][
        :VARIANTS_KEPT
    ]


def _counts(command: str, runs: int, verified: int) -> dict[str, Any]:
    """A variant as stored: its runs, failed and unverified ones too, and its verified runs."""
    return {"command": command, "runs": runs, "verified": verified}


Variant = tuple[str, bool, int, int]


def shown(
    found: list[Variant], workflow: str, directory: str = ".", root: str = ""
) -> tuple[str, list[dict[str, Any]]]:
    """The command a procedure shows and its variants. A family (`gofmt -w <file>`) run on
    several files shows its placeholder form, its variants one per set of files (however
    each run spelt them); run on one file, it shows that command as any workflow does."""
    by_files: dict[tuple[str, ...], list[Variant]] = {}
    for variant in found:
        named = _files_named(variant[0], workflow)
        files = tuple(file_identity(name, directory, root) for name in named)
        by_files.setdefault(files, []).append(variant)
    if len(by_files) < 2 or () in by_files:
        return recommended(found, _actual_workflow(found, workflow)), variant_counts(found)
    per_files = []
    for variants in by_files.values():
        best = min(variants, key=lambda v: (v[1], -v[3], len(v[0]), v[0]))
        per_files.append((best[0], sum(v[3] for v in variants), sum(v[2] for v in variants)))
    per_files.sort(key=lambda item: (-item[1], item[0]))
    kept = per_files[:FAMILY_VARIANTS_KEPT]
    return workflow, [_counts(command, runs, verified) for command, runs, verified in kept]


def _files_named(command: str, workflow: str) -> tuple[str, ...]:
    """The files a variant of a family names; () when the group is no family."""
    for step in analyse(command).steps:
        if step.family == workflow and step.files:
            return step.files
    return ()


def _actual_workflow(found: list[Variant], workflow: str) -> str:
    """A family seen on one set of files is shown as it ran: its workflow without
    placeholders is that of its variants."""
    if not found or not _files_named(found[0][0], workflow):
        return workflow
    return next(s.workflow for s in analyse(found[0][0]).steps if s.family == workflow)


_PROCEDURE_COLUMNS = (
    "SELECT id, status, command, variants, confidence, verified_runs, distinct_sessions, "
    "branches, evidence_event_ids, files, files_more, body, scope, branch, directory, "
    "workflow_hash FROM procedures WHERE project_id = :project_id "
)
SELECT_PROCEDURE = text(
    _PROCEDURE_COLUMNS + "AND scope = :scope AND branch = :branch "
    "AND directory = :directory AND workflow_hash = :workflow_hash"
)
# The procedures of a window's groups, a project's at a time (send_by_group).
SELECT_PROCEDURES = text(_PROCEDURE_COLUMNS + "AND workflow_hash IN :hashes").bindparams(
    bindparam("hashes", expanding=True)
)
SELECT_ROOT = text("SELECT root FROM projects WHERE id = :id")
# What makes a stored procedure differ from a fresh decision (timestamps follow these).
COMPARED = (
    "status",
    "command",
    "variants",
    "confidence",
    "verified_runs",
    "distinct_sessions",
    "branches",
    "evidence_event_ids",
    "files",
    "files_more",
    "body",
)
UPDATE_PROCEDURE = text(
    "UPDATE procedures SET "
    + ", ".join(f"{name} = :{name}" for name in COMPARED)
    + ", first_verified_at = :first_verified_at, last_verified_at = :last_verified_at, "
    "updated_at = :now WHERE id = :id"
)
_INSERT_COLUMNS = (
    "project_id, scope, branch, directory, workflow, workflow_hash, topic_key, "
    "first_verified_at, last_verified_at, created_at, updated_at, inputs, inputs_read_at, "
    + ", ".join(COMPARED)
)
_INSERT_VALUES = (
    ":project_id, :scope, :branch, :directory, :workflow, :workflow_hash, :topic_key, "
    ":first_verified_at, :last_verified_at, :created_at, :now, :inputs, :inputs_read_at, "
    + ", ".join(f":{name}" for name in COMPARED)
)
INSERT_PROCEDURE = text(
    f"INSERT INTO procedures ({_INSERT_COLUMNS}) VALUES ({_INSERT_VALUES}) RETURNING id"
)
INSERT_PROCEDURE_WITH_ID = text(
    f"INSERT INTO procedures (id, {_INSERT_COLUMNS}) VALUES (:id, {_INSERT_VALUES})"
)
# The identity a rebuild kept for this group: taken once, by the procedure re-derived for it.
TAKE_IDENTITY = text(
    "DELETE FROM procedure_identities WHERE project_id = :project_id AND scope = :scope "
    "AND branch = :branch AND directory = :directory AND workflow_hash = :workflow_hash "
    "RETURNING procedure_id, created_at, inputs, inputs_read_at"
)
INSERT_EVIDENCE = text(
    "INSERT INTO procedure_evidence (procedure_id, event_id, verified_at) "
    "VALUES (:procedure_id, :event_id, :verified_at) ON CONFLICT DO NOTHING"
)

_FILL_EVIDENCE = (
    "INSERT INTO procedure_evidence (procedure_id, event_id, verified_at) "
    "SELECT DISTINCT CAST(:procedure_id AS INTEGER), event_id, verified_at FROM verifications "
    "WHERE {where} ON CONFLICT DO NOTHING"
)


def _fill_evidence(connection: Driver, group: Group, procedure_id: int) -> None:
    """A newly promoted procedure's evidence: every verified run of its group, read once."""
    connection.execute(
        scoped_statement(_FILL_EVIDENCE, group.scope),
        {**group.params(), "procedure_id": procedure_id},
    )


# json.dumps(…, ensure_ascii=False), its encoder made once.
_dumps_unicode = json.JSONEncoder(ensure_ascii=False).encode


def _values(
    connection: Driver,
    group: Group,
    tally: Tally,
    decision: policy.Decision,
    procedure_id: int,
    now: float,
    existing: Any = None,
    known: evidence.Evidence | None = None,
) -> Rounds[dict[str, Any]]:
    since = tally.cutoff if tally.fresh_runs else float("-inf")
    root_sent = None if group.root else connection.execute(SELECT_ROOT, {"id": group.project_id})
    if known is None:
        latest_sent = evidence.send_latest(connection, procedure_id, since)
        yield
        latest = latest_sent()
    else:
        if root_sent is not None:
            yield
        latest = known.latest(since)
    root = group.root if root_sent is None else root_sent.scalar_one()
    command, variants = shown(variant_rows(tally), group.workflow, group.directory, root)
    listed = json.dumps(sorted(event_id for event_id, _session in latest))
    if existing is not None and existing.evidence_event_ids == listed:
        # Files come from the edits before the evidence runs: same runs, same files.
        files, files_more = json.loads(existing.files), existing.files_more
    else:
        newest = latest[: evidence.FILES_FROM_LAST_RUNS]
        if known is not None and all(event in known.edited for event, _session in newest):
            edited = [known.edited[event] for event, _session in newest]
        else:
            runs = [(session, event) for event, session in newest]
            edited_sent = evidence.send_files_before(connection, runs)
            yield
            edited = list(edited_sent().values())
        files, files_more = evidence.rank(edited)
    where = policy.Where(root, group.branch, group.directory, group.scope == PROJECT)
    return {
        "status": decision.status,
        "command": command,
        "variants": _dumps_unicode(variants),
        "confidence": decision.confidence,
        "verified_runs": decision.verified_runs,
        "distinct_sessions": decision.distinct_sessions,
        "branches": json.dumps(list(decision.branches)),
        "evidence_event_ids": listed,
        "files": json.dumps(files),
        "files_more": files_more,
        "body": policy.render_body(command, where, decision, files, files_more),
        "first_verified_at": decision.first_verified_at,
        "last_verified_at": decision.last_verified_at,
        "now": now,
    }


def send_procedures(connection: Driver, groups: Iterable[Group]) -> Callable[[], dict[Group, Any]]:
    """The groups' procedure rows (None: no procedure), sent for evaluate to read."""
    return send_by_group(connection, SELECT_PROCEDURES, groups)


UNREAD = object()


def evaluate(
    connection: Driver,
    group: Group,
    tally: Tally,
    now: float,
    new_evidence: list[dict[str, Any]] | None = None,
    known: evidence.Evidence | None = None,
    existing: Any = UNREAD,
) -> Rounds[str]:
    """Re-decide one group's procedure from its tally and store it if anything changed.
    `new_evidence` are the window's verified runs of the group ({event_id, verified_at});
    `known` its procedure's evidence as the window's prepare read it, with them added;
    `existing` its procedure row as send_procedures read it once the group's tally was
    written (UNREAD: read it here).
    Returns what happened: promoted, refreshed, broken, stale, unchanged or unpromoted.
    Work that reads in rounds (remem/db/driver.py): `run` runs it alone."""
    if existing is UNREAD:
        sent = connection.execute(SELECT_PROCEDURE, group.key())
        yield
        existing = sent.first()
    status = existing.status if existing else None
    decision = decide_from_tally(tally, status)
    if decision is None:
        return "unpromoted" if existing is None else "unchanged"
    if existing is None:
        yield from _promote(connection, group, tally, decision, now)
        return "promoted"
    if new_evidence:
        connection.execute(
            INSERT_EVIDENCE, [{**row, "procedure_id": existing.id} for row in new_evidence]
        )
    if known is not None and known.procedure_id != existing.id:
        known = None  # the procedure was deleted and promoted again meanwhile
    values = yield from _values(
        connection, group, tally, decision, existing.id, now, existing, known
    )
    if tuple(getattr(existing, key) for key in COMPARED) == tuple(values[k] for k in COMPARED):
        return "unchanged"
    connection.execute(UPDATE_PROCEDURE, {**values, "id": existing.id})
    if decision.status != status and decision.status in (policy.BROKEN, policy.STALE):
        return decision.status
    return "refreshed"


_PLACEHOLDER = {
    "command": "",
    "variants": "[]",
    "evidence_event_ids": "[]",
    "files": "[]",
    "files_more": 0,
    "body": "",
    "branches": "[]",
    "inputs": "[]",
    "inputs_read_at": None,
}


def _promote(
    connection: Driver, group: Group, tally: Tally, decision: policy.Decision, now: float
) -> Rounds[None]:
    """Insert the procedure (with the id a rebuild kept for its group), then its evidence, then
    what is derived from the evidence."""
    topic = policy.topic_key(group.workflow, (group.scope, group.branch, group.directory))
    params = {
        **_PLACEHOLDER,
        **group.key(),
        "workflow": group.workflow,
        "topic_key": topic,
        "status": decision.status,
        "confidence": decision.confidence,
        "verified_runs": decision.verified_runs,
        "distinct_sessions": decision.distinct_sessions,
        "first_verified_at": decision.first_verified_at,
        "last_verified_at": decision.last_verified_at,
        "now": now,
    }
    sent = connection.execute(TAKE_IDENTITY, group.key())
    yield
    identity = sent.first()
    if identity is None:
        sent = connection.execute(INSERT_PROCEDURE, {**params, "created_at": now})
        yield
        procedure_id = sent.scalar_one()
    else:
        procedure_id = identity.procedure_id
        params.update(
            id=procedure_id,
            created_at=identity.created_at,
            inputs=identity.inputs,
            inputs_read_at=identity.inputs_read_at,
        )
        connection.execute(INSERT_PROCEDURE_WITH_ID, params)
    _fill_evidence(connection, group, procedure_id)
    values = yield from _values(connection, group, tally, decision, procedure_id, now)
    connection.execute(UPDATE_PROCEDURE, {**values, "id": procedure_id})
