"""A command line read with tree-sitter's bash grammar, as bash reads it (DESIGN.md §5).

tree-sitter-bash nests `&&` lists inside pipelines (`a && b | c` comes back as `(a && b) | c`)
and hangs the rest of a heredoc's line inside the heredoc, so the tree is first flattened into
units and operators in source order, and bash's own precedence (`|` binds tighter than
`&&`/`||`, which bind tighter than `;`) is applied to that sequence. Text is always sliced from
the command as it was run.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_UNIT_TYPES = frozenset(
    {
        "command", "subshell", "compound_statement", "if_statement", "while_statement",
        "for_statement", "c_style_for_statement", "case_statement", "function_definition",
        "test_command", "declaration_command", "unset_command", "variable_assignment",
        "variable_assignments", "negated_command",
    }
)  # fmt: skip
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_SEPARATORS = frozenset({";", "&", "\n", ";;"})
_PIPES = frozenset({"|", "|&"})
_LITERAL_ARGS = frozenset({"word", "number", "raw_string", "string", "concatenation"})
# The most one command may cost the grammar and the analysis, each linear in them: a larger
# command (a 1 MiB payload of heredocs, a 100,000-step `&&` chain) is read as plain text, one
# opaque step (remem/shell/analysis.py), in a few milliseconds rather than minutes.
MAX_PARSED_BYTES = 256 * 1024
MAX_PARSED_NODES = 10_000
# What stands in a workflow for text that is not part of it (a commit's message).
ELIDED = "…"
# Byte spans of the source to show as other text: (start, end, what stands there).
Spans = Sequence[tuple[int, int, str]]


@dataclass
class Unit:
    node: Any
    redirects: list[Any] = field(default_factory=list)

    @property
    def start(self) -> int:
        return int(self.node.start_byte)

    def line_end(self) -> int:
        end = int(self.node.end_byte) if self.node.type != "heredoc_redirect" else self.start
        for redirect in self.redirects:
            end = max(end, _redirect_line_end(redirect))
        return end

    def heredoc_parts(self) -> list[Any]:
        return [r for r in self.redirects if r.type == "heredoc_redirect"]


def _redirect_line_end(redirect: Any) -> int:
    if redirect.type != "heredoc_redirect":
        return int(redirect.end_byte)
    for child in redirect.children:
        if child.type == "heredoc_start":
            return int(child.end_byte)
    return int(redirect.end_byte)


def text_of(node: Any) -> str:
    return bytes(node.text).decode("utf-8", "surrogateescape")


@functools.lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


# --- flattening the tree into units and operators, in source order ---------------------------


def _flatten(node: Any, out: list[Any]) -> None:
    kind = node.type
    if kind in _UNIT_TYPES:
        unit = Unit(node)
        unit.redirects.extend(c for c in node.children if c.type in _REDIRECTS)
        out.append(unit)
    elif kind == "redirected_statement":
        for child in node.children:
            if child.type in _REDIRECTS:
                _attach(child, out)
            elif child.is_named:
                _flatten(child, out)
    elif kind == "comment":
        return
    else:  # program, list, pipeline, and anything that only groups statements
        previous_named = False
        for child in node.children:
            if not child.is_named:
                if child.type in _SEPARATORS or child.type in _PIPES or child.type in ("&&", "||"):
                    out.append(child.type)
                previous_named = False
                continue
            if child.type == "comment":
                continue
            if previous_named and kind == "program":
                out.append("\n")  # statements on separate lines
            _flatten(child, out)
            previous_named = True


def _attach(redirect: Any, out: list[Any]) -> None:
    """A redirection belongs to the unit before it. The grammar hangs the rest of a heredoc's
    line inside the heredoc (`<<EOF > out && make`): its redirections are the unit's too, its
    operators and commands follow in order."""
    unit = _last_unit(out)
    if unit is not None:
        unit.redirects.append(redirect)
    if redirect.type != "heredoc_redirect":
        return
    for child in redirect.children:
        if child.type in ("<<", "<<-", "heredoc_start", "heredoc_body", "heredoc_end"):
            continue
        if child.type in _REDIRECTS and unit is not None:
            unit.redirects.append(child)
        elif not child.is_named:
            if child.type in _SEPARATORS or child.type in _PIPES or child.type in ("&&", "||"):
                out.append(child.type)
        else:
            _flatten(child, out)


def _last_unit(out: list[Any]) -> Unit | None:
    """The unit a redirection follows: searched from the end, where it is (a copy of every
    unit per redirection made a command of many heredocs quadratic)."""
    for item in reversed(out):
        if isinstance(item, Unit):
            return item
    return None


# --- bash precedence over the flattened sequence ---------------------------------------------


@dataclass
class Pipeline:
    units: list[Unit]
    pipes: list[str]


@dataclass
class AndOr:
    pipelines: list[Pipeline]
    ops: list[str]  # between pipelines: "&&" or "||"
    background: bool = False


def _structure(items: Sequence[Any]) -> list[AndOr]:
    lists: list[AndOr] = []
    current = AndOr([Pipeline([], [])], [])
    for item in items:
        if isinstance(item, Unit):
            current.pipelines[-1].units.append(item)
        elif item in _PIPES:
            current.pipelines[-1].pipes.append(item)
        elif item in ("&&", "||"):
            current.ops.append(item)
            current.pipelines.append(Pipeline([], []))
        else:  # a separator ends the and-or list
            current.background = item == "&"
            lists.append(current)
            current = AndOr([Pipeline([], [])], [])
    lists.append(current)
    cleaned = []
    for and_or in lists:
        pipelines = [p for p in and_or.pipelines if p.units]
        if pipelines:
            ops = and_or.ops[: len(pipelines) - 1]
            cleaned.append(AndOr(pipelines, ops, and_or.background))
    return cleaned


def unit_words(unit: Unit) -> list[str]:
    """A simple command's words after its variable assignments: ["env", "FOO=1", "make", ...]."""
    return [word for word, _node in unit_args(unit)]


def unit_args(unit: Unit) -> list[tuple[str, Any]]:
    """A simple command's words with the nodes they were read from (their place in the
    command), the command's name first."""
    if unit.node.type != "command":
        return []
    words = []
    for child in unit.node.children:
        if child.type in ("variable_assignment", "file_redirect", "herestring_redirect"):
            continue
        if child.type == "command_name" or child.type in _LITERAL_ARGS or child.is_named:
            words.append((_unquote(text_of(child)), child))
    return words


def nested_commands(unit: Unit) -> list[list[str]]:
    """The words of every simple command run inside the unit's own words: in its command and
    process substitutions and subshells (`bash <(curl …)`, `sh -c "$(curl …)"`)."""
    found: list[list[str]] = []
    pending = [child for child in unit.node.children]
    while pending:
        node = pending.pop()
        if node.type == "command":
            found.append(unit_words(Unit(node)))
        pending.extend(node.children)
    return found


def unit_writes(unit: Unit) -> list[str]:
    """The files a unit's redirections write (`> out.txt`, `2>> log`): not /dev/null, not
    another descriptor."""
    written = []
    for redirect in unit.redirects:
        if redirect.type != "file_redirect" or _is_output_only(redirect):
            continue
        operator = next((c.type for c in redirect.children if not c.is_named), "")
        if operator in (">", ">>", "&>", "&>>", ">|"):
            written.append(_unquote(text_of(redirect.children[-1])))
    return written


def unit_fed(unit: Unit) -> bool:
    """Whether the unit reads a heredoc or a here-string: text written in the command."""
    return any(r.type in ("heredoc_redirect", "herestring_redirect") for r in unit.redirects)


def _unquote(word: str) -> str:
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        return word[1:-1]
    return word


def _is_output_only(redirect: Any) -> bool:
    """`2>&1`, `>&2`, `>/dev/null`, `&>/dev/null`: they change where output goes, not what runs."""
    if redirect.type != "file_redirect":
        return False
    operator = next((c.type for c in redirect.children if not c.is_named), "")
    destination = redirect.children[-1]
    if operator in (">&", "<&"):
        return destination.type == "number" or text_of(destination) == "-"
    return operator in (">", ">>", "&>", "&>>", ">|") and text_of(destination) == "/dev/null"


_PROTECTED = frozenset(
    {
        "word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation",
        "command_substitution", "process_substitution", "expansion", "simple_expansion",
        "arithmetic_expansion", "number", "heredoc_start",
    }
)  # fmt: skip


def unit_workflow(unit: Unit, source: bytes, elide: Spans = ()) -> str:
    """The unit's text without output-only redirections, whitespace runs between its tokens
    made one space, the `elide` spans (a commit's message) replaced by their text. Built from
    the source, not from the tree's tokens: the grammar drops some (the `-` of
    `python3 - <<EOF`), and a workflow must still run."""
    if unit.node.type != "command":
        node = unit.node
        return sliced(source, node.start_byte, node.end_byte, elide).strip()
    start, end = unit.start, unit.line_end()
    cuts = [(int(r.start_byte), int(r.end_byte)) for r in unit.redirects if _is_output_only(r)]
    protected: list[tuple[int, int]] = []
    _protected_ranges(unit.node, protected)
    for redirect in unit.redirects:
        if not _is_output_only(redirect):
            _protected_ranges(redirect, protected)
    keep = bytearray()
    position = start
    for span_start, span_end in sorted(protected + cuts):
        if span_start < position or span_start >= end:
            continue
        _append_gap(keep, source[position:span_start])
        if (span_start, span_end) in cuts:
            _append_gap(keep, b" ")
        else:
            keep += sliced(source, span_start, span_end, elide).encode("utf-8", "surrogateescape")
        position = span_end
    _append_gap(keep, source[position:end])
    return bytes(keep).decode("utf-8", "surrogateescape").strip()


def _protected_ranges(node: Any, out: list[tuple[int, int]]) -> None:
    if node.type in _PROTECTED:
        out.append((int(node.start_byte), int(node.end_byte)))
        return
    for child in node.children:
        # A heredoc's body comes after the line; what follows its delimiter is other tokens.
        if node.type == "heredoc_redirect" and child.type != "heredoc_start":
            continue
        _protected_ranges(child, out)


def _append_gap(keep: bytearray, gap: bytes) -> None:
    """Text between tokens: whitespace and line continuations become one space."""
    gap = gap.replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")
    for index, part in enumerate(gap.split()):
        if index or gap[:1].isspace():
            _space(keep)
        keep += part
    if gap[-1:].isspace():
        _space(keep)


def _space(keep: bytearray) -> None:
    if keep and keep[-1:] != b" ":
        keep += b" "


def heredoc_bodies(units: Iterable[Unit], source: bytes, elide: Spans = ()) -> str:
    bodies = []
    for unit in units:
        for redirect in unit.heredoc_parts():
            pieces = [c for c in redirect.children if c.type in ("heredoc_body", "heredoc_end")]
            if pieces:
                start, end = int(pieces[0].start_byte), int(pieces[-1].end_byte)
                bodies.append(sliced(source, start, end, elide))
    return "".join("\n" + body for body in bodies)


def heredoc_body_spans(unit: Unit) -> list[tuple[int, int]]:
    """Where the unit's heredoc bodies and here-strings lie in the source."""
    spans = []
    for redirect in unit.redirects:
        for child in redirect.children:
            if child.type == "heredoc_body" or (
                redirect.type == "herestring_redirect" and child.is_named
            ):
                spans.append((int(child.start_byte), int(child.end_byte)))
    return spans


def sliced(source: bytes, start: int, end: int, elide: Spans = ()) -> str:
    """source[start:end] as text, each `elide` span inside it replaced by its text."""
    parts, position = [], start
    for span_start, span_end, shown in sorted(elide):
        if span_start < position or span_end > end:
            continue
        parts += [source[position:span_start].decode("utf-8", "surrogateescape"), shown]
        position = span_end
    parts.append(source[position:end].decode("utf-8", "surrogateescape"))
    return "".join(parts)


def _parseable(command: str) -> bytes:
    """The command as the grammar may read it. tree-sitter-bash's scanner crashes the process
    on some characters outside the Basic Multilingual Plane (`{` then U+80000): each becomes
    U+10000, four UTF-8 bytes like any of them, so every byte offset is the original's. Text is
    always sliced from the original."""
    if not command.isascii():
        command = _ASTRAL.sub("\U00010000", command)
    return command.encode("utf-8", "surrogateescape")


def parse(command: str) -> list[AndOr] | None:
    """The command's and-or lists in source order; None when the grammar cannot read it or
    when it is larger than one command may cost (MAX_PARSED_BYTES, MAX_PARSED_NODES)."""
    source = _parseable(command)
    if len(source) > MAX_PARSED_BYTES:
        return None
    tree = _parser().parse(source)
    if tree.root_node.has_error or tree.root_node.descendant_count > MAX_PARSED_NODES:
        return None
    items: list[Any] = []
    _flatten(tree.root_node, items)
    return _structure(items)
