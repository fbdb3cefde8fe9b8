"""Substitutions (DESIGN.md §6), pure: in a session, a workflow that failed and, before any
edit, a different workflow for the same purpose that passed: "instead of A, B worked here".

Each failed run gets the first such pass after it, so every failing step of a chain
(`pytest` 127, `python -m pytest` 127, `python3 -m pytest`: no module named pytest, then
`.venv/bin/python -m pytest` passes) gets the command that worked. An edit in between means
the pass may owe to the edit: no substitution. A failed workflow that passes itself later is
no longer waiting for a substitute.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from remem.shell.purpose import same_purpose


@dataclass(frozen=True)
class SessionRun:
    """A failed or verified run of one step of a session's command."""

    event_id: int
    step: int
    directory: str
    workflow: str
    workflow_hash: str
    passed: bool
    ran: bool = False  # failed, with its tool's failure summary shown: the tool could run


@dataclass(frozen=True)
class Pair:
    failed: SessionRun
    substitute: SessionRun


def pair(runs: Iterable[SessionRun], edit_event_ids: Iterable[int]) -> list[Pair]:
    """The substitutions among a session's runs, given the ids of its edit events."""
    edits = sorted(edit_event_ids)
    waiting: list[SessionRun] = []
    found: list[Pair] = []
    next_edit = 0
    for run in sorted(runs, key=lambda r: (r.event_id, r.step)):
        while next_edit < len(edits) and edits[next_edit] < run.event_id:
            waiting, next_edit = [], next_edit + 1
        if not run.passed:
            waiting.append(run)
            continue
        matched = [failed for failed in waiting if _substitutes(failed, run)]
        found.extend(Pair(failed, run) for failed in matched)
        waiting = [
            failed
            for failed in waiting
            if failed not in matched and failed.workflow_hash != run.workflow_hash
        ]
    return found


def _substitutes(failed: SessionRun, passed: SessionRun) -> bool:
    return failed.directory == passed.directory and same_purpose(
        failed.workflow, passed.workflow, failed.ran
    )
