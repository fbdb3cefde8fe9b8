"""All queue SQL lives in remem/queue/ (DESIGN.md §4): the queue's table is named nowhere else in
the library and the workers but in its definition. Comments and docstrings elsewhere speak of
"tasks", so that a grep for the table finds its statements and nothing else."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO

TABLE = "extraction_tasks"
ALLOWED = (REPO / "remem" / "queue", REPO / "remem" / "db" / "schema.py")


def _sources() -> list[Path]:
    return sorted(
        path
        for folder in (REPO / "remem", REPO / "workers")
        for path in folder.rglob("*.py")
        if not any(path == allowed or allowed in path.parents for allowed in ALLOWED)
    )


def test_the_queue_table_is_named_only_in_the_queue_and_the_schema() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for path in _sources()
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if TABLE in line
    ]
    assert offenders == []


def test_the_scan_reads_the_library_and_the_workers_but_not_the_queue() -> None:
    scanned = [path.relative_to(REPO).parts for path in _sources()]
    assert {"remem", "workers"} == {parts[0] for parts in scanned}
    assert ("remem", "hook.py") in scanned
    assert not any(parts[:2] == ("remem", "queue") for parts in scanned)
    assert ("remem", "db", "schema.py") not in scanned
    assert TABLE in (REPO / "remem" / "queue" / "statements.py").read_text()
