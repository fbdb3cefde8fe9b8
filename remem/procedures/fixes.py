"""What fixed a known error (DESIGN.md §6), pure: the session's events after the last attempt
that showed it, read in order up to what resolved it. Files edited count, and so do commands
that ran and passed, but not read-only ones, nor runs of a family that changes nothing it
checks (another test suite), nor runs of the failing workflow itself.

The failing check's own tool told to fix what it reports (`bun run lint:fix` after `bun run
lint`, `cargo fmt` after `cargo fmt --check`: remem/shell/fixers.py) is the fix, named alone.
Another run of the same tool ends the fix: a variant of the command that passed (its words and
more, `git push --set-upstream origin <branch>` after `git push`; or with an option added or
an argument left out, `git add -f <path>` after `git add <paths>`) is the fix and resolves the
error itself; a check of the same family (`mix test test/x.exs` after `mix test`) that no
longer shows the error means the error was gone by then, and was no fix. A read-only command's
passes are no runs of its group (only its failures are kept): its own pass resolves its error
here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from remem.procedures.lessons import in_project
from remem.record.forgotten import holds_forgotten
from remem.shell import recognisers
from remem.shell.analysis import analyse
from remem.shell.fixers import fixes_check

COMMANDS_KEPT = 5


class Between(NamedTuple):
    """A captured event of the session after the failure, as the fix reads it: a tuple, as
    one is made for every event a fix reads."""

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
    own: bool = False  # its one command is the failing check's own fix (fixers.py)

    def adding(self, other: Fix) -> Fix:
        if self.own or other.own:
            return (self if self.own else other).but_resolved_by(self.resolved_by)
        files = tuple(sorted({*self.files, *other.files}))
        commands = tuple(dict.fromkeys((*self.commands, *other.commands)))[:COMMANDS_KEPT]
        return Fix(files, commands, self.resolved_by)

    def but_resolved_by(self, resolved_by: Between | None) -> Fix:
        return Fix(self.files, self.commands, resolved_by, self.own)


@dataclass(frozen=True)
class Failing:
    """The workflow that failed, the key of its error and the branch it failed on."""

    workflow: str
    error_key: str
    branch: str | None


def read_fix(events: Iterable[Between], failing: Failing, ignore: Sequence[str] = ()) -> Fix:
    files: set[str] = set()
    commands: dict[str, None] = {}
    fixer: list[str] = []  # the failing check's own fix that passed (fixers.py): the fix
    for event in events:
        if event.kind == "edit":
            files.update(in_project(event.files))
            continue
        if not event.command:
            continue
        for step in analyse(event.command, ignore).steps:
            if not (step.procedural or step.read_only) or holds_forgotten(step.workflow):
                continue  # an inline script, a file write, a masked word: no command to name
            own, same, more, reads_only, fixes = _relation(
                step.workflow, step.family, failing.workflow
            )
            if own:  # its run, on any file
                if step.read_only and event.succeeded:
                    return _found(files, commands, fixer, event)
                continue
            named = recognisers.mask_branch(step.workflow, failing.branch)
            if event.succeeded and fixes and not fixer:
                fixer.append(named)
                continue
            if not same:
                if event.succeeded and step.procedural and not reads_only:
                    commands[named] = None
                continue
            if not event.succeeded and _shows(step.workflow, event.output, failing):
                continue
            resolved = None
            if event.succeeded and more:
                commands[named] = None
                resolved = event
            return _found(files, commands, fixer, resolved)
    return _found(files, commands, fixer)


def _found(
    files: set[str], commands: dict[str, None], fixer: list[str], resolved: Between | None = None
) -> Fix:
    """The fix read: the check's own fix alone when one ran, else every change."""
    if fixer:
        return Fix((), tuple(fixer), resolved, own=True)
    return Fix(_sorted(files), _kept(commands), resolved)


@lru_cache(maxsize=4_096)
def _relation(workflow: str, family: str, failing: str) -> tuple[bool, bool, bool, bool, bool]:
    """How a step (its workflow and family) stands to the failing workflow, remembered: the
    same few commands follow a session's failures. Whether it is a run of the failing workflow
    itself, of its tool (_same_tool), a variant that resolves it (runs_more), whether its
    family changes nothing it checks, and whether it is the check's own fix (fixes_check)."""
    forms = (workflow, family)
    return (
        failing in forms,
        any(_same_tool(form, failing) for form in forms),
        any(runs_more(form, failing) for form in forms),
        recognisers.reads_only(workflow),
        any(fixes_check(form, failing) for form in forms),
    )


def _same_tool(step: str, workflow: str) -> bool:
    """A run of the failing workflow's tool: the same recognised family (a check), else the
    same command with more or fewer words, or options."""
    mine, theirs = recognisers.check_of(step), recognisers.check_of(workflow)
    if mine is not None or theirs is not None:
        return mine is theirs
    if step.startswith(workflow + " ") or workflow.startswith(step + " "):
        return True
    return _variant(step, workflow) or _variant(workflow, step)


def may_resolve(workflow: str) -> bool:
    """Whether a run of another workflow may resolve this one's error: never one of a check's
    (`runs_more`)."""
    return recognisers.check_of(workflow) is None


def runs_more(step: str, workflow: str) -> bool:
    """Whether a passing `step` is a variant of the failing command, and so resolves its
    error: its words and more, or its options and more on its arguments or fewer. Never a
    check of a recognised family, whose narrower run proves nothing."""
    if not may_resolve(workflow):
        return False
    return step.startswith(workflow + " ") or _variant(step, workflow)


def _variant(step: str, workflow: str) -> bool:
    """`git add -f notes/plan.md` of `git add src/cart.py notes/plan.md`: another command,
    the same program and subcommand, every option of the workflow's and its other words
    among the workflow's, in their order."""
    if step == workflow:
        return False
    words, theirs = step.split(), workflow.split()
    options = {word for word in words if word.startswith("-")}
    if not options >= {word for word in theirs if word.startswith("-")}:
        return False
    plain = [word for word in words if not word.startswith("-")]
    their_plain = [word for word in theirs if not word.startswith("-")]
    lead = min(2, len(their_plain))
    if plain[:lead] != their_plain[:lead]:
        return False
    remaining = iter(their_plain)
    return all(word in remaining for word in plain)


def _shows(step: str, output: str | None, failing: Failing) -> bool:
    line = recognisers.salient_line(step, output)
    return line is not None and recognisers.error_key(line, failing.branch) == failing.error_key


def _sorted(files: set[str]) -> tuple[str, ...]:
    return tuple(sorted(files))


def _kept(commands: dict[str, None]) -> tuple[str, ...]:
    return tuple(commands)[:COMMANDS_KEPT]
