"""`remem report`: did the memory help (DESIGN.md §7)? Per project and in total, over a time
window: the sessions, what their digests showed and what of it was used and passed, the advice
given and followed, the known errors that came back after they were shown, the failing calls
per session week by week (the trend a user wants to see fall), and the procedures shown most
often and never used. Read from the records of what each session was told and the ledger the
worker derives from them (remem/procedures/ledger.py).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from remem.db.snapshot import Execute

NEVER_USED_SHOWN = 5  # items listed per project, and in total
COUNTS = (
    "sessions",
    "sessions_shown",
    "shown",
    "used",
    "passed_when_used",
    "advice_given",
    "advice_followed",
    "repeats_after_shown",
)

_PROJECTS = "SELECT id, root FROM projects{where} ORDER BY root"
# The failing calls are counted through ix_captured_events_failing: the subquery's WHERE must
# keep that index's predicate as literals for either backend to use it.
_SESSIONS = (
    "SELECT s.project_id, s.id, s.started_at, (SELECT count(*) FROM captured_events e "
    "WHERE e.session_id = s.id AND e.kind = 'command' AND e.outcome = 'failure') "
    "FROM sessions s WHERE s.started_at >= :since"
)
# A session that made no tool call (it only opened) had no chance to use what it was shown:
# its pages are not counted as shown.
_SHOWN = (
    "SELECT d.project_id, d.session_id, d.procedures, d.known_errors FROM digest_shown d "
    "WHERE d.shown_at >= :since AND EXISTS (SELECT 1 FROM captured_events e "
    "WHERE e.session_id = d.session_id AND e.kind IN ('command', 'edit')) ORDER BY d.id"
)
_LEDGER = (
    "SELECT project_id, "
    "sum(CASE WHEN kind = 'procedure' AND used = 1 THEN 1 ELSE 0 END), "
    "sum(CASE WHEN kind = 'procedure' AND used = 1 AND passed = 1 THEN 1 ELSE 0 END), "
    "sum(CASE WHEN kind = 'advice' AND followed = 1 THEN 1 ELSE 0 END), "
    "sum(CASE WHEN kind = 'known_error' AND repeated = 1 THEN 1 ELSE 0 END) "
    "FROM session_ledger WHERE at >= :since GROUP BY project_id"
)
_GIVEN = (
    "SELECT s.project_id, count(*) FROM advice_given a JOIN sessions s ON s.id = a.session_id "
    "WHERE a.given_at >= :since GROUP BY s.project_id"
)
_USED = (
    "SELECT DISTINCT project_id, directory, workflow_hash FROM session_ledger "
    "WHERE kind = 'procedure' AND used = 1 AND at >= :since"
)
_COMMAND = "SELECT command FROM procedures WHERE id = :id"


@dataclass(frozen=True)
class Week:
    week: str  # ISO week, 2026-W48
    sessions: int
    failing_calls: int

    def as_json(self) -> dict[str, Any]:
        per_session = round(self.failing_calls / self.sessions, 2) if self.sessions else 0.0
        return {**self.__dict__, "per_session": per_session}


@dataclass(frozen=True)
class NeverUsed:
    project: str
    procedure_id: int | None
    directory: str
    command: str | None
    sessions_shown: int

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Figures:
    """One project's figures, or the total's (project None)."""

    project: str | None
    counts: dict[str, int]
    weeks: tuple[Week, ...]
    never_used: tuple[NeverUsed, ...]

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {} if self.project is None else {"project": self.project}
        return {
            **data,
            **self.counts,
            "failing_calls_per_session_by_week": [week.as_json() for week in self.weeks],
            "shown_never_used": [item.as_json() for item in self.never_used],
        }


@dataclass(frozen=True)
class Report:
    since_at: float
    projects: tuple[Figures, ...]
    total: Figures = field(default_factory=lambda: Figures(None, {}, (), ()))

    def as_json(self) -> dict[str, Any]:
        return {
            "since_at": self.since_at,
            "projects": [figures.as_json() for figures in self.projects],
            "total": self.total.as_json(),
        }


def read_report(execute: Execute, root: str | None, since_s: float, now: float) -> Report:
    """The report of one project (`root`) or of every one, over the last `since_s` seconds."""
    since_at = now - since_s
    params: dict[str, Any] = {"since": since_at}
    where = ""
    if root is not None:
        where, params["root"] = " WHERE root = :root", root
    roots = {int(pid): str(path) for pid, path in execute(_PROJECTS.format(where=where), params)}
    counts: dict[int, Counter[str]] = defaultdict(Counter)
    sessions: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for project_id, _session, started_at, failing in execute(_SESSIONS, params):
        sessions[project_id].append((started_at, failing))
        counts[project_id]["sessions"] += 1
    shown = _Shown(execute(_SHOWN, params))
    for project_id, items in shown.items.items():
        counts[project_id]["shown"] += len(items)
        counts[project_id]["sessions_shown"] += len({item[0] for item in items})
    for project_id, used, passed, followed, repeats in execute(_LEDGER, params):
        counts[project_id].update(
            used=used or 0,
            passed_when_used=passed or 0,
            advice_followed=followed or 0,
            repeats_after_shown=repeats or 0,
        )
    for project_id, given in execute(_GIVEN, params):
        counts[project_id]["advice_given"] += given
    never = _never_used(execute, roots, shown, execute(_USED, params))
    projects = tuple(
        Figures(
            path,
            _counts(counts[pid]),
            weeks(sessions[pid]),
            tuple(never.get(pid, ())[:NEVER_USED_SHOWN]),
        )
        for pid, path in roots.items()
        if counts[pid] or never.get(pid)
    )
    return Report(since_at, projects, _total(projects, sessions, roots))


def _counts(found: Counter[str]) -> dict[str, int]:
    return {name: int(found.get(name, 0)) for name in COUNTS}


class _Shown:
    """What the printed pages of the window held: per project, each (session, item) once, and
    per shown workflow its sessions and its procedure's latest id."""

    def __init__(self, rows: Iterable[Sequence[Any]]) -> None:
        self.items: dict[int, set[tuple[Any, ...]]] = defaultdict(set)
        self.sessions: dict[tuple[int, str, str], set[int]] = defaultdict(set)
        self.ids: dict[tuple[int, str, str], int] = {}
        for project_id, session_id, procedures, known_errors in rows:
            for procedure_id, directory, workflow_hash in json.loads(procedures or "[]"):
                workflow = (project_id, directory, workflow_hash)
                self.items[project_id].add((session_id, *workflow))
                self.sessions[workflow].add(session_id)
                self.ids[workflow] = procedure_id
            for error in json.loads(known_errors or "[]"):
                self.items[project_id].add((session_id, error))


def _never_used(
    execute: Execute,
    roots: dict[int, str],
    shown: _Shown,
    used: Iterable[Sequence[Any]],
) -> dict[int, list[NeverUsed]]:
    """The workflows shown and never used in the window, most sessions first."""
    ran = {tuple(row) for row in used}
    found: dict[int, list[NeverUsed]] = defaultdict(list)
    for workflow, sessions in shown.sessions.items():
        project_id, directory, _hash = workflow
        if workflow in ran or project_id not in roots:
            continue
        procedure_id = shown.ids[workflow]
        rows = execute(_COMMAND, {"id": procedure_id})
        command = rows[0][0] if rows else None
        found[project_id].append(
            NeverUsed(roots[project_id], procedure_id, directory, command, len(sessions))
        )
    for items in found.values():
        items.sort(key=lambda item: (-item.sessions_shown, item.procedure_id or 0))
    return found


def _total(
    projects: tuple[Figures, ...],
    sessions: dict[int, list[tuple[float, int]]],
    roots: dict[int, str],
) -> Figures:
    counts: Counter[str] = Counter()
    for figures in projects:
        counts.update(figures.counts)
    every = [one for pid in roots for one in sessions[pid]]
    items = sorted(
        (item for figures in projects for item in figures.never_used),
        key=lambda item: (-item.sessions_shown, item.project, item.procedure_id or 0),
    )
    return Figures(None, _counts(counts), weeks(every), tuple(items[:NEVER_USED_SHOWN]))


def weeks(sessions: Iterable[tuple[float, int]]) -> tuple[Week, ...]:
    """Sessions (start time, failing calls) by the ISO week they started in (UTC), oldest
    first."""
    found: dict[str, list[int]] = {}
    for started_at, failing in sessions:
        year, week, _day = datetime.fromtimestamp(started_at, UTC).isocalendar()
        totals = found.setdefault(f"{year}-W{week:02d}", [0, 0])
        totals[0] += 1
        totals[1] += failing
    return tuple(Week(name, count, failing) for name, (count, failing) in sorted(found.items()))
