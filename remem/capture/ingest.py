"""Loading the spool into the database through SQLAlchemy (SQLite or PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Engine, text

from remem.capture import spool
from remem.capture.event import CapturedEvent
from remem.capture.store import store_drop, store_event


def executor(connection: Connection) -> Any:
    """`execute(sql, params) -> rows` over an SQLAlchemy connection, for the capture store."""

    def execute(sql: str, params: dict[str, Any]) -> Sequence[Sequence[Any]]:
        result = connection.execute(text(sql), params)
        return result.all() if result.returns_rows else []

    return execute


def ingest_spool(engine: Engine, spool_dir: str) -> spool.IngestReport:
    def store(records: list[dict[str, Any]]) -> tuple[int, int, int]:
        stored = already = drops = 0
        with engine.begin() as connection:
            execute = executor(connection)
            for record in records:
                if record["type"] == "drop":
                    store_drop(execute, record["drop"])
                    drops += 1
                    continue
                body = dict(record["event"])
                body["files"] = tuple(body["files"]) if body["files"] else None
                if store_event(execute, CapturedEvent(**body)) is None:
                    already += 1
                else:
                    stored += 1
        return stored, already, drops

    return spool.ingest(spool_dir, store)
