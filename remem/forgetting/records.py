"""The records of forgotten words (remem/record/forgotten.py) as a person sees them: which
machine and which forget made each, whether it came from the team, never the word; and the
removal of one that should not mask anything any more (`remem forget --list`, `--unrecord`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Engine, text

from remem.db.engine import READ_ONLY

LIST_RECORDS = text(
    "SELECT id, machine, forget_key, forgotten_at, pulled_at FROM forgotten_texts ORDER BY id"
)
READ_RECORD = text("SELECT digest, pulled_at FROM forgotten_texts WHERE id = :id")
DELETE_RECORD = text("DELETE FROM forgotten_texts WHERE id = :id")
DELETE_DIGEST = text("DELETE FROM forgotten_texts WHERE digest = :digest")


@dataclass(frozen=True)
class Record:
    id: int
    machine: str | None  # None: recorded before records named their machine
    forget: str | None
    forgotten_at: float
    from_team: bool  # pulled from the team database: the next pull deletes it when it goes there

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def list_records(engine: Engine) -> list[Record]:
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        return [
            Record(row.id, row.machine, row.forget_key, row.forgotten_at, row.pulled_at is not None)
            for row in connection.execute(LIST_RECORDS)
        ]


def unrecord(engine: Engine, record_id: int, team: Engine | None = None) -> bool:
    """Delete the record: its word is masked no more. A record pulled from the team goes from
    the team database first (else the next pull brings it back), when `team` is given; returns
    whether the record came from the team. LookupError when there is no such record."""
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        row = connection.execute(READ_RECORD, {"id": record_id}).first()
    if row is None:
        raise LookupError(record_id)
    from_team = row.pulled_at is not None
    if from_team and team is not None:
        with team.begin() as connection:
            connection.execute(DELETE_DIGEST, {"digest": row.digest})
    with engine.begin() as connection:
        connection.execute(DELETE_RECORD, {"id": record_id})
    return from_team
