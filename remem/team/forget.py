"""`remem forget` on the team database: what of a forgetting done here is to be forgotten
there too. remem/admin/forget.py connects to the team database and runs remem/forgetting/ there."""

from __future__ import annotations

from sqlalchemy import Engine, bindparam, text

from remem.db.engine import READ_ONLY
from remem.forgetting.selection import CHUNK, Plan, Selection

# This machine's shipped copy of an event is its local key under the machine's name (team.ship).
_TEAM_EVENTS = text("SELECT id FROM captured_events WHERE idempotency_key IN :keys").bindparams(
    bindparam("keys", expanding=True)
)
_TEAM_PROJECT = text("SELECT id FROM projects WHERE root = :key")


def team_selection(
    team: Engine, machine: str, forgotten: Plan, selection: Selection, project_key: str | None
) -> Selection | None:
    """The same forgetting on the team database: the copies this machine shipped of the events
    forgotten here, and what the pattern finds there (any machine's copies), in the project
    named by its key. None when nothing is to be looked for there."""
    keys = sorted(f"{machine}/{key}" for key in forgotten.lines.keys)
    event_ids: set[int] = set()
    pattern, project = selection.pattern, None
    with team.connect().execution_options(**{READ_ONLY: True}) as connection:
        for start in range(0, len(keys), CHUNK):
            found = connection.execute(_TEAM_EVENTS, {"keys": keys[start : start + CHUNK]})
            event_ids.update(found.scalars())
        if pattern is not None and selection.project is not None:
            project = project_key
            known = project and connection.execute(_TEAM_PROJECT, {"key": project}).scalar()
            if not known:  # a project without a key, or never shipped: none of it is there
                pattern, project = None, None
    if not event_ids and pattern is None:
        return None
    return Selection(event_ids=tuple(sorted(event_ids)), pattern=pattern, project=project)
