"""Forgetting everywhere: the use-case behind `remem forget`.

Here, then on the team database: the copies this machine shipped there and whatever the pattern
finds there go too, and the team's memory is pulled again so that this machine's copies follow
at once. Whatever fails on the team, the local forget stands (the report says so, and running
it again finishes the job). The forgetting of one database is remem/forgetting/'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from sqlalchemy import Engine

from remem.config import Settings
from remem.db.engine import Compacted, compact, vacuum_full
from remem.forgetting.erase import Forgotten, Outside, forget, new_forget_key
from remem.forgetting.plan import plan
from remem.forgetting.selection import Plan, Selection
from remem.queue.heartbeats import running_pids
from remem.queue.statements import TASKS_TABLE
from remem.team.forget import team_selection
from remem.team.keys import project_key
from remem.team.link import error_line, open_team
from remem.team.pull import pull

# Re-deriving what a forget cleared, as the worker does: (engine, settings) -> what it did.
Rederive = Callable[[Engine, Settings], dict[str, int]]
Confirm = Callable[[Plan], None]


@dataclass(frozen=True)
class TeamForget:
    """What happened on the team database: forgotten is None when only planned there, False
    when it could not be done (error says why)."""

    forgotten: bool | None
    error: str | None = None
    plan: dict[str, Any] | None = None  # the team's plan, or what was forgotten there
    pulled: dict[str, int] | None = None
    vacuumed: list[str] | None = None  # tables `VACUUM FULL` rewrote (--team-vacuum)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ForgetReport:
    """applied is False when nothing was changed: a dry run, or nothing here to forget and no
    team to ask. forgotten is None when applied found nothing here (the team may have)."""

    plan: Plan
    applied: bool
    forgotten: Forgotten | None = None
    rederived: dict[str, int] | None = None
    compacted: Compacted | None = None
    daemon_pids: tuple[int, ...] = ()  # running workers that still hold the old log open
    team: TeamForget | None = None

    def complete(self) -> bool:
        """False when the team's copies are still to be forgotten."""
        return not self.applied or self.team is None or bool(self.team.forgotten)

    def as_json(self) -> dict[str, Any]:
        team = self.team.as_json() if self.team else None
        if not self.applied:
            return {**self.plan.as_json(), "dry_run": True, "team": team}
        if self.forgotten is None:
            return {**self.plan.as_json(), "dry_run": False, "nothing": True, "team": team}
        return {
            **self.forgotten.as_json(),
            "dry_run": False,
            "rederived": self.rederived,
            "compacted": self.compacted.as_json() if self.compacted else None,
            "daemon_pids": list(self.daemon_pids),
            "team": team,
        }


def forget_everywhere(
    engine: Engine,
    settings: Settings,
    selection: Selection,
    dry_run: bool = False,
    confirm: Confirm | None = None,
    rederive: Rederive | None = None,
    clock: Callable[[], float] = time.time,
    outside: Outside | None = None,
    team_vacuum: bool = False,
) -> ForgetReport:
    """Forget the selection here and on the team database (when there is one). `confirm` sees
    the plan before anything changes and raises to stop; `rederive` re-derives what the local
    forget cleared (the worker's burst), and the database is then compacted. `outside` says
    where the transcripts are and whether to rewrite them; with team_vacuum, the team's tables
    the forget changed are rewritten by `VACUUM FULL`."""
    outside = outside or Outside()
    found = plan(engine, settings, selection, user_home=outside.user_home)
    # A pattern goes to the team even when nothing here matches: the command run again after
    # the team database was down finds the team's copies only.
    to_team = bool(settings.team_database_url) and bool(
        found.events or selection.pattern is not None
    )
    if dry_run or (found.empty() and not to_team):
        team = _on_team(engine, settings, selection, found, None) if to_team else None
        return ForgetReport(found, applied=False, team=team)
    if confirm is not None:
        confirm(found)
    report = ForgetReport(found, applied=True)
    key = new_forget_key()  # the words it records here and on the team are one forget's
    if not found.empty():
        report = _forget_here(engine, settings, selection, (clock(), key), rederive, outside)
    if to_team:
        team = _on_team(engine, settings, selection, report.plan, (clock(), key), team_vacuum)
        report = replace(report, team=team)
    return report


def _forget_here(
    engine: Engine,
    settings: Settings,
    selection: Selection,
    when: tuple[float, str],
    rederive: Rederive | None,
    outside: Outside,
) -> ForgetReport:
    now, key = when
    forgotten = forget(engine, settings, selection, now, outside_files=outside, forget_key=key)
    found = forgotten.plan
    rederived = rederive(engine, settings) if rederive and forgotten.rebuild else None
    return ForgetReport(
        found,
        applied=True,
        forgotten=forgotten,
        rederived=rederived,
        compacted=compact(engine) if found.touches_database() else None,
        daemon_pids=tuple(running_pids(engine, time.time())) if found.log_lines else (),
    )


def _on_team(
    engine: Engine,
    settings: Settings,
    selection: Selection,
    found: Plan,
    when: tuple[float, str] | None,
    vacuum: bool = False,
) -> TeamForget:
    """The same forgetting on the team database (planned only, without `now`), then a pull so
    that this machine's copies of the team's memory follow at once. Whatever fails there, the
    local forget stands."""
    key = project_key(selection.project) if selection.project else None
    try:
        team = open_team(settings.team_database_url)
    except Exception as error:  # the server, the network or the schema
        return TeamForget(False, error=error_line(error))
    done: dict[str, Any] | None = None
    try:
        chosen = team_selection(team, settings.team_machine, found, selection, key)
        if when is None:
            planned = plan(team, settings, chosen, machine_files=False) if chosen else None
            return TeamForget(None, plan=planned.as_json() if planned else None)
        if chosen is not None or found.words:
            # The words found here are recorded there: another machine's copy is masked on
            # arrival, though the team database never held this one.
            outside = Outside(words=found.words)
            now, key = when
            forgotten = forget(team, settings, chosen or Selection(), now, False, outside, key)
            done = forgotten.as_json()
        vacuumed = vacuum_full(team, _changed_tables(done)) if vacuum and done else None
        pulled = asdict(pull(engine, team, when[0], settings))
        return TeamForget(True, plan=done, pulled=pulled, vacuumed=vacuumed)
    except Exception as error:  # a forget done there stands, though the pull failed
        return TeamForget(False, error=error_line(error), plan=done)
    finally:
        team.dispose()


def _changed_tables(done: dict[str, Any]) -> list[str]:
    """The team's tables whose rows a forget deleted or changed: where the heap keeps bytes."""
    tables = [table for table, n in done["derived_rows_deleted"].items() if n]
    changed = (
        ("captured_events", done["events_deleted"]),
        ("procedures", done["procedures_deleted"]),
        ("procedure_identities", done["procedures_deleted"]),
        ("sessions", done["sessions_deleted"]),
        ("projects", done["projects_deleted"]),
        ("dropped_payloads", done["drops_deleted"]),
        (TASKS_TABLE, done["task_errors_cleared"] or done["events_deleted"]),
    )
    tables += [table for table, n in changed if n]
    return sorted(set(tables))
