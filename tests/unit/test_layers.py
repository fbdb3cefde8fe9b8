"""The layout shows the architecture (DESIGN.md §1): each room of remem/ imports only rooms
below it, and no module imports another that imports it back. Imports made only for the type
checker (under `if TYPE_CHECKING:`) are not imports at run time and do not count; an import
inside a function does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Lowest first. A module may import its own room and the rooms before it.
ROOMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundations",
        (
            "remem",
            "remem.errors",
            "remem.paths",
            "remem.faults",
            "remem.config",
            "remem.config_file",
            "remem.json_contract",
        ),
    ),
    ("db", ("remem.db",)),
    ("record", ("remem.record",)),
    ("shell", ("remem.shell",)),
    ("queue", ("remem.queue",)),
    ("capture", ("remem.capture",)),
    ("procedures", ("remem.procedures",)),
    ("transcripts", ("remem.transcripts",)),
    ("forgetting", ("remem.forgetting",)),
    ("team", ("remem.team",)),
    ("agent", ("remem.agent",)),
    ("admin", ("remem.admin",)),
    ("workers", ("workers",)),
    ("faces", ("remem.cli", "remem.ui", "remem.hook", "remem.hook_entry", "remem.__main__")),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for folder in ("remem", "workers"):
        for path in sorted((REPO / folder).rglob("*.py")):
            found[module_name(path)] = path
    return found


def _type_checking_only(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == ("TYPE_CHECKING")
    )


def imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The project modules this module imports at run time, wherever the import stands."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking_only(node):
            for child in getattr(node, "orelse", []):
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {each for each in found if each in known and each != name}


def room_of(name: str) -> int:
    best = (-1, -1)
    for index, (_room, prefixes) in enumerate(ROOMS):
        for prefix in prefixes:
            if name == prefix or name.startswith(prefix + "."):
                best = max(best, (len(prefix), index))
    assert best[1] >= 0, f"{name} belongs to no room: add it to ROOMS"
    return best[1]


GRAPH = {name: imports(path, name, modules()) for name, path in modules().items()}


def test_every_module_has_a_room() -> None:
    for name in GRAPH:
        room_of(name)


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_a_module_imports_only_its_room_and_the_rooms_below(name: str) -> None:
    mine = room_of(name)
    higher = sorted(each for each in GRAPH[name] if room_of(each) > mine)
    assert not higher, f"{name} ({ROOMS[mine][0]}) imports higher rooms: {higher}"


def test_no_import_circles() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(GRAPH[node]):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            connect(node)
    assert not circles, f"modules that import each other: {circles}"


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    source = tmp_path / "remem" / "sample.py"
    source.parent.mkdir()
    source.write_text(
        "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from remem import config\n"
        "def f():\n    from remem.admin import status\n",
        encoding="utf-8",
    )
    known = {"remem.config": source, "remem.admin.status": source, "remem.admin": source}
    assert imports(source, "remem.sample", known) == {"remem.admin", "remem.admin.status"}
