"""What fixed a known error (DESIGN.md §6), pure: the session's events after the last attempt
that showed it, read in order up to what resolved it. Files edited count, and so do commands
that ran and passed, but not read-only ones, nor runs of the failing workflow itself.

Another run of the same tool ends the fix: one that passed with the workflow's words and more
(`git push --set-upstream origin <branch>` after `git push`) is the fix and resolves the error
itself; a check of the same family (`mix test test/x.exs` after `mix test`) that no longer
shows the error means the error was gone by then, and was no fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from remem.procedures.lessons import in_project
from remem.shell import recognisers
from remem.shell.analysis import analyse

COMMANDS_KEPT = 5


@dataclass(frozen=True)
class Between:
    """A captured event of the session after the failure, as the fix reads it."""

    event_id: int
    at: float
    kind: str  # "command" or "edit"
    command: str | None
    succeeded: bool
    output: str | None
    files: tuple[str, ...]


@dataclass(frozen=True)
class Fix:
    files: tuple[str, ...]
    commands: tuple[str, ...]
    # A passing run of the same command with more words: it resolved the error itself.
    resolved_by: Between | None = None

    def adding(self, other: Fix) -> Fix:
        files = tuple(sorted({*self.files, *other.files}))
        commands = tuple(dict.fromkeys((*self.commands, *other.commands)))[:COMMANDS_KEPT]
        return Fix(files, commands, self.resolved_by)


@dataclass(frozen=True)
class Failing:
    """The workflow that failed, the key of its error and the branch it failed on."""

    workflow: str
    error_key: str
    branch: str | None


def read_fix(events: Iterable[Between], failing: Failing, ignore: Sequence[str] = ()) -> Fix:
    files: set[str] = set()
    commands: dict[str, None] = {}
    for event in events:
        if event.kind == "edit":
            files.update(in_project(event.files))
            continue
        if not event.command:
            continue
        for step in analyse(event.command, ignore).workflow_steps():
            if failing.workflow in (step.workflow, step.family):  # its run, on any file
                continue
            if not _same_tool(step.workflow, failing.workflow):
                if event.succeeded:
                    commands[recognisers.mask_branch(step.workflow, failing.branch)] = None
                continue
            if not event.succeeded and _shows(step.workflow, event.output, failing):
                continue
            resolved = None
            if event.succeeded and runs_more(step.workflow, failing.workflow):
                commands[recognisers.mask_branch(step.workflow, failing.branch)] = None
                resolved = event
            return Fix(_sorted(files), _kept(commands), resolved)
    return Fix(_sorted(files), _kept(commands))


def _same_tool(step: str, workflow: str) -> bool:
    """A run of the failing workflow's tool: the same recognised family (a check), else the
    same command with more or fewer words."""
    mine, theirs = recognisers.check_of(step), recognisers.check_of(workflow)
    if mine is not None or theirs is not None:
        return mine is theirs
    return step.startswith(workflow + " ") or workflow.startswith(step + " ")


def may_resolve(workflow: str) -> bool:
    """Whether a run of another workflow may resolve this one's error: never one of a check's
    (`runs_more`)."""
    return recognisers.check_of(workflow) is None


def runs_more(step: str, workflow: str) -> bool:
    """Whether a passing `step` runs the failing command with more words, and so resolves
    its error: never a check of a recognised family, whose narrower run proves nothing."""
    return may_resolve(workflow) and step.startswith(workflow + " ")


def _shows(step: str, output: str | None, failing: Failing) -> bool:
    line = recognisers.salient_line(step, output)
    return line is not None and recognisers.error_key(line, failing.branch) == failing.error_key


def _sorted(files: set[str]) -> tuple[str, ...]:
    return tuple(sorted(files))


def _kept(commands: dict[str, None]) -> tuple[str, ...]:
    return tuple(commands)[:COMMANDS_KEPT]
