"""The counts `remem status` reports of the memory: events, drops, unresolved Codex outcomes
and procedures by status (the queue's are remem.admin.status's, until they move to remem/queue/);
and the stale procedures, counted and said one way by `status`, `procedures list` and `import`.

Its own module, beside remem.agent.read: `remem status` answers in the time of an interpreter
start, and needs none of the read model's other records.
"""

from __future__ import annotations

from remem.db.vocabulary import PROCEDURE_STATUSES, STALE
from remem.record.frozen import Record, in_list

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from remem.db.snapshot import Execute

# Codex commands whose rollout never showed their end within a day: they never count.
UNRESOLVED_CODEX = (
    "SELECT count(*) FROM captured_events WHERE host = 'codex' AND kind = 'command' "
    "AND outcome = 'unknown' AND captured_at < :before"
)
_EVENTS = "SELECT count(*) FROM captured_events"
_PROCEDURE_COUNTS = "SELECT status, count(*) FROM procedures GROUP BY status"
_STALE = (
    "SELECT count(*), max(p.last_verified_at) FROM procedures p "
    "JOIN projects pr ON pr.id = p.project_id WHERE p.status = :stale{where}"
)
_DROP_REASONS = "SELECT reason, count(*) FROM dropped_payloads GROUP BY reason"


class Stale(Record):
    """Procedures verified earlier but not within `promotion.max_age`: how many, and the
    latest day any of them was verified."""

    count: int
    last_verified_at: float | None

    def said(self, max_age_s: float) -> str:
        """`last verified 2026-02-12, older than promotion.max_age = 14d`: what each reader
        says after its own count."""
        from remem.config import duration_text
        from remem.json_contract import date

        return (
            f"last verified {date(self.last_verified_at)}, older than "
            f"promotion.max_age = {duration_text(max_age_s)}"
        )


class Counts(Record):
    events: int
    drops: dict[str, int]  # by reason
    unresolved_codex_events: int
    procedures: dict[str, int]  # by status, every status named
    stale: Stale


def read_stale(
    execute: Execute,
    root: str | None = None,
    branch: str | None = None,
    ids: Sequence[int] | None = None,
) -> Stale:
    """The stale procedures of every project, or of one (and a branch: its own and those that
    hold on every branch, as `remem procedures list` reads them), or among some ids."""
    params: dict[str, Any] = {"stale": STALE}
    where = ""
    if root is not None:
        where, params["root"] = " AND pr.root = :root", root
    if branch is not None:
        where += " AND (p.branch = :branch OR p.scope = 'project')"
        params["branch"] = branch
    if ids is not None:
        if not ids:
            return Stale(0, None)
        where += f" AND p.id IN ({in_list('id', ids, params)})"
    ((count, last_verified_at),) = execute(_STALE.format(where=where), params)
    return Stale(int(count), last_verified_at)


def read_counts(execute: Execute, now: float) -> Counts:
    drops = {str(reason): int(count) for reason, count in execute(_DROP_REASONS, {})}
    procedures = {str(status): int(count) for status, count in execute(_PROCEDURE_COUNTS, {})}
    stale = read_stale(execute)
    procedures[STALE] = stale.count
    return Counts(
        int(execute(_EVENTS, {})[0][0]),
        drops,
        int(execute(UNRESOLVED_CODEX, {"before": now - 86_400})[0][0]),
        {status: procedures.get(status, 0) for status in PROCEDURE_STATUSES},
        stale,
    )
