"""A captured run -> the runs of its steps, each verified, failed or unverified (DESIGN.md §5).

Pure: the command's analysis and its output decide. A step whose exit status the command's
status entails is verified by exit 0; a step whose status is hidden (a masked pipeline, a step
before `;`) counts only by what its output shows: a recognised success summary verifies it, a
recognised failure summary makes it a failure whatever the exit code, anything else leaves it
unverified (kept, never counted). A failed run also says whether the command could not run at
all, rather than run and find the code red (remem/shell/runnable.py).
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from remem.record.forgotten import holds_forgotten
from remem.record.identity import spelt_root
from remem.shell import recognisers
from remem.shell.analysis import CACHED_COMMAND_CHARS, Step, analyse, resolve_directory
from remem.shell.arguments import without_messages
from remem.shell.kinds import BOOKKEEPING, READ, SETUP
from remem.shell.named import named_line
from remem.shell.runnable import cannot_run
from remem.shell.states import is_no_op

VERIFIED, FAILED, UNVERIFIED = "verified", "failed", "unverified"


@dataclass(frozen=True)
class StepRun:
    step: int
    directory: str
    workflow: str
    workflow_hash: str
    command: str  # the step as it was run, its message elided: a variant of its workflow
    masked: bool
    verdict: str
    salient_error: str | None
    cannot_run: bool = False  # failed because it could not run here, not because the code is red
    messages: tuple[str, ...] = ()  # the messages elided, to clear from its stored output


@lru_cache(maxsize=4_096)
def workflow_hash(workflow: str) -> str:
    return hashlib.sha256(workflow.encode("utf-8", "surrogatepass")).hexdigest()


def classify(
    command: str,
    succeeded: bool,
    output: str | None,
    cwd: str,
    directory: str,
    ignore_commands: Sequence[str] = (),
    exit_code: int | None = None,
) -> list[StepRun]:
    """The runs a command's workflow steps stand for, and the failures of its read-only steps
    whose output shows their error (`git add` of an ignored path, `cat` of a missing file):
    known errors of theirs, never procedures, as their passes are no runs. Other read-only
    steps, inline scripts, file writes, steps that never ran, steps whose directory cannot
    be known and steps holding a word `remem forget` masked (no longer the command that ran)
    are left out."""
    if succeeded and len(command) <= CACHED_COMMAND_CHARS:
        passed = _passed(command, cwd, directory, tuple(ignore_commands))
        if passed is not None:
            return list(passed)
    return _classify(command, succeeded, output, cwd, directory, ignore_commands, exit_code)


@lru_cache(maxsize=4_096)
def _passed(
    command: str, cwd: str, directory: str, ignore_commands: tuple[str, ...]
) -> tuple[StepRun, ...] | None:
    """A passing command's runs when every step's status is its exit status's: its output
    decides nothing, and an agent runs the same few commands all day. None when it may."""
    if not all(step.decisive for step in analyse(command, ignore_commands).steps):
        return None
    return tuple(_classify(command, True, None, cwd, directory, ignore_commands))


def _classify(
    command: str,
    succeeded: bool,
    output: str | None,
    cwd: str,
    directory: str,
    ignore_commands: Sequence[str],
    exit_code: int | None = None,
) -> list[StepRun]:
    steps = analyse(command, ignore_commands).steps
    verdicts = _verdicts(steps, succeeded, output)
    work_tree = spelt_root(cwd, directory)
    runs = []
    for index, (step, verdict) in enumerate(zip(steps, verdicts, strict=True)):
        if verdict is None or not (step.procedural or (step.read_only and verdict == FAILED)):
            continue
        if holds_forgotten(step.workflow):
            continue
        where = resolve_directory(directory, work_tree, step.chdir)
        if where is None:
            continue
        salient = blocked = None
        if verdict == FAILED:
            salient = recognisers.salient_line(step.workflow, output)
            salient = salient or named_line(step.program, output)
            salient = without_messages(salient, step.messages)
            if salient is None and not (step.procedural or step.kind == BOOKKEEPING):
                continue
            if is_no_op(salient or recognisers.telling_line(output)):
                continue  # nothing to do: neither verified nor failed
            blocked = cannot_run(step.workflow, step.program, exit_code, output)
        # A read names what it read: its failure is that file's (`cat <file>` would let a
        # read of any other file pass for its resolution).
        workflow = group_workflow(step, where, work_tree) if step.procedural else step.workflow
        runs.append(
            StepRun(
                step=index,
                directory=where,
                workflow=workflow,
                workflow_hash=workflow_hash(workflow),
                command=step.text,
                masked=step.masked,
                verdict=verdict,
                salient_error=salient,
                cannot_run=blocked is not None,
                messages=step.messages,
            )
        )
    return runs


def group_workflow(step: Step, directory: str, work_tree: str) -> str:
    """What a step's runs are grouped by: its family (`gofmt -w <file>`) when every file it
    names lies in the project, so runs on each of its files pool; else its workflow."""
    if step.files and all(_in_project(path, directory, work_tree) for path in step.files):
        return step.family
    return step.workflow


def _in_project(path: str, directory: str, work_tree: str) -> bool:
    if posixpath.isabs(path):
        return bool(work_tree) and path.startswith(work_tree.rstrip("/") + "/")
    relative = posixpath.normpath(posixpath.join(directory, path))
    return relative != ".." and not relative.startswith("../")


def _by_output(step: Step, output: str | None) -> str:
    judged = recognisers.judge(step.workflow, output)
    return {"success": VERIFIED, "failure": FAILED}.get(judged or "", UNVERIFIED)


def _verdicts(steps: Sequence[Step], succeeded: bool, output: str | None) -> list[str | None]:
    """Each step's verdict; None for a step that never ran."""
    verdicts: list[str | None] = [
        (VERIFIED if succeeded else UNVERIFIED) if step.decisive else _by_output(step, output)
        for step in steps
    ]
    if succeeded:
        return verdicts
    # The command failed: one of its decisive steps did, and the decisive steps after it never
    # ran (`a && b`, or under `set -e`). It is the one whose own tool's failure the output shows,
    # if exactly one does; else the one whose program the output names (`cat: x: No such
    # file`), if exactly one is; else the one whose failure any tool's summary shows (a runner
    # such as `make`), a read-only step included each time (`git add` of an ignored path);
    # else, when only one could have failed, that one. Any step that did something may be the
    # one that failed, a script, a write or bookkeeping (`git commit` refused) included.
    decisive = [i for i, step in enumerate(steps) if step.decisive]
    failing = [i for i in decisive if _by_output(steps[i], output) == FAILED]
    own = [i for i in failing if recognisers.family_of(steps[i].workflow) is not None]
    culprit = own if len(own) == 1 else []
    if not culprit:
        named = [i for i in decisive if named_line(steps[i].program, output) is not None]
        culprit = next((found for found in (named, failing) if len(found) == 1), [])
    if not culprit:
        candidates = [i for i in decisive if steps[i].kind not in (READ, SETUP)]
        culprit = candidates if len(candidates) == 1 else []
    for i in decisive:
        verdicts[i] = UNVERIFIED
    if culprit:
        verdicts[culprit[0]] = FAILED
        for i in decisive:
            if i > culprit[0]:
                verdicts[i] = None
    return verdicts
