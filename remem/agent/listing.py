"""What `remem procedures list` and `remem procedures show` print, as text or JSON: one
implementation, called by the click commands and by the front door (remem.cli.fast), which
answers their plain forms with the stdlib.

Stdlib only. Every line of recorded text is escaped (remem.record.quote) before it is printed.
"""

from __future__ import annotations

from remem.db.vocabulary import ACTIVE, STALE
from remem.json_contract import date, rfc3339
from remem.record.quote import (
    NEEDS_CREDENTIALS,
    NO_OUTPUT,
    elsewhere,
    escape_unsafe,
    inert_path,
    quote_excerpt,
    quote_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from remem.agent.counts import Stale
    from remem.agent.read import Detail, Procedure
    from remem.agent.substitutions import Substitution
    from remem.config import Settings

COLUMNS = ["id", "command", "project", "where", "status", "conf.", "runs", "sessions", "last"]


def procedures_list_text(
    root: str | None,
    branch: str | None,
    status: str | None = None,
    show_all: bool = False,
    as_json: bool = False,
) -> str:
    """The procedures of a project (None: of every project) by confidence, then most recently
    verified: the active ones unless a status or all are asked for; then, in a section of their
    own, the stale ones, which the digest shows only where nothing holds lately."""
    from remem.agent.counts import read_stale
    from remem.agent.read import read_procedures
    from remem.config import load_settings
    from remem.db.snapshot import read_snapshot
    from remem.record.quote import json_text

    statuses = None if show_all else ((status,) if status else (ACTIVE,))
    settings = load_settings()
    with read_snapshot(settings) as execute:
        found = read_procedures(execute, root, branch, statuses)
        if as_json:
            return json_text([p.as_json() for p in found])
        stale: list[Procedure] = []
        counted = None
        if statuses == (ACTIVE,):
            counted = read_stale(execute, root, branch)
            if counted.count:
                stale = read_procedures(execute, root, branch, (STALE,))
    from remem.record.table import terminal_table

    if found:
        text = terminal_table("Procedures", COLUMNS, _rows(found))
    else:
        text = _no_procedures(settings, statuses, root, branch, counted) + "\n"
    if counted is not None and counted.count:
        title = f"Stale procedures ({counted.count}), {counted.said(settings.max_age_s)}"
        text += terminal_table(title, COLUMNS, _rows(stale))
    return text


def _rows(found: Sequence[Procedure]) -> list[list[str]]:
    return [
        [
            str(p.id),
            command_cell(p.command, p.needs_credentials) + inputs_said(p),
            p.project,
            where(p.scope, p.branch, p.directory, len(p.branches)),
            p.status,
            f"{p.confidence:.2f}",
            str(p.verified_runs),
            str(p.distinct_sessions),
            date(p.last_verified_at),
        ]
        for p in found
    ]


def _no_procedures(
    settings: Settings,
    statuses: tuple[str, ...] | None,
    root: str | None,
    branch: str | None,
    stale: Stale | None,
) -> str:
    if stale is not None and stale.count:
        return "No active procedures: the stale ones below were verified earlier, not lately."
    if statuses == (ACTIVE,) and root is None and branch is None:
        runs = settings.min_verified_runs
        times = "twice" if runs == 2 else f"{runs} times"
        return f"No procedures yet: they appear after a command passes {times}."
    shown = "procedures" if statuses is None else " or ".join(statuses) + " procedures"
    return f"No {shown} here: see `remem procedures list --all`."


def inputs_said(p: Procedure) -> str:
    """What a procedure's line adds when what it runs changed or is gone since it was last
    verified (as the digest says it)."""
    from remem.agent.digest import changed_said

    said = changed_said(p.changed_tasks)
    if p.missing_inputs:
        said += " — missing: " + ", ".join(map(inert_path, p.missing_inputs))
    return said


def command_cell(command: str, needs_credentials: bool) -> str:
    return f"{command}  ({NEEDS_CREDENTIALS})" if needs_credentials else command


def where(scope: str, branch: str | None, directory: str, branches: int) -> str:
    place = "" if directory == "." else f"{inert_path(directory)}/ "
    if scope == "project":
        return f"{place}every branch ({branches} verified)"
    return f"{place}{branch_name(branch)}"


def branch_name(branch: str | None) -> str:
    return inert_path(branch) if branch else "(no branch)"


def procedure_text(procedure_id: int, evidence_page: int = 1, as_json: bool = False) -> str:
    """One procedure: its variants, evidence runs (newest first), files and lessons, and where
    else the errors of its lessons were met."""
    from remem.agent.read import read_detail
    from remem.config import load_settings
    from remem.db.snapshot import read_snapshot

    with read_snapshot(load_settings()) as execute:
        detail = read_detail(execute, procedure_id, evidence_page)
    if as_json:
        from remem.record.quote import json_text

        return json_text(detail.as_json())
    # Each line its own: no control character of recorded text reaches the terminal, no line
    # break of it starts a line.
    return "".join(escape_unsafe(line) + "\n" for line in _detail_lines(detail))


def _detail_lines(detail: Detail) -> list[str]:
    from remem.agent.digest import fix_text

    procedure, evidence = detail.procedure, detail.evidence
    lines = [
        f"Procedure {procedure.id} ({procedure.status}, confidence "
        f"{procedure.confidence:.2f}, topic {procedure.topic_key})",
        *procedure.body.split("\n"),  # its own lines: recorded text in it is quoted
    ]
    if procedure.changed_inputs:
        lines.append(f"What it runs{inputs_said(procedure)}")
    if detail.followed_then_failed_at is not None:
        lines.append(
            f"Followed after the digest showed it, then failed on "
            f"{rfc3339(detail.followed_then_failed_at)}: ranked down in the digest until it "
            "passes again."
        )
    lines.append(f"Workflow: {quote_text(procedure.workflow)}")
    if procedure.scope == "project":
        lines.append(f"Verified on branches: {', '.join(map(inert_path, procedure.branches))}")
    lines.append("Variants:")
    lines += [f"  {v.counted()}  {quote_text(v.command)}" for v in procedure.variants]
    if evidence.pages > 1:
        more = (
            f"; --evidence-page {evidence.page + 1} for older"
            if evidence.page < evidence.pages
            else ""
        )
        lines.append(
            f"Evidence (newest first; page {evidence.page} of {evidence.pages}, "
            f"{evidence.total} runs{more}):"
        )
    else:
        lines.append("Evidence (newest first):")
    for run in evidence.runs:
        branch = f"  branch {inert_path(run.branch or '')}" if procedure.scope == "project" else ""
        lines.append(
            f"  event {run.event_id}  {rfc3339(run.at)}  {run.host}  session "
            f"{run.session_key}  {run.outcome}{branch}"
        )
    if detail.unverified_runs:
        lines.append(
            f"Unverified runs (status hidden, no summary in the output): {detail.unverified_runs}"
        )
    lines += _lesson_lines(detail)
    lines += [substitution_line(found) for found in detail.substitutions]
    lines += [
        f"Known error on {branch_name(error.branch)}, seen {error.times_seen} "
        f"time(s): {quote_excerpt(error.error)}: {fix_text(error)}"
        for error in detail.known_errors
    ]
    lines += [
        f"Same error under {quote_text(sighting.workflow or '')} on "
        f"{branch_name(sighting.branch)}: {fix_text(sighting)}"
        for sighting in detail.same_errors_elsewhere
    ]
    return lines


def _lesson_lines(detail: Detail) -> list[str]:
    lines = []
    for lesson in detail.lessons:
        lines.append(f"Lesson (closed by event {lesson.resolved_by_event_id}):")
        lines += [f"  {line}" for line in lesson.body.split("\n")]
        for attempt in lesson.attempts:
            repeat = f", repeats attempt {attempt.duplicate_of}" if attempt.duplicate_of else ""
            edited = (
                f"after editing {', '.join(attempt.files)}"
                if attempt.files
                else "no edit before it"
            )
            code = "?" if attempt.exit_code is None else attempt.exit_code
            output = "" if attempt.has_output else f", {NO_OUTPUT}"
            lines.append(
                f"  attempt {attempt.attempt_number}: event {attempt.event_id}, exit "
                f"{code}{output}, {edited}{repeat}"
            )
    return lines


def substitution_line(found: Substitution) -> str:
    sessions = "session" if found.sessions == 1 else "sessions"
    from remem.agent.digest import changed_said

    verified = (
        f", verified: procedure {found.instead_procedure_id}"
        + changed_said(found.instead_changed_inputs)
        if found.instead_procedure_id is not None
        else ""
    )
    return (
        f"Instead of {quote_text(found.workflow)} "
        f"({found.failures} failed in {found.sessions} {sessions}), "
        f"{quote_text(found.instead)}{elsewhere(found.instead_directory, found.directory)}"
        f" passed{verified}"
    )
