"""Whether two workflows are for the same purpose (DESIGN.md §6, substitutions): the same tool
run another way. `pytest`, `.venv/bin/python -m pytest` and `python3 -m pytest` run pytest;
`go test ./...` and `GOCACHE=$(pwd)/.cache/go-build go test ./...` run go test.

A workflow is reduced to what it runs: environment assignments, wrappers (`env`, `time`) and
launchers (`uv run`, `npx`) dropped, a program's directory dropped, an interpreter running a
module (`python3 -m pytest`) read as that module. Two workflows whose reductions are equal are
for the same purpose; so are two of one tool family (remem/shell/recognisers.py) that differ
only in their options, when the failed one could not run: `pytest tests/a.py` and
`pytest tests/b.py` are not, as running other tests is another purpose.

From another directory only the same command counts, its paths read from where each ran:
`node assets/build.js` failing at the root and `node build.js` passing in assets/ run the same
script, so does `npm test` in web/ after `npm test` could not run at the root. Pure.
"""

from __future__ import annotations

from functools import lru_cache

from remem.shell import recognisers
from remem.shell.arguments import file_identity, file_placeholder, parseable
from remem.shell.syntax import parse, unit_words
from remem.shell.wrappers import basename, is_python, past_launchers, wrapped_form


@lru_cache(maxsize=1_024)
def reduced(workflow: str) -> tuple[str, ...] | None:
    """What the workflow runs, as words; None when it is not one simple command (a pipeline,
    a list, something the grammar cannot read)."""
    words = _simple_words(workflow) or []
    words = words[past_launchers(words) :]  # `python -m pytest -q` runs pytest
    if not words:
        return None
    program = basename(words[0])
    return ("python" if is_python(program) else program, *words[1:])


def form_of(command: str, workflow: str) -> str:
    """The workflow of a step as its wrappers ran it (`rtk bun run test`), given the step as
    run (`rtk bun run test 2>&1 | tail -5`): the workflow itself when nothing wraps it."""
    if command.startswith(workflow):
        return workflow  # nothing stands before it: the common case, read without the grammar
    return _wrapped(command, workflow)


@lru_cache(maxsize=1_024)
def _wrapped(command: str, workflow: str) -> str:
    lists = parse(parseable(command))
    if not lists or not lists[0].pipelines or not lists[0].pipelines[0].units:
        return workflow
    unit = lists[0].pipelines[0].units[0]
    if unit.node.type != "command":
        return workflow
    return wrapped_form(unit_words(unit), workflow)


def _simple_words(workflow: str) -> list[str] | None:
    """The words of a workflow that is one simple command; None for anything else."""
    lists = parse(parseable(workflow))
    if not lists or len(lists) != 1 or len(lists[0].pipelines) != 1:
        return None
    units = lists[0].pipelines[0].units
    if len(units) != 1 or units[0].node.type != "command":
        return None
    return unit_words(units[0])


def same_purpose(failed: str, passed: str, failed_ran: bool = False) -> bool:
    """Whether `passed` runs what `failed` meant to run, another way: see the module's doc.
    `failed_ran`: the failed run was red, not unable to run (remem/shell/runnable.py); then
    other options passing says nothing about how to run it here (a flaky test, a narrower
    selection), and only the same tool run another way counts."""
    if failed == passed:
        return False
    first, second = reduced(failed), reduced(passed)
    if first is None or second is None:
        return False
    if first == second:
        return True
    if failed_ran:
        return False
    family = recognisers.check_of(failed)
    if family is None or family is not recognisers.check_of(passed):
        return False
    return _operands(first) == _operands(second)


def same_elsewhere(
    failed: str, failed_directory: str, passed: str, passed_directory: str, failed_ran: bool
) -> bool:
    """Whether the command `passed`, run in another directory of the project, is the command
    `failed` meant to run: the same words, each path read from the directory it ran in (the
    commands as run: a workflow's `<file>` names none). Red where it
    failed (`failed_ran`), it counts only when it names a file: the same script passing from
    another place says where to run it, while the same test command passing in a
    sub-project says nothing of the tests that failed."""
    first = _placed(failed, failed_directory)
    second = _placed(passed, passed_directory)
    if first is None or first != second:
        return False
    return not failed_ran or first[1]


@lru_cache(maxsize=1_024)
def _placed(command: str, directory: str) -> tuple[tuple[str, ...], bool] | None:
    """A simple command's words with each file it names (the program's own script included)
    read from `directory`, as families of file arguments read them, and whether it names any;
    None for anything else."""
    simple = _simple_words(command)
    if simple is None:
        return None
    files = [file_placeholder(word) is not None for word in simple]
    words = [
        file_identity(w, directory, "") if f else w for w, f in zip(simple, files, strict=True)
    ]
    return tuple(words), any(files)


def _operands(words: tuple[str, ...]) -> tuple[str, ...]:
    """The words that are not options: what a tool is asked to run or check."""
    return tuple(word for word in words if not word.startswith("-"))
