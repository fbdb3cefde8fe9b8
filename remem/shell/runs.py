"""What a workflow step runs that lives in the project (DESIGN.md §5, inputs): the script file
it executes (`./scripts/check.sh`, `sh scripts/check.sh`, `python tools/gen.py`), and the named
task it asks a task runner for (`make test`: the `test` target of the Makefile in the step's
directory). Read from the step's parsed words; which runner reads which file is the table of
remem/record/inputs.py. Pure: whether the files exist is for the caller to find out.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from remem.record.inputs import SCRIPT, TASK_FILES
from remem.shell.arguments import parseable, script_position
from remem.shell.kinds import command_view, program_name
from remem.shell.syntax import parse, unit_words

# One input, as alternatives: the first that can be read is the one (Makefile or makefile).
Input = tuple[tuple[str, str, str | None], ...]

# Folders of installed dependencies and build output: a program run from there (`.venv/bin/
# pytest`) is a tool, not the project's own script.
TOOL_FOLDERS = frozenset(
    {".venv", "venv", "node_modules", "_build", "deps", "target", ".tox", ".nox", "vendor"}
)
# Options of a task runner that take the next word as their value, and the one that names the
# directory it runs in.
VALUED_OPTIONS = {
    "make": frozenset({"-C", "-f", "--file", "--makefile", "-j", "-l", "-o", "-W", "-I"}),
    "just": frozenset({"-f", "--justfile", "-d", "--working-directory", "--set"}),
    "task": frozenset({"-d", "--dir", "-t", "--taskfile"}),
}
DIRECTORY_OPTIONS = frozenset({"-C", "--directory", "-d", "--dir", "--working-directory"})


def step_argv(workflow: str) -> list[str]:
    """The words of the step's first command, past its wrappers (`env X=1`, `time`)."""
    lists = parse(parseable(workflow))
    if not lists or not lists[0].pipelines or not lists[0].pipelines[0].units:
        return []
    words = unit_words(lists[0].pipelines[0].units[0])
    return [words[index] for index in command_view(words)]


def step_inputs(workflow: str, directory: str) -> list[Input]:
    """What the step runs, each as its alternatives of (path relative to the work tree, kind,
    task); `directory` is where the step ran, relative to the work tree. Paths outside the
    work tree or in a tool folder are left out."""
    argv = step_argv(workflow)
    if not argv:
        return []
    found: list[Input] = []
    scripts = [argv[0]] if "/" in argv[0] else []
    task, runner = _task_input(argv, directory)
    position = script_position(argv)
    if position is not None and position >= runner:
        scripts.append(argv[position])
    elif task and "/" in (task[0][2] or ""):
        scripts.append(task[0][2] or "")  # `bun run scripts/x.ts` runs a file, no script
    for script in scripts:
        path = _within(directory, script)
        if path is not None and not TOOL_FOLDERS.intersection(path.split("/")):
            found.append(((path, SCRIPT, None),))
    if task:
        found.append(task)
    return found


def _within(directory: str, path: str) -> str | None:
    if posixpath.isabs(path) or path.startswith("~") or "$" in path:
        return None
    joined = posixpath.normpath(posixpath.join(directory, path))
    return None if joined == ".." or joined.startswith("../") else joined


def _task_input(argv: Sequence[str], directory: str) -> tuple[Input, int]:
    """The task file a task runner reads and the task asked of it, and how many words the
    runner took (0 when argv runs no task runner)."""
    name = program_name(argv)
    for row in TASK_FILES:
        for runner in row.runners:
            if (name, *argv[1 : len(runner)]) != runner:
                continue
            task, where = _task_word(row.kind, argv[len(runner) :])
            place = directory if where is None else _within(directory, where)
            if task is None or place is None:
                return (), len(runner)
            places = [place] if row.kind != "cargo" or place == "." else [place, "."]
            found = tuple(
                (posixpath.normpath(posixpath.join(at, file)), row.kind, task)
                for at in places
                for file in row.names
            )
            return found, len(runner)
    return (), 0


def _task_word(kind: str, args: Sequence[str]) -> tuple[str | None, str | None]:
    """The task a runner is asked for (its first word that is no option nor assignment), and
    the directory an option moved it to."""
    valued = VALUED_OPTIONS.get(kind, frozenset())
    where = None
    index = 0
    while index < len(args):
        word = args[index]
        if word.startswith("-"):
            if word in valued and index + 1 < len(args):
                if word in DIRECTORY_OPTIONS:
                    where = args[index + 1]
                index += 2
                continue
            index += 1
            continue
        if "=" in word and kind in ("make", "just"):
            index += 1
            continue
        return word, where
    return None, where
