"""The report counts a session's failing calls through the index kept for them, on both
backends: walking every event of every session made `remem report` and the pages of `remem ui`
slow on a large home."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from remem.admin.report import read_report
from remem.db.engine import executor, is_sqlite
from tests.integration.conftest import DAY, World

INDEX = "ix_captured_events_failing"


def _plans(connection: Connection) -> tuple[Any, dict[str, str]]:
    """An execute that runs each statement and keeps its plan, and the plans it kept."""
    run = executor(connection)
    sqlite = is_sqlite(connection.engine)
    if not sqlite:
        # The test tables are tiny: without this PostgreSQL reads them whole whatever indexes
        # exist, and the plan would say nothing about which index the query can use.
        connection.execute(text("SET LOCAL enable_seqscan = off"))
    plans: dict[str, str] = {}

    def execute(sql: str, params: dict[str, Any]) -> Any:
        explain = "EXPLAIN QUERY PLAN " if sqlite else "EXPLAIN "
        plans[sql] = "\n".join(str(row[-1]) for row in run(explain + sql, params))
        return run(sql, params)

    return execute, plans


def test_failing_calls_are_counted_through_their_index(world: World) -> None:
    world.post("pytest -q", 1, session="red")
    world.post("pytest -q", 1, session="red")
    world.post("pytest -q", 0, session="red")
    world.post("ruff check .", 0, session="green")
    with world.engine.begin() as connection:
        execute, plans = _plans(connection)
        report = read_report(execute, None, 7 * DAY, world.now)
    counting = [plan for sql, plan in plans.items() if "outcome = 'failure'" in sql]
    assert len(counting) == 1 and INDEX in counting[0], plans
    (project,) = report.projects
    assert project.counts["sessions"] == 2
    assert [(week.sessions, week.failing_calls) for week in project.weeks] == [(2, 2)]
