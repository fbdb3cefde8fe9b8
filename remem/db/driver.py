"""Driver: the worker's many small statements run on the DBAPI cursor beneath an SQLAlchemy
connection, in the transaction that connection holds.

A window of a hundred events runs over a hundred statements, most of them reading or writing
one row. SQLAlchemy spends about 20 µs of Python on each before and after the driver's own
2 µs; over a burst that was a third of the worker's time and the larger part of its write
lock. Here a `text()` statement is compiled once per dialect (SQLAlchemy still renders the
parameter style and escapes), then each call hands the driver a string and its values, and
rows come back as named tuples: `row.name`, `row[0]` and unpacking work as on SQLAlchemy's rows.

A list parameter (`IN :ids`) becomes as many placeholders as the list holds on SQLite, and one
array (`= ANY(:ids)`) on PostgreSQL: one statement text whatever the list's length, a plan that
does not grow with it, and no list of fifty values that the planner prefers to read a whole
table for. Anything else (a table construct, an empty list, a list parameter in an executemany) goes
through SQLAlchemy as before, so callers need not know which statements take which road.

A list of parameter sets runs as one executemany, the driver's own: psycopg sends its sets
to the server without waiting for each.

On PostgreSQL every statement is a round trip to the server, and a window's statements came to
a hundred of them. Inside `pipelined()` the statements are sent without waiting for one
another: what they return is read when the caller first asks for it, and that read waits once
for every statement sent before it. Writes whose result nobody reads cost no wait at all, and
reads sent one after another before any is read share one. SQLite, in the process, runs each
statement at once as before.

Work that reads in several rounds, each depending on the last (the journals of a window's
groups), is written as generators that yield once they have sent a round's statements:
`side_by_side` runs many of them a round at a time, so a round of every group waits once, not
once per group. `Driver.waits` counts the waits.
"""

from __future__ import annotations

import functools
import operator
from collections import namedtuple
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, bindparam, text
from sqlalchemy.sql.elements import TextClause

# Compiled statements kept per dialect; statements are module constants, a few hundred at most.
_COMPILED_KEPT = 1_024
# (dialect, id of the statement) -> how the driver runs it.
_compiled: dict[tuple[str, int], _Compiled] = {}
# Work that reads in rounds: it yields once it has sent a round's statements (see side_by_side).
T = TypeVar("T")
Rounds = Generator[None, None, T]
# Column names -> a named tuple type's constructor.
_row_types: dict[tuple[str, ...], Callable[[Iterable[Any]], Any]] = {}


class Rows:
    """What a statement returned, with the few methods of SQLAlchemy's result the callers use."""

    __slots__ = ("_found", "_rowcount", "_sent")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._found = rows
        self._rowcount = rowcount
        self._sent: tuple[Any, Callable[[], None]] | None = None

    @classmethod
    def sent(cls, cursor: Any, sync: Callable[[], None]) -> Rows:
        """What a pipelined statement will return: read from its cursor when first asked for."""
        rows = cls([], -1)
        rows._sent = (cursor, sync)
        return rows

    @property
    def _rows(self) -> list[Any]:
        if self._sent is not None:
            self._land()
        return self._found

    @property
    def rowcount(self) -> int:
        if self._sent is not None:
            self._land()
        return self._rowcount

    def _land(self) -> None:
        assert self._sent is not None
        cursor, sync = self._sent
        self._sent = None
        if cursor.pgresult is None:
            sync()  # one wait for this statement and every one sent before it
        self._rowcount = cursor.rowcount
        description = cursor.description
        if description is not None:
            make = _row_type(tuple(column[0] for column in description))
            self._found = list(map(make, cursor.fetchall()))
        cursor.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)

    def all(self) -> list[Any]:
        return self._rows

    def first(self) -> Any:
        rows = self._rows
        return rows[0] if rows else None

    def one(self) -> Any:
        rows = self._rows
        if len(rows) != 1:
            raise LookupError(f"expected one row, the statement returned {len(rows)}")
        return rows[0]

    def scalar(self) -> Any:
        rows = self._rows
        return rows[0][0] if rows else None

    def scalar_one(self) -> Any:
        return self.one()[0]

    def scalars(self) -> list[Any]:
        return [row[0] for row in self._rows]


@dataclass(frozen=True)
class _Compiled:
    statement: TextClause  # kept alive, so the id it is cached by stays its own
    sql: str
    positions: tuple[str, ...] | None  # parameter names in order (positional drivers)
    expanding: frozenset[str]  # parameters that stand for a list: `IN :ids`
    arrays: frozenset[str]  # those bound as one array (`= ANY(:ids)`, PostgreSQL)
    values: Callable[[dict[str, Any]], Any]  # a parameter set as the driver takes it

    def bind(self, params: dict[str, Any]) -> tuple[str, Any] | None:
        """The driver's SQL and values; None for an empty list, whose SQL SQLAlchemy writes."""
        if not self.expanding:
            return self.sql, self.values(params)
        sql, lists = self.sql, {}
        for name in self.expanding:
            items = lists[name] = list(params[name])
            if not items:
                return None
            if name in self.arrays:
                continue
            if self.positions is None:
                marks = ", ".join(f"%({name}__{n})s" for n in range(len(items)))
            else:
                marks = ", ".join("?" * len(items))
            sql = sql.replace(f"__[POSTCOMPILE_{name}]", marks)
        if self.positions is not None:
            values: list[Any] = []
            for name in self.positions:
                values.extend(lists[name] if name in lists else (params[name],))
            return sql, tuple(values)
        named = {k: v for k, v in params.items() if k not in lists}
        for name, items in lists.items():
            if name in self.arrays:
                named[name] = items
            else:
                named.update((f"{name}__{n}", item) for n, item in enumerate(items))
        return sql, named


class Driver:
    """`execute(statement, params)` as on an SQLAlchemy connection, for `text()` statements
    at the driver's cost. A list of parameter sets runs as one executemany."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.dialect = connection.dialect
        if self.dialect.name == "postgresql" and not connection.in_transaction():
            # The driver's statements bypass SQLAlchemy, which would begin on its first own:
            # begun here, the engine's begin event applies to them (remem/db/engine.py).
            connection.begin()
        self._cursor: Any = None
        self._pipeline: Any = None
        # How often the pipeline waited on the server for what it was sent, and whether it
        # was sent anything since it last did.
        self.waits = 0
        self._unread = False

    @contextmanager
    def pipelined(self) -> Iterator[Driver]:
        """Statements sent without waiting for one another until the block ends (PostgreSQL;
        elsewhere each runs at once). An error surfaces at the first read after it or at the
        end of the block, and the transaction is lost either way."""
        if self.dialect.name != "postgresql" or self._pipeline is not None:
            yield self
            return
        dbapi_connection: Any = self.connection.connection.dbapi_connection
        with dbapi_connection.pipeline() as pipeline:
            self._pipeline = pipeline
            try:
                yield self
            finally:
                self._pipeline = None
                if self._unread:
                    self.waits += 1  # the pipeline's end waits for what is left

    def execute(
        self, statement: Any, params: dict[str, Any] | list[dict[str, Any]] | None = None
    ) -> Rows:
        compiled = self._compile(statement)
        if compiled is None:
            return self._through_sqlalchemy(statement, params)
        pipelined = self._pipeline is not None
        # In a pipeline each statement has a cursor of its own: a cursor holds the result of
        # its last statement only.
        cursor = self._new_cursor() if pipelined else self._cursor_now()
        if isinstance(params, list):
            if compiled.expanding:
                return self._through_sqlalchemy(statement, params)
            if not params:
                return Rows([], 0)
            cursor.executemany(compiled.sql, [compiled.values(p) for p in params])
        else:
            bound = compiled.bind(params or {})
            if bound is None:
                return self._through_sqlalchemy(statement, params)
            cursor.execute(*bound)
        if pipelined:  # read when first asked for
            self._unread = True
            return Rows.sent(cursor, self._wait)
        description = cursor.description
        if description is None:
            return Rows([], cursor.rowcount)
        make = _row_type(tuple(column[0] for column in description))
        return Rows(list(map(make, cursor.fetchall())), cursor.rowcount)

    def _wait(self) -> None:
        self.waits += 1
        self._unread = False
        self._pipeline.sync()

    def _through_sqlalchemy(self, statement: Any, params: Any) -> Rows:
        if self._pipeline is not None:
            # SQLAlchemy reads a statement's columns as soon as it is sent, before a pipeline
            # has them: such a statement has no place in one.
            raise TypeError(f"the driver cannot pipeline this statement: {statement}")
        result = self.connection.execute(statement, params)
        return Rows(list(result) if result.returns_rows else [], result.rowcount)

    def _cursor_now(self) -> Any:
        if self._cursor is None:
            self._cursor = self._new_cursor()
        return self._cursor

    def _new_cursor(self) -> Any:
        return self.connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]

    def _compile(self, statement: Any) -> _Compiled | None:
        if type(statement) is not TextClause:
            return None
        key = (self.dialect.name, id(statement))
        found = _compiled.get(key)
        if found is not None and found.statement is statement:
            return found
        compiled = statement.compile(dialect=self.dialect)
        positions = tuple(compiled.positiontup) if compiled.positiontup is not None else None
        expanding = frozenset(
            name for name, parameter in statement._bindparams.items() if parameter.expanding
        )
        sql, arrays = compiled.string, set()
        if positions is None and self.dialect.name == "postgresql":
            for name in expanding:
                marks = f"__[POSTCOMPILE_{name}]"
                as_in = f" IN ({marks})"
                if sql.count(marks) == sql.count(as_in) and sql.count(f" NOT{as_in}") == 0:
                    sql = sql.replace(as_in, f" = ANY(%({name})s)")
                    arrays.add(name)
        if len(_compiled) >= _COMPILED_KEPT:
            _compiled.clear()
        found = _compiled[key] = _Compiled(
            statement, sql, positions, expanding, frozenset(arrays), _values(positions)
        )
        return found


def _values(positions: tuple[str, ...] | None) -> Callable[[dict[str, Any]], Any]:
    """What makes a parameter set the driver's: the set itself for named parameters, else
    the tuple of its values in order (itemgetter's tuple from two names on)."""
    if positions is None:
        return _named
    if len(positions) > 1:
        return operator.itemgetter(*positions)
    if positions:
        (name,) = positions
        return lambda params: (params[name],)
    return lambda _params: ()


def _named(params: dict[str, Any]) -> dict[str, Any]:
    return params


_named_tuple: Any = namedtuple  # its names are known only at run time


def _row_type(names: tuple[str, ...]) -> Callable[[Iterable[Any]], Any]:
    found = _row_types.get(names)
    if found is None:
        # Invalid or repeated names (`count(*)`, two `id`s) become _0, _1…, as positions.
        # The row from the driver's tuple without _make's Python frame: its length is right.
        row_type = _named_tuple("Row", names, rename=True)
        found = _row_types[names] = functools.partial(tuple.__new__, row_type)
    return found


def side_by_side(works: Sequence[Rounds[T]]) -> Rounds[list[T]]:
    """Work that reads in rounds, run a round at a time: each runs until it yields (its
    round's statements sent) before any is resumed to read them, so on a server the round
    waits once for all of them. Their results, in order."""
    results: list[Any] = [None] * len(works)
    pending = list(range(len(works)))
    while pending:
        going = []
        for index in pending:
            try:
                next(works[index])
            except StopIteration as done:
                results[index] = done.value
            else:
                going.append(index)
        pending = going
        if pending:
            yield
    return results


def run(work: Rounds[T]) -> T:
    """Work that reads in rounds, run alone to its end."""
    while True:
        try:
            next(work)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def with_ids(sql: str) -> TextClause:
    """The statement with :ids as a list (an expanding parameter)."""
    return text(sql).bindparams(bindparam("ids", expanding=True))
