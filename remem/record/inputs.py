"""What a procedure runs, fingerprinted (DESIGN.md §5, inputs): a script file, or a named task's
own definition in the file that holds it (a Makefile target's recipe, a package.json script).
The worker reads them when a run verifies a procedure; readers compare them with the files when
they show it: size and modification time first, the definition hashed again only when those
changed, so that editing another target of the Makefile changes nothing.

Knowledge as data: TASK_FILES has one row per kind of task file, each with a real excerpt its
test reads. Stdlib only: the SessionStart hook checks the procedures of its page; what only a
changed file needs (tomllib, json) is imported then.
"""

from __future__ import annotations

import functools
import os
import re

from remem.record.sha import sha256_hex

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

    Extract = Callable[[str, str], "str | None"]

# A file larger than this is never read, nor one outside the work tree (symlinks resolved).
MAX_INPUT_BYTES = 1 << 20
# At most this many inputs per procedure: a command names a script or a task or two.
MAX_INPUTS = 4
SCRIPT = "script"  # an input that is a whole file: the script a command runs
READ_AT_VERIFICATION, READ_AT_REBUILD = "verification", "rebuild"


# --- task definitions ------------------------------------------------------------------------

# The patterns the make and just readers use, compiled when a Makefile or a justfile is read:
# a digest with nothing changed pays nothing for them.
PATTERNS = {
    "make variable": r"\$[({]([A-Za-z_][A-Za-z0-9_.-]*)[)}]",
    "make assignment": (
        r"^(?:export\s+|override\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*(?::::?=|:=|\?=|\+=|!=|=)"
    ),
    "just variable": r"\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)",
    "just assignment": r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_-]*)\s*:=",
    "just header": r"^@?([A-Za-z_][A-Za-z0-9_-]*)(?:\s[^:=]*)?:(?!=)",
}


@functools.cache
def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(PATTERNS[name])


def _logical_lines(text: str) -> list[str]:
    """Lines with backslash continuations joined, as make reads them."""
    return text.replace("\\\r\n", " ").replace("\\\n", " ").splitlines()


class _Indexed:
    """A task file read once: each task's lines, and each variable's definitions."""

    __slots__ = ("defined", "definitions", "lines", "tasks")

    def __init__(self, lines: list[str], defines: re.Pattern[str]) -> None:
        self.lines = lines
        self.tasks: dict[str, list[str]] = {}
        self.definitions: dict[str, list[str]] = {}
        self.defined: list[str | None] = []  # per line, the variable it defines
        for line in lines:
            found = defines.match(line)
            self.defined.append(found.group(1) if found else None)
            if found:
                self.definitions.setdefault(found.group(1), []).append(line)

    def with_variables(self, name: str, uses: re.Pattern[str]) -> str | None:
        """A task's lines, then the definitions in the same file of the variables they name,
        and of those these name, in the file's order."""
        block = self.tasks.get(name)
        if block is None:
            return None
        wanted: set[str] = set()
        pending = [used for line in block for used in uses.findall(line)]
        while pending:
            used = pending.pop()
            if used in wanted or used not in self.definitions:
                continue
            wanted.add(used)
            pending += [more for line in self.definitions[used] for more in uses.findall(line)]
        found = zip(self.lines, self.defined, strict=True)
        kept = [line for line, defined in found if defined in wanted]
        return "\n".join([*block, *kept])


@functools.lru_cache(maxsize=8)
def _makefile(text: str) -> _Indexed:
    """A Makefile's rules by target (the rule line and its recipe): read once per text, as
    the digest asks for many targets of one Makefile."""
    lines = _logical_lines(text)
    assignment = _pattern("make assignment")
    indexed = _Indexed(lines, assignment)
    for index, line in enumerate(lines):
        if line.startswith("\t") or assignment.match(line):
            continue
        head, colon, _rest = line.partition(":")
        if not colon:
            continue
        block = [line]
        for following in lines[index + 1 :]:
            if following.startswith("\t") or not following.strip():
                block.append(following)
            elif following.lstrip().startswith("#"):
                continue
            else:
                break
        for target in head.split():
            indexed.tasks.setdefault(target, _trimmed(list(block)))
    return indexed


def makefile_target(text: str, name: str) -> str | None:
    """A Makefile target's rule and recipe, with the variables they name."""
    return _makefile(text).with_variables(name, _pattern("make variable"))


@functools.lru_cache(maxsize=8)
def _justfile(text: str) -> _Indexed:
    """A justfile's recipes by name (the header and its indented body), read once per text."""
    lines = text.splitlines()
    indexed = _Indexed(lines, _pattern("just assignment"))
    header = _pattern("just header")
    for index, line in enumerate(lines):
        found = header.match(line)
        if not found:
            continue
        block = [line]
        for following in lines[index + 1 :]:
            if following[:1] in (" ", "\t") or not following.strip():
                block.append(following)
            else:
                break
        indexed.tasks.setdefault(found.group(1), _trimmed(block))
    return indexed


def justfile_recipe(text: str, name: str) -> str | None:
    """A justfile recipe (its header and indented body), with the variables it names."""
    return _justfile(text).with_variables(name, _pattern("just variable"))


def _trimmed(block: list[str]) -> list[str]:
    while block and not block[-1].strip():
        block.pop()
    return block


def package_script(text: str, name: str) -> str | None:
    """`scripts.<name>` of a package.json, with its pre and post scripts (npm runs them)."""
    import json

    try:
        scripts = json.loads(text).get("scripts")
    except (ValueError, AttributeError):
        return None
    if not isinstance(scripts, dict) or name not in scripts:
        return None
    own = {key: scripts[key] for key in (f"pre{name}", name, f"post{name}") if key in scripts}
    return json.dumps(own, sort_keys=True)


def mix_alias(text: str, name: str) -> str | None:
    """An alias in mix.exs (`test: ["ecto.create --quiet", "test"]`): its key and value."""
    key = re.compile(rf"(?<![\w.\"]){re.escape(name)}:\s|\"{re.escape(name)}\":\s")
    for found in key.finditer(text):
        value = _elixir_value(text, found.end())
        if value is not None:
            return found.group(0) + value
    return None


def _elixir_value(text: str, start: int) -> str | None:
    """The term from `start` to the comma or bracket that closes its list, quotes respected."""
    depth, index, quote = 0, start, ""
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[({":
            depth += 1
        elif char in "])}":
            if depth == 0:
                break
            depth -= 1
        elif char in ",\n" and depth == 0:
            break
        index += 1
    value = text[start:index].strip()
    return value or None


def taskfile_task(text: str, name: str) -> str | None:
    """A task of a Taskfile.yml: its key under `tasks:` and the lines indented below it."""
    lines = text.splitlines()
    in_tasks = False
    key = re.compile(rf"^(\s+)[\"']?{re.escape(name)}[\"']?:(\s|$)")
    for index, line in enumerate(lines):
        if line and not line[0].isspace():
            in_tasks = line.rstrip() == "tasks:"
            continue
        found = key.match(line) if in_tasks else None
        if found is None:
            continue
        indent = len(found.group(1))
        block = [line]
        for following in lines[index + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            block.append(following)
        return "\n".join(_trimmed(block))
    return None


def _toml_entry(text: str, path: Sequence[str]) -> str | None:
    import json
    import tomllib

    try:
        found: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    for part in path:
        if not isinstance(found, dict) or part not in found:
            return None
        found = found[part]
    return json.dumps(found, sort_keys=True)


def poe_task(text: str, name: str) -> str | None:
    return _toml_entry(text, ("tool", "poe", "tasks", name))


def pdm_script(text: str, name: str) -> str | None:
    return _toml_entry(text, ("tool", "pdm", "scripts", name))


def hatch_script(text: str, name: str) -> str | None:
    """`hatch run test` is the default environment's script; `hatch run lint:check` the
    `lint` environment's."""
    environment, colon, script = name.rpartition(":")
    path = ("tool", "hatch", "envs", environment if colon else "default", "scripts", script)
    return _toml_entry(text, path)


def cargo_alias(text: str, name: str) -> str | None:
    return _toml_entry(text, ("alias", name))


class TaskFile:
    """A kind of file that defines named tasks: where a runner finds it (the first of
    `names` in the run's directory) and how one task's definition is read from it."""

    __slots__ = ("example", "extract", "kind", "names", "runners")

    def __init__(
        self,
        kind: str,
        names: tuple[str, ...],
        runners: tuple[tuple[str, ...], ...],
        extract: Extract,
        example: tuple[str, str, str],
    ) -> None:
        self.kind, self.names, self.runners = kind, names, runners
        self.extract, self.example = extract, example


# One row per kind of task file: its kind, the files it may be, the commands that run one of
# its tasks (the task's name is the first word after them that is no option), how a task is
# read, and a real excerpt (the command, the file's text, the task's definition read from it).
TASK_FILES = (
    TaskFile(
        "make",
        ("GNUmakefile", "makefile", "Makefile"),
        (("make",), ("gmake",)),
        makefile_target,
        (
            "make test",
            "PYTEST ?= .venv/bin/pytest\nLINT = ruff\n\ntest: .venv/.installed\n"
            "\t$(PYTEST) -q tests/\n\nlint:\n\t$(LINT) check .\n",
            "test: .venv/.installed\n\t$(PYTEST) -q tests/\nPYTEST ?= .venv/bin/pytest",
        ),
    ),
    TaskFile(
        "just",
        ("justfile", "Justfile", ".justfile"),
        (("just",),),
        justfile_recipe,
        (
            "just test",
            'set dotenv-load\nflags := "-q"\n\n# run the tests\ntest *args:\n'
            "    cargo test {{flags}} {{args}}\n\nfmt:\n    cargo fmt\n",
            'test *args:\n    cargo test {{flags}} {{args}}\nflags := "-q"',
        ),
    ),
    TaskFile(
        "package.json",
        ("package.json",),
        (
            ("npm", "run"),
            ("npm", "run-script"),
            ("pnpm", "run"),
            ("yarn", "run"),
            ("bun", "run"),
            ("npm",),
            ("pnpm",),
            ("yarn",),
        ),
        package_script,
        (
            "npm run build",
            '{"name": "web", "scripts": {"build": "vite build", "test": "vitest run"}}',
            '{"build": "vite build"}',
        ),
    ),
    TaskFile(
        "mix",
        ("mix.exs",),
        (("mix",),),
        mix_alias,
        (
            "mix setup",
            '  defp aliases do\n    [\n      setup: ["deps.get", "ecto.setup"],\n'
            '      "ecto.reset": ["ecto.drop", "ecto.setup"]\n    ]\n  end\n',
            'setup: ["deps.get", "ecto.setup"]',
        ),
    ),
    TaskFile(
        "task",
        ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml"),
        (("task",),),
        taskfile_task,
        (
            "task build",
            "version: '3'\n\ntasks:\n  build:\n    cmds:\n      - go build ./...\n"
            "  lint:\n    cmds:\n      - golangci-lint run\n",
            "  build:\n    cmds:\n      - go build ./...",
        ),
    ),
    TaskFile(
        "poe",
        ("pyproject.toml",),
        (("poe",),),
        poe_task,
        (
            "poe test",
            '[tool.poe.tasks]\ntest = "pytest -q"\nlint = "ruff check ."\n',
            '"pytest -q"',
        ),
    ),
    TaskFile(
        "hatch",
        ("pyproject.toml",),
        (("hatch", "run"),),
        hatch_script,
        (
            "hatch run test",
            '[tool.hatch.envs.default.scripts]\ntest = "pytest {args:tests}"\n',
            '"pytest {args:tests}"',
        ),
    ),
    TaskFile(
        "pdm",
        ("pyproject.toml",),
        (("pdm", "run"),),
        pdm_script,
        (
            "pdm run lint",
            '[tool.pdm.scripts]\nlint = "ruff check src"\nstart = "flask run -p 54321"\n',
            '"ruff check src"',
        ),
    ),
    TaskFile(
        "cargo",
        (".cargo/config.toml", ".cargo/config"),
        (("cargo",),),
        cargo_alias,
        (
            "cargo xtask",
            '[alias]\nxtask = "run --package xtask --"\n',
            '"run --package xtask --"',
        ),
    ),
)
TASK_KINDS = {row.kind: row for row in TASK_FILES}


# --- fingerprints ----------------------------------------------------------------------------


def _inside(path: str, real_tree: str) -> str | None:
    """The file's real path when it lies in the work tree (symlinks resolved), else None."""
    real = os.path.realpath(path)
    return real if real.startswith(real_tree.rstrip("/") + "/") else None


# Files read, by real path, size and modification time: the digest asks for many targets of
# one Makefile. Kept small: a long-running reader (the UI) reads again once it is full.
_TEXTS: dict[tuple[str, int, int], str | None] = {}
TEXTS_KEPT = 16


def _text(path: str, stat: os.stat_result) -> str | None:
    key = (path, stat.st_size, stat.st_mtime_ns)
    if key in _TEXTS:
        return _TEXTS[key]
    text = None
    if stat.st_size <= MAX_INPUT_BYTES:
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_INPUT_BYTES + 1)
        except OSError:
            data = None
        if data is not None and len(data) <= MAX_INPUT_BYTES:
            text = data.decode("utf-8", "surrogateescape")
    if len(_TEXTS) >= TEXTS_KEPT:
        _TEXTS.clear()
    _TEXTS[key] = text
    return text


def _definition(kind: str, task: str | None, path: str, stat: os.stat_result) -> str | None:
    """What of the file the input is: the whole file's text, or the task's definition; None
    when it cannot be read (too large, not text, the task gone)."""
    if stat.st_size > MAX_INPUT_BYTES:
        return None
    text = _text(path, stat)
    if text is None:
        return None
    if kind == SCRIPT or task is None:
        return text
    row = TASK_KINDS.get(kind)
    return None if row is None else row.extract(text, task)


@functools.lru_cache(maxsize=16)
def _real_tree(work_tree: str) -> str:
    return os.path.realpath(work_tree)


@functools.lru_cache(maxsize=64)
def _real_path(path: str, inode: int, device: int) -> str:
    """A file's real path, read once per file it names (a symlink moved elsewhere names
    another file, and is resolved again)."""
    return os.path.realpath(path)


def _digest(definition: str) -> str:
    return sha256_hex(definition.encode("utf-8", "surrogateescape"))


def fingerprint(
    work_tree: str, path: str, kind: str, task: str | None, now: float, read_by: str
) -> dict[str, Any] | None:
    """The fingerprint of one input, `path` relative to the work tree; None when it is not
    there, lies outside the work tree, is larger than MAX_INPUT_BYTES or (a task) is not
    defined in it: nothing to compare with later."""
    full = os.path.join(work_tree, path)
    real = _inside(full, os.path.realpath(work_tree))
    if real is None:
        return None
    try:
        stat = os.stat(real)
    except OSError:
        return None
    definition = _definition(kind, task, real, stat)
    if definition is None:
        return None
    return {
        "path": path,
        "kind": kind,
        "task": task,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "sha256": _digest(definition),
        "read_at": now,
        "read_by": read_by,
    }


def fingerprints(
    work_tree: str,
    inputs: Iterable[Sequence[tuple[str, str, str | None]]],
    now: float,
    read_by: str = READ_AT_VERIFICATION,
) -> list[dict[str, Any]]:
    """The fingerprints of a procedure's inputs, each given as its alternatives of (path,
    kind, task) (Makefile or makefile: the first that can be read), at most MAX_INPUTS of
    them; those that cannot be read are left out."""
    found: dict[tuple[str, str | None], dict[str, Any]] = {}
    for alternatives in inputs:
        for path, kind, task in alternatives:
            if (path, task) in found:
                break
            made = fingerprint(work_tree, path, kind, task, now, read_by)
            if made is not None:
                found[(path, task)] = made
                break
        if len(found) >= MAX_INPUTS:
            break
    return list(found.values())


def label(stored: dict[str, Any]) -> str:
    """How an input is named on a procedure's line, inert: `Makefile (test)`,
    `scripts/check.sh`."""
    from remem.record.quote import inert_path

    task = stored.get("task")
    path = inert_path(str(stored["path"]))
    return f"{path} ({inert_path(str(task))})" if task else path


class Check:
    """What became of a procedure's inputs in a work tree: those that changed since they
    were read (their labels, `Makefile (test)`), those that are gone, and the paths of both
    (`changed_inputs` in JSON)."""

    __slots__ = ("changed", "missing", "paths")

    def __init__(self, changed: list[str], missing: list[str], paths: list[str]) -> None:
        self.changed, self.missing, self.paths = tuple(changed), tuple(missing), tuple(paths)


UNCHANGED = Check([], [], [])


def compare(stored: Sequence[dict[str, Any]], work_tree: str) -> Check:
    """Which stored inputs changed in the work tree since they were read, and which are gone.
    A file whose size and modification time are the same is not read; one whose are not is
    hashed again, and a task whose own definition is the same has not changed."""
    if not stored:
        return UNCHANGED
    changed: list[str] = []
    missing: list[str] = []
    paths: list[str] = []
    real_tree = ""
    for item in stored:
        full = os.path.join(work_tree, item["path"])
        try:
            stat = os.stat(full)
        except OSError:
            missing.append(item["path"])
            paths.append(item["path"])
            continue
        if stat.st_size == item.get("size") and stat.st_mtime_ns == item.get("mtime_ns"):
            continue
        real_tree = real_tree or _real_tree(work_tree)
        resolved = _real_path(full, stat.st_ino, stat.st_dev)
        real = resolved if resolved.startswith(real_tree.rstrip("/") + "/") else None
        kind, task = item.get("kind", SCRIPT), item.get("task")
        definition = None if real is None else _definition(kind, task, real, stat)
        if definition is None or _digest(definition) != item.get("sha256"):
            changed.append(label(item))
            paths.append(item["path"])
    if not paths:
        return UNCHANGED
    return Check(changed, missing, list(dict.fromkeys(paths)))


def checked_fields(text: str | None, work_tree: str) -> dict[str, tuple[str, ...]]:
    """A read record's fields of its inputs' check: `changed_inputs` (the paths changed or
    gone), `missing_inputs` (gone) and `changed_tasks` (the labels of those changed)."""
    found = check(text, work_tree)
    return {
        "changed_inputs": found.paths,
        "missing_inputs": found.missing,
        "changed_tasks": found.changed,
    }


def shown_inputs(text: str | None) -> list[dict[str, Any]]:
    """What a procedure's JSON says of its stored fingerprints: the path, the task, when and
    by what they were read."""
    return [
        {
            "path": item["path"],
            "task": item.get("task"),
            "read_at": item.get("read_at"),
            "read_by": item.get("read_by", READ_AT_VERIFICATION),
        }
        for item in stored_inputs(text)
    ]


def check(text: str | None, work_tree: str) -> Check:
    """`compare` of a procedure's stored fingerprints (its `inputs` column)."""
    return compare(stored_inputs(text), work_tree) if text and text != "[]" else UNCHANGED


def stored_inputs(text: str | None) -> list[dict[str, Any]]:
    """A procedure's stored fingerprints (a JSON list); none when unreadable."""
    if not text or text == "[]":
        return []
    import json

    try:
        found = json.loads(text)
    except ValueError:
        return []
    if not isinstance(found, list):
        return []
    return [item for item in found if isinstance(item, dict) and isinstance(item.get("path"), str)]
