"""A captured command as a bash program: its steps, each step's workflow, directory and whether
its exit status is masked (DESIGN.md §5).

The command is parsed once (remem/shell/syntax.py). The original text is never rewritten but
for a message it carries: a step's `text` is a slice of the command as it was run, heredoc
bodies included, with a commit's or a pull request's message elided (remem/shell/arguments.py).
What a step is (work, a read, an inline script, a file write, fetched code) is
remem/shell/kinds.py's table.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from remem.shell.arguments import file_arguments, fold_placeholders, message_of
from remem.shell.kinds import (
    BOOKKEEPING,
    FETCHED,
    READ,
    SCRIPT,
    SETUP,
    WORK,
    WRITE,
    command_view,
    is_fetcher,
    runs_fetched,
    step_kind,
    unit_kind,
)
from remem.shell.plain import plain_workflow
from remem.shell.syntax import (
    ELIDED,
    AndOr,
    Pipeline,
    Spans,
    Unit,
    heredoc_bodies,
    heredoc_body_spans,
    nested_commands,
    parse,
    sliced,
    text_of,
    unit_args,
    unit_fed,
    unit_words,
    unit_workflow,
    unit_writes,
)
from remem.shell.wrappers import unwrapped

UNKNOWN_DIRECTORY = "?"

# Commands that only shape the output of the command before them in a pipeline: when they end a
# pipeline without `set -o pipefail`, the pipeline's exit status is theirs, not the command's.
OUTPUT_FILTERS = frozenset(
    {
        "tail", "head", "grep", "egrep", "fgrep", "rg", "tee", "less", "more", "sort", "uniq",
        "wc", "cat", "cut", "tr", "sed", "awk", "column", "nl", "fold", "jq", "fmt", "ts",
    }
)  # fmt: skip
# A pipeline that is only one of these, after `||` or `;` at the end of a command, makes the
# command succeed whatever ran before it.
MASKERS = frozenset({"true", ":", "echo", "printf"})


@dataclass(frozen=True)
class Step:
    """One pipeline of the command: what it runs, where, and what its exit status tells."""

    text: str  # the pipeline as it was run, output filters and heredoc bodies included, a
    # message it carries elided
    workflow: str  # without output-only redirections and trailing output filters
    chdir: str | None  # `cd` before it, relative to the command's start or absolute; "?" unknown
    masked: bool  # its status is hidden by a trailing filter or a later `|| true` / `; exit 0`
    decisive: bool  # the command's exit status entails this step's (success: it passed)
    kind: str  # work, read, setup, inline script, file write or fetched code (shell/kinds.py)
    program: str  # the first command's name after wrappers: "mix", "npm", "pytest"
    # The workflow with the project files it names as placeholders (`gofmt -w <file>`), and
    # those files; the workflow itself and () when it names none. Whether they lie in the
    # project is for the caller to judge (remem/procedures/steps.py).
    family: str = ""
    files: tuple[str, ...] = ()
    # A message the command carries is elided from text, workflow and family; its text is
    # kept here only so that its output can be cleared of it too.
    messages: tuple[str, ...] = ()

    @property
    def read_only(self) -> bool:
        """Only reads, navigation, shell set-up or bookkeeping (`git add`, `gh pr list`)."""
        return self.kind in (READ, SETUP, BOOKKEEPING)

    @property
    def inline_script(self) -> bool:
        """Code written in the command: `python3 - <<'PY'`, `node -e ...`."""
        return self.kind == SCRIPT

    @property
    def file_write(self) -> bool:
        """Writes files with text written in the command (`cat <<EOF > f`), or in place."""
        return self.kind == WRITE

    @property
    def procedural(self) -> bool:
        """Work that can become a procedure: none of the above."""
        return self.kind == WORK


@dataclass(frozen=True)
class Analysis:
    steps: tuple[Step, ...]
    parsed: bool  # False when the grammar could not read it: the whole text is one step
    # The whole command as it was run, each message it carries elided; None when it carries
    # none (what `remem recall` shows of a captured command).
    elided: str | None = None

    @property
    def messages(self) -> tuple[str, ...]:
        return tuple(message for step in self.steps for message in step.messages)

    def workflow_steps(self) -> tuple[Step, ...]:
        """The steps that can become procedures."""
        return tuple(step for step in self.steps if step.procedural)


# --- reading units ---------------------------------------------------------------------------


def _unit_name(unit: Unit) -> str:
    kind = unit.node.type
    if kind == "declaration_command":
        return text_of(unit.node.children[0])
    if kind in ("unset_command", "variable_assignment", "variable_assignments"):
        return "set"
    if kind == "command":
        words = unit_words(unit)
        view = command_view(words)
        return words[view[0]] if view else ""
    return ""


@dataclass
class _Reading:
    """One unit read for its step: its kind, whether it writes files, the spans of its
    message (elided), of its wrappers (left out of its workflow: `rtk`, `timeout 60`) and of
    its file arguments (placeholders), and its message's text."""

    kind: str
    writes: bool
    elide: list[tuple[int, int, str]] = field(default_factory=list)
    wrappers: list[tuple[int, int, str]] = field(default_factory=list)
    placeholders: list[tuple[int, int, str]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def _read_unit(unit: Unit, source: bytes, ignore: Sequence[tuple[str, ...]]) -> _Reading:
    kind = unit.node.type
    if kind in ("variable_assignment", "variable_assignments", "declaration_command"):
        return _Reading(SETUP, False)
    if kind == "unset_command":
        return _Reading(SETUP, False)
    if kind != "command":
        return _Reading(WORK, bool(unit_writes(unit)))
    args = unit_args(unit)
    words = [word for word, _node in args]
    nodes = [node for _word, node in args]
    found, writes = unit_kind(words, unit_fed(unit), ignore)
    reading = _Reading(found, writes or bool(unit_writes(unit)))
    kept = set(unwrapped(words))
    for index in (i for i in range(len(words)) if i not in kept):
        reading.wrappers.append((int(nodes[index].start_byte), int(nodes[index].end_byte), ""))
    message = message_of(words, [text_of(node) for node in nodes])
    for index in message.whole:
        node = nodes[index]
        reading.elide.append((int(node.start_byte), int(node.end_byte), ELIDED))
        reading.messages.append(words[index])
    for index, offset in message.tails:
        node = nodes[index]
        reading.elide.append((int(node.start_byte) + offset, int(node.end_byte), ELIDED))
        reading.messages.append(text_of(node)[offset:].strip("'\""))
    if message.from_input:
        for start, end in heredoc_body_spans(unit):
            reading.elide.append((start, end, ELIDED + "\n"))
            reading.messages.append(sliced(source, start, end))
    for index, placeholder in file_arguments(words, message):
        node = nodes[index]
        reading.placeholders.append((int(node.start_byte), int(node.end_byte), placeholder))
        reading.files.append(words[index])
    return reading


def _fetched(units: Sequence[Unit]) -> list[int]:
    """The units of a pipeline that run code fetched from the network (remem/shell/kinds.py):
    fed by a fetch before them in the pipeline, or running one inside their arguments."""
    found, fed = [], False
    for index, unit in enumerate(units):
        if unit.node.type != "command":
            continue
        words = unit_words(unit)
        inside = any(is_fetcher(nested) for nested in nested_commands(unit))
        if runs_fetched(words, fed, inside):
            found.append(index)
        fed = fed or is_fetcher(words)
    return found


def _set_flags(unit: Unit) -> tuple[bool | None, bool | None]:
    """(pipefail, errexit) as a `set` unit changes them; None where it leaves one alone."""
    words = unit_words(unit)
    if not words or words[0] != "set":
        return None, None
    pipefail: bool | None = None
    errexit: bool | None = None
    args = words[1:]
    for index, arg in enumerate(args):
        if len(arg) < 2 or arg[0] not in "-+":
            continue
        on = arg[0] == "-"
        if "e" in arg[1:] and not arg.startswith("--"):
            errexit = on
        option = args[index + 1] if "o" in arg[1:] and index + 1 < len(args) else ""
        if option == "pipefail":
            pipefail = on
        elif option == "errexit":
            errexit = on
    return pipefail, errexit


def _chdir(unit: Unit, current: str | None) -> str | None:
    """Where a `cd`/`pushd` unit leaves the shell; "?" when its target is not a literal path."""
    words = unit_words(unit)
    if unit.node.type != "command" or not words or words[0] not in ("cd", "pushd", "popd"):
        return current
    args = [word for word in words[1:] if word != "--"]
    arg_nodes = [c for c in unit.node.children if c.type != "command_name" and c.is_named]
    literal = all(c.type in ("word", "raw_string", "string", "number") for c in arg_nodes)
    if words[0] == "popd" or len(args) != 1 or not literal or "$" in args[0]:
        return UNKNOWN_DIRECTORY
    target = args[0]
    if target.startswith(("~", "-")):
        return UNKNOWN_DIRECTORY
    if current == UNKNOWN_DIRECTORY:
        return current
    if posixpath.isabs(target) or current is None:
        return posixpath.normpath(target)
    return posixpath.normpath(posixpath.join(current, target))


# --- steps -----------------------------------------------------------------------------------


@dataclass
class _Draft:
    pipeline: Pipeline
    and_or: int
    chdir: str | None
    pipefail: bool
    errexit: bool
    filtered: bool = False
    core: list[Unit] = field(default_factory=list)


def _fails_through(pipeline: Pipeline) -> bool:
    """`|| exit 1`, `|| false`: the command still fails when the step before did."""
    words = unit_words(pipeline.units[0]) if len(pipeline.units) == 1 else []
    return words == ["false"] or (len(words) == 2 and words[0] == "exit" and words[1] != "0")


def _is_masker(pipeline: Pipeline) -> bool:
    if len(pipeline.units) != 1:
        return False
    words = unit_words(pipeline.units[0])
    if not words:
        return False
    return words[0] in MASKERS or words == ["exit", "0"]


# Commands repeat: most analyses come from the cache. A long one (a heredoc holding a file) is
# analysed each time rather than kept.
CACHED_COMMAND_CHARS = 4096


def analyse(command: str, ignore_commands: Iterable[str] = ()) -> Analysis:
    """The steps of a command; `ignore_commands` are read-only commands ("git status")."""
    ignore = tuple(ignore_commands)
    if len(command) > CACHED_COMMAND_CHARS:
        return _analyse_any(command, ignore)
    return _cached(command, ignore)


@functools.lru_cache(maxsize=8192)
def _cached(command: str, ignore_commands: tuple[str, ...]) -> Analysis:
    return _analyse_any(command, ignore_commands)


def _analyse_any(command: str, ignore_commands: tuple[str, ...]) -> Analysis:
    ignore = tuple(tuple(entry.split()) for entry in ignore_commands if entry.strip())
    try:
        return _analyse(command, ignore)
    except RecursionError:  # thousands of chained commands: read as one opaque step
        return _unparsed(command, ignore)


def _analyse(command: str, ignore: tuple[tuple[str, ...], ...]) -> Analysis:
    source = command.encode("utf-8", "surrogateescape")
    lists = parse(command)
    if lists is None:
        return _unparsed(command, ignore)
    drafts = _drafts(lists)
    decisive, masked_lists = _decisive(lists, drafts)
    steps = []
    elided: list[tuple[int, int, str]] = []
    for index, draft in enumerate(drafts):
        units, core = draft.pipeline.units, draft.core
        readings = [_read_unit(unit, source, ignore) for unit in units]
        for index in _fetched(units):
            readings[index].kind = FETCHED
        elide = [span for reading in readings for span in reading.elide]
        elided += elide
        text = sliced(source, units[0].start, max(u.line_end() for u in units), elide)
        text += heredoc_bodies(units, source, elide)
        core_readings = readings[: len(core)]
        unwrap = elide + [span for reading in core_readings for span in reading.wrappers]
        workflow = _workflow(draft, source, unwrap)
        placeholders = [span for reading in core_readings for span in reading.placeholders]
        family = _workflow(draft, source, unwrap + placeholders) if placeholders else workflow
        masked = (draft.filtered and not draft.pipefail) or draft.and_or in masked_lists
        masked = masked or index in decisive.masked_by_or
        writes = any(reading.writes for reading in readings)
        steps.append(
            Step(
                text=text,
                workflow=workflow,
                chdir=draft.chdir,
                masked=masked,
                decisive=index in decisive.indexes and not masked,
                kind=step_kind([reading.kind for reading in core_readings], writes),
                program=_unit_name(core[0]),
                family=fold_placeholders(family),
                files=tuple(name for reading in core_readings for name in reading.files),
                messages=tuple(m for reading in readings for m in reading.messages if m),
            )
        )
    whole = sliced(source, 0, len(source), elided) if elided else None
    return Analysis(tuple(steps), parsed=True, elided=whole)


def _workflow(draft: _Draft, source: bytes, elide: Spans) -> str:
    core = draft.core
    workflow = unit_workflow(core[0], source, elide)
    for pipe, unit in zip(draft.pipeline.pipes, core[1:], strict=False):
        workflow += f" {pipe} {unit_workflow(unit, source, elide)}"
    return workflow + heredoc_bodies(core, source, elide)


def _drafts(lists: list[AndOr]) -> list[_Draft]:
    drafts = []
    chdir: str | None = None
    pipefail = errexit = False
    for index, and_or in enumerate(lists):
        for pipeline in and_or.pipelines:
            draft = _Draft(pipeline, index, chdir, pipefail, errexit)
            units = pipeline.units
            end = len(units)
            while end > 1 and _unit_name(units[end - 1]) in OUTPUT_FILTERS:
                end -= 1
            draft.core = units[:end]
            draft.filtered = end < len(units)
            drafts.append(draft)
            if len(units) == 1:  # a builtin in a pipeline runs in a subshell: no effect
                chdir = _chdir(units[0], chdir)
                new_pipefail, new_errexit = _set_flags(units[0])
                pipefail = pipefail if new_pipefail is None else new_pipefail
                errexit = errexit if new_errexit is None else new_errexit
    return drafts


@dataclass
class _Decisive:
    indexes: set[int]
    masked_by_or: set[int]


def _decisive(lists: list[AndOr], drafts: list[_Draft]) -> tuple[_Decisive, set[int]]:
    """Which pipelines' statuses the command's exit status entails, and which and-or lists a
    trailing masker (`; true`, `; exit 0`) hides."""
    result = _Decisive(set(), set())
    masked_lists: set[int] = set()
    if not lists:
        return result, masked_lists
    last = len(lists) - 1
    final_masks = last > 0 and all(_is_masker(p) for p in lists[last].pipelines)
    first = 0  # the draft index of the list's first pipeline
    for list_index, and_or in enumerate(lists):
        if list_index:
            first += len(lists[list_index - 1].pipelines)
        if list_index != last and not drafts[first].errexit:
            if final_masks:  # `make test; true`: whatever make did, the command succeeds
                masked_lists.add(list_index)
            continue
        if and_or.background or (list_index == last and final_masks):
            continue
        if "||" in and_or.ops:
            cut = and_or.ops.index("||")
            rest = and_or.pipelines[cut + 1 :]
            if all(_is_masker(p) for p in rest):
                result.masked_by_or.update(range(first, first + cut + 1))
            elif all(_fails_through(p) for p in rest) and "||" not in and_or.ops[cut + 1 :]:
                result.indexes.update(range(first, first + cut + 1))
            continue
        result.indexes.update(range(first, first + len(and_or.pipelines)))
    return result, masked_lists


def _unparsed(command: str, ignore: Sequence[tuple[str, ...]]) -> Analysis:
    """What the grammar cannot read, or is not given for its size, stays one opaque step, its
    text unchanged; a plain command's workflow is the one the grammar would give it."""
    words = command.split()
    kind, _writes = unit_kind(words, False, ignore)
    name = words[0] if words else ""
    workflow = plain_workflow(command) or command.strip()
    step = Step(command, workflow, None, False, True, kind, name, workflow)
    return Analysis((step,), parsed=False)


def resolve_directory(start: str, worktree_root: str, chdir: str | None) -> str | None:
    """A step's directory relative to the work tree's root: `start` is where the command ran
    ("." or "frontend"); None when it cannot be known or lies outside the work tree."""
    if chdir is None:
        return start
    if chdir == UNKNOWN_DIRECTORY:
        return None
    if posixpath.isabs(chdir):
        relative = posixpath.relpath(chdir, worktree_root) if worktree_root else chdir
    else:
        relative = posixpath.normpath(posixpath.join(start, chdir))
    if relative == ".." or relative.startswith("../") or posixpath.isabs(relative):
        return None
    return relative
