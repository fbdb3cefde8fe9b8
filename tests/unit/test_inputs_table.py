"""What a step runs (remem/shell/runs.py) and the task-file table (remem/record/inputs.py),
row by row with real excerpts; fingerprints read and compared on real files in a temporary
work tree."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

import pytest

from remem.record import inputs
from remem.record.inputs import SCRIPT, TASK_FILES, compare, fingerprint, fingerprints
from remem.shell.runs import step_inputs


@pytest.mark.parametrize("row", TASK_FILES, ids=lambda row: row.kind)
def test_each_task_file_reads_its_task_from_its_excerpt(row: inputs.TaskFile) -> None:
    command, text, definition = row.example
    ((path, kind, task), *_) = step_inputs(command, ".")[-1]
    assert (path, kind) == (row.names[0], row.kind)
    assert task is not None
    assert row.extract(text, task) == definition
    assert row.extract(text, "no-such-task") is None


@pytest.mark.parametrize(
    ("command", "directory", "expected"),
    [
        ("./scripts/check.sh", ".", [("scripts/check.sh", SCRIPT, None)]),
        ("sh scripts/check.sh --fast", "sub", [("sub/scripts/check.sh", SCRIPT, None)]),
        ("python tools/gen.py", ".", [("tools/gen.py", SCRIPT, None)]),
        ("uv run python tools/gen.py", ".", [("tools/gen.py", SCRIPT, None)]),
        ("node build.js", "web", [("web/build.js", SCRIPT, None)]),
        ("bun scripts/x.ts", ".", [("scripts/x.ts", SCRIPT, None)]),
        ("env CI=1 make test", ".", [("GNUmakefile", "make", "test")]),
        ("make -C sub -j 4 V=1 check", ".", [("sub/GNUmakefile", "make", "check")]),
        ("npm test", ".", [("package.json", "package.json", "test")]),
        ("pnpm run lint", "web", [("web/package.json", "package.json", "lint")]),
        ("yarn build", ".", [("package.json", "package.json", "build")]),
        ("bun run build", ".", [("package.json", "package.json", "build")]),
        ("just test", ".", [("justfile", "just", "test")]),
        ("mix setup", ".", [("mix.exs", "mix", "setup")]),
        ("task build", ".", [("Taskfile.yml", "task", "build")]),
        ("poe test", ".", [("pyproject.toml", "poe", "test")]),
        ("hatch run lint:check", ".", [("pyproject.toml", "hatch", "lint:check")]),
        ("pdm run lint", ".", [("pyproject.toml", "pdm", "lint")]),
        ("cargo xtask dist", ".", [(".cargo/config.toml", "cargo", "xtask")]),
        ("python -m pytest -q", ".", []),
        (".venv/bin/pytest -q", ".", []),
        ("sh ../other/run.sh", ".", []),
    ],
)
def test_what_a_step_runs(
    command: str, directory: str, expected: list[tuple[str, str, str | None]]
) -> None:
    assert [alternatives[0] for alternatives in step_inputs(command, directory)] == expected


def test_a_hatch_environment_script_and_a_make_variable_chain() -> None:
    text = '[tool.hatch.envs.lint.scripts]\ncheck = "ruff check ."\n'
    assert inputs.hatch_script(text, "lint:check") == '"ruff check ."'
    makefile = "A = $(B) -q\nB = pytest\nC = other\n\ntest:\n\t$(A) tests\n"
    assert (
        inputs.makefile_target(makefile, "test") == "test:\n\t$(A) tests\nA = $(B) -q\nB = pytest"
    )


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "shop"
    (tree / "scripts").mkdir(parents=True)
    (tree / "Makefile").write_text("test:\n\tpytest\n\nlint:\n\truff check .\n")
    (tree / "scripts" / "check.sh").write_text("echo ok\n")
    return tree


def _later(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


def test_another_target_changing_is_no_change_and_its_own_is(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    found = fingerprints(
        str(tree), [[("Makefile", "make", "test")], [("Makefile", "make", "lint")]], 1.0
    )
    assert [item["task"] for item in found] == ["test", "lint"]
    (tree / "Makefile").write_text("test:\n\tpytest\n\nlint:\n\truff check --fix .\n")
    _later(tree / "Makefile")
    check = compare(found, str(tree))
    assert (check.changed, check.missing, check.paths) == (("Makefile (lint)",), (), ("Makefile",))


def test_unchanged_size_and_time_are_never_read_and_gone_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    found = fingerprints(str(tree), [[("scripts/check.sh", SCRIPT, None)]], 1.0)
    opened: list[str] = []
    real_open = builtins.open

    def recording(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", recording)
    assert compare(found, str(tree)).paths == ()
    assert opened == []
    (tree / "scripts" / "check.sh").unlink()
    check = compare(found, str(tree))
    assert (check.missing, check.paths) == (("scripts/check.sh",), ("scripts/check.sh",))


def test_a_large_file_and_one_outside_the_tree_are_never_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    (tree / "scripts" / "big.sh").write_bytes(b"#" * (2 * 1024 * 1024))
    (tmp_path / "outside.sh").write_text("echo outside\n")
    (tree / "scripts" / "linked.sh").symlink_to(tmp_path / "outside.sh")
    opened: list[str] = []
    real_open = builtins.open

    def recording(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", recording)
    for path in ("scripts/big.sh", "scripts/linked.sh", "../outside.sh"):
        assert fingerprint(str(tree), path, SCRIPT, None, 1.0, "verification") is None
    assert opened == []
