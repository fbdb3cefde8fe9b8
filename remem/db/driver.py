"""Driver: the worker's many small statements run on the DBAPI cursor beneath an SQLAlchemy
connection, in the transaction that connection holds.

A window of a hundred events runs over a hundred statements, most of them reading or writing
one row. SQLAlchemy spends about 20 µs of Python on each before and after the driver's own
2 µs; over a burst that was a third of the worker's time and the larger part of its write
lock. Here a `text()` statement is compiled once per dialect (SQLAlchemy still renders the
parameter style and escapes), then each call hands the driver a string and its values, and
rows come back as named tuples: `row.name`, `row[0]` and unpacking work as on SQLAlchemy's rows.

Anything else (a table construct, a parameter expanded into an IN list) goes through
SQLAlchemy as before, so callers need not know which statements take which road.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.sql.elements import TextClause

# Compiled statements kept per dialect; statements are module constants, a few hundred at most.
_COMPILED_KEPT = 1_024
# (dialect, id of the statement) -> the statement (kept alive, so the id stays its own), the
# driver's SQL, and the parameter names in order for a positional driver (None: by name).
_compiled: dict[tuple[str, int], tuple[TextClause, str, tuple[str, ...] | None]] = {}
# Column names -> a named tuple type's constructor.
_row_types: dict[tuple[str, ...], Callable[[Iterable[Any]], Any]] = {}


class Rows:
    """What a statement returned, with the few methods of SQLAlchemy's result the callers use."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)

    def all(self) -> list[Any]:
        return self._rows

    def first(self) -> Any:
        return self._rows[0] if self._rows else None

    def one(self) -> Any:
        if len(self._rows) != 1:
            raise LookupError(f"expected one row, the statement returned {len(self._rows)}")
        return self._rows[0]

    def scalar(self) -> Any:
        return self._rows[0][0] if self._rows else None

    def scalar_one(self) -> Any:
        return self.one()[0]

    def scalars(self) -> list[Any]:
        return [row[0] for row in self._rows]


class Driver:
    """`execute(statement, params)` as on an SQLAlchemy connection, for `text()` statements
    at the driver's cost. A list of parameter sets runs as one executemany."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.dialect = connection.dialect
        self._cursor: Any = None

    def execute(
        self, statement: Any, params: dict[str, Any] | Sequence[dict[str, Any]] | None = None
    ) -> Rows:
        compiled = self._compile(statement)
        if compiled is None:
            result = self.connection.execute(statement, params)
            return Rows(list(result) if result.returns_rows else [], result.rowcount)
        sql, positions = compiled
        cursor = self._cursor_now()
        if params is None or isinstance(params, dict):
            cursor.execute(sql, _values(params or {}, positions))
        else:
            if not params:
                return Rows([], 0)
            cursor.executemany(sql, [_values(p, positions) for p in params])
            return Rows([], cursor.rowcount)
        description = cursor.description
        if description is None:
            return Rows([], cursor.rowcount)
        make = _row_type(tuple(column[0] for column in description))
        return Rows([make(row) for row in cursor.fetchall()], cursor.rowcount)

    def _cursor_now(self) -> Any:
        if self._cursor is None:
            self._cursor = self.connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        return self._cursor

    def _compile(self, statement: Any) -> tuple[str, tuple[str, ...] | None] | None:
        if type(statement) is not TextClause:
            return None
        key = (self.dialect.name, id(statement))
        found = _compiled.get(key)
        if found is not None and found[0] is statement:
            return found[1], found[2]
        if any(parameter.expanding for parameter in statement._bindparams.values()):
            return None
        compiled = statement.compile(dialect=self.dialect)
        positions = tuple(compiled.positiontup) if compiled.positiontup is not None else None
        if len(_compiled) >= _COMPILED_KEPT:
            _compiled.clear()
        _compiled[key] = (statement, compiled.string, positions)
        return compiled.string, positions


def _values(params: dict[str, Any], positions: tuple[str, ...] | None) -> Any:
    return params if positions is None else tuple(params[name] for name in positions)


_named_tuple: Any = namedtuple  # its names are known only at run time


def _row_type(names: tuple[str, ...]) -> Callable[[Iterable[Any]], Any]:
    found = _row_types.get(names)
    if found is None:
        # Invalid or repeated names (`count(*)`, two `id`s) become _0, _1…, as positions.
        found = _row_types[names] = _named_tuple("Row", names, rename=True)._make
    return found
