"""The counts `remem status` reports of the memory: events, drops, unresolved Codex outcomes
and procedures by status (the queue's are remem.admin.status's, until they move to remem/queue/).

Its own module, beside remem.agent.read: `remem status` answers in the time of an interpreter
start, and needs none of the read model's other records.
"""

from __future__ import annotations

from remem.db.vocabulary import PROCEDURE_STATUSES
from remem.record.frozen import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from remem.db.snapshot import Execute

# Codex commands whose rollout never showed their end within a day: they never count.
UNRESOLVED_CODEX = (
    "SELECT count(*) FROM captured_events WHERE host = 'codex' AND kind = 'command' "
    "AND outcome = 'unknown' AND captured_at < :before"
)
_EVENTS = "SELECT count(*) FROM captured_events"
_PROCEDURE_COUNTS = "SELECT status, count(*) FROM procedures GROUP BY status"
_DROP_REASONS = "SELECT reason, count(*) FROM dropped_payloads GROUP BY reason"


class Counts(Record):
    events: int
    drops: dict[str, int]  # by reason
    unresolved_codex_events: int
    procedures: dict[str, int]  # by status, every status named


def read_counts(execute: Execute, now: float) -> Counts:
    drops = {str(reason): int(count) for reason, count in execute(_DROP_REASONS, {})}
    procedures = {str(status): int(count) for status, count in execute(_PROCEDURE_COUNTS, {})}
    return Counts(
        int(execute(_EVENTS, {})[0][0]),
        drops,
        int(execute(UNRESOLVED_CODEX, {"before": now - 86_400})[0][0]),
        {status: procedures.get(status, 0) for status in PROCEDURE_STATUSES},
    )
