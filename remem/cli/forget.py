"""`remem forget`: the way out when a secret got through redaction anyway."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from remem.cli.app import ROW_ID, cli, json_option, open_home, print_json, project_option
from remem.errors import RememError

if TYPE_CHECKING:
    from remem.forgetting.selection import Plan

SHOWN = 20  # items listed in text; --json lists them all


@cli.command("forget")
@click.option("--event", "event_ids", type=ROW_ID, multiple=True, help="A captured event's id.")
@click.option(
    "--procedure",
    "procedure_ids",
    type=ROW_ID,
    multiple=True,
    help="A procedure's id: it goes with its evidence and every run of its workflow.",
)
@click.option(
    "--match",
    "pattern",
    default=None,
    help="A regular expression (RE2, as `remem recall` takes it, but case-sensitive): every "
    "event, procedure, lesson, spool and log line whose text it finds goes, with the team's "
    "procedures and lessons pulled here.",
)
@project_option(
    "With --match: only this project's events, procedures and spooled events (a directory of "
    "it); matching log lines and dead letters go whatever their project. The match is not "
    "masked from then on: other projects keep it."
)
@click.option(
    "--transcripts",
    "rewrite_transcripts",
    is_flag=True,
    help="With --match: also rewrite, in place, the lines of the agents' transcripts that "
    "quote it (each file is replaced whole, atomically).",
)
@click.option(
    "--backup",
    is_flag=True,
    help="With --transcripts: keep each transcript as it was beside it, as FILE.remem-backup "
    "(it still holds the text).",
)
@click.option(
    "--team-vacuum",
    is_flag=True,
    help="Run VACUUM FULL on the team database's tables the forget changed: PostgreSQL keeps "
    "deleted bytes until then (it locks each table while it rewrites it).",
)
@click.option(
    "--list",
    "list_records",
    is_flag=True,
    help="List the records of forgotten words (never the words): which machine and which "
    "forget made each, and whether it came from the team.",
)
@click.option(
    "--unrecord",
    "unrecord_id",
    type=ROW_ID,
    default=None,
    help="Delete a record --list shows: its word is masked no more (one the team made goes "
    "from the team database too).",
)
@click.option("--dry-run", is_flag=True, help="List what would go; change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option("what goes (or went)")
def forget_command(
    event_ids: tuple[int, ...],
    procedure_ids: tuple[int, ...],
    pattern: str | None,
    root: str | None,
    rewrite_transcripts: bool,
    backup: bool,
    team_vacuum: bool,
    list_records: bool,
    unrecord_id: int | None,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Delete captured events for good, with what was derived from them, and re-derive what
    remains. Matching spool, dead-letter and worker log lines are removed too, with the drop
    ledger's rows and the drafts remem exported, and the database is vacuumed so that the bytes
    leave the file. Archived procedures that match go as well. The words that held a match are
    recorded, hashed and never as text: the hook, import and the team mask them from then on.
    The agents' transcripts that still quote the match are named; --transcripts rewrites them.
    With a team database, the copies this machine shipped there and whatever matches there go
    too, and the team's memory is pulled again; when it cannot be reached, the local forget
    stands and the exit code is 1: run the command again when it answers.

    Run it in your own shell, not through an agent: an agent's command is captured, and this
    one names what it forgets.

    \b
    Examples:
      remem forget --match 'zq8Kp2[A-Za-z0-9]+' --dry-run
      remem forget --event 412 --event 413 --yes
      remem forget --procedure 7 --json
      remem forget --match 'zq8Kp2[A-Za-z0-9]+' --transcripts --team-vacuum --yes
      remem forget --list --json
      remem forget --unrecord 3
    """
    import os

    if list_records or unrecord_id is not None:
        if event_ids or procedure_ids or pattern is not None or (list_records and unrecord_id):
            raise click.UsageError("--list and --unrecord go alone.")
        if list_records:
            _list_records(as_json)
        else:
            _unrecord(unrecord_id or 0, as_json)
        return

    from remem.admin.forget import forget_everywhere
    from remem.forgetting.erase import Outside
    from remem.forgetting.selection import Selection, compile_pattern
    from workers.work import rederive

    if not (event_ids or procedure_ids or pattern is not None):
        raise click.UsageError("Say what to forget: --event ID, --procedure ID or --match REGEX.")
    if root is not None and pattern is None:
        raise click.UsageError("--project narrows --match: give a --match too.")
    if rewrite_transcripts and pattern is None:
        raise click.UsageError("--transcripts rewrites what --match finds: give a --match too.")
    if backup and not rewrite_transcripts:
        raise click.UsageError("--backup keeps the transcripts --transcripts rewrites.")
    if pattern is not None:
        compile_pattern(pattern)  # a bad one is refused before the home is opened
    selection = Selection(event_ids, procedure_ids, pattern, root)
    with open_home() as (settings, engine):
        report = forget_everywhere(
            engine,
            settings,
            selection,
            dry_run=dry_run,
            confirm=lambda found: _confirm(found, yes),
            rederive=rederive,
            outside=Outside(os.path.expanduser("~"), rewrite_transcripts, backup),
            team_vacuum=team_vacuum,
        )
    summary = report.as_json()
    if as_json:
        print_json(summary)
    elif not report.applied:
        _print_plan(report.plan, team=summary["team"])
    else:
        _print_done(summary)
    if not report.complete():
        sys.exit(1)


def _list_records(as_json: bool) -> None:
    from remem.forgetting.records import list_records
    from remem.json_contract import rfc3339
    from remem.record.quote import inert_path

    with open_home() as (_settings, engine):
        records = list_records(engine)
    if as_json:
        print_json({"records": [record.as_json() for record in records]})
        return
    if not records:
        click.echo("No word is recorded as forgotten.")
        return
    click.echo(f"{len(records)} forgotten word(s), recorded hashed (the words are not kept):")
    for record in records:
        origin = "team" if record.from_team else "here"
        click.echo(
            f"  {record.id}  {rfc3339(record.forgotten_at)}  {origin}  machine "
            f"{inert_path(record.machine or '?')}  forget {inert_path(record.forget or '?')}"
        )
    click.echo("`remem forget --unrecord ID` deletes a record: its word is masked no more.")


def _unrecord(record_id: int, as_json: bool) -> None:
    from remem.forgetting.records import unrecord
    from remem.team.link import error_line, open_team

    with open_home() as (settings, engine):
        team = None
        try:
            if settings.team_database_url:
                team = open_team(settings.team_database_url)
            from_team = unrecord(engine, record_id, team)
        except LookupError:
            raise RememError(
                f"No forgotten word is recorded as {record_id}: `remem forget --list` shows them."
            ) from None
        except Exception as error:
            if team is None and not settings.team_database_url:
                raise
            raise RememError(
                f"The team database could not be changed ({error_line(error)}): nothing was "
                "unrecorded; run the same command again when it answers."
            ) from error
        finally:
            if team is not None:
                team.dispose()
    if as_json:
        print_json({"unrecorded": record_id, "from_team": from_team})
    else:
        where = " here and on the team database" if from_team else ""
        click.echo(f"Unrecorded {record_id}{where}: its word is masked no more.")


def _confirm(found: Plan, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise RememError(
            "forget deletes for good and asks first: run it on a terminal or pass --yes "
            "(--dry-run shows what would go)."
        )
    _print_plan(found, verb="Will forget")
    click.confirm("Forget all of this for good?", abort=True)


def _print_plan(
    found: Plan, verb: str = "Would forget (dry run)", team: dict[str, Any] | None = None
) -> None:
    if found.empty():
        click.echo("Nothing to forget here: no event, procedure, spool line or log line matches.")
    else:
        click.echo(f"{verb}:")
        _list_plan(found.as_json())
    if team is None:
        return
    if team["error"]:
        click.echo(f"The team database could not be checked: {team['error']}")
    elif team["plan"] is None or not _any_of(team["plan"]):
        click.echo("On the team database: nothing.")
    else:
        click.echo("On the team database:")
        _list_plan(team["plan"])


def _any_of(plan: dict[str, Any]) -> bool:
    return bool(plan["events"] or plan["procedures"] or plan["task_errors_cleared"])


# What a plan lists: (its JSON key, title, line prefix, the keys of the item's label and text).
LISTED = (
    ("events", "event(s)", "event", "at", "command"),
    ("lessons", "lesson(s) learnt from them", "lesson", "branch", "error"),
    ("known_errors", "known error(s) seen in them", "known error", "workflow", "error"),
    ("procedures", "procedure(s)", "procedure", "status", "command"),
    ("team_procedures", "procedure(s) pulled from the team", "team procedure", "status", "command"),
    ("team_lessons", "lesson(s) pulled from the team", "team lesson", "branch", "command"),
)


def _list_plan(plan: dict[str, Any]) -> None:
    for key, title, prefix, label, shown in LISTED:
        items = plan[key]
        _list(
            f"{len(items)} {title}",
            [f"{prefix} {item['id']} ({item[label]})  {item[shown]}" for item in items],
        )
    if plan["rederived_procedures"]:
        ids = ", ".join(map(str, plan["rederived_procedures"]))
        click.echo(f"  re-derived from what remains: procedure(s) {ids}")
    for label, counts in (("spool", plan["spool_lines"]), ("logs", plan["log_lines"])):
        if counts:
            click.echo(f"  {label}: " + ", ".join(f"{n} line(s) in {f}" for f, n in counts.items()))
    if plan["task_errors_cleared"]:
        click.echo(f"  the last error of {plan['task_errors_cleared']} task(s)")
    if plan["drops"]:
        click.echo(f"  {plan['drops']} row(s) of the drop ledger (remem drops)")
    _list(f"{len(plan['drafts'])} exported draft(s)", plan["drafts"])
    _list_transcripts(plan["transcripts"], "quote the match")
    _say_words(plan)


def _list_transcripts(transcripts: dict[str, int], verb: str) -> None:
    lines = [f"{path}: {n} line(s)" for path, n in transcripts.items()]
    _list(f"{len(lines)} transcript file(s) of the agents {verb}", lines)


def _say_words(plan: dict[str, Any]) -> None:
    if plan["words_recorded"]:
        click.echo(
            f"  {plan['words_recorded']} word(s) holding the match, to be masked from then on "
            "(recorded hashed)"
        )
    if plan["matches_unrecorded"]:
        click.echo(
            f"  {plan['matches_unrecorded']} match(es) no single word holds, or too many words "
            "to mask: deleted, but not masked when they come again (a narrower --match records "
            "them)"
        )


def _list(title: str, lines: list[str]) -> None:
    if not lines:
        return
    click.echo(f"  {title}:")
    for line in lines[:SHOWN]:
        click.echo(f"    {line}")
    if len(lines) > SHOWN:
        click.echo(f"    … and {len(lines) - SHOWN} more (--dry-run --json lists them all)")


def _print_done(summary: dict[str, Any]) -> None:
    if summary.get("nothing"):
        click.echo("Nothing to forget here: no event, procedure, spool line or log line matches.")
    else:
        _print_local(summary)
    team = summary["team"]
    if team is None:
        return
    if not team["forgotten"]:
        click.echo(
            f"The team's copies were NOT forgotten ({team['error']}): run the same command "
            "again when the team database answers."
        )
        return
    done, pulled = team["plan"], team["pulled"]
    forgot = "nothing there matched"
    if done is not None:
        forgot = (
            f"forgot {done['events_deleted']} event(s), {done['procedures_deleted']} procedure(s)"
        )
    click.echo(
        f"On the team database: {forgot}; pulled again {pulled['procedures']} procedure(s) and "
        f"{pulled['lessons']} lesson(s)."
    )
    if team["vacuumed"]:
        click.echo(f"VACUUM FULL rewrote the team's {', '.join(team['vacuumed'])}.")
    elif team["vacuumed"] is not None:
        click.echo("No table of the team database changed: nothing to VACUUM FULL.")
    elif done is not None:
        click.echo(
            "The team database's heap and WAL keep the deleted bytes until VACUUM FULL and the "
            "WAL recycles: --team-vacuum runs it."
        )


def _print_outside(summary: dict[str, Any]) -> None:
    if summary["drops_deleted"]:
        click.echo(f"Removed {summary['drops_deleted']} row(s) of the drop ledger.")
    if summary["drafts_deleted"]:
        click.echo(f"Deleted {len(summary['drafts_deleted'])} exported draft(s):")
        for path in summary["drafts_deleted"]:
            click.echo(f"  {path}")
    if summary["new_words_recorded"]:
        click.echo(
            f"Recorded {summary['new_words_recorded']} word(s) holding the match, hashed: the "
            "hook, import and the team mask them from now on."
        )
    rewritten = summary["transcripts_rewritten"]
    if rewritten:
        _list_transcripts(rewritten, "rewritten in place")
    still = {path: n for path, n in summary["transcripts"].items() if path not in rewritten}
    if still:
        _list_transcripts(still, "still quote the match (--transcripts rewrites them)")


def _print_local(summary: dict[str, Any]) -> None:
    derived = ", ".join(f"{n} {table}" for table, n in summary["derived_rows_deleted"].items() if n)
    click.echo(
        f"Forgot {summary['events_deleted']} event(s) and {summary['procedures_deleted']} "
        f"procedure(s)" + (f"; derived rows deleted: {derived}" if derived else "") + "."
    )
    pulled = summary["pulled_rows_deleted"]
    if any(pulled.values()):
        click.echo(
            f"Removed {pulled['team_procedures']} procedure(s) and {pulled['team_lessons']} "
            "lesson(s) pulled from the team."
        )
    if summary["sessions_deleted"] or summary["projects_deleted"]:
        click.echo(
            f"Removed {summary['sessions_deleted']} session(s) and "
            f"{summary['projects_deleted']} project(s) left without events."
        )
    for label, counts in (("spool", summary["spool_lines"]), ("logs", summary["log_lines"])):
        if counts:
            lines = ", ".join(f"{n} line(s) from {name}" for name, n in counts.items())
            click.echo(f"Removed from the {label}: {lines}.")
    _print_outside(summary)
    if summary["rederived"]:
        click.echo(
            f"Re-derived: {summary['rederived']['promoted']} procedure(s) promoted from "
            f"{summary['rederived']['events']} event(s)."
        )
    compacted = summary["compacted"]
    if compacted and compacted["vacuumed"] and not compacted["wal_truncated"]:
        click.echo(
            "Vacuumed, but another process was reading the database and its WAL could not be "
            "emptied yet: SQLite empties it when the last process closes the database (stop "
            "the worker)."
        )
    elif compacted and compacted["vacuumed"]:
        click.echo("Vacuumed the database and emptied its WAL: the deleted bytes are gone.")
    elif compacted:
        click.echo("Not vacuumed (not SQLite): the database's own VACUUM FULL frees the space.")
    if summary["daemon_pids"]:
        pids = ", ".join(map(str, summary["daemon_pids"]))
        click.echo(
            f"Restart the running worker (pid {pids}): it still holds the old worker.log open."
        )
