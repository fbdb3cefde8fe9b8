"""What each page of `remem ui` shows: the read model's own reads (remem.agent, the report of
remem.admin), put together per page. Nothing here runs SQL of its own or computes a figure
again: the digest is `remem context`'s, the search `remem recall`'s, the figures `remem
report`'s."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from remem.admin.report import Figures, Report, read_report
from remem.agent import recall, usage
from remem.agent.context import Context, Entry, read_context
from remem.agent.export import read_exports
from remem.agent.known import KnownError, read_known_errors
from remem.agent.read import (
    Detail,
    Procedure,
    read_detail,
    read_procedures,
    read_projects,
    read_team_procedures,
)
from remem.agent.substitutions import Substitution, read_substitutions
from remem.config import Settings
from remem.db.snapshot import Execute
from remem.db.vocabulary import ACTIVE, ARCHIVED, BROKEN, STALE
from remem.ui import charts

STATUSES = (ACTIVE, STALE, BROKEN, ARCHIVED)


@dataclass(frozen=True)
class ProjectRow:
    root: str
    branches: tuple[str, ...]
    statuses: dict[str, int]
    known_errors: int
    figures: Figures | None
    sessions_chart: charts.Bars


def _branches(procedures: list[Procedure], known: list[KnownError]) -> tuple[str, ...]:
    """The branches the memory holds something of: its procedures' and known errors'."""
    names = {p.branch for p in procedures if p.branch}
    names |= {b for p in procedures for b in p.branches}
    names |= {e.branch for e in known if e.branch}
    return tuple(sorted(names))


def _sessions_chart(figures: Figures | None) -> charts.Bars:
    weeks = figures.weeks if figures else ()
    return charts.bars(
        [(w.week, w.sessions, f"{w.week}: {w.sessions} session(s)") for w in weeks], width=240
    )


def projects(execute: Execute, since_s: float, now: float) -> list[ProjectRow]:
    report = read_report(execute, None, since_s, now)
    figures = {f.project: f for f in report.projects}
    procedures: dict[str, list[Procedure]] = defaultdict(list)
    for procedure in read_procedures(execute, statuses=None):
        procedures[procedure.project].append(procedure)
    rows = []
    for root in read_projects(execute):
        own = procedures.get(root, [])
        known = read_known_errors(execute, root)
        statuses = Counter(p.status for p in own)
        rows.append(
            ProjectRow(
                root,
                _branches(own, known),
                {status: statuses.get(status, 0) for status in STATUSES},
                len(known),
                figures.get(root),
                _sessions_chart(figures.get(root)),
            )
        )
    return rows


@dataclass(frozen=True)
class BranchPage:
    root: str
    branch: str | None
    digest: list[str]  # every page, as `remem context --page N` prints it
    context: Context
    procedures: list[Procedure]
    known_errors: list[KnownError]
    substitutions: list[Substitution]
    # The default branches ([context] inherit_from) whose procedures reach this one: those
    # the memory holds procedures of, other than this branch.
    inherits_from: tuple[str, ...]
    default: bool  # this branch is one of them: its procedures reach the others
    inherited: list[Entry] = field(default_factory=list)


def branch(execute: Execute, settings: Settings, root: str, name: str | None) -> BranchPage:
    context = read_context(execute, root, name, ".", settings.inherit_from)
    pages = context.pages(settings.context_max_chars, settings.context_max_lines)
    everything = read_procedures(execute, root, statuses=None)
    own = [p for p in everything if p.scope == "project" or (name and p.branch == name)]
    held = {p.branch for p in everything} | {p.branch for p in read_team_procedures(execute, root)}
    known = [e for e in read_known_errors(execute, root) if e.branch in (name, None)]
    return BranchPage(
        root,
        name,
        pages,
        context,
        own,
        known,
        read_substitutions(execute, root),
        tuple(b for b in settings.inherit_from if b != (name or "") and b in held),
        (name or "") in settings.inherit_from,
        [entry for entry in context.procedures if entry.inherited],
    )


@dataclass(frozen=True)
class ProcedurePage:
    detail: Detail
    timeline: charts.Timeline
    exports: list[tuple[str, str, float]]
    use: usage.Use | None


def procedure(execute: Execute, procedure_id: int, evidence_page: int) -> ProcedurePage:
    detail = read_detail(execute, procedure_id, evidence_page)
    found = detail.procedure
    runs = [
        charts.Run(
            run.at,
            run.branch or "(no branch)",
            True,
            f"passed: event {run.event_id}, {run.host} session {run.session_key}",
        )
        for run in detail.evidence.runs
    ]
    # The failures between this page's passes (the newest page: since its first; the oldest:
    # until its last), so that each page draws its own stretch of time.
    evidence = detail.evidence
    after = runs[0].at if runs and evidence.page < evidence.pages else float("-inf")
    until = runs[-1].at if runs and evidence.page > 1 else float("inf")
    runs += [
        charts.Run(
            attempt.failed_at,
            lesson.branch or "(no branch)",
            False,
            f"failed: event {attempt.event_id}, attempt {attempt.attempt_number}"
            + (f" (exit {attempt.exit_code})" if attempt.exit_code is not None else ""),
        )
        for lesson in detail.lessons
        for attempt in lesson.attempts
        if after <= attempt.failed_at <= until
    ]
    use = usage.read_use(execute, found.project).get((found.directory, found.workflow_hash))
    return ProcedurePage(detail, charts.timeline(runs), read_exports(execute, procedure_id), use)


@dataclass(frozen=True)
class ReportPage:
    report: Report
    charts: dict[str | None, charts.Bars]


def report(execute: Execute, since_s: float, now: float) -> ReportPage:
    """`remem report`'s figures, with failing calls per session by week drawn per project."""
    found = read_report(execute, None, since_s, now)
    drawn = {}
    for figures in (*found.projects, found.total):
        weeks = [week.as_json() for week in figures.weeks]
        drawn[figures.project] = charts.bars(
            [
                (w["week"], w["per_session"], f"{w['week']}: {w['per_session']} failing call(s) "
                 f"per session over {w['sessions']} session(s)")
                for w in weeks
            ]
        )  # fmt: skip
    return ReportPage(found, drawn)


@dataclass(frozen=True)
class SearchPage:
    pattern: str
    root: str | None
    hits: list[dict[str, Any]]
    total: int
    page: int
    pages: int


def search(execute: Execute, pattern: str, root: str | None, page: int) -> SearchPage:
    """`remem recall`'s search, paged by its bounds: what one answer of it holds."""
    regex = recall.compile_pattern(pattern)
    hits = recall.search(execute, regex, root)
    shown, pages = recall.json_page([hit.as_json() for hit in hits], page)
    return SearchPage(pattern, root, shown, len(hits), page, pages)
