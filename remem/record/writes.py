"""The files a shell command edits: a patch handed to `apply_patch` (as its argument, or fed by a
heredoc), and a file written by `cat`, `printf`, `echo` or `tee` through a redirection or a
heredoc. The hook and the transcript readers both ask here, so an edit made through the shell is
one edit however it arrives.

Stdlib only, and no tree-sitter: the hook imports it. A command line is read with a small
tokenizer of bash's quotes, operators and heredocs, enough for the lines that write files; what
it cannot read writes nothing.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from typing import Any

PATCH_PROGRAMS = frozenset({"apply_patch", "applypatch"})
WRITERS = frozenset({"cat", "printf", "echo", "tee"})
PATCH_BEGIN = "*** Begin Patch"
PATCH_END = "*** End Patch"
# The lines of a patch that name a file it adds, changes, deletes or moves a file to.
PATCH_FILE_PREFIXES = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
# Longest first, so that `>>` is never read as two `>`.
_OPERATORS = (
    "<<<", "<<-", "&&", "||", ";;", "<<", ">>", ">|", ">&", "&>", "<&", "|&",
    ";", "|", "&", "(", ")", "<", ">",
)  # fmt: skip
_OPERATOR_CHARS = frozenset(";|&()<>")
_SEPARATORS = frozenset({"&&", "||", ";", ";;", "|", "|&", "&", "(", ")"})
_STDOUT_WRITES = frozenset({">", ">>", ">|", "&>"})
_SHELLS = frozenset({"bash", "sh", "zsh"})


def patch_files(patch: str) -> list[str]:
    """The files a patch names, in its order, each once."""
    files: list[str] = []
    for line in patch.splitlines():
        for prefix in PATCH_FILE_PREFIXES:
            if line.startswith(prefix):
                name = line[len(prefix) :].strip()
                if name and name not in files:
                    files.append(name)
    return files


def applied_patch(command: Any) -> str | None:
    """The patch a command hands to `apply_patch`: argv (`["apply_patch", patch]`), or text that
    runs it with the patch as argument or heredoc; None when the command applies no patch."""
    if isinstance(command, list) and command and all(isinstance(p, str) for p in command):
        shell = len(command) == 3 and os.path.basename(command[0]) in _SHELLS
        if shell and command[1] in ("-c", "-lc"):
            return applied_patch(command[2])
        if len(command) == 2 and os.path.basename(command[0]) in PATCH_PROGRAMS:
            return command[1] if PATCH_BEGIN in command[1] else None
        return None
    if not isinstance(command, str) or not any(p in command for p in PATCH_PROGRAMS):
        return None
    first_line = command.lstrip().split("\n", 1)[0]
    tokens = _tokens(first_line)
    if tokens is None:  # the patch is a quoted argument spanning lines
        tokens = _tokens(first_line.split("'", 1)[0].split('"', 1)[0])
    words = [text for kind, text in (tokens or []) if kind == "word"]
    if not words or os.path.basename(words[0]) not in PATCH_PROGRAMS:
        return None
    return _patch_in(command)


def _patch_in(text: str) -> str | None:
    start = text.find(PATCH_BEGIN)
    if start < 0:
        return None
    end = text.find(PATCH_END, start)
    return text[start:] if end < 0 else text[start : end + len(PATCH_END)] + "\n"


def written_files(command: str) -> list[tuple[str, str]]:
    """(file, content) for each file the command writes with cat, printf, echo or tee: the
    content is the heredoc's body, else the command line that writes it (one string for all
    the files a line writes). Files are named as the command names them; descriptors and
    /dev/ are no files. Read in one pass: each character once, however many lines a quote
    spans or files a line writes."""
    if ">" not in command and "tee" not in command:
        return []
    writes: list[tuple[str, str]] = []
    at = 0
    while at < len(command):
        tokens, end = _line_tokens(command, at)
        if tokens is None:
            break
        line = command[at : end - 1 if command[end - 1 : end] == "\n" else end]
        at = end
        bodies = []
        for delimiter, strip_tabs in _heredocs(tokens):
            body, at = _heredoc_body(command, at, delimiter, strip_tabs)
            bodies.append(body)
        heredoc_at = 0
        for segment in _segments(tokens):
            heredocs = sum(1 for kind, text in segment if kind == "op" and text in ("<<", "<<-"))
            targets = _targets(segment)
            if targets:
                fed = heredocs and heredoc_at < len(bodies)
                content = bodies[heredoc_at] if fed else line
                writes.extend((target, content) for target in targets)
            heredoc_at += heredocs
    return writes


def _heredoc_body(text: str, at: int, delimiter: str, strip_tabs: bool) -> tuple[str, int]:
    """A heredoc's body from `at` up to its delimiter's line, and where the next line starts."""
    body: list[str] = []
    while at < len(text):
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        line = text[at:end]
        at = end + 1
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            break
        body.append(line)
    return "\n".join(body), at


def _heredocs(tokens: list[tuple[str, str]]) -> list[tuple[str, bool]]:
    """(delimiter, whether leading tabs are stripped) of each heredoc of a line, in order."""
    found = []
    for index, (kind, text) in enumerate(tokens[:-1]):
        if kind == "op" and text in ("<<", "<<-") and tokens[index + 1][0] == "word":
            found.append((tokens[index + 1][1], text == "<<-"))
    return found


def _segments(tokens: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    segments: list[list[tuple[str, str]]] = [[]]
    for token in tokens:
        if token[0] == "op" and token[1] in _SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(token)
    return [segment for segment in segments if segment]


def _targets(segment: list[tuple[str, str]]) -> list[str]:
    """The files one simple command writes, when its program is a writer."""
    words: list[str] = []
    targets: list[str] = []
    index = 0
    while index < len(segment):
        kind, text = segment[index]
        following = segment[index + 1] if index + 1 < len(segment) else ("op", "")
        if kind == "io" or (kind == "op" and text not in _SEPARATORS):
            descriptor = text if kind == "io" else ""
            operator = following[1] if kind == "io" else text
            operand = segment[index + 2] if kind == "io" and index + 2 < len(segment) else following
            if operator in _STDOUT_WRITES and descriptor in ("", "1") and operand[0] == "word":
                targets.append(operand[1])
            index += 3 if kind == "io" else 2
            continue
        if words or "=" not in text:  # leading VAR=value assignments are no words
            words.append(text)
        index += 1
    if not words or os.path.basename(words[0]) not in WRITERS:
        return []
    if os.path.basename(words[0]) == "tee":
        targets.extend(word for word in words[1:] if not word.startswith("-"))
    return [target for target in targets if _is_file(target)]


def _is_file(target: str) -> bool:
    return bool(target) and not target.startswith("/dev/") and not any(c in target for c in "$`*?")


def _tokens(line: str) -> list[tuple[str, str]] | None:
    """Words (quotes removed), operators and descriptor numbers of one line; None when a quote
    or a trailing backslash leaves it open."""
    tokens, end = _line_tokens(line, 0)
    return tokens if end >= len(line) else None


def _line_tokens(text: str, index: int) -> tuple[list[tuple[str, str]] | None, int]:
    """The tokens of the command line starting at `index`, which goes on past a line break
    inside quotes or after a backslash, and where the next line starts; None when a quote or
    a trailing backslash is never closed."""
    tokens: list[tuple[str, str]] = []
    length = len(text)
    while index < length:
        char = text[index]
        if char == "\n":
            return tokens, index + 1
        if char in " \t":
            index += 1
        elif char == "#":
            end = text.find("\n", index)
            return tokens, length if end < 0 else end + 1
        elif char.isdigit() and _descriptor_end(text, index) is not None:
            end = _descriptor_end(text, index) or index
            tokens.append(("io", text[index:end]))
            index = end
        elif char in _OPERATOR_CHARS:
            operator = next(o for o in _OPERATORS if text.startswith(o, index))
            tokens.append(("op", operator))
            index += len(operator)
        else:
            word, index = _word(text, index)
            if word is None:
                return None, length
            tokens.append(("word", word))
    return tokens, length


def _descriptor_end(line: str, index: int) -> int | None:
    end = index
    while end < len(line) and line[end].isdigit():
        end += 1
    return end if end < len(line) and line[end] in "<>" else None


def _word(line: str, index: int) -> tuple[str | None, int]:
    parts: list[str] = []
    length = len(line)
    while index < length and line[index] not in " \t\n" and line[index] not in _OPERATOR_CHARS:
        char = line[index]
        if char == "'":
            end = line.find("'", index + 1)
            if end < 0:
                return None, length
            parts.append(line[index + 1 : end])
            index = end + 1
        elif char == '"':
            end = index + 1
            while end < length and line[end] != '"':
                end += 2 if line[end] == "\\" else 1
            if end >= length:
                return None, length
            parts.append(line[index + 1 : end])
            index = end + 1
        elif char == "\\":
            if index + 1 >= length:
                return None, length
            if line[index + 1] != "\n":  # a backslash-newline continues the line
                parts.append(line[index + 1])
            index += 2
        else:
            parts.append(char)
            index += 1
    return "".join(parts), index
