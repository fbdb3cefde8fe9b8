"""Writing captured events and drops, the same way from the hook (stdlib sqlite3) and from spool
ingestion (SQLAlchemy, SQLite or PostgreSQL). Callers pass `execute(sql, params) -> rows` and
own the transaction."""

from __future__ import annotations

import json

from remem.capture.hosts import written_edit
from remem.db import columns
from remem.queue import statements as queue_sql
from remem.record.event import CapturedEvent

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from remem.db.snapshot import Execute
    from remem.record.forgotten import Known

    Insert = Callable[[str, dict[str, object]], int | None]

PROMOTE = "promote"

SCHEMA_REVISION = "SELECT version_num FROM alembic_version"

UPSERT_PROJECT = """
INSERT INTO projects (root, created_at) VALUES (:root, :now)
ON CONFLICT (root) DO UPDATE SET root = excluded.root
RETURNING id
"""

UPSERT_SESSION = """
INSERT INTO sessions (host, session_key, project_id, started_at, last_event_at)
VALUES (:host, :session_key, :project_id, :event_at, :event_at)
ON CONFLICT (host, session_key) DO UPDATE SET host = excluded.host
RETURNING id
"""

TOUCH_SESSION = """
UPDATE sessions SET last_event_at = :event_at WHERE id = :session_id AND last_event_at < :event_at
"""

INSERT_EVENT = (
    columns.insert("captured_events", columns.EVENT_COLUMNS)
    + " ON CONFLICT (idempotency_key) DO NOTHING RETURNING id"
)

INSERT_DROP = """
INSERT INTO dropped_payloads (
    idempotency_key, reason, host, hook_event, size_bytes, payload_sha256, detail, excerpt,
    dropped_at
) VALUES (
    :idempotency_key, :reason, :host, :hook_event, :size_bytes, :payload_sha256, :detail,
    :excerpt, :dropped_at
)
ON CONFLICT (idempotency_key) DO NOTHING
"""

LIST_DROPS = """
SELECT id, dropped_at, host, hook_event, reason, detail, size_bytes, excerpt
FROM dropped_payloads ORDER BY dropped_at DESC, id DESC LIMIT :limit
"""

COUNT_DROPS_SINCE = """
SELECT reason, count(*) FROM dropped_payloads WHERE dropped_at >= :since
GROUP BY reason ORDER BY count(*) DESC, reason
"""

ANY_FORGOTTEN = "SELECT 1 FROM forgotten_texts LIMIT 1"
# The records of some buckets, through the index on the bucket (remem/record/forgotten.py).
FORGOTTEN_IN_BUCKETS = "SELECT bucket, salt, digest FROM forgotten_texts WHERE bucket IN ({})"
BUCKETS_PER_READ = 500

# A resumed Claude Code session's file repeats the calls of the session it resumed under its own
# session id, and a resumed Codex rollout its calls: a tool call's id names one run, whatever
# session carries it.
SAME_TOOL_CALL = """
SELECT 1 FROM captured_events WHERE tool_use_id = :tool_use_id AND host = :host AND kind = :kind
LIMIT 1
"""
KEYED_BY_TOOL_CALL = ("claude-code", "codex")

# The fields of an event and a drop that hold recorded text, masked of forgotten words.
MASKED_EVENT_FIELDS = (
    "session_key",
    "project_root",
    "command",
    "error_excerpt",
    "output_excerpt",
    "branch",
    "cwd",
    "directory",
    "transcript_path",
    "payload",
)
MASKED_DROP_FIELDS = ("detail", "excerpt")

DROP_COLUMNS = (
    "id",
    "dropped_at",
    "host",
    "hook_event",
    "reason",
    "detail",
    "size_bytes",
    "excerpt",
)


def schema_revision(execute: Execute) -> str | None:
    rows = execute(SCHEMA_REVISION, {})
    return str(rows[0][0]) if rows else None


def store_event(execute: Execute, event: CapturedEvent) -> int | None:
    """Insert one event and raise its session's task; None when it was already stored. A
    command that writes files in its work tree brings its edit along, stored after it: every
    way an event arrives (hook, spool, import) stores the same rows, through Batch."""
    batch = Batch(execute)
    stored = batch.store(event)
    batch.finish()
    return stored


def upsert_project(execute: Execute, event: CapturedEvent) -> int:
    params = {"root": event.project_root, "now": event.captured_at}
    return int(execute(UPSERT_PROJECT, params)[0][0])


def upsert_session(execute: Execute, event: CapturedEvent, project_id: int) -> int:
    params = {
        "host": event.host,
        "session_key": event.session_key,
        "project_id": project_id,
        "event_at": event.event_at,
    }
    return int(execute(UPSERT_SESSION, params)[0][0])


def event_params(event: CapturedEvent, project_id: int, session_id: int) -> dict[str, Any]:
    params = event.as_dict()
    del params["project_root"], params["session_key"]
    params["session_id"] = session_id
    params["project_id"] = project_id
    params["files"] = json.dumps(event.files) if event.files else None
    return params


KNOWN_KEY = "SELECT 1 FROM captured_events WHERE idempotency_key = :key"


def stored_already(execute: Execute, event: CapturedEvent) -> bool:
    """Whether store_event would find the event stored: by its key, or as its tool call."""
    return bool(execute(KNOWN_KEY, {"key": event.idempotency_key})) or run_stored(execute, event)


def run_stored(execute: Execute, event: CapturedEvent) -> bool:
    """Whether this tool call is stored already, under whatever session."""
    if event.tool_use_id is None or event.host not in KEYED_BY_TOOL_CALL:
        return False
    params = {"tool_use_id": event.tool_use_id, "host": event.host, "kind": event.kind}
    return bool(execute(SAME_TOOL_CALL, params))


def known_forgotten(execute: Execute) -> Known | None:
    """The words `remem forget` forgot; None when it forgot none, the common case, which costs
    the hook one read and no import. Their records are read by the buckets of the words a text
    holds, never all of them."""
    if not execute(ANY_FORGOTTEN, {}):
        return None
    from remem.record.forgotten import Known  # where something was forgotten

    return Known(fetch=lambda buckets: forgotten_in_buckets(execute, buckets))


def forgotten_in_buckets(execute: Execute, buckets: list[int]) -> list[Sequence[Any]]:
    rows: list[Sequence[Any]] = []
    for start in range(0, len(buckets), BUCKETS_PER_READ):
        chunk = buckets[start : start + BUCKETS_PER_READ]
        names = ", ".join(f":b{index}" for index in range(len(chunk)))
        params = {f"b{index}": value for index, value in enumerate(chunk)}
        rows.extend(execute(FORGOTTEN_IN_BUCKETS.format(names), params))
    return rows


def mask_known(event: CapturedEvent, known: Known) -> CapturedEvent:
    fields = event.fields()
    for name in MASKED_EVENT_FIELDS:
        if isinstance(fields[name], str):
            fields[name] = known.mask(fields[name])
    if fields["files"]:
        fields["files"] = [known.mask(name) for name in fields["files"]]
    return CapturedEvent(**fields)


def store_written_edit(event: CapturedEvent, store: Callable[[CapturedEvent], object]) -> None:
    """Store the edit a command's file write made, if it made one, with `store`."""
    try:
        edit = written_edit(event)
    except Exception:  # a command no reader understands still counts as itself
        return
    if edit is not None:
        store(edit)


def raise_task(execute: Execute, session_id: int, event_id: int, now: float) -> None:
    """The session's promote task, made or moved up to event_id (queue_sql.COALESCE)."""
    execute(
        queue_sql.COALESCE,
        {
            "idempotency_key": queue_sql.task_key(session_id, PROMOTE),
            "session_id": session_id,
            "kind": PROMOTE,
            "priority": 0,
            "event_id": event_id,
            "now": now,
        },
    )


def drop_record(
    reason: str,
    detail: str,
    host: str | None,
    hook_event: str | None,
    size_bytes: int,
    payload_sha256: str,
    dropped_at: float,
    excerpt: str | None = None,
) -> dict[str, Any]:
    # The hook event comes from the payload being dropped: keep it only if it is a plain name.
    if not isinstance(hook_event, str) or len(hook_event) > 100:
        hook_event = None
    return {
        "idempotency_key": f"{payload_sha256}:{dropped_at!r}",
        "reason": reason,
        "host": host,
        "hook_event": hook_event,
        "size_bytes": size_bytes,
        "payload_sha256": payload_sha256,
        "detail": detail[:500] or None,
        "excerpt": excerpt,
        "dropped_at": dropped_at,
    }


def store_drop(execute: Execute, record: dict[str, Any]) -> None:
    # A drop spooled by an older remem has no excerpt.
    record = {"excerpt": None, **record}
    known = known_forgotten(execute)
    if known:
        for name in MASKED_DROP_FIELDS:
            if isinstance(record[name], str):
                record[name] = known.mask(record[name])
    execute(INSERT_DROP, record)


def list_drops(execute: Execute, limit: int) -> list[dict[str, Any]]:
    """The newest dropped payloads first, each as a dict of DROP_COLUMNS."""
    return [
        dict(zip(DROP_COLUMNS, row, strict=True)) for row in execute(LIST_DROPS, {"limit": limit})
    ]


def count_drops_since(execute: Execute, since: float) -> list[tuple[str, int]]:
    """(reason, count) of the payloads dropped since then, commonest first."""
    return [
        (str(reason), int(count)) for reason, count in execute(COUNT_DROPS_SINCE, {"since": since})
    ]


# INSERT_EVENT for a driver that tells the new row's id itself (transcripts.importer):
# RETURNING costs SQLite a temporary table for every statement.
INSERT_EVENT_WITHOUT_ID = INSERT_EVENT.removesuffix(" RETURNING id")
# The stored runs of many tool calls at once (SAME_TOOL_CALL's, for each of them).
STORED_TOOL_CALLS = "SELECT tool_use_id, host, kind FROM captured_events WHERE tool_use_id IN ({})"
CALLS_PER_READ = 500


class Batch:
    """Events stored in one transaction, the one way any event is stored (store_event is a
    batch of one): a tool call stored already is not stored again; the words `remem forget`
    forgot are masked; the event goes in with its project and session, and a command's written
    edit after it. What the events repeat is done once: the forgotten words read, each
    project's and session's id asked for, each session touched at the end with its latest
    time. A session's task is raised once
    for its last event of a run sharing a capture time, which is what raising it for each event
    leaves (the watermark only rises, and a revived task is pending until the run ends).
    `finish()` before the transaction commits; `insert`, when given, inserts an event without
    RETURNING and tells its id. Given the events it is about to store, it asks which of their
    tool calls are stored already once for all of them, and keeps the answer up to date as it
    stores them (run_stored's question, asked once an event otherwise)."""

    def __init__(
        self, execute: Execute, insert: Insert | None = None, events: Sequence[CapturedEvent] = ()
    ) -> None:
        self.execute = execute
        self.insert = insert
        self.known = known_forgotten(execute)
        self.projects: dict[str, int] = {}
        self.sessions: dict[tuple[str, str, int], int] = {}
        self.touched: dict[int, float] = {}
        self.raised: dict[int, tuple[int, float]] = {}  # session id: (event id, now)
        # The tool calls asked about, and (tool_use_id, host, kind) of each of their runs stored.
        self.asked = frozenset(call for call in map(_tool_call, events) if call is not None)
        self.runs = stored_runs(execute, sorted(self.asked)) if self.asked else set()

    def _run_stored(self, event: CapturedEvent) -> bool:
        call = _tool_call(event)
        if call is None:
            return False
        if call in self.asked:
            return (call, event.host, event.kind) in self.runs
        return run_stored(self.execute, event)

    def store(self, event: CapturedEvent) -> int | None:
        """store_event's answer: the new event's id, or None when it was stored already."""
        execute = self.execute
        if self._run_stored(event):
            if event.kind == "command":
                store_written_edit(event, self.store)
            return None
        if self.known:
            event = mask_known(event, self.known)
        project_id = self.projects.get(event.project_root)
        if project_id is None:
            project_id = self.projects[event.project_root] = upsert_project(execute, event)
        session = (event.host, event.session_key, project_id)
        session_id = self.sessions.get(session)
        if session_id is None:
            session_id = self.sessions[session] = upsert_session(execute, event, project_id)
        params = event_params(event, project_id, session_id)
        if self.insert is None:
            rows = execute(INSERT_EVENT, params)
            new_id = int(rows[0][0]) if rows else None
        else:
            new_id = self.insert(INSERT_EVENT_WITHOUT_ID, params)
        if new_id is not None:
            self._stored(event, new_id, session_id)
        if event.kind == "command":
            # After the command's own task is noted: its edit, stored next, raises it further.
            # Even when the command was stored already: importing again adds what it edited.
            store_written_edit(event, self.store)
        return new_id

    def _stored(self, event: CapturedEvent, new_id: int, session_id: int) -> None:
        call = _tool_call(event)
        if call in self.asked:
            self.runs.add((call, event.host, event.kind))
        self.touched[session_id] = max(self.touched.get(session_id, event.event_at), event.event_at)
        if event.kind != "session_start":
            raised = self.raised.get(session_id)
            if raised is not None and raised[1] != event.captured_at:
                raise_task(self.execute, session_id, *raised)
            self.raised[session_id] = (new_id, event.captured_at)

    def finish(self) -> None:
        for session_id, event_at in self.touched.items():
            self.execute(TOUCH_SESSION, {"session_id": session_id, "event_at": event_at})
        for session_id, (event_id, now) in self.raised.items():
            raise_task(self.execute, session_id, event_id, now)
        self.touched.clear()
        self.raised.clear()


def _tool_call(event: CapturedEvent) -> str | None:
    """The tool call run_stored looks for the event as, if it looks for one."""
    return event.tool_use_id if event.host in KEYED_BY_TOOL_CALL else None


def stored_runs(execute: Execute, tool_use_ids: Sequence[str]) -> set[tuple[str, str, str]]:
    """(tool_use_id, host, kind) of every stored event of these tool calls."""
    runs: set[tuple[str, str, str]] = set()
    for start in range(0, len(tool_use_ids), CALLS_PER_READ):
        chunk = tool_use_ids[start : start + CALLS_PER_READ]
        names = ", ".join(f":c{index}" for index in range(len(chunk)))
        params = {f"c{index}": value for index, value in enumerate(chunk)}
        rows = execute(STORED_TOOL_CALLS.format(names), params)
        runs.update((str(row[0]), str(row[1]), str(row[2])) for row in rows)
    return runs
