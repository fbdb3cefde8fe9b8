"""Archiving a procedure: the user's own verdict, which new runs never revive. What procedures
read lives in remem.agent.read."""

from __future__ import annotations

import time

from sqlalchemy import Engine, text

from remem.errors import NotFound
from remem.procedures.policy import ARCHIVED


def archive(engine: Engine, procedure_id: int, now: float | None = None) -> None:
    now = time.time() if now is None else now
    with engine.begin() as connection:
        updated = connection.execute(
            text("UPDATE procedures SET status = :archived, updated_at = :now WHERE id = :id"),
            {"archived": ARCHIVED, "now": now, "id": procedure_id},
        ).rowcount
    if not updated:
        raise NotFound(f"No procedure {procedure_id}: see `remem procedures list --all`.")
