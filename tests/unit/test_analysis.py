"""Command analysis (DESIGN.md §5): a command as a bash program, one row per case."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.config import DEFAULT_IGNORE_COMMANDS
from remem.shell.analysis import Step, analyse, resolve_directory
from remem.shell.kinds import READ, SCRIPT, SETUP, SHELL_SETUP, WORK

HEREDOC = "python3 - <<'EOF'\nprint('a  b')\nEOF"


def step(
    text: str,
    workflow: str | None = None,
    *,
    chdir: str | None = None,
    masked: bool = False,
    decisive: bool = True,
    read_only: bool = False,
    program: str | None = None,
    kind: str | None = None,
) -> Step:
    """A step as analyse() should give it; the workflow is the text unless said otherwise. A
    read-only step of a shell builtin is set-up, any other a read."""
    program = text.split()[0] if program is None else program
    if kind is None and read_only:
        kind = SETUP if program in SHELL_SETUP or program == "set" else READ
    workflow = text if workflow is None else workflow
    return Step(
        text=text,
        workflow=workflow,
        chdir=chdir,
        masked=masked,
        decisive=decisive,
        kind=kind or WORK,
        program=program,
        family=workflow,
    )


def steps_of(command: str) -> tuple[Step, ...]:
    analysis = analyse(command, DEFAULT_IGNORE_COMMANDS)
    assert analysis.parsed
    return analysis.steps


# (command, the steps it is made of)
CASES: list[tuple[str, list[Step]]] = [
    # Output filters at the end of a pipeline hide the status unless pipefail is set.
    (
        "mix test 2>&1 | tail -5",
        [step("mix test 2>&1 | tail -5", "mix test", masked=True, decisive=False)],
    ),
    (
        "make test |& tee log.txt",
        [step("make test |& tee log.txt", "make test", masked=True, decisive=False)],
    ),
    (
        "set -o pipefail; mix test | tail -5",
        [
            step("set -o pipefail", decisive=False, read_only=True),
            step("mix test | tail -5", "mix test"),
        ],
    ),
    (
        "set -o pipefail && make test | tail",
        [step("set -o pipefail", read_only=True), step("make test | tail", "make test")],
    ),
    (
        "set -euo pipefail; make test | tail -3",
        [
            step("set -euo pipefail", decisive=False, read_only=True),
            step("make test | tail -3", "make test"),
        ],
    ),
    (
        "set -o pipefail; set +o pipefail; make test | tail -3",
        [
            step("set -o pipefail", decisive=False, read_only=True),
            step("set +o pipefail", decisive=False, read_only=True),
            step("make test | tail -3", "make test", masked=True, decisive=False),
        ],
    ),
    # Environment assignments are part of the workflow.
    ("MIX_ENV=test mix test", [step("MIX_ENV=test mix test", program="mix")]),
    (
        "FOO=1 BAR=2 make  test  2>&1",
        [step("FOO=1 BAR=2 make  test  2>&1", "FOO=1 BAR=2 make test", program="make")],
    ),
    # A wrapper is a variant of the command it runs; an assignment changes what runs.
    ("env FOO=1 make test", [step("env FOO=1 make test", "FOO=1 make test", program="make")]),
    ("rtk bun run test", [step("rtk bun run test", "bun run test", program="bun")]),
    (
        "X=1 timeout -k 5 60 nice -n 5 go test ./... 2>&1 | tail -5",
        [
            step(
                "X=1 timeout -k 5 60 nice -n 5 go test ./... 2>&1 | tail -5",
                "X=1 go test ./...",
                program="go",
                masked=True,
                decisive=False,
            )
        ],
    ),
    (
        "cd web && rtk git status && sudo -u app npm test",
        [
            step("cd web", read_only=True),
            step("rtk git status", "git status", chdir="web", read_only=True, program="git"),
            step("sudo -u app npm test", "npm test", chdir="web", program="npm"),
        ],
    ),
    # A trailing `|| true`, `; exit 0`, `; echo ...` makes the command succeed whatever ran.
    (
        "make test || true",
        [
            step("make test", masked=True, decisive=False),
            step("true", decisive=False, read_only=True),
        ],
    ),
    (
        "make test || :",
        [step("make test", masked=True, decisive=False), step(":", decisive=False, read_only=True)],
    ),
    (
        "make test || echo failed",
        [
            step("make test", masked=True, decisive=False),
            step("echo failed", decisive=False, read_only=True),
        ],
    ),
    (
        "make test; true",
        [
            step("make test", masked=True, decisive=False),
            step("true", decisive=False, read_only=True),
        ],
    ),
    (
        "make test; exit 0",
        [
            step("make test", masked=True, decisive=False),
            step("exit 0", decisive=False, read_only=True),
        ],
    ),
    (
        "make test; echo done",
        [
            step("make test", masked=True, decisive=False),
            step("echo done", decisive=False, read_only=True),
        ],
    ),
    (
        "make test && make lint || true",
        [
            step("make test", masked=True, decisive=False),
            step("make lint", masked=True, decisive=False),
            step("true", decisive=False, read_only=True),
        ],
    ),
    (
        "make test; make lint; true",
        [
            step("make test", masked=True, decisive=False),
            step("make lint", masked=True, decisive=False),
            step("true", decisive=False, read_only=True),
        ],
    ),
    # Which steps the command's exit status speaks for.
    (
        "set -e; make build; make test",
        [
            step("set -e", decisive=False, read_only=True),
            step("make build"),
            step("make test"),
        ],
    ),
    ("a && b", [step("a"), step("b")]),
    ("a || b", [step("a", decisive=False), step("b", decisive=False)]),
    ("npm test &", [step("npm test", decisive=False)]),
    ("make test\nmake lint", [step("make test", decisive=False), step("make lint")]),
    ("make test # the unit tests", [step("make test")]),
    ("make test;", [step("make test")]),
    # A leading `cd` moves the steps after it.
    (
        "cd frontend && npm test",
        [step("cd frontend", read_only=True), step("npm test", chdir="frontend")],
    ),
    (
        "cd frontend; npm test",
        [
            step("cd frontend", decisive=False, read_only=True),
            step("npm test", chdir="frontend"),
        ],
    ),
    (
        "cd frontend && npm test 2>&1 | tail -5",
        [
            step("cd frontend", read_only=True),
            step(
                "npm test 2>&1 | tail -5",
                "npm test",
                chdir="frontend",
                masked=True,
                decisive=False,
            ),
        ],
    ),
    (
        "cd a && cd ../b && make",
        [
            step("cd a", read_only=True),
            step("cd ../b", chdir="a", read_only=True),
            step("make", chdir="b"),
        ],
    ),
    (
        "pushd frontend && npm test",
        [step("pushd frontend", read_only=True), step("npm test", chdir="frontend")],
    ),
    ("cd $HOME && make", [step("cd $HOME", read_only=True), step("make", chdir="?")]),
    ("cd ~/x && make", [step("cd ~/x", read_only=True), step("make", chdir="?")]),
    ("cd /abs/x && make", [step("cd /abs/x", read_only=True), step("make", chdir="/abs/x")]),
    # Whitespace is normalised outside quotes only; heredoc bodies are kept as they are.
    (HEREDOC, [step(HEREDOC, kind=SCRIPT)]),
    ("grep 'a  b' x", [step("grep 'a  b' x", read_only=True)]),
    ("make   test", [step("make   test", "make test")]),
    ("make\ttest", [step("make\ttest", "make test")]),
    ("make \\\n  test -k \\\n  unit", [step("make \\\n  test -k \\\n  unit", "make test -k unit")]),
    # Redirections that only move output leave the workflow; one that writes a file stays.
    ("make test >/dev/null", [step("make test >/dev/null", "make test")]),
    ("make test &>/dev/null", [step("make test &>/dev/null", "make test")]),
    ("make test 2>&1", [step("make test 2>&1", "make test")]),
    ("make test 1>/dev/null 2>&1", [step("make test 1>/dev/null 2>&1", "make test")]),
    ("make test > out.txt", [step("make test > out.txt")]),
    ("make test 2> err.txt", [step("make test 2> err.txt")]),
    # Read-only and navigation steps, judged on the parsed steps.
    ('grep -E "a|b" src', [step('grep -E "a|b" src', read_only=True)]),
    (
        "git status && git diff",
        [step("git status", read_only=True), step("git diff", read_only=True)],
    ),
    ("ls | wc -l", [step("ls | wc -l", "ls", masked=True, decisive=False, read_only=True)]),
    (
        "x=1; make test",
        [step("x=1", decisive=False, read_only=True, program="set"), step("make test")],
    ),
    ("export FOO=1 && make test", [step("export FOO=1", read_only=True), step("make test")]),
]


@pytest.mark.parametrize(("command", "expected"), CASES, ids=[c for c, _ in CASES])
def test_analyse(command: str, expected: list[Step]) -> None:
    assert steps_of(command) == tuple(expected)


# (one command, another, whether they are the same workflow)
SAME_WORKFLOW = [
    ("make   test", "make test", True),
    ("make\ttest", "make test", True),
    ("make \\\n  test", "make test", True),
    ("mix test 2>&1 | tail -5", "mix test", True),
    ("make test >/dev/null", "make test", True),
    ("make test &>/dev/null", "make test", True),
    ("grep 'a  b' x", "grep 'a b' x", False),
    ('echo "a  b"', 'echo "a b"', False),
    (HEREDOC, "python3 - <<'EOF'\nprint('a b')\nEOF", False),
    ("make test > out.txt", "make test", False),
    ("MIX_ENV=test mix test", "mix test", False),
]


@pytest.mark.parametrize(("one", "other", "same"), SAME_WORKFLOW)
def test_same_workflow(one: str, other: str, same: bool) -> None:
    (first,), (second,) = steps_of(one), steps_of(other)
    assert (first.workflow == second.workflow) is same


def test_a_heredoc_step_is_the_whole_original_text() -> None:
    (only,) = steps_of(HEREDOC)
    assert only.text == HEREDOC
    assert only.workflow.startswith("python3 - <<'EOF'\n")
    assert "print('a  b')" in only.workflow
    assert only.program == "python3"


# What follows a heredoc's delimiter on its line is part of the command too.
HEREDOC_LINES = [
    # (command, each step's (workflow, decisive))
    (
        "python3 - <<'EOF' && make test\nprint(1)\nEOF",
        [("python3 - <<'EOF'\nprint(1)\nEOF", True), ("make test", True)],
    ),
    (
        "python3 - <<'EOF' > out.txt\nprint(1)\nEOF",
        [("python3 - <<'EOF' > out.txt\nprint(1)\nEOF", True)],
    ),
    ("python3 - <<'EOF' 2>&1\nprint(1)\nEOF", [("python3 - <<'EOF'\nprint(1)\nEOF", True)]),
    ("python3 - <<'EOF' | tail -3\nprint(1)\nEOF", [("python3 - <<'EOF'\nprint(1)\nEOF", False)]),
]


@pytest.mark.parametrize(("command", "expected"), HEREDOC_LINES)
def test_a_heredoc_line_keeps_what_follows_its_delimiter(
    command: str, expected: list[tuple[str, bool]]
) -> None:
    steps = steps_of(command)
    assert [(s.workflow, s.decisive) for s in steps] == expected
    if len(steps) == 1:
        assert steps[0].text == command


@pytest.mark.parametrize(
    "command",
    ["echo 'unterminated", "if then fi ((", "make test && && make lint", "cat <<EOF\nno end"],
)
def test_an_unparseable_command_is_one_opaque_step(command: str) -> None:
    analysis = analyse(command, DEFAULT_IGNORE_COMMANDS)
    assert analysis.parsed is False
    (only,) = analysis.steps
    assert only.text == command
    assert (only.chdir, only.masked, only.decisive) == (None, False, True)


def test_workflow_steps_leave_out_read_only_ones() -> None:
    analysis = analyse("cd frontend && git status && npm test", DEFAULT_IGNORE_COMMANDS)
    assert [s.workflow for s in analysis.workflow_steps()] == ["npm test"]


def test_ignore_commands_add_read_only_commands_to_the_table() -> None:
    assert analyse("kubectl get pods").steps[0].read_only is False
    assert analyse("kubectl get pods", ["kubectl get"]).steps[0].read_only is True
    assert analyse("kubectl getx", ["kubectl get"]).steps[0].read_only is False
    assert analyse("make test", ["make"]).steps[0].read_only is True
    # What the table knows writes or works whatever the setting lists.
    assert analyse("find . -name '*.pyc' -delete", ["find"]).steps[0].procedural
    assert analyse("cat a.txt > b.txt", ["cat"]).steps[0].file_write


# (where the command started, the work tree's root, the step's chdir, its directory or None)
DIRECTORIES = [
    (".", "/w", None, "."),
    ("frontend", "/w", None, "frontend"),
    (".", "/w", "frontend", "frontend"),
    ("frontend", "/w", "../backend", "backend"),
    ("frontend", "/w", "..", "."),
    (".", "/w", "..", None),  # out of the work tree
    ("frontend", "/w", "../..", None),
    (".", "/w", "a/../../w", None),
    (".", "/w", "/w/api", "api"),  # absolute, inside
    ("src", "/w", "/w/api", "api"),  # absolute: where it started does not matter
    (".", "/w", "/w", "."),
    (".", "/w", "/elsewhere", None),  # absolute, outside
    (".", "/w", "/wx", None),  # a sibling sharing the root's name as a prefix
    (".", "/w", "?", None),  # unknown
    ("frontend", "/w", "?", None),
]


@pytest.mark.parametrize(("start", "root", "chdir", "expected"), DIRECTORIES)
def test_resolve_directory(start: str, root: str, chdir: str | None, expected: str | None) -> None:
    assert resolve_directory(start, root, chdir) == expected


# --- property: steps are slices of the command; workflows are one line -----------------------

PROGRAMS = ["make", "npm", "mix", "pytest", "cargo", "ls", "grep", "tail", "echo", "git", "cd"]
_PLAIN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-._/", min_size=1, max_size=8)
_QUOTED = st.text(alphabet="ab \n", min_size=1, max_size=6).map(lambda text: f"'{text}'")
_GAPS = st.sampled_from([" ", "  ", "\t", " \\\n  "])


@st.composite
def simple_commands(draw: st.DrawFn) -> str:
    words = [draw(st.sampled_from(PROGRAMS))]
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        words.append(draw(st.one_of(_PLAIN, _QUOTED)))
    text = words[0]
    for word in words[1:]:
        text += draw(_GAPS) + word
    return text


@st.composite
def joined_commands(draw: st.DrawFn) -> tuple[str, int]:
    """A command and how many pipelines it has."""
    command = draw(simple_commands())
    pipelines = 1
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        separator = draw(st.sampled_from(["&&", ";", "|"]))
        pipelines += separator != "|"
        spaces = draw(st.sampled_from(["", " ", "  "]))
        command += f"{spaces}{separator}{spaces}{draw(simple_commands())}"
    return command, pipelines


def has_quoted_newline(command: str) -> bool:
    return any("\n" in part for part in command.split("'")[1::2])


@given(joined_commands())
def test_steps_are_slices_of_the_command_and_workflows_one_line(case: tuple[str, int]) -> None:
    command, pipelines = case

    analysis = analyse(command, DEFAULT_IGNORE_COMMANDS)

    assert analysis.parsed
    assert len(analysis.steps) == pipelines
    for each in analysis.steps:
        assert each.text in command
        if not has_quoted_newline(command):
            assert "\n" not in each.workflow


@pytest.mark.parametrize("char", ["\U00080000", "\U000e0100", "\U000eb20b", "\U00100000"])
def test_characters_that_crash_the_grammar_s_scanner_are_read_safely(char: str) -> None:
    """tree-sitter-bash's scanner kills the process on `{` followed by some characters outside
    the Basic Multilingual Plane: checked in a child process, so a crash is a failure here."""
    command = f"{{{char} && make test && echo '{char}'"
    script = (
        "import json, sys\n"
        "from remem.shell.analysis import analyse\n"
        "steps = analyse(sys.argv[1]).steps\n"
        "print(json.dumps([[s.text, s.workflow] for s in steps]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, command], capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    steps = json.loads(result.stdout)
    assert steps and all(text in command for text, _workflow in steps)


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ("bd show spotter-fum", True),
        ("bd ready 2>&1", True),
        ("gh pr view 12 --comments", True),
        ("kubectl get pods -n web", True),
        ("git ls-files priv/static/assets/", True),
        ("bd close spotter-fum.1 --reason=done", False),
        ("gh pr create --fill", True),
        ("kubectl apply -f deploy.yaml", False),
    ],
)
def test_the_default_list_knows_common_query_commands(command: str, read_only: bool) -> None:
    (step,) = analyse(command, DEFAULT_IGNORE_COMMANDS).steps
    assert step.read_only is read_only
