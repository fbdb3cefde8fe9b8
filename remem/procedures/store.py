"""Archiving a procedure: the user's own verdict, which new runs never revive. What procedures
read lives in remem.agent.read."""

from __future__ import annotations

import time

from sqlalchemy import Engine, text

from remem.agent.read import Procedure, read_procedure
from remem.db.snapshot import engine_reader
from remem.errors import NotFound
from remem.procedures.policy import ARCHIVED


def archive(engine: Engine, procedure_id: int, now: float | None = None) -> Procedure:
    now = time.time() if now is None else now
    with engine.begin() as connection:
        updated = connection.execute(
            text("UPDATE procedures SET status = :archived, updated_at = :now WHERE id = :id"),
            {"archived": ARCHIVED, "now": now, "id": procedure_id},
        ).rowcount
    if not updated:
        raise NotFound(f"No procedure {procedure_id}: see `remem procedures list --all`.")
    with engine_reader(engine) as execute:
        return read_procedure(execute, procedure_id)
