"""A team procedure as this machine stores it: made here from the team's fields, never its
text taken as it is. Pure: the pull (remem/team/pull.py) reads, this decides.

The team database is written by every member's daemon, and by whoever else holds its URL: a
row there may say anything. So a procedure's figures are bounded by the evidence the team
holds for it (runs, sessions, machines, first and last verified), its confidence by what those
runs earn, its lists are read as lists of names, and its body, the text MCP and `remem
procedures team show` return, is rendered here by the same function that renders a local
procedure's (remem/procedures/policy.py), which quotes every recorded name in it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from remem.db.schema import SCOPES
from remem.procedures import policy

# What a team procedure may be: an archived one is never pulled.
PULLED_STATUSES = (policy.ACTIVE, policy.BROKEN, policy.STALE)
MAX_FILES = policy.FILES_KEPT
MAX_BRANCHES = 100
# The server's (procedure id -> count, sessions, machines, first, last) of its evidence.
Held = tuple[int, int, int, float, float]


def made_here(
    rows: Iterable[dict[str, Any]], root: str, now: float, max_age_s: float
) -> list[dict[str, Any]]:
    """The team's procedure rows as stored here: those with evidence and a known status and
    scope, their figures bounded by it, their body rendered here."""
    made = []
    for row in rows:
        held = row.pop("evidence", None)
        if not held or row["status"] not in PULLED_STATUSES or row["scope"] not in SCOPES:
            continue
        made.append(_made(row, held, root, now, max_age_s))
    return made


def _made(
    row: dict[str, Any], held: Sequence[Any], root: str, now: float, max_age_s: float
) -> dict[str, Any]:
    runs, sessions, machines, first, last = held
    verified_runs = max(1, min(_count(row["verified_runs"]), int(runs)))
    distinct_sessions = max(1, min(_count(row["distinct_sessions"]), int(sessions), verified_runs))
    branches = _names(row["branches"], MAX_BRANCHES)
    files = _names(row["files"], MAX_FILES)
    decision = policy.Decision(
        status=row["status"],
        confidence=min(max(_number(row["confidence"]), 0.0), policy.confidence(verified_runs, 0)),
        verified_runs=verified_runs,
        distinct_sessions=distinct_sessions,
        evidence_event_ids=(),
        first_verified_at=float(first),
        last_verified_at=float(last),
        branches=tuple(branches),
        lately=float(last) >= now - max_age_s,
    )
    project_wide = row["scope"] == "project"
    where = policy.Where(root, row["branch"] or "", row["directory"] or ".", project_wide)
    files_more = min(_count(row["files_more"]), 10_000)
    return {
        **row,
        "status": decision.status,
        "confidence": decision.confidence,
        "verified_runs": verified_runs,
        "distinct_sessions": distinct_sessions,
        "machines": max(1, min(int(machines), distinct_sessions)),
        "branches": json.dumps(branches),
        "files": json.dumps(files),
        "files_more": files_more,
        "first_verified_at": decision.first_verified_at,
        "last_verified_at": decision.last_verified_at,
        "body": policy.render_body(row["command"], where, decision, files, files_more),
    }


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _names(value: Any, limit: int) -> list[str]:
    """A JSON list of names, as a list of strings; anything else is no names."""
    try:
        names = json.loads(value) if isinstance(value, str) else []
    except ValueError:
        return []
    if not isinstance(names, list):
        return []
    return [name for name in names if isinstance(name, str)][:limit]
