"""What a command does, judged on its parsed words (DESIGN.md §5-6): it reads, sets up the
shell, runs a script written inline, writes a file, runs code fetched from the network, or
does work. Only work can become a procedure; reads and work are commands an agent ran between
attempts (a fix); fetched code is neither: that it ran before a pass says nothing of what it
is, and it may be anything the next time.

Knowledge as data: one row per program, each with the options that turn a read into a write
or into work of its own, and an example from real sessions.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from remem.shell.wrappers import past_launchers, past_wrappers

WORK, READ, SETUP, SCRIPT, WRITE = "work", "read", "setup", "inline script", "file write"
FETCHED = "fetched code"
BOOKKEEPING = "bookkeeping"

# Shell builtins that set up the shell rather than do work: never a workflow of their own.
SHELL_SETUP = frozenset(
    {
        "cd", "pushd", "popd", "set", "export", "unset", "source", ".", "true", ":", "exit",
        "sleep", "wait", "alias", "unalias", "shopt", "trap", "read", "local", "declare",
        "typeset", "readonly", "builtin", "hash", "ulimit", "umask", "false",
    }
)  # fmt: skip
# git's options before its subcommand, and those of them that take a value.
_GIT_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})


@dataclass(frozen=True)
class Reader:
    """A program that only reads (or prints), unless one of `writes` makes it write a file
    (then the step is a file write) or one of `runs` makes it run commands or delete files
    (then it is work). `valued` are its one-letter options that take a value: in a cluster
    (`-ne`), what follows one of them is that value, not more options."""

    words: tuple[str, ...]
    example: str
    writes: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()
    valued: str = ""


def _r(words: str, example: str, writes: str = "", runs: str = "", valued: str = "") -> Reader:
    return Reader(
        tuple(words.split()), example, frozenset(writes.split()), frozenset(runs.split()), valued
    )


READERS = (
    _r("cat", "cat mix.exs"),
    _r("bat", "bat --paging=never lib/app.ex"),
    _r("nl", "nl -ba opk/ui/pdl_editor.py"),
    _r("head", "head -n 40 README.md"),
    _r("tail", "tail -n 100 log/test.log"),
    _r("less", "less CHANGELOG.md"),
    _r("more", "more setup.cfg"),
    _r("ls", "ls -la examples"),
    _r("tree", "tree -L 2 lib", writes="-o"),
    _r("stat", "stat -c %s dist/app.js"),
    _r("file", "file priv/static/logo.png"),
    _r("grep", "grep -rn secret_key_base config", valued="efmABCD"),
    _r("egrep", "egrep -n 'TODO|FIXME' src"),
    _r("fgrep", "fgrep -n '[deps]' Cargo.toml"),
    _r("rg", "rg -n 'def test_' tests", runs="--pre"),
    _r("ag", "ag --python render_hooks"),
    _r("fd", "fd -e go internal", runs="-x --exec -X --exec-batch"),
    _r("fdfind", "fdfind -e py tests", runs="-x --exec -X --exec-batch"),
    _r(
        "find",
        "find . -name '*.go' -newer go.mod",
        writes="-fprint -fprint0 -fprintf -fls",
        runs="-exec -execdir -ok -okdir -delete",
    ),
    _r("wc", "wc -l lib/**/*.ex"),
    _r("jq", "jq '.scripts' package.json"),
    _r("yq", "yq '.services' docker-compose.yml", writes="-i --inplace"),
    _r("sed", "sed -n '1,200p' opk/core/io.py", writes="-i --in-place", valued="efl"),
    _r("sort", "sort -u words.txt", writes="-o --output", valued="kStT"),
    _r("diff", "diff -u old.txt new.txt"),
    _r("cmp", "cmp a.bin b.bin"),
    _r("du", "du -sh deps"),
    _r("df", "df -h ."),
    _r("echo", "echo $PATH"),
    _r("printf", "printf '%s\\n' \"$HOME\""),
    _r("pwd", "pwd"),
    _r("which", "which mix"),
    _r("type", "type -a python3"),
    _r("whoami", "whoami"),
    _r("date", "date -u +%Y-%m-%d", runs="-s --set"),
    _r("uname", "uname -a"),
    _r("printenv", "printenv PATH"),
    _r("realpath", "realpath ../shared"),
    _r("readlink", "readlink -f .venv/bin/python"),
    _r("basename", "basename $PWD"),
    _r("env", "env | sort"),
    _r("command -v", "command -v bun"),
    _r("command -V", "command -V pytest"),
    _r("dirname", "dirname lib/app.ex"),
    _r("git status", "git status --short"),
    _r("git log", "git log --oneline -5", writes="--output"),
    _r("git diff", "git diff --stat main", writes="--output"),
    _r("git show", "git show HEAD:mix.exs", writes="--output"),
    _r("git blame", "git blame -L 10,20 lib/app.ex"),
    _r("git ls-files", "git ls-files priv/static"),
    _r("git grep", "git grep -n lazy_html"),
    _r("git rev-parse", "git rev-parse --abbrev-ref HEAD"),
    _r("git shortlog", "git shortlog -sn"),
    _r("git describe", "git describe --tags"),
    _r("git cat-file", "git cat-file -p HEAD"),
    _r("git ls-tree", "git ls-tree -r HEAD --name-only"),
    _r("git stash list", "git stash list"),
    _r("git stash show", "git stash show -p stash@{0}"),
    _r("git remote -v", "git remote -v"),
)
_READERS = {row.words: row for row in READERS}
_Row = TypeVar("_Row")


@dataclass(frozen=True)
class Bookkeeping:
    """A program that keeps the repository's or the tracker's books: it changes no code and
    checks nothing, so it is never a procedure nor a fix (its failures are still errors that
    an agent meets: a hook that refused a commit, an upstream to set). `unless`: options that
    make it other work (`git checkout -p`); `branch`: only with one operand that names a branch
    rather than files (`git checkout feat/login`, not `git checkout src/app.py`), or with an
    option that `creates` one (`git checkout -b feat/login origin/main`). Publishing is
    bookkeeping too (`git push`, `gh pr create`): it changes no code here."""

    words: tuple[str, ...]
    example: str
    unless: frozenset[str] = frozenset()
    branch: bool = False
    creates: frozenset[str] = frozenset()  # options that make a branch: books, whatever follows


def _b(
    words: str, example: str, unless: str = "", branch: bool = False, creates: str = ""
) -> Bookkeeping:
    return Bookkeeping(
        tuple(words.split()), example, frozenset(unless.split()), branch, frozenset(creates.split())
    )


BOOKKEEPERS = (
    _b("git add", "git add src/cart.py tests/test_cart.py"),
    _b("git fetch", "git fetch origin main"),
    _b("git branch", "git branch --show-current"),
    _b("git commit", "git commit -m 'Fix the cart total'"),
    _b("git push", "git push -u origin feat/login"),
    _b("git checkout", "git checkout feat/login", "-p --patch --", True, "-b -B --orphan"),
    _b("git switch", "git switch main", "", True, "-c -C --create --force-create --orphan"),
    _b("gh issue list", "gh issue list --state open"),
    _b("gh issue view", "gh issue view 42 --comments"),
    _b("gh issue status", "gh issue status"),
    _b("gh pr list", "gh pr list --author @me"),
    _b("gh pr view", "gh pr view 17 --json state"),
    _b("gh pr status", "gh pr status"),
    _b("gh pr checks", "gh pr checks 17"),
    _b("gh pr diff", "gh pr diff 17"),
    _b("gh run list", "gh run list --limit 5"),
    _b("gh run view", "gh run view 123456 --log-failed"),
    _b("glab issue list", "glab issue list --assignee=@me"),
    _b("glab issue view", "glab issue view 12"),
    _b("glab mr list", "glab mr list"),
    _b("glab mr view", "glab mr view 7"),
    _b("gh pr create", "gh pr create --title 'Add cart' --body 'Closes #3'"),
    _b("gh pr edit", "gh pr edit 17 --add-label bug"),
    _b("gh pr comment", "gh pr comment 17 --body 'Rebased'"),
    _b("gh issue create", "gh issue create -t 'Crash' --body-file notes.md"),
    _b("gh issue comment", "gh issue comment 42 --body 'Fixed in #43'"),
    _b("gh issue close", "gh issue close 42"),
    _b("glab mr create", "glab mr create --fill"),
)
_BOOKKEEPERS = {row.words: row for row in BOOKKEEPERS}
# A word that names a file rather than a branch: `.`, or a name with an extension.
_FILE_LIKE = re.compile(r"^\.{1,2}/?$|\.[A-Za-z0-9]{1,5}$|^\.?/")


@dataclass(frozen=True)
class Interpreter:
    """A language's interpreter: code given with one of `code` options, or fed on its
    standard input by a heredoc or a here-string with no script named, is a script written
    inline, not a workflow. `valued` are its options that take a value; `stdin` those that
    make it run its input whatever follows (`sh -s -- -y`)."""

    names: re.Pattern[str]
    example: str
    code: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()
    stdin: frozenset[str] = frozenset()


def _i(names: str, example: str, code: str = "", valued: str = "", stdin: str = "") -> Interpreter:
    pattern = re.compile(rf"(?:{names})\Z")
    options = (frozenset(words.split()) for words in (code, valued, stdin))
    return Interpreter(pattern, example, *options)


INTERPRETERS = (
    _i(r"python[0-9.]*|pypy[0-9.]*", "python3 - <<'PY'", code="-c", valued="-m -W -X"),
    _i(r"node|nodejs", "node -e 'console.log(process.version)'", "-e --eval -p --print", "-r"),
    _i(r"bun", "bun -e 'console.log(1)'", code="-e --eval -p --print"),
    _i(r"deno", "deno eval 'console.log(1)'", code="eval"),
    _i(r"ruby", "ruby -e 'puts RUBY_VERSION'", code="-e", valued="-r -I"),
    _i(r"perl", "perl -e 'print 1'", code="-e -E", valued="-M -I"),
    _i(r"php", "php -r 'echo PHP_VERSION;'", code="-r"),
    _i(r"elixir", "elixir -e 'IO.puts 1'", code="-e --eval", valued="-r"),
    _i(r"Rscript", "Rscript -e 'sessionInfo()'", code="-e"),
    _i(r"lua[0-9.]*|luajit", "lua -e 'print(1)'", code="-e"),
    _i(r"julia", "julia -e 'println(1)'", code="-e --eval -E --print"),
    _i(r"bash|sh|zsh|dash|ksh", "bash <<'EOF'", stdin="-s"),
)
# Programs that only apply an edit written in the command (a patch): a file write.
EDITORS = frozenset({"apply_patch", "applypatch"})
# Programs that write their input to the files they name (`jq ... f.json | sponge f.json`).
WRITERS = frozenset({"tee", "sponge"})


# Programs whose output is what they fetched from the network.
FETCHERS = (
    ("curl", "curl -fsSL https://sh.rustup.rs"),
    ("wget", "wget -qO- https://get.docker.com"),
    ("fetch", "fetch -o - https://example.org/install.sh"),  # the BSDs'
    ("http", "http GET https://example.org/install.sh"),  # HTTPie
    ("https", "https example.org/install.sh"),
    ("iwr", "iwr https://community.chocolatey.org/install.ps1"),  # PowerShell's aliases
    ("invoke-webrequest", "Invoke-WebRequest https://example.org/install.ps1"),
    ("irm", "irm https://get.scoop.sh"),
    ("invoke-restmethod", "Invoke-RestMethod https://example.org/install.ps1"),
)
_FETCHERS = frozenset(name for name, _example in FETCHERS)
# Programs that run code handed to them as text, beside the interpreters: on their input
# (`iwr … | iex`) or from a fetch in their arguments (`eval "$(curl …)"`, `iex (iwr …)`).
CODE_RUNNERS = frozenset({"eval", "source", ".", "iex", "invoke-expression", "pwsh", "powershell"})
# Installers and runners that fetch a package named by its URL and run its code (its build
# hooks, its binary): (their words, an example).
URL_INSTALLERS = (
    (("pip", "install"), "pip install https://example.org/tool-1.0.tar.gz"),
    (("pip3", "install"), "pip3 install https://example.org/tool-1.0.tar.gz"),
    (("uv", "pip", "install"), "uv pip install https://example.org/tool-1.0.tar.gz"),
    (("pipx", "install"), "pipx install git+https://example.org/tool.git"),
    (("pipx", "run"), "pipx run --spec https://example.org/tool.tar.gz tool"),
    (("uvx",), "uvx --from git+https://example.org/tool.git tool"),
    (("npx",), "npx https://example.org/tool.tgz"),
    (("bunx",), "bunx https://example.org/tool.tgz"),
    (("pnpm", "dlx"), "pnpm dlx https://example.org/tool.tgz"),
    (("npm", "exec"), "npm exec https://example.org/tool.tgz"),
    (("npm", "install"), "npm install https://example.org/tool.tgz"),
    (("npm", "i"), "npm i https://example.org/tool.tgz"),
    (("deno", "run"), "deno run https://example.org/install.ts"),
)
# A URL as those installers take it: plain, or with a VCS prefix (`git+https://`).
_URL = re.compile(r"(?:[a-z]+\+)?(?:https?|ftp)://", re.IGNORECASE)
_PIP_MODULE = re.compile(r"python[0-9.]*\Z")


def is_fetcher(words: Sequence[str]) -> bool:
    """Whether a simple command fetches from the network (`curl …`, `sudo wget …`)."""
    view = command_view(words)
    return bool(view) and program_name([words[view[0]]]).lower() in _FETCHERS


def runs_fetched(words: Sequence[str], fed_a_fetch: bool, fetches_inside: bool) -> bool:
    """Whether a simple command runs code fetched from the network: an installer given a URL;
    or a program that runs code (an interpreter, eval, source, iex) reading what a fetch
    printed, on its input (`fed_a_fetch`: `curl … | sh`) or from a fetch run inside its
    arguments (`fetches_inside`: `bash <(curl …)`, `sh -c "$(curl …)"`, `iex (iwr …)`)."""
    argv = [words[i] for i in command_view(words)]
    if not argv:
        return False
    if _installs_url(argv):
        return True
    name = program_name(argv).lower()
    if name in CODE_RUNNERS:
        return fed_a_fetch or fetches_inside
    found = interpreter_argv(argv)
    if found is None:
        return False
    row, args = found
    script = script_index(row, args)
    if script is None or _has(args, row.stdin):  # code on its input or in an option
        return fed_a_fetch or fetches_inside
    return fetches_inside and args[script].startswith(("<(", "$(", "`", '"$('))


def _installs_url(argv: Sequence[str]) -> bool:
    if len(argv) > 2 and _PIP_MODULE.match(program_name(argv)) and argv[1] == "-m":
        argv = argv[2:]  # python -m pip install …
    for words, _example in URL_INSTALLERS:
        if (program_name(argv), *argv[1 : len(words)]) == words:
            return any(_URL.match(word) for word in argv[len(words) :])
    return False


def command_view(words: Sequence[str]) -> list[int]:
    """The indexes of a simple command's own words: past its wrappers (`env FOO=1`, `rtk`,
    `timeout 60`: remem/shell/wrappers.py) and, for git, past the options before its
    subcommand (`git -C sub status`)."""
    view = list(range(past_wrappers(words), len(words)))
    if view and posixpath.basename(words[view[0]]) == "git":
        position = 1
        while position < len(view) and words[view[position]].startswith("-"):
            position += 2 if words[view[position]] in _GIT_VALUED else 1
        view = view[:1] + view[position:]
    return view


def program_name(argv: Sequence[str]) -> str:
    return posixpath.basename(argv[0]) if argv else ""


def _matches(word: str, option: str, valued: str) -> bool:
    """`--in-place=.bak` is `--in-place`; `-ni` and `-i.bak` are `-i`; `-es/i/x/` is not."""
    if word == option or (option.startswith("--") and word.startswith(option + "=")):
        return True
    if len(option) != 2 or option[0] != "-" or word[:1] != "-" or word.startswith("--"):
        return False
    for letter in word[1:]:
        if letter == option[1]:
            return True
        if letter in valued or not letter.isalpha():
            return False
    return False


def _has(args: Sequence[str], options: frozenset[str], valued: str = "") -> bool:
    return any(_matches(word, option, valued) for word in args for option in options)


def _row_of(table: dict[tuple[str, ...], _Row], argv: Sequence[str]) -> _Row | None:
    """The row of the longest of a program's own words (`gh pr list`, `git add`, `cat`)."""
    name = program_name(argv)
    for size in (3, 2, 1):
        row = table.get((name, *argv[1:size]))
        if row is not None:
            return row
    return None


def reader_of(argv: Sequence[str]) -> Reader | None:
    return _row_of(_READERS, argv)


def is_bookkeeping(argv: Sequence[str]) -> bool:
    """Whether a command keeps books (remem/shell/kinds.py BOOKKEEPERS), past its options."""
    row = _row_of(_BOOKKEEPERS, argv)
    if row is None:
        return False
    args = argv[len(row.words) :]
    if any(_matches(word, option, "") for word in args for option in row.unless):
        return False
    if any(_matches(word, option, "") for word in args for option in row.creates):
        return True
    # `-` alone is an operand: the branch checked out before (`git checkout -`).
    operands = [word for word in args if word == "-" or not word.startswith("-")]
    return not row.branch or (len(operands) == 1 and not _FILE_LIKE.search(operands[0]))


def interpreter_argv(argv: Sequence[str]) -> tuple[Interpreter, list[str]] | None:
    """The interpreter a command runs, past launchers (`uv run`), and its arguments."""
    rest = list(argv[past_launchers(argv, python=False) :])
    name = program_name(rest)
    for row in INTERPRETERS:
        if row.names.match(name):
            return row, rest[1:]
    return None


def is_inline_script(argv: Sequence[str], fed: bool) -> bool:
    """`python3 -c ...`, `node -e ...`, `python3 - <<'PY'`, `ruby <<< '...'`: code written
    in the command itself."""
    found = interpreter_argv(argv)
    if found is None:
        return False
    row, args = found
    if any(word in row.code or any(word.startswith(c + "=") for c in row.code) for word in args):
        return True
    return fed and script_index(row, args) is None


def script_index(row: Interpreter, args: Sequence[str]) -> int | None:
    """Where the script an interpreter runs is named among its arguments (`manage.py` of
    `python manage.py test`); None when it runs a module, inline code or its input."""
    index = 0
    while index < len(args):
        word = args[index]
        if word in row.code or word == "-m":
            return None
        if word == "-" or word == "--":
            return None if word == "-" else (index + 1 if index + 1 < len(args) else None)
        if word.startswith("-"):
            index += 2 if word in row.valued else 1
            continue
        return index
    return None


def unit_kind(
    words: Sequence[str], fed: bool, ignore: Sequence[tuple[str, ...]] = ()
) -> tuple[str, bool]:
    """A simple command's kind, and whether it writes files of its own (a reader's write
    option, `tee FILE`); `fed`: a heredoc or a here-string is its input; `ignore`: commands
    the user declared read-only."""
    argv = [words[i] for i in command_view(words)]
    name = program_name(argv)
    if not name:
        return READ, False  # a bare `env` prints
    if name in SHELL_SETUP:
        return SETUP, False
    if name in EDITORS:
        return WRITE, True
    if name in WRITERS:
        return (WRITE, True) if any(not w.startswith("-") for w in argv[1:]) else (READ, False)
    if name == "perl" and _has(argv[1:], frozenset({"-i"}), "eEIM"):
        return WRITE, True  # perl -pi -e: an edit in place
    if is_inline_script(argv, fed):
        return SCRIPT, False
    reader = reader_of(argv)
    if reader is not None:
        if _has(argv[1:], reader.runs, reader.valued):
            return WORK, False
        if _has(argv[1:], reader.writes, reader.valued):
            return WRITE, True
        return READ, False
    if any(tuple(argv[: len(entry)]) == entry for entry in ignore):
        return READ, False
    if is_bookkeeping(argv):
        return BOOKKEEPING, False
    return WORK, False


def step_kind(kinds: Sequence[str], writes: bool) -> str:
    """A step's kind from its units' (those whose status it has): fetched code if any unit
    runs it, else work if any unit works, else an inline script, else a file write when
    anything in it writes a file, else bookkeeping when it keeps books, else a read (a step of
    set-up alone is set-up)."""
    for kind in (FETCHED, WORK, SCRIPT):
        if kind in kinds:
            return kind
    if writes or WRITE in kinds:
        return WRITE
    if BOOKKEEPING in kinds:
        return BOOKKEEPING
    return SETUP if kinds and all(kind == SETUP for kind in kinds) else READ
