"""The driver road gives what SQLAlchemy gives for the same statement, on both backends, in
the transaction of the connection beneath it."""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path

import psycopg
import pytest
import sqlalchemy
from packaging.requirements import Requirement
from sqlalchemy import bindparam, text

from remem.db.driver import Driver
from tests.integration.conftest import World

CREATE = text("CREATE TABLE driver_probe (id INTEGER PRIMARY KEY, name TEXT, at DOUBLE PRECISION)")
INSERT = text("INSERT INTO driver_probe (id, name, at) VALUES (:id, :name, :at)")
# One name used twice, a literal percent sign and a colon inside a string.
SELECT = text(
    "SELECT id, name, at, count(*) OVER () AS total, '50% : done' AS note FROM driver_probe "
    "WHERE (at >= :since OR id = :id) AND name <> :since_name ORDER BY id"
)
EXPANDING = text("SELECT id FROM driver_probe WHERE id IN :ids ORDER BY id").bindparams(
    bindparam("ids", expanding=True)
)
ROWS = [{"id": n, "name": f"row {n}", "at": n * 1.5} for n in range(1, 6)]


def test_rows_match_sqlalchemy_by_name_position_and_unpacking(world: World) -> None:
    params = {"since": 4.0, "id": 1, "since_name": "row 5"}
    with world.engine.begin() as connection:
        connection.execute(CREATE)
        driver = Driver(connection)
        inserted = driver.execute(INSERT, ROWS)
        expected = connection.execute(SELECT, params).all()
        found = driver.execute(SELECT, params).all()
    assert inserted.rowcount == len(ROWS)
    assert [tuple(row) for row in found] == [tuple(row) for row in expected]
    assert [r.id for r in found] == [1, 3, 4]
    assert [(r.name, r.at, r.total, r.note) for r in found] == [
        (r.name, r.at, r.total, r.note) for r in expected
    ]
    first_id, *_rest = found[0]
    assert first_id == 1


def test_result_methods_answer_as_sqlalchemys(world: World) -> None:
    with world.engine.begin() as connection:
        connection.execute(CREATE)
        driver = Driver(connection)
        driver.execute(INSERT, ROWS)
        one = text("SELECT name FROM driver_probe WHERE id = :id")
        assert driver.execute(one, {"id": 2}).scalar_one() == "row 2"
        assert driver.execute(one, {"id": 9}).first() is None
        assert driver.execute(one, {"id": 9}).scalar() is None
        with pytest.raises(LookupError, match="returned 0"):
            driver.execute(one, {"id": 9}).scalar_one()
        names = text("SELECT name FROM driver_probe WHERE id <= :id ORDER BY id")
        assert driver.execute(names, {"id": 2}).scalars() == ["row 1", "row 2"]
        updated = driver.execute(text("UPDATE driver_probe SET at = 0 WHERE id > :id"), {"id": 3})
        assert updated.rowcount == 2
        assert driver.execute(INSERT, []).rowcount == 0
        assert [r.id for r in driver.execute(EXPANDING, {"ids": [2, 4, 7]})] == [2, 4]
        # An empty list takes SQLAlchemy's road, which writes an IN that matches nothing.
        assert driver.execute(EXPANDING, {"ids": []}).all() == []


def test_a_list_used_twice_between_other_parameters_binds_each_in_place(world: World) -> None:
    """Each `IN :ids` becomes as many placeholders as the list holds, with the parameters
    around it left where they were (positional on SQLite, by name on PostgreSQL)."""
    statement = text(
        "SELECT id FROM driver_probe WHERE at > :low AND id IN :ids AND name <> :name "
        "UNION SELECT id FROM driver_probe WHERE id IN :ids AND at < :high ORDER BY id"
    ).bindparams(bindparam("ids", expanding=True))
    params = {"low": 1.0, "ids": [1, 2, 3, 5], "name": "row 3", "high": 2.0}
    with world.engine.begin() as connection:
        connection.execute(CREATE)
        driver = Driver(connection)
        driver.execute(INSERT, ROWS)
        expected = [tuple(row) for row in connection.execute(statement, params)]
        found = [tuple(row) for row in driver.execute(statement, params)]
    assert found == expected == [(1,), (2,), (5,)]


def test_statements_join_the_connections_transaction(world: World) -> None:
    with world.engine.begin() as connection:
        connection.execute(CREATE)
    with pytest.raises(RuntimeError, match="undo"), world.engine.begin() as connection:
        Driver(connection).execute(INSERT, ROWS[0])
        raise RuntimeError("undo")
    assert world.scalar("SELECT count(*) FROM driver_probe") == 0
    with world.engine.begin() as connection:
        Driver(connection).execute(INSERT, ROWS[0])
    assert world.scalar("SELECT count(*) FROM driver_probe") == 1


def test_duplicate_and_unnamed_columns_stay_reachable_by_position(world: World) -> None:
    with world.engine.begin() as connection:
        connection.execute(CREATE)
        driver = Driver(connection)
        driver.execute(INSERT, ROWS[:2])
        row = driver.execute(
            text(
                "SELECT a.id, b.id, count(*) FROM driver_probe a JOIN driver_probe b "
                "ON b.id = a.id GROUP BY a.id, b.id ORDER BY a.id"
            )
        ).first()
    assert tuple(row) == (1, 1, 1)
    assert row.id == 1


def test_a_list_of_rows_inserts_every_row_once_and_counts_them(world: World) -> None:
    """An INSERT takes a list of any length, pipelined or not, and skips what conflicts as its
    one-row form would; its values come back as they went (a float to its last digit, text in
    any script, a null)."""
    insert = text(
        "INSERT INTO driver_probe (id, name, at) VALUES (:id, :label, :at) "
        "ON CONFLICT (id) DO NOTHING"
    )
    rows = [{"id": n, "label": f"row {n}", "at": n / 3} for n in range(1, 300)]
    rows[5]["label"], rows[6]["label"], rows[7]["at"] = 'é "ü" \\ 𝄞 漢', None, 1e-300
    with world.engine.begin() as connection:
        connection.execute(CREATE)
        driver = Driver(connection)
        assert driver.execute(insert, rows[:37]).rowcount == 37
        assert driver.execute(insert, rows[:1]).rowcount == 0
        with driver.pipelined() as pipelined:
            inserted = pipelined.execute(insert, rows[30:])
            total = pipelined.execute(text("SELECT count(*), sum(at) FROM driver_probe"))
            assert inserted.rowcount == len(rows) - 37
            assert total.one()[0] == len(rows)
        stored = driver.execute(text("SELECT id, name, at FROM driver_probe ORDER BY id")).all()
    assert [tuple(row) for row in stored] == [(r["id"], r["label"], r["at"]) for r in rows]


def test_a_list_of_rows_updates_each_row_by_its_key(world: World) -> None:
    """An UPDATE by key sets each row its own values, a null included, pipelined or not, and
    leaves the others as they were."""
    update = text("UPDATE driver_probe SET name = :name, at = :at WHERE id = :id")
    with world.engine.begin() as connection:
        connection.execute(CREATE)
        driver = Driver(connection)
        driver.execute(INSERT, ROWS)
        changes = [{"id": 4, "name": "four", "at": 0.25}, {"id": 2, "name": None, "at": 2.5}]
        assert driver.execute(update, changes).rowcount == 2
        with driver.pipelined() as pipelined:
            updated = pipelined.execute(update, [{"id": 5, "name": "five", "at": 5.5}, *changes])
            assert updated.rowcount == 3
        stored = driver.execute(text("SELECT id, name, at FROM driver_probe ORDER BY id")).all()
    assert [tuple(row) for row in stored] == [
        (1, ROWS[0]["name"], ROWS[0]["at"]),
        (2, None, 2.5),
        (3, ROWS[2]["name"], ROWS[2]["at"]),
        (4, "four", 0.25),
        (5, "five", 5.5),
    ]


def test_a_list_of_rows_with_a_value_json_cannot_hold_inserts_them(world: World) -> None:
    insert = text("INSERT INTO driver_probe (id, name, at) VALUES (:id, :name, :at)")
    rows = [{"id": 1, "name": "far", "at": float("inf")}, {"id": 2, "name": "near", "at": 0.5}]
    with world.engine.begin() as connection:
        connection.execute(CREATE)
        driver = Driver(connection)
        assert driver.execute(insert, rows).rowcount == 2
        stored = driver.execute(text("SELECT id, name, at FROM driver_probe ORDER BY id")).all()
    assert [tuple(row) for row in stored] == [(1, "far", float("inf")), (2, "near", 0.5)]


# What driver.py takes from SQLAlchemy beyond its public API. When an upgrade changes one of
# them, these tests say which, instead of statements failing deep inside the worker.
INTERNALS = (
    "remem/db/driver.py relies on SQLAlchemy internals that changed in SQLAlchemy {version}: "
    "{what}. Keep the SQLAlchemy pin of pyproject.toml, or adapt driver.py to the new internals."
)


def _require(condition: bool, what: str) -> None:
    if not condition:
        pytest.fail(INTERNALS.format(version=sqlalchemy.__version__, what=what), pytrace=False)


def test_pipelined_statements_answer_as_statements_run_one_by_one(world: World) -> None:
    rename = text("UPDATE driver_probe SET name = :name WHERE id <= :id")
    count = text("SELECT count(*) FROM driver_probe")
    with world.engine.begin() as connection:
        connection.execute(CREATE)
        driver = Driver(connection)
        with driver.pipelined() as pipelined:
            inserted = pipelined.execute(INSERT, ROWS)
            renamed = pipelined.execute(rename, {"name": "renamed", "id": 2})
            # Sent before any answer is read; each reads what the statements before it left.
            listed = pipelined.execute(EXPANDING, {"ids": [2, 3, 9]})
            names = pipelined.execute(text("SELECT name FROM driver_probe ORDER BY id"))
            nothing = pipelined.execute(rename, {"name": "none", "id": 0})
            assert [row.id for row in listed] == [2, 3]
            assert (inserted.rowcount, renamed.rowcount, nothing.rowcount) == (5, 2, 0)
            assert names.scalars() == ["renamed", "renamed", "row 3", "row 4", "row 5"]
        assert driver.execute(count).scalar_one() == 5  # after the block, one by one again


def test_a_failing_pipelined_statement_fails_the_block_and_the_transaction(world: World) -> None:
    with world.engine.begin() as connection:
        connection.execute(CREATE)
    # The driver's own error, as the driver runs the statements.
    with (
        pytest.raises((sqlite3.IntegrityError, psycopg.IntegrityError)),
        world.engine.begin() as connection,
        Driver(connection).pipelined() as pipelined,
    ):
        pipelined.execute(INSERT, ROWS[:1])
        pipelined.execute(INSERT, ROWS[:1])  # the same id again
        pipelined.execute(text("SELECT 1")).all()
    assert world.scalar("SELECT count(*) FROM driver_probe") == 0


def test_the_installed_sqlalchemy_is_the_range_pyproject_pins() -> None:
    """The pin names the minor version whose internals the driver was written against."""
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    pins = [
        Requirement(spec)
        for spec in pyproject["project"]["dependencies"]
        if Requirement(spec).name.lower() == "sqlalchemy"
    ]
    assert len(pins) == 1
    specifier = pins[0].specifier
    assert any(spec.operator == "<" for spec in specifier), "SQLAlchemy needs an upper bound"
    _require(
        specifier.contains(sqlalchemy.__version__),
        f"it is outside the pinned range {specifier}",
    )


def test_the_sqlalchemy_internals_the_driver_uses_are_there(world: World) -> None:
    """On each backend's real dialect: a text() statement's bind parameters, the compiled
    string and parameter order, the marker of a list parameter, the DBAPI's parameter style."""
    dialect = world.engine.dialect
    _require(
        isinstance(getattr(EXPANDING, "_bindparams", None), dict),
        "TextClause._bindparams is no longer a dict of the statement's parameters",
    )
    parameter = EXPANDING._bindparams.get("ids")
    _require(
        parameter is not None and getattr(parameter, "expanding", None) is True,
        "a bindparam(expanding=True) no longer says so in TextClause._bindparams",
    )
    plain = SELECT.compile(dialect=dialect)
    _require(hasattr(plain, "positiontup"), "SQLCompiler.positiontup is gone")
    _require(isinstance(plain.string, str), "SQLCompiler.string is no longer the SQL text")
    # The driver writes placeholders in the DBAPI's own style: `?` in order, or `%(name)s`.
    _require(
        dialect.paramstyle in ("qmark", "pyformat"),
        f"the {dialect.name} dialect's paramstyle is now {dialect.paramstyle!r}",
    )
    if dialect.paramstyle == "qmark":
        _require(
            list(plain.positiontup or ()) == ["since", "id", "since_name"]
            and plain.string.count("?") == 3,
            "positiontup no longer lists a qmark statement's parameters in order",
        )
    else:
        _require(
            plain.positiontup is None and "%(since)s" in plain.string,
            "a pyformat statement no longer compiles to %(name)s with no positiontup",
        )
    listed = EXPANDING.compile(dialect=dialect)
    _require(
        "__[POSTCOMPILE_ids]" in listed.string,
        "a list parameter no longer compiles to the __[POSTCOMPILE_name] marker",
    )
    with world.engine.connect() as connection:
        dbapi_connection = connection.connection.dbapi_connection
        _require(
            dbapi_connection is not None and callable(getattr(dbapi_connection, "cursor", None)),
            "Connection.connection.dbapi_connection no longer gives the DBAPI connection",
        )
