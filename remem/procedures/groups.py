"""A workflow group -> its procedure: the runs are read, the policy decides, the row is written
only when something changed.

A branch group is (project, branch, directory, workflow); its project group is the same
workflow on every branch of the project, promoted when it was verified on at least two.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection, text

from remem.procedures import journal, lessons, policy
from remem.procedures.digest import needs_credentials

BRANCH, PROJECT = "branch", "project"
VARIANTS_KEPT = 10
FILES_FROM_LAST_RUNS = 10
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

    def project_wide(self) -> Group:
        return replace(self, scope=PROJECT, branch="")

    def sort_key(self) -> tuple[int, str, str, str, str]:
        return (self.project_id, self.scope, self.branch, self.directory, self.workflow_hash)


def load_runs(connection: Connection, group: Group) -> list[policy.Run]:
    if group.scope == BRANCH:
        return journal.load_history(connection, group.params()).runs()
    where = group.where()
    query = text(
        f"SELECT event_id, session_id, verified_at, 1, branch FROM verifications WHERE {where} "
        f"UNION ALL SELECT event_id, session_id, failed_at, 0, branch FROM attempts WHERE {where}"
    )
    found: dict[tuple[int, bool], policy.Run] = {}
    for event_id, session_id, at, succeeded, branch in connection.execute(
        query, group.params()
    ).all():
        run = policy.Run(event_id, session_id, at, bool(succeeded), branch)
        found[(event_id, run.succeeded)] = run
    return list(found.values())


def _on_two_branches(connection: Connection, group: Group) -> bool:
    query = text(
        "SELECT count(*) FROM (SELECT DISTINCT branch FROM verifications "
        f"WHERE {group.where()} AND branch != '' LIMIT 2) AS named"
    )
    return int(connection.execute(query, group.params()).scalar_one()) >= PROJECT_MIN_BRANCHES


def variants(
    connection: Connection, group: Group, history: journal.History | None = None
) -> list[tuple[str, bool, int, int]]:
    """(command, masked, verified runs, all runs) of each way the workflow was written; from
    the group's history when the caller has read it, else from the tables."""
    where = group.where()
    if history is None:
        query = text(
            "SELECT command, masked, sum(verified), count(*) FROM ("
            f"SELECT command, masked, 1 AS verified FROM verifications WHERE {where} "
            f"UNION ALL SELECT command, masked, 0 FROM attempts WHERE {where} "
            f"UNION ALL SELECT command, masked, 0 FROM unverified_runs WHERE {where}"
            ") AS runs GROUP BY command, masked"
        )
        return [
            (command, bool(masked), int(verified), int(runs))
            for command, masked, verified, runs in connection.execute(query, group.params()).all()
        ]
    runs: Counter[tuple[str, bool]] = Counter()
    verified: Counter[tuple[str, bool]] = Counter()
    for row in history.successes.values():
        verified[(row.command, bool(row.masked))] += 1
    runs.update(verified)
    runs.update((row.command, bool(row.masked)) for row in history.attempts.values())
    query = text(
        f"SELECT command, masked, count(*) FROM unverified_runs WHERE {where} "
        "GROUP BY command, masked"
    )
    for command, masked, count in connection.execute(query, group.params()).all():
        runs[(command, bool(masked))] += int(count)
    return [
        (command, masked, verified[(command, masked)], n) for (command, masked), n in runs.items()
    ]


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
    return best[0]


def variant_counts(found: list[tuple[str, bool, int, int]]) -> list[dict[str, Any]]:
    ordered = sorted(found, key=lambda v: (-v[3], v[0]))
    return [{"command": command, "runs": runs} for command, _m, _v, runs in ordered][:VARIANTS_KEPT]


def latest_evidence(runs: list[policy.Run], evidence: tuple[int, ...]) -> list[tuple[int, int]]:
    """(session, event) of the latest evidence runs whose files are looked for."""
    sessions = {run.event_id: run.session_id for run in runs if run.succeeded}
    return [
        (sessions[event_id], event_id)
        for event_id in evidence[-FILES_FROM_LAST_RUNS:]
        if event_id in sessions
    ]


# The files edited right before one run: in its own session, after the session's previous run
# of any workflow (verified, failed or unverified), up to the run itself. An edit the agent made
# before running something else belongs to that other run, not to every later one.
_PREVIOUS_RUN = (
    "SELECT p.id FROM captured_events p WHERE p.session_id = :s{i} AND p.id < :run{i} "
    "AND p.kind = 'command' AND (EXISTS (SELECT 1 FROM verifications v WHERE v.event_id = p.id) "
    "OR EXISTS (SELECT 1 FROM attempts a WHERE a.event_id = p.id) "
    "OR EXISTS (SELECT 1 FROM unverified_runs u WHERE u.event_id = p.id)) "
    "ORDER BY p.id DESC LIMIT 1"
)
_EDITED_BEFORE_RUN = (
    "SELECT {i} AS run, e.files FROM captured_events e WHERE e.session_id = :s{i} "
    "AND e.id <= :run{i} AND e.files IS NOT NULL "
    f"AND e.id > COALESCE(({_PREVIOUS_RUN}), 0)"
)


def ranked_files(
    connection: Connection, runs: list[policy.Run], evidence: tuple[int, ...]
) -> tuple[list[str], int]:
    """The files most often edited right before the group's latest verified runs, in each
    run's own session: at most 5, and how many more."""
    latest = latest_evidence(runs, evidence)
    if not latest:
        return [], 0
    # One statement, one index range per run.
    query = " UNION ALL ".join(_EDITED_BEFORE_RUN.format(i=i) for i in range(len(latest)))
    params: dict[str, Any] = {}
    for i, (session_id, event_id) in enumerate(latest):
        params.update({f"s{i}": session_id, f"run{i}": event_id})
    before: dict[int, set[str]] = {}
    for run, encoded in connection.execute(text(query), params).all():
        before.setdefault(run, set()).update(json.loads(encoded))
    return policy.rank_files(lessons.in_project(sorted(names)) for names in before.values())


SELECT_PROCEDURE = text(
    "SELECT id, status, command, variants, confidence, verified_runs, distinct_sessions, "
    "branches, evidence_event_ids, files, files_more, body FROM procedures "
    "WHERE project_id = :project_id AND scope = :scope AND branch = :branch "
    "AND directory = :directory AND workflow_hash = :workflow_hash"
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
    "first_verified_at, last_verified_at, created_at, updated_at, " + ", ".join(COMPARED)
)
_INSERT_VALUES = (
    ":project_id, :scope, :branch, :directory, :workflow, :workflow_hash, :topic_key, "
    ":first_verified_at, :last_verified_at, :created_at, :now, "
    + ", ".join(f":{name}" for name in COMPARED)
)
INSERT_PROCEDURE = text(f"INSERT INTO procedures ({_INSERT_COLUMNS}) VALUES ({_INSERT_VALUES})")
INSERT_PROCEDURE_WITH_ID = text(
    f"INSERT INTO procedures (id, {_INSERT_COLUMNS}) VALUES (:id, {_INSERT_VALUES})"
)
# The identity a rebuild kept for this group: taken once, by the procedure re-derived for it.
TAKE_IDENTITY = text(
    "DELETE FROM procedure_identities WHERE project_id = :project_id AND scope = :scope "
    "AND branch = :branch AND directory = :directory AND workflow_hash = :workflow_hash "
    "RETURNING procedure_id, created_at"
)


def _key(group: Group) -> dict[str, Any]:
    return {**group.params(), "scope": group.scope, "branch": group.branch}


def _values(
    connection: Connection,
    group: Group,
    decision: policy.Decision,
    now: float,
    runs: list[policy.Run],
    existing: Any = None,
    history: journal.History | None = None,
) -> dict[str, Any]:
    found = variants(connection, group, history)
    command = recommended(found, group.workflow)
    evidence = json.dumps(list(decision.evidence_event_ids))
    if existing is not None and existing.evidence_event_ids == evidence:
        # Files come from the edits before the evidence runs: same runs, same files.
        files, files_more = json.loads(existing.files), existing.files_more
    else:
        files, files_more = ranked_files(connection, runs, decision.evidence_event_ids)
    root = group.root or connection.execute(SELECT_ROOT, {"id": group.project_id}).scalar_one()
    where = policy.Where(root, group.branch, group.directory, group.scope == PROJECT)
    return {
        "status": decision.status,
        "command": command,
        "variants": json.dumps(variant_counts(found), ensure_ascii=False),
        "confidence": decision.confidence,
        "verified_runs": decision.verified_runs,
        "distinct_sessions": decision.distinct_sessions,
        "branches": json.dumps(list(decision.branches)),
        "evidence_event_ids": evidence,
        "files": json.dumps(files),
        "files_more": files_more,
        "body": policy.render_body(command, where, decision, files, files_more),
        "first_verified_at": decision.first_verified_at,
        "last_verified_at": decision.last_verified_at,
        "now": now,
    }


def evaluate(
    connection: Connection,
    group: Group,
    rules: policy.Rules,
    now: float,
    history: journal.History | None = None,
) -> str:
    """Re-decide one group's procedure and store it if anything changed. Returns what happened:
    promoted, refreshed, broken, stale, unchanged or unpromoted. A caller that has read a
    branch group's history passes it."""
    existing = connection.execute(SELECT_PROCEDURE, _key(group)).first()
    status = existing.status if existing else None
    if existing is None and group.scope == PROJECT and not _on_two_branches(connection, group):
        return "unpromoted"  # the common case, answered without reading the history
    runs = history.runs() if history is not None else load_runs(connection, group)
    min_branches = PROJECT_MIN_BRANCHES if group.scope == PROJECT else 1
    decision = policy.decide(runs, status, rules, now, min_branches)
    if decision is None:
        return "unpromoted" if existing is None else "unchanged"
    values = _values(connection, group, decision, now, runs, existing, history)
    if existing is None:
        topic = policy.topic_key(group.workflow, (group.scope, group.branch, group.directory))
        params = {**values, **_key(group), "workflow": group.workflow, "topic_key": topic}
        identity = connection.execute(TAKE_IDENTITY, _key(group)).first()
        if identity is None:
            connection.execute(INSERT_PROCEDURE, {**params, "created_at": now})
        else:
            params.update(id=identity.procedure_id, created_at=identity.created_at)
            connection.execute(INSERT_PROCEDURE_WITH_ID, params)
        return "promoted"
    if tuple(getattr(existing, key) for key in COMPARED) == tuple(values[k] for k in COMPARED):
        return "unchanged"
    connection.execute(UPDATE_PROCEDURE, {**values, "id": existing.id})
    if decision.status != status and decision.status in (policy.BROKEN, policy.STALE):
        return decision.status
    return "refreshed"
