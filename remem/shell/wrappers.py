"""Programs that run the command after them, the one table every judgement of a command reads
(DESIGN.md §5): what a command is (a read, bookkeeping, work), its workflow, its tool family,
its purpose and its fixes are judged on the program they run, at its position.

Wrappers (`rtk`, `timeout 60`, `env X=1`, `sudo`) change how a command runs, not what it is:
`rtk git status` is a read and `rtk bun run test` is `bun run test`, the wrapper a variant of
it. Launchers (`uv run`, `npx`, `python -m`) run a tool in an environment: `uv run pytest` is
a run of pytest, but another workflow than `pytest`, as the environment is another.

Both are read from words (a parsed command's) and from text (a workflow's, where the hook has
no grammar): the text is cut into its commands' words and walked with the same rows, with no
pattern to compile. Pure, stdlib only.
"""

from __future__ import annotations

from remem.record.frozen import Record

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Sequence


class Wrapper(Record):
    """A program that runs the command after it. `operands`: the words it takes before that
    command (timeout's duration); `valued`: its options that take a value (`nice -n 5`);
    `assigns`: it takes `VAR=value` words (env); `own`: options with which it runs nothing
    (`command -v pytest` looks pytest up); `variant`: dropped from the workflow, the wrapped
    command's variant (xargs is kept: what it runs reads its input)."""

    name: str
    example: str
    operands: int = 0
    valued: frozenset[str] = frozenset()
    assigns: bool = False
    own: frozenset[str] = frozenset()
    variant: bool = True


def _w(
    name: str,
    example: str,
    operands: int = 0,
    valued: str = "",
    assigns: bool = False,
    own: str = "",
    variant: bool = True,
) -> Wrapper:
    return Wrapper(
        name, example, operands, frozenset(valued.split()), assigns, frozenset(own.split()), variant
    )


WRAPPERS: tuple[Wrapper, ...] = (
    _w("rtk", "rtk bun run test"),
    _w("timeout", "timeout -k 5 120 bun test", 1, "-s --signal -k --kill-after"),
    _w("gtimeout", "gtimeout 60 go test ./...", 1, "-s --signal -k --kill-after"),
    _w("env", "env NODE_ENV=test bun run test", 0, "-u --unset -C --chdir", True),
    _w("nice", "nice -n 10 cargo build --release", 0, "-n --adjustment"),
    _w("nohup", "nohup ./scripts/serve.sh"),
    _w("time", "time -p make test", 0, "-f --format -o --output"),
    _w("command", "command make lint", own="-v -V"),
    _w("exec", "exec bun run start", 0, "-a"),
    _w("sudo", "sudo -u postgres psql -c 'select 1'", 0, "-u -g -h -p -C -U -r -t -T -D"),
    _w("doas", "doas -u www apk add curl", 0, "-u -C"),
    _w("stdbuf", "stdbuf -oL bun run dev", 0, "-i -o -e"),
    _w("xargs", "xargs -n 1 rm -f", 0, "-n -L -P -s -I -d -E -a --max-args", variant=False),
)
_BY_NAME = {row.name: row for row in WRAPPERS}


class Launcher(Record):
    """A command (its words) that runs the tool named after it in an environment; `valued`:
    its options that take a value; `scripts`: it runs a package's script or binary by its
    name (`yarn jest`, `bun run vitest`): the name is read for the tool it may be, but a
    script of that name is the project's, so it says nothing of the command's purpose."""

    words: tuple[str, ...]
    example: str
    valued: frozenset[str] = frozenset()
    scripts: bool = False


def _l(words: str, example: str, valued: str = "", scripts: bool = False) -> Launcher:
    return Launcher(tuple(words.split()), example, frozenset(valued.split()), scripts)


_UV = "--with --python -p --package --extra --group --env-file --directory --project"
LAUNCHERS: tuple[Launcher, ...] = (
    _l("uv run", "uv run --frozen pytest -q", _UV),
    _l("uvx", "uvx ruff check .", "--with --from --python"),
    _l("poetry run", "poetry run pytest"),
    _l("pipenv run", "pipenv run python manage.py test"),
    _l("pdm run", "pdm run pytest"),
    _l("hatch run", "hatch run test:pytest"),
    _l("rye run", "rye run pytest"),
    _l("pipx run", "pipx run black --check ."),
    _l("bundle exec", "bundle exec rspec"),
    _l("pnpm exec", "pnpm exec vitest run"),
    _l("pnpm dlx", "pnpm dlx prettier --check ."),
    _l("npm exec", "npm exec -- eslint ."),
    _l("yarn dlx", "yarn dlx tsc --noEmit"),
    _l("npx", "npx -y vitest run", "-p --package"),
    _l("pnpx", "pnpx tsc --noEmit"),
    _l("bunx", "bunx biome check ."),
    _l("bun x", "bun x tsc --noEmit"),
    _l("mise exec", "mise exec -- go test ./..."),
    _l("python -m", "python3 -m pytest -q"),
    _l("npm run", "npm run jest -- --ci", scripts=True),
    _l("pnpm run", "pnpm run vitest", scripts=True),
    _l("pnpm", "pnpm vitest run", scripts=True),
    _l("yarn run", "yarn run jest", scripts=True),
    _l("yarn", "yarn jest --watch=false", scripts=True),
    _l("bun run", "bun run vitest", scripts=True),
)
_MODULE = next(row for row in LAUNCHERS if row.words == ("python", "-m"))


def is_python(name: str) -> bool:
    """An interpreter's name, whatever its version: python, python3.12, pypy3. Plain string
    work, as every name here: the hook compiles no pattern it does not use."""
    for stem in ("python", "pypy"):
        if name.startswith(stem):
            version = name[len(stem) :]
            return not version or all(part.isdigit() for part in version.split("."))
    return False


def is_assignment(word: str) -> bool:
    """`NODE_ENV=test`: a variable set for the command."""
    name, equals, _value = word.partition("=")
    return bool(equals) and name.isidentifier() and name.isascii()


def basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def wrapper_of(word: str) -> Wrapper | None:
    return _BY_NAME.get(basename(word))


def past_wrappers(words: Sequence[str], start: int = 0) -> int:
    """The index of the program a command runs, past its wrappers and their options, operands
    and assignments (`timeout -k 5 120 bun test` runs bun). A wrapper with nothing after it,
    or run with an option of its own (`command -v x`), is the program itself."""
    index = start
    while index < len(words):
        row = wrapper_of(words[index])
        after = _wrapped(row, words, index + 1) if row is not None else None
        if after is None or after >= len(words):
            return index
        index = after
    return index


def _wrapped(row: Wrapper, words: Sequence[str], index: int) -> int | None:
    """Where the command a wrapper runs starts; None when it runs none."""
    operands = row.operands
    while index < len(words):
        word = words[index]
        if word == "--":
            return index + 1
        if word in row.own:
            return None
        if word.startswith("-") and len(word) > 1:
            index += 2 if word in row.valued else 1
        elif row.assigns and is_assignment(word):
            index += 1
        elif operands:
            operands, index = operands - 1, index + 1
        else:
            return index
    return index


def unwrapped(words: Sequence[str]) -> list[int]:
    """The indexes of the words a command's workflow keeps: all but its variant wrappers
    (`rtk`, `timeout 60`, `env` — not env's assignments, which change what runs)."""
    kept: list[int] = []
    index = 0
    while index < len(words):
        program = past_wrappers(words, index)
        if program == index:
            break
        row = wrapper_of(words[index])
        if row is not None and not row.variant:
            return [*kept, *range(index, len(words))]
        if row is not None and row.assigns:
            kept.extend(i for i in range(index + 1, program) if is_assignment(words[i]))
        index = _next_wrapped(words, index, program)
    return [*kept, *range(index, len(words))]


def wrapped_form(words: Sequence[str], workflow: str) -> str:
    """The workflow as its wrappers ran it: its variant wrappers' words before it (`rtk bun run
    test`), or the workflow itself when it has none. What cannot run here may be the wrapper
    (`error: unrecognized subcommand 'bun'`) while the workflow runs (remem/procedures/
    substitutions.py); the hook builds the same text from a plain line (remem/shell/plain.py)."""
    kept = set(unwrapped(words))
    dropped = [word for index, word in enumerate(words) if index not in kept]
    return " ".join([*dropped, workflow]) if dropped else workflow


def through_wrapper(command: str) -> bool:
    """Whether a command's text runs its workflow through a variant wrapper (`rtk bun run
    test`, `timeout 60 make test`): when such a run cannot run, the wrapper may be what could
    not, and the workflow's own runs say nothing of it."""
    words = command.split()
    start = next((i for i, word in enumerate(words) if not is_assignment(word)), len(words))
    rest = words[start:]
    return len(unwrapped(rest)) < len(rest)


def _next_wrapped(words: Sequence[str], index: int, program: int) -> int:
    """Past the one wrapper at `index` (of those up to `program`)."""
    row = wrapper_of(words[index])
    after = _wrapped(row, words, index + 1) if row is not None else None
    return program if after is None else min(after, program)


def past_launchers(
    words: Sequence[str], start: int = 0, python: bool = True, scripts: bool = False
) -> int:
    """The index of the tool a command runs, past its wrappers and its launchers
    (`uv run pytest`, `.venv/bin/python -m pytest`, `npx vitest`) and their options;
    `python`: an interpreter running a module counts as a launcher; `scripts`: so does one
    running a package's script (`bun run vitest` names the tool its script may be)."""
    index = past_wrappers(words, start)
    while index < len(words):
        launcher = _launcher_at(words, index)
        if launcher is not None and launcher.scripts and not scripts:
            return index
        if launcher is not None and not python and launcher is _MODULE:
            return index
        if launcher is None:
            return index
        index += len(launcher.words)
        while index < len(words) and words[index].startswith("-"):
            index += 2 if words[index] in launcher.valued else 1
        index = past_wrappers(words, index)
    return index


def _launcher_at(words: Sequence[str], index: int) -> Launcher | None:
    name = basename(words[index])
    if is_python(name):
        name = "python"
    for row in LAUNCHERS:
        size = len(row.words)
        if (name, *words[index + 1 : index + size]) == row.words:
            return row
    return None


# --- the same rows read from text ------------------------------------------------------------

# A command line's text is cut into simple commands at its operators (outside quotes); a word
# that opens a compound command or a branch of one is a command position, and so is the word
# after it.
_OPERATORS = frozenset(";&|()`\n")
_RESERVED = frozenset(("if", "then", "do", "else", "elif", "while", "until", "!", "{"))


def _commands(text: str) -> list[list[tuple[int, str]]]:
    """The simple commands of a command line's text, each its words with their offsets: cut at
    `;`, `&`, `|`, `(`, `)`, backquotes, `$(` and newlines, never inside quotes nor in a
    redirection (`2>&1`). One pass, no pattern: the hook reads a failure's command with it."""
    commands: list[list[tuple[int, str]]] = []
    words: list[tuple[int, str]] = []
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char in " \t\r":
            index += 1
            continue
        if char in _OPERATORS and not (char == "&" and text.startswith(">", index + 1)):
            commands.append(words)
            words, index = [], index + 1
            continue
        start = index
        while index < size:
            char = text[index]
            if char in " \t\r":
                break
            if char in _OPERATORS or text.startswith("$(", index):
                redirect = char == "&" and (text[index - 1 : index] in ("<", ">") or index == start)
                if not redirect:
                    break
            if char == "\\":
                index += 2
            elif char in "'\"":
                index = _closing(text, index)
            else:
                index += 1
        if index == start:  # `$(`: a command starts inside it
            commands.append(words)
            words, index = [], index + 2
            continue
        words.append((start, text[start:index]))
    commands.append(words)
    return [words for words in commands if words]


def _closing(text: str, index: int) -> int:
    """Past the quote that closes the one at `index` (the text's end when none does)."""
    quote, index = text[index], index + 1
    while index < len(text) and text[index] != quote:
        index += 2 if quote == '"' and text[index] == "\\" else 1
    return index + 1


def _starts(command: str, launched: bool) -> tuple[int, ...]:
    """Where each command of a command line's text starts, past its assignments and wrappers
    (`launched`: past its launchers too), before its program's directory (`./run.sh`) and after
    it (`.venv/bin/pytest` runs `pytest`)."""
    starts: list[int] = []
    for command_words in _commands(command):
        words = [word for _offset, word in command_words]
        index = 0
        while index < len(words):
            while index < len(words) - 1 and is_assignment(words[index]):
                index += 1
            index = past_wrappers(words, index)
            if launched and words[index] not in _RESERVED:
                index = past_launchers(words, index, scripts=True)
            if index >= len(words):
                break
            offset, word = command_words[index]
            directory = word.rfind("/") + 1
            if directory and not any(quote in word[:directory] for quote in "'\"`$"):
                starts.append(offset)
            starts.append(offset + directory if directory else offset)
            if word not in _RESERVED:
                break
            index += 1
    return tuple(starts)


def command_starts(command: str) -> tuple[int, ...]:
    """Where the commands of a command line's text start, past their wrappers."""
    return _starts(command, launched=False)


def program_starts(command: str) -> tuple[int, ...]:
    """Where the tools a command line's text runs are named, past wrappers and launchers:
    `pytest` is at a program's position in `.venv/bin/python -m pytest` and `rtk pytest`,
    not in `pip install pytest` nor `cat pytest.ini`."""
    return _starts(command, launched=True)
