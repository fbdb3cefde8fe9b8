"""Substitutions (DESIGN.md §6), pure: in a session, a workflow that failed and, before any
edit, a different workflow for the same purpose that passed: "instead of A, B worked here";
and, in any session and across edits, a command that cannot run here and the first sibling
after it that ran (passed, or failed red: a test failing is still running).

Each failed run gets the first such pass after it, so every failing step of a chain
(`pytest` 127, `python -m pytest` 127, `python3 -m pytest`: no module named pytest, then
`.venv/bin/python -m pytest` passes) gets the command that worked. The pass may be in another
directory of the project when it runs the same command from there (`node assets/build.js`
failing, `cd assets && node build.js` passing). An edit in between means the pass may owe to
the edit: no substitution. A failed workflow that passes itself later is no longer waiting for
a substitute.

What fails is a workflow as its wrappers ran it (its form, remem/shell/purpose.py): `rtk bun
run test` cannot run where `bun run test` runs, the wrapper being what fails.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from remem.shell.purpose import form_of, same_elsewhere, same_purpose


class SessionRun(NamedTuple):
    """A failed or verified run of one step of a session's command: a tuple, as a window
    makes one for every run of its session's stretch."""

    event_id: int
    step: int
    directory: str
    workflow: str
    workflow_hash: str
    command: str  # the step as run: its own files, where the workflow has a placeholder
    passed: bool
    ran: bool = False  # failed, but not because it cannot run here (remem/shell/runnable.py)

    @property
    def form(self) -> str:
        """Its workflow as its wrappers ran it."""
        return form_of(self.command, self.workflow)


@dataclass(frozen=True)
class Pair:
    failed: SessionRun
    substitute: SessionRun


def pair(runs: Iterable[SessionRun], edit_event_ids: Iterable[int]) -> list[Pair]:
    """The substitutions among a session's runs, given the ids of its edit events."""
    edits = sorted(edit_event_ids)
    # The failed runs waiting for a substitute, by what decides whether one is: a session may
    # fail one workflow many times, and each pass is weighed against each kind once.
    waiting: dict[tuple[str, str, bool], list[SessionRun]] = {}
    found: list[Pair] = []
    next_edit = 0
    for run in sorted(runs, key=lambda r: (r.event_id, r.step)):
        while next_edit < len(edits) and edits[next_edit] < run.event_id:
            waiting, next_edit = {}, next_edit + 1
        if not run.passed:
            waiting.setdefault((run.directory, run.form, run.ran), []).append(run)
            continue
        for kind in list(waiting):
            failed = waiting[kind]
            if _substitutes(failed[0], run):
                found.extend(Pair(one, run) for one in failed)
                del waiting[kind]
            elif kind[1] == run.form:
                del waiting[kind]  # it passed itself
    return sorted(found, key=lambda p: (p.failed.event_id, p.failed.step))


def sibling(failed: SessionRun, other: SessionRun) -> bool:
    """Whether `other`, a run after `failed` in any session, is what runs here instead of it:
    `failed` could not run here, `other` ran (passed or red), another form for the same
    purpose. An edit between says nothing: no edit makes a missing program run."""
    if failed.passed or failed.ran or not (other.passed or other.ran):
        return False
    return _substitutes(failed, other)


def _substitutes(failed: SessionRun, passed: SessionRun) -> bool:
    if failed.directory == passed.directory:
        if failed.workflow_hash == passed.workflow_hash:
            # The same workflow, another wrapper: only when the wrapper is what cannot run.
            return not failed.ran and failed.form != passed.form
        return same_purpose(failed.workflow, passed.workflow, failed.ran)
    # The commands, not the workflows: `pytest <test file>` names no file of its own.
    return same_elsewhere(
        failed.command, failed.directory, passed.command, passed.directory, failed.ran
    )
