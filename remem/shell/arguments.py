"""Arguments that are not the workflow (DESIGN.md §6): the message a command carries (a
commit's, a pull request's) is elided, and paths of project files are a placeholder, so
`gofmt -w internal/a.go` and `gofmt -w internal/b.go` are one family, `gofmt -w <file>`.

Knowledge as data: one row per command that carries a message, a table of file extensions
and of how test files are named. Pure: works on a command's words.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from remem.record.quote import FILE_PLACEHOLDERS
from remem.shell.kinds import command_view, interpreter_argv, program_name, script_index
from remem.shell.syntax import ELIDED

FILE, TEST_FILE = FILE_PLACEHOLDERS


@dataclass(frozen=True)
class Messenger:
    """A command whose `options` take a message (or the file holding one): their values are
    text for people, not part of what runs."""

    words: tuple[str, ...]
    options: frozenset[str]
    example: str


def _m(words: str, options: str, example: str) -> Messenger:
    return Messenger(tuple(words.split()), frozenset(options.split()), example)


_GIT = "-m --message -F --file"
_GH = "-t --title -b --body -F --body-file"
MESSENGERS = (
    _m("git commit", _GIT, 'git commit -m "fix: total adds tax"'),
    _m("git tag", _GIT, 'git tag -a v1.2.0 -m "release 1.2.0"'),
    _m("git merge", _GIT, 'git merge --no-ff feat-a -m "merge feat-a"'),
    _m("git notes add", _GIT, 'git notes add -m "reviewed"'),
    _m("git stash push", "-m --message", 'git stash push -m "before rebase"'),
    _m("git commit-tree", "-m -F", 'git commit-tree HEAD^{tree} -m "squash"'),
    _m("gh pr create", _GH, 'gh pr create --title "Add cart" --body "Closes #3"'),
    _m("gh pr edit", _GH, 'gh pr edit 12 --body "Updated"'),
    _m("gh pr comment", "-b --body -F --body-file", 'gh pr comment 12 -b "LGTM"'),
    _m("gh pr review", "-b --body -F --body-file", 'gh pr review 12 --approve -b "ok"'),
    _m("gh pr merge", "-t --subject -b --body -F --body-file", 'gh pr merge 12 -t "Cart"'),
    _m("gh issue create", _GH, 'gh issue create -t "Crash on save" -b "Steps: ..."'),
    _m("gh issue edit", _GH, 'gh issue edit 7 --title "Crash on save"'),
    _m("gh issue comment", "-b --body -F --body-file", 'gh issue comment 7 -b "Fixed"'),
    _m("gh release create", "-t --title -n --notes -F --notes-file", 'gh release create v1 -n "x"'),
    _m("hg commit", "-m --message -l --logfile", 'hg commit -m "fix total"'),
    _m("jj commit", "-m --message", 'jj commit -m "fix total"'),
    _m("jj describe", "-m --message", 'jj describe -m "fix total"'),
    _m("jj new", "-m --message", 'jj new -m "next"'),
    _m("svn commit", "-m --message -F --file", 'svn commit -m "fix total"'),
)


@dataclass(frozen=True)
class Message:
    """Where a message lies among a command's words: `whole` words, words whose text from
    an offset on is the message (`--message=...`, `-am...`), and whether it is read from
    the command's input (`git commit -F - <<EOF`)."""

    whole: tuple[int, ...] = ()
    tails: tuple[tuple[int, int], ...] = ()
    from_input: bool = False


def messenger_of(argv: Sequence[str]) -> Messenger | None:
    name = program_name(argv)
    for row in MESSENGERS:
        if (name, *argv[1 : len(row.words)]) == row.words:
            return row
    return None


def message_of(words: Sequence[str], raw: Sequence[str]) -> Message:
    """The message among a simple command's words (`raw`: each word as written, quotes
    included)."""
    view = command_view(words)
    row = messenger_of([words[i] for i in view])
    if row is None:
        return Message()
    whole: list[int] = []
    tails: list[tuple[int, int]] = []
    from_input = False
    args = view[len(row.words) :]
    for position, index in enumerate(args):
        word = words[index]
        following = args[position + 1] if position + 1 < len(args) else None
        if word in row.options:
            if following is None or words[following] == "-":
                from_input = True
            else:
                whole.append(following)
            continue
        if word.startswith("--") and word.split("=", 1)[0] in row.options and "=" in word:
            from_input |= word.endswith("=-")
            tails.append((index, raw[index].index("=") + 1))
            continue
        if word.startswith("-") and not word.startswith("--"):
            letters = [f"-{letter}" in row.options for letter in word[1:]]
            if any(letters):
                at = letters.index(True) + 2
                if at < len(word):
                    tails.append((index, at))
                elif following is None:
                    from_input = True
                else:
                    whole.append(following)
    return Message(tuple(whole), tuple(tails), from_input)


# --- families of file arguments --------------------------------------------------------------

# The extensions of files a command is run on: sources, tests, configuration and documents.
_EXTENSIONS = """py pyi go rs ex exs heex eex leex erl hrl js jsx mjs cjs ts tsx mts cts vue
svelte rb erb rake java kt kts scala groovy c h cc cpp cxx hpp hh cs fs swift m mm php lua dart
zig nim ml mli hs clj cljs cljc sh bash zsh fish sql proto graphql gql css scss sass less html
htm md mdx rst adoc txt json jsonc json5 yaml yml toml ini cfg conf xml csv tf tfvars nix gradle
cmake mk ipynb"""
FILE_EXTENSIONS = frozenset(_EXTENSIONS.split())
# How test files are named, per ecosystem (the file's name, then its folders).
TEST_NAMES = re.compile(
    r"(?:^test_.*\.py|_test\.(?:py|go|exs|rb|rs|dart|c|cc|cpp|js|ts)|_spec\.rb"
    r"|\.(?:test|spec)\.[cm]?[jt]sx?|Tests?\.(?:java|kt|cs|swift|scala|php)|_SUITE\.erl)\Z"
)
TEST_FOLDERS = frozenset({"test", "tests", "spec", "__tests__", "testing"})
# `file.py::test_name` (pytest), `test/a_test.exs:12` (mix test, rspec): a place in a file.
_PLACE_IN_FILE = re.compile(r"(?:::.*|(?::\d+)+)\Z")
_NOT_A_PATH = re.compile(r"[\s$*?\[\]{}=@~<>|&;`'\"\\]|://")
# Programs that run the script named first after them: that script is the program, not an
# argument (`go run ./cmd/seed/main.go`, `mix run priv/repo/seeds.exs`).
SCRIPT_HOSTS = (("go", "run"), ("mix", "run"), ("deno", "run"), ("bun", "run"), ("tsx",))
# Commands that move, remove or check out the files they name: each file is its own act, and
# acts on several files are no routine (`rm <file>` run twice is no procedure).
FILE_OPERATIONS = frozenset(
    {
        ("rm",), ("mv",), ("cp",), ("touch",), ("mkdir",), ("rmdir",), ("unlink",), ("ln",),
        ("chmod",), ("chown",), ("git", "rm"), ("git", "mv"), ("git", "checkout"),
        ("git", "restore"), ("git", "add"), ("git", "reset"),
    }
)  # fmt: skip


def file_placeholder(word: str) -> str | None:
    """FILE or TEST_FILE when the word names a file (a path to a file of a known kind, a
    place in one), else None. Whether it lies inside the project is the caller's to judge."""
    if not word or word.startswith("-") or _NOT_A_PATH.search(word):
        return None
    path = _PLACE_IN_FILE.sub("", word)
    name = posixpath.basename(path)
    stem, dot, extension = name.rpartition(".")
    if ":" in path or not dot or not stem or extension.lower() not in FILE_EXTENSIONS:
        return None
    folders = set(posixpath.dirname(path).split("/"))
    return TEST_FILE if TEST_NAMES.search(name) or folders & TEST_FOLDERS else FILE


def file_identity(word: str, directory: str, root: str) -> str:
    """The file a file argument names, relative to the project's root, without a place in
    it: `internal/a.go` however the command spelt it."""
    path = _PLACE_IN_FILE.sub("", word)
    if posixpath.isabs(path):
        inside = root and path.startswith(root.rstrip("/") + "/")
        return posixpath.relpath(path, root) if inside else path
    return posixpath.normpath(posixpath.join(directory, path))


def script_position(argv: Sequence[str]) -> int | None:
    """Where the script an interpreter (or `go run`, `mix run`) runs is named in argv."""
    found = interpreter_argv(argv)
    if found is not None:
        row, args = found
        at = script_index(row, args)
        return None if at is None else len(argv) - len(args) + at
    name = program_name(argv)
    for host in SCRIPT_HOSTS:
        if (name, *argv[1 : len(host)]) == host:
            rest = range(len(host), len(argv))
            return next((i for i in rest if not argv[i].startswith("-")), None)
    return None


def file_arguments(words: Sequence[str], message: Message) -> list[tuple[int, str]]:
    """The words of a simple command that name project files, with their placeholders:
    never the program, an interpreter's script or a message."""
    view = command_view(words)
    argv = [words[i] for i in view]
    name = program_name(argv)
    if (name,) in FILE_OPERATIONS or (name, *argv[1:2]) in FILE_OPERATIONS:
        return []
    script = script_position(argv)
    skipped = set(message.whole) | {index for index, _offset in message.tails}
    found = []
    for position, index in enumerate(view[1:], start=1):
        if position == script or index in skipped:
            continue
        placeholder = file_placeholder(words[index])
        if placeholder is not None:
            found.append((index, placeholder))
    return found


_PLACEHOLDER = re.compile(r"<(?:test )?file>")


def parseable(workflow: str) -> str:
    """A family's workflow as bash reads it: each placeholder one quoted word (`<file>` alone
    would be a redirection), which reads back as the placeholder."""
    return _PLACEHOLDER.sub(lambda match: f"'{match.group(0)}'", workflow)


_RUN_OF_PLACEHOLDERS = re.compile(r"<(?:test )?file>(?: <(?:test )?file>)+")


def fold_placeholders(workflow: str) -> str:
    """Files named one after another are one placeholder: `ruff format <file>` whether it
    was given one file or three."""

    def one(match: re.Match[str]) -> str:
        return FILE if FILE in _PLACEHOLDER.findall(match.group(0)) else TEST_FILE

    return _RUN_OF_PLACEHOLDERS.sub(one, workflow)


# A message line shorter than this is not looked for in output: it would match other text.
MESSAGE_LINE_CHARS = 8


def without_messages(text: str | None, messages: Sequence[str]) -> str | None:
    """Output with every line of the command's messages it repeats elided (a commit hook
    printing the message it refused)."""
    if not text:
        return text
    for message in messages:
        for line in message.splitlines():
            line = line.strip()
            if len(line) >= MESSAGE_LINE_CHARS:
                text = text.replace(line, ELIDED)
    return text
