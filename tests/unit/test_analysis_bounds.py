"""Command analysis is bounded (issue 28, item 6): a command larger than MAX_PARSED_BYTES or
MAX_PARSED_NODES is read as plain text, one opaque step, and a command within them is read by
the grammar as ever. Their time is bench/analysis.py's."""

from __future__ import annotations

from remem.shell.analysis import Analysis, analyse
from remem.shell.kinds import WRITE
from remem.shell.syntax import MAX_PARSED_BYTES, MAX_PARSED_NODES

MIB = 1024 * 1024


def _heredoc(body_bytes: int) -> str:
    line = "a line of the file, with $HOME in it\n"
    return "cat <<'EOF' > notes.txt\n" + line * (body_bytes // len(line)) + "EOF\n"


def _lines(count: int) -> str:
    """`make tN` on its own line: 4 nodes of the grammar each."""
    return "\n".join(f"make t{index}" for index in range(count))


def _opaque(command: str) -> Analysis:
    analysis = analyse(command)
    assert analysis.parsed is False
    (only,) = analysis.steps
    assert only.text == command
    assert (only.chdir, only.masked, only.decisive) == (None, False, True)
    return analysis


def test_a_one_mib_heredoc_is_one_opaque_step_and_a_smaller_one_a_file_write() -> None:
    _opaque(_heredoc(MIB))
    within = analyse(_heredoc(MAX_PARSED_BYTES // 2))
    assert within.parsed is True
    assert [step.kind for step in within.steps] == [WRITE]


def test_a_one_mib_payload_of_small_heredocs_is_one_opaque_step() -> None:
    payload = "".join(f"cat <<EOF{n} > f{n}.txt\nx\nEOF{n}\n" for n in range(MIB // 32))
    assert len(payload) > MIB
    _opaque(payload)


def test_more_nodes_than_the_bound_is_one_opaque_step_fewer_are_steps() -> None:
    _opaque(_lines(MAX_PARSED_NODES // 2))
    within = analyse(_lines(MAX_PARSED_NODES // 8))
    assert within.parsed is True
    assert len(within.steps) == MAX_PARSED_NODES // 8


def test_a_hundred_thousand_step_chain_is_one_opaque_step() -> None:
    _opaque(" && ".join(f"make t{index}" for index in range(100_000)))


def test_ten_thousand_nested_substitutions_or_subshells_are_one_opaque_step() -> None:
    _opaque("echo " + "$(echo " * 10_000 + "x" + ")" * 10_000)
    _opaque("(" * 10_000 + "make test" + ")" * 10_000)
    _opaque("{ " * 10_000 + "make test; " + "}; " * 10_000)
    nested = analyse("echo " + "$(echo " * 100 + "x" + ")" * 100)
    assert nested.parsed is True


def test_a_plain_command_beyond_the_bounds_keeps_the_workflow_the_grammar_gives() -> None:
    """The hook names a plain command's workflow without the grammar (remem/shell/plain.py):
    beyond the bounds it is the same."""
    arguments = " ".join(f"t{index}" for index in range(MAX_PARSED_NODES))
    (step,) = _opaque(f"make  {arguments}  ").steps
    assert step.workflow == f"make {arguments}"
    (small,) = analyse("make  t0  t1 ").steps
    assert small.workflow == "make t0 t1"
