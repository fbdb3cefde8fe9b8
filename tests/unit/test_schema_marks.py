"""The marks rebuild, forget, shipping and pulling read from the table definitions."""

from __future__ import annotations

from remem.db.schema import metadata, tables_marked
from remem.forgetting.erase import DELETIONS
from remem.procedures.rebuild import DERIVED_TABLES

# Derived, but an archived procedure (the user's verdict) keeps its row and its evidence.
KEPT_WHEN_ARCHIVED = {"procedures", "procedure_evidence"}


def _points_at_events(table_name: str) -> bool:
    table = metadata.tables[table_name]
    return any(
        column.name == "event_id"
        or any(key.target_fullname == "captured_events.id" for key in column.foreign_keys)
        for column in table.columns
    )


def test_every_table_made_from_events_is_marked_derived() -> None:
    made_from_events = {name for name in metadata.tables if _points_at_events(name)}
    derived = {table.name for table in tables_marked("derived")}
    # A record of what remem did (the advice it gave) is no derivation: a rebuild keeps it.
    records = {table.name for table in tables_marked("record")}
    assert records == {"advice_given", "digest_shown"} and not records & derived
    assert made_from_events - KEPT_WHEN_ARCHIVED - records <= derived
    # A table whose rows hang on a derived table's is derived with it.
    for table in metadata.tables.values():
        parents = {key.column.table.name for key in table.foreign_keys}
        if parents & derived:
            assert table.name in derived


def test_a_rebuild_clears_referring_rows_before_those_they_refer_to() -> None:
    assert set(DERIVED_TABLES) == {table.name for table in tables_marked("derived")}
    for position, name in enumerate(DERIVED_TABLES):
        referred = {key.column.table.name for key in metadata.tables[name].foreign_keys}
        assert not referred & set(DERIVED_TABLES[:position])


def test_forgetting_an_event_reaches_every_row_that_points_at_it() -> None:
    deleted = [table for table, _sql in DELETIONS]
    assert deleted[0] == "lessons" and deleted[-1] == "captured_events"
    assert {name for name in metadata.tables if _points_at_events(name)} <= set(deleted)


def test_the_runs_and_the_pulled_tables() -> None:
    assert [table.name for table in tables_marked("runs")] == [
        "verifications",
        "attempts",
        "unverified_runs",
    ]
    assert [table.name for table in tables_marked("pulled")] == ["team_procedures", "team_lessons"]


def test_the_pulled_tables_keep_the_local_columns_they_share() -> None:
    for copy, source in (("team_procedures", "procedures"), ("team_lessons", "lessons")):
        for column in metadata.tables[copy].columns:
            original = metadata.tables[source].c.get(column.name)
            if original is None or column.name == "id":
                continue
            assert (type(column.type), column.nullable) == (type(original.type), original.nullable)
