"""Forgetting in one database: deleting what a plan names (the drop ledger's rows and the
exports registry's too), recording the words that held the match, re-deriving what remains,
and rewriting the spool and log lines that carry it (the spool reads and rewrites its own
files); then the drafts and, when asked, the transcripts (outside.py). The caller then runs
`db.engine.compact`, so that the bytes leave the database file too."""

from __future__ import annotations

import os
import uuid
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, text

from remem.capture import spool
from remem.capture.store import known_forgotten
from remem.config import Settings
from remem.db.driver import with_ids
from remem.db.engine import begin_secure_delete, executor
from remem.db.schema import metadata, tables_marked
from remem.forgetting import outside
from remem.forgetting.plan import LESSONS_OF_EVENTS, event_columns, plan
from remem.forgetting.selection import Plan, Selection, chunks, compile_pattern
from remem.procedures import rebuild
from remem.queue import store as queue
from remem.record import forgotten as known_words
from remem.record import rewrite as files


@dataclass(frozen=True)
class Forgotten:
    plan: Plan
    events_deleted: int
    procedures_deleted: int
    derived_rows_deleted: dict[str, int]
    pulled_rows_deleted: dict[str, int]  # the team's memory pulled here
    sessions_deleted: int
    projects_deleted: int
    rebuild: rebuild.RebuildReport | None
    drops_deleted: int = 0
    drafts_deleted: tuple[str, ...] = ()
    words_recorded: int = 0  # new records of forgotten words (others were known already)
    transcripts_rewritten: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            **self.plan.as_json(),
            "drops_deleted": self.drops_deleted,
            "drafts_deleted": list(self.drafts_deleted),
            "new_words_recorded": self.words_recorded,
            "transcripts_rewritten": self.transcripts_rewritten,
            "events_deleted": self.events_deleted,
            "procedures_deleted": self.procedures_deleted,
            "derived_rows_deleted": self.derived_rows_deleted,
            "pulled_rows_deleted": self.pulled_rows_deleted,
            "sessions_deleted": self.sessions_deleted,
            "projects_deleted": self.projects_deleted,
            "rebuild": self.rebuild.as_dict() if self.rebuild else None,
        }


def forget(
    engine: Engine,
    settings: Settings,
    selection: Selection,
    now: float,
    machine_files: bool = True,
    outside_files: Outside | None = None,
    forget_key: str | None = None,
) -> Forgotten:
    """Delete what the selection names, re-derive what remains, rewrite the spool and the logs.
    The plan is made again under the spool's ingestion lock (a worker may have ingested a
    spooled line since the caller's dry run), which also keeps a worker from ingesting a line
    between our deleting its event and our rewriting its file; the words that held the matches
    are recorded in the same transaction as the deletions, so that a line ingested after it is
    masked. Without machine_files (the team database) the spool and the logs, forgotten by the
    local run, are left alone. The words recorded carry forget_key (a new one unless given: the
    same forget recorded here and on the team database is one)."""
    key = forget_key or new_forget_key()
    found_outside = outside_files or Outside()
    lock = spool.IngestLock(settings.spool_dir) if machine_files else nullcontext()
    with lock:
        found = plan(engine, settings, selection, machine_files, found_outside.user_home)
        words = found.words | found_outside.words
        touched = found.touches_database() or words
        deleted = (
            _delete(engine, found, now, words, (settings.team_machine, key)) if touched else {}
        )
        for name in found.spool_lines:
            spool.rewrite_without(os.path.join(settings.spool_dir, name), found.lines.spool_line)
    drafts = tuple(outside.delete_drafts(found.drafts))
    rewritten = _rewrite_transcripts(found, selection, found_outside)
    report, sessions, projects = None, 0, 0
    if found.events or found.procedures:
        report = rebuild.rebuild(engine, now, settings.ignore_commands)
        sessions, projects = _delete_orphans(engine, found)
    for name in found.log_lines:
        # A log writer takes no lock: what it appends meanwhile is kept, filtered.
        files.rewrite_without(os.path.join(settings.log_dir, name), found.lines.log_line)
    drops, recorded = deleted.pop("dropped_payloads", 0), deleted.pop("forgotten_texts", 0)
    return Forgotten(
        plan=found,
        events_deleted=deleted.pop("captured_events", 0),
        procedures_deleted=deleted.pop("procedures", 0),
        pulled_rows_deleted={table: deleted.pop(table, 0) for table in PULLED_TABLES},
        derived_rows_deleted=deleted,
        sessions_deleted=sessions,
        projects_deleted=projects,
        rebuild=report,
        drops_deleted=drops,
        drafts_deleted=drafts,
        words_recorded=recorded,
        transcripts_rewritten=rewritten,
    )


@dataclass(frozen=True)
class Outside:
    """What a forget is asked beyond the database: where the agents keep their transcripts
    (user_home), whether to rewrite those that quote the match (and keep a backup), and words
    another database's plan found (the team database records what this machine found)."""

    user_home: str | None = None
    rewrite_transcripts: bool = False
    backup: bool = False
    words: frozenset[str] = frozenset()


def _rewrite_transcripts(found: Plan, selection: Selection, asked: Outside) -> dict[str, int]:
    if not asked.rewrite_transcripts or selection.pattern is None:
        return {}
    pattern = compile_pattern(selection.pattern)
    return {
        path: outside.rewrite_transcript(path, pattern, asked.backup) for path in found.transcripts
    }


def _delete_ids(connection: Connection, table: str, ids: tuple[int, ...]) -> int:
    statement = with_ids(f"DELETE FROM {table} WHERE id IN :ids")
    return sum(connection.execute(statement, {"ids": chunk}).rowcount for chunk in chunks(ids))


_RECORD_WORD = text(
    "INSERT INTO forgotten_texts (bucket, salt, digest, forgotten_at, machine, forget_key) "
    "VALUES (:bucket, :salt, :digest, :now, :machine, :forget_key)"
)


def _record_words(
    connection: Connection, words: frozenset[str], now: float, machine: str, forget_key: str
) -> int:
    """Record the words not recorded yet (remem/record/forgotten.py): never their text, with
    the machine and the forget that recorded them."""
    known = known_forgotten(executor(connection)) or known_words.Known()
    recorded = 0
    for word in sorted(words):
        if known.forgotten(word):
            continue
        bucket, salt, digest = known_words.record(word)
        params = {
            "bucket": bucket,
            "salt": salt,
            "digest": digest,
            "now": now,
            "machine": machine,
            "forget_key": forget_key,
        }
        connection.execute(_RECORD_WORD, params)
        recorded += 1
    return recorded


# (table, statement) in deletion order: lessons whose streak included a forgotten attempt go
# before the attempts that show it, then every row that points at an event, then the event.
DELETIONS = (
    ("lessons", f"DELETE FROM {LESSONS_OF_EVENTS}"),
    *(
        (table.name, f"DELETE FROM {table.name} WHERE " + " OR ".join(f"{c} IN :ids" for c in refs))
        for table in metadata.tables.values()
        if table.name != "lessons" and (refs := event_columns(table))
    ),
    ("captured_events", "DELETE FROM captured_events WHERE id IN :ids"),
)


_OWE_REBUILD = text(
    "INSERT INTO pending_jobs (name, reason, created_at) VALUES (:name, 'forget', :now) "
    "ON CONFLICT (name) DO NOTHING"
)

# The team's memory pulled here (remem/db/schema.py marks those tables): deleted, never
# re-derived; the next pull brings back what the team still holds.
PULLED_TABLES = tuple(table.name for table in tables_marked("pulled"))


def new_forget_key() -> str:
    """What names one forget on every database it ran on."""
    return uuid.uuid4().hex[:16]


def _delete(
    engine: Engine, found: Plan, now: float, words: frozenset[str], by: tuple[str, str]
) -> dict[str, int]:
    tables = (*(table for table, _sql in DELETIONS), "procedures", *PULLED_TABLES)
    deleted = dict.fromkeys(tables, 0)
    event_ids = {event.id for event in found.events}
    # Deleted cells are zeroed, not left in free space, should the VACUUM not run.
    with begin_secure_delete(engine) as connection:
        deleted["dropped_payloads"] = _delete_ids(connection, "dropped_payloads", found.drops)
        _delete_ids(connection, "exports", tuple(draft.id for draft in found.drafts))
        deleted["forgotten_texts"] = _record_words(connection, words, now, *by)
        for chunk in chunks(event_ids):
            for table, sql in DELETIONS:
                deleted[table] += connection.execute(with_ids(sql), {"ids": chunk}).rowcount
        for chunk in chunks(procedure.id for procedure in found.procedures):
            statement = with_ids("DELETE FROM procedures WHERE id IN :ids")
            deleted["procedures"] += connection.execute(statement, {"ids": chunk}).rowcount
        for table in PULLED_TABLES:
            for chunk in chunks(item.id for item in getattr(found, table)):
                statement = with_ids(f"DELETE FROM {table} WHERE id IN :ids")
                deleted[table] += connection.execute(statement, {"ids": chunk}).rowcount
        if found.events or found.procedures:
            # Should we stop before the rebuild that follows, the next worker runs it.
            connection.execute(_OWE_REBUILD, {"name": rebuild.REBUILD_JOB, "now": now})
        for chunk in chunks(found.task_errors):
            queue.clear_errors(connection, chunk)
    return deleted


# What remem recorded it told a session (remem/db/schema.py marks those tables).
SESSION_RECORDS = tuple(table.name for table in tables_marked("record"))
_ORPHAN_SESSIONS = (
    "SELECT id FROM sessions WHERE id IN :ids AND NOT EXISTS "
    "(SELECT 1 FROM captured_events e WHERE e.session_id = sessions.id)"
)
# A project is left empty when no row names it but the ids kept for its cleared procedures,
# which go with it. A shared project keeps its link and what it pulled from the team that did
# not match: the team's copies are forgotten on the team database, then pulled again.
_ORPHAN_PROJECTS = "SELECT id FROM projects WHERE id IN :ids" + "".join(
    f" AND NOT EXISTS (SELECT 1 FROM {table.name} t WHERE t.project_id = projects.id)"
    for table in metadata.tables.values()
    if "project_id" in table.c and table.name != "procedure_identities"
)


def _delete_orphans(engine: Engine, found: Plan) -> tuple[int, int]:
    """Sessions and projects the forgotten events leave empty (after the rebuild, which
    cleared what was derived from them), and the ids kept for the deleted procedures."""
    sessions = projects = 0
    with engine.begin() as connection:
        for chunk in chunks(procedure.id for procedure in found.procedures):
            statement = "DELETE FROM procedure_identities WHERE procedure_id IN :ids"
            connection.execute(with_ids(statement), {"ids": chunk})
        for chunk in chunks(found.session_ids):
            empty = list(connection.execute(with_ids(_ORPHAN_SESSIONS), {"ids": chunk}).scalars())
            if empty:
                queue.delete_session_tasks(connection, empty)
                # Advice given before a command ran names no event: it goes with its session,
                # and so does anything else recorded of what the session was told.
                for table in SESSION_RECORDS:
                    connection.execute(
                        with_ids(f"DELETE FROM {table} WHERE session_id IN :ids"), {"ids": empty}
                    )
                sessions += connection.execute(
                    with_ids("DELETE FROM sessions WHERE id IN :ids"), {"ids": empty}
                ).rowcount
        for chunk in chunks(found.project_ids):
            empty = list(connection.execute(with_ids(_ORPHAN_PROJECTS), {"ids": chunk}).scalars())
            if empty:
                connection.execute(
                    with_ids("DELETE FROM procedure_identities WHERE project_id IN :ids"),
                    {"ids": empty},
                )
                projects += connection.execute(
                    with_ids("DELETE FROM projects WHERE id IN :ids"), {"ids": empty}
                ).rowcount
    return sessions, projects
