"""What `remem status` reports: a read-only look at the home, database, queue and spool, and
the team link as the daemon last saw it (status never connects to the team database).

Stdlib only on a SQLite home: the command answers in the time of an interpreter start."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any

from remem.agent.counts import read_counts
from remem.capture import spool
from remem.config import Settings
from remem.db import snapshot
from remem.db.snapshot import Execute
from remem.db.sqlite import schema_head
from remem.errors import team_schema_fix
from remem.queue import counts as task_counts
from remem.queue import heartbeats
from remem.record.event import DROPS_BY_DESIGN
from remem.record.redact import redact_text
from remem.team.state import Link, one_line, read_link


def spool_backlog(spool_dir: str) -> dict[str, Any]:
    pending_lines = dead_letters = 0
    last_reason = None
    if os.path.isdir(spool_dir):
        for name in sorted(os.listdir(spool_dir)):
            path = os.path.join(spool_dir, name)
            if name == spool.ACTIVE_FILE or name.startswith(spool.INGESTING_PREFIX):
                with open(path, "rb") as handle:
                    lines = [line for line in handle.read().splitlines() if _holds_text(line)]
                pending_lines += len(lines)
                last_reason = _spool_reason(lines[-1]) if lines else last_reason
            elif name == spool.DEAD_LETTER_FILE:
                with open(path, "rb") as handle:
                    dead_letters += handle.read().count(b"\n")
    overflow = spool.read_overflow(spool_dir)
    return {
        "pending": pending_lines,
        "dead_letters": dead_letters,
        "last_reason": last_reason,
        "overflow_dropped": int(overflow.get("dropped", 0)),
        "overflow_reason": overflow.get("reason"),
    }


def _holds_text(line: bytes) -> bool:
    # Blank lines, and the zeros a crash can leave at the end of a file, hold no event.
    return bool(line.strip(b" \t\r\x00"))


def _spool_reason(line: bytes) -> str | None:
    try:
        reason = json.loads(line).get("spool_reason")
    except (ValueError, AttributeError):
        return None
    return reason if isinstance(reason, str) else None


def _database_access(settings: Settings) -> dict[str, Any]:
    """Whether the hook and the worker can write the SQLite file (and its folder, for the
    -wal and -shm files beside it)."""
    path = settings.sqlite_file
    if path is None:
        return {"file": None, "writable": None}
    writable = os.access(path, os.W_OK) and os.access(os.path.dirname(path) or ".", os.W_OK)
    return {"file": path, "writable": writable}


def worker_health(execute: Execute, settings: Settings, now: float) -> dict[str, Any]:
    beats = heartbeats.read(execute)
    if not beats:
        return {
            "state": "not running",
            "pid": None,
            "uptime_s": None,
            "heartbeat_age_s": None,
            "current_task_id": None,
            "workers": 0,
        }
    newest = beats[0]
    lock_free = heartbeats.lock_is_free(heartbeats.lock_path(settings.sqlite_file, settings.home))
    return {
        "state": newest.health(now, lock_free),
        "pid": newest.pid,
        "hostname": newest.hostname,
        "uptime_s": round(now - newest.started_at, 1),
        "heartbeat_age_s": round(now - newest.heartbeat_at, 1),
        "current_task_id": newest.current_task_id,
        "workers": len(beats),
    }


def collect_status(settings: Settings, now: float | None = None) -> dict[str, Any]:
    """Read in one snapshot with the stdlib (see remem.db.snapshot); an old schema is
    reported, not refused."""
    now = time.time() if now is None else now
    with snapshot.read_snapshot(settings, require_current_schema=False) as execute:
        revision = snapshot.revision(execute)
        counts = read_counts(execute, now)
        tasks = task_counts.count_by_status(execute)
        oldest_pending = task_counts.oldest_pending_at(execute)
        worker = worker_health(execute, settings, now)
        link = _read_team_link(execute, settings, revision)
    drops = counts.drops
    return {
        "home": settings.home,
        "database": snapshot.url_label(settings.database_url),
        "schema_revision": revision,
        "schema_head": schema_head(),
        "events": counts.events,
        # Drops that lost something the memory needs; kept events with a cut output apart.
        "dropped_payloads": sum(n for reason, n in drops.items() if reason not in DROPS_BY_DESIGN),
        "outputs_cut": drops.get("output_cut", 0),
        "unresolved_codex_events": counts.unresolved_codex_events,
        "tasks": tasks,
        "oldest_pending_age_s": None if oldest_pending is None else round(now - oldest_pending, 1),
        "procedures": counts.procedures,
        "stale_last_verified_at": counts.stale.last_verified_at,
        "max_age_s": settings.max_age_s,
        "worker": worker,
        "spool": spool_backlog(settings.spool_dir),
        "database_access": _database_access(settings),
        "team": team_report(settings, link, now),
    }


def render(report: dict[str, Any]) -> str:
    """The report as `remem status` prints it: one labelled line per figure."""
    tasks = report["tasks"]
    lag = report["oldest_pending_age_s"]
    lines = [
        ("home", report["home"]),
        ("database", report["database"]),
        ("schema", f"{report['schema_revision']} (head {report['schema_head']})"),
        ("events", report["events"]),
        ("dropped payloads", _drops_line(report["dropped_payloads"], report["outputs_cut"])),
        ("codex outcomes never resolved", report["unresolved_codex_events"]),
        ("tasks", ", ".join(f"{count} {name}" for name, count in tasks.items())),
        ("oldest pending", "-" if lag is None else f"{lag:.0f}s"),
        ("procedures", _procedures_line(report)),
        ("worker", _worker_line(report["worker"])),
        ("spool", _spool_line(report["spool"])),
    ]
    if report["database_access"]["writable"] is False:
        lines.append(
            (
                "problem",
                f"{report['database_access']['file']} is not writable: events "
                "are spooled and the worker cannot apply them; give your user "
                "write access to the file and its folder",
            )
        )
    lines += _team_lines(report["team"])
    return "".join(f"{label:>17}  {value}\n" for label, value in lines)


def _procedures_line(report: dict[str, Any]) -> str:
    """Procedures by status; the stale ones last, said as `remem procedures list` and `remem
    import` say them."""
    from remem.agent.counts import Stale

    counts = report["procedures"]
    line = ", ".join(f"{count} {name}" for name, count in counts.items() if name != "stale")
    stale = Stale(counts["stale"], report["stale_last_verified_at"])
    if not stale.count:
        return f"{line}, 0 stale"
    return f"{line}; {stale.count} stale: {stale.said(report['max_age_s'])}"


def _drops_line(count: int, cut: int) -> str:
    text = f"{count} (see `remem drops`)" if count else "0"
    return text + (f"; {cut} kept with their output cut" if cut else "")


def _spool_line(spool: dict[str, Any]) -> str:
    text = f"{spool['pending']} waiting, {spool['dead_letters']} dead letters"
    if spool["pending"] and spool["last_reason"]:
        text += f" (last spooled because: {spool['last_reason']})"
    if spool["overflow_dropped"]:
        text += f"; {spool['overflow_dropped']} dropped: {spool['overflow_reason']}"
    return text


def _worker_line(worker: dict[str, Any]) -> str:
    state = worker["state"]
    if state == "not running":
        return "not running: start it with `remem worker` (or `remem service install`)"
    if state == "dead":
        return (
            f"dead: pid {worker['pid']} is gone (last heartbeat {worker['heartbeat_age_s']:.0f}s "
            "ago); start it with `remem worker`"
        )
    task = worker["current_task_id"]
    return (
        f"{state}, pid {worker['pid']}, up {worker['uptime_s']:.0f}s, "
        f"heartbeat {worker['heartbeat_age_s']:.0f}s ago"
        + (f", working on task {task}" if task else ", idle")
    )


# ---- the team link (DESIGN.md §9) ---------------------------------------------------------------

# The revision that made team_links and team_state: an older home has no link to read yet.
TEAM_TABLES_REVISION = "0008"


def team_label(settings: Settings) -> str:
    """The team database as status and doctor print it: no password, neither in the user part
    nor in a query parameter, and nothing else redaction would hide."""
    return redact_text(snapshot.url_label(settings.team_database_url))


def age_text(age_s: float | None) -> str:
    """'3h ago' in the largest whole unit; 'never' for no time at all."""
    if age_s is None:
        return "never"
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if age_s >= size:
            return f"{age_s // size:.0f}{unit} ago"
    return f"{max(age_s, 0.0):.0f}s ago"


def _read_team_link(execute: Execute, settings: Settings, revision: str | None) -> Link | None:
    # Revisions are zero-padded numbers: text order is their order.
    if not settings.team_database_url or revision is None or revision < TEAM_TABLES_REVISION:
        return None
    return read_link(execute)


def team_report(settings: Settings, link: Link | None, now: float) -> dict[str, Any] | None:
    """The [team] settings and the link as the daemon last recorded it; None without a team.
    A home whose schema predates the link tables reports the state "unknown"."""
    if not settings.team_database_url:
        return None
    facts: dict[str, Any] = {field.name: None for field in dataclasses.fields(Link)}
    if link is not None:
        facts = dataclasses.asdict(link)
        facts["error"] = None if link.error is None else one_line(link.error)
    for name in ("contact", "error", "shipped", "pulled"):
        at = facts[f"{name}_at"]
        facts[f"{name}_age_s"] = None if at is None else round(now - at, 1)
    return {
        "database": team_label(settings),
        "machine": settings.team_machine,
        "share": list(settings.team_share),
        "promote": settings.team_promote,
        "state": _link_state(link),
        "schema_head": schema_head(),
        **facts,
    }


def _link_state(link: Link | None) -> str:
    if link is None:
        return "unknown"
    if link.error is not None:
        return "unreachable"
    return "not contacted" if link.contact_at is None else "reachable"


def _team_lines(team: dict[str, Any] | None) -> list[tuple[str, Any]]:
    if team is None:
        return [("team", "none (set [team] database_url to share memory)")]
    promote = "works the team's queue" if team["promote"] else "leaves the team's queue to others"
    lines: list[tuple[str, Any]] = [
        ("team", team["database"]),
        ("team machine", f"{team['machine']} ({promote})"),
        ("team share", ", ".join(team["share"]) or "nothing shared: set [team] share"),
        ("team link", _link_line(team)),
    ]
    if team["state"] != "unknown":
        lines += [
            ("team schema", _team_schema_line(team["revision"], team["schema_head"])),
            (
                "team shipping",
                f"{team['projects']} shared project(s) linked, "
                f"{team['waiting']} event(s) waiting to ship",
            ),
            ("last ship", age_text(team["shipped_age_s"])),
            ("last pull", age_text(team["pulled_age_s"])),
        ]
    return lines


# What the link's state says when it has no time to give.
_LINK_STATES = {
    "unknown": "unknown: this home's schema predates the team link (run `remem db upgrade`)",
    "not contacted": "not contacted yet (is the daemon running?)",
}


def _link_line(team: dict[str, Any]) -> str:
    contact = age_text(team["contact_age_s"])
    if team["state"] == "reachable":
        return f"reachable as of {contact}"
    if team["state"] != "unreachable":
        return _LINK_STATES[team["state"]]
    # The error row is rewritten at each failed try: the outage began at the last contact.
    since = f"since {contact}" if team["contact_age_s"] is not None else "and never reached"
    return f"unreachable {since} (last try {age_text(team['error_age_s'])}): {team['error']}"


def _team_schema_line(revision: str | None, head: str) -> str:
    if revision is None:
        return "not seen yet"
    if revision == head:
        return f"{revision} (head {head})"
    relation = "behind" if revision < head else "newer than"
    return f"{revision}, {relation} this remem's {head}: {team_schema_fix(revision, head)}"


def status_text(as_json: bool) -> str:
    """What `remem status` prints: the report as a table of lines, or as JSON."""
    from remem.config import load_settings

    report = collect_status(load_settings())
    if not as_json:
        return render(report)
    from remem.record.quote import json_text

    return json_text(report)
