"""Loading the spool into the database through SQLAlchemy (SQLite or PostgreSQL).

SQLAlchemy is imported inside the function: this package is the hook's, and stays importable
with the standard library alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remem.capture import spool
from remem.capture.store import store_drop, store_event
from remem.record.event import CapturedEvent

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy import Engine


def ingest_spool(
    engine: Engine, spool_dir: str, after_commit: Callable[[], None] | None = None
) -> spool.IngestReport:
    """`after_commit` raises when what was just committed cannot be trusted to stay (the
    database file is no longer at its path): the spool file then stays for the next ingest."""
    from sqlalchemy.exc import DataError, IntegrityError

    from remem.db.engine import executor

    def store(records: list[dict[str, Any]]) -> tuple[int, int, int]:
        stored = already = drops = 0
        try:
            with engine.begin() as connection:
                execute = executor(connection)
                for record in records:
                    if record["type"] == "drop":
                        store_drop(execute, record["drop"])
                        drops += 1
                    elif store_event(execute, CapturedEvent(**record["event"])) is None:
                        already += 1
                    else:
                        stored += 1
        # What the records hold was refused; any other error (locked, disk full, gone) leaves
        # the spool file for the next ingest.
        except (IntegrityError, DataError) as exc:
            raise spool.Rejected(str(exc.orig)) from exc
        if after_commit is not None:
            after_commit()
        return stored, already, drops

    return spool.ingest(spool_dir, store)
