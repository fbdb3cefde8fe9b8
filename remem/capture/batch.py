"""Storing many events in one transaction (`remem import`), each as store_event would store it.
Stdlib only, like the rest of capture; the hook, which stores one event, does not import it."""

from __future__ import annotations

from remem.capture.store import (
    INSERT_EVENT,
    KEYED_BY_TOOL_CALL,
    TOUCH_SESSION,
    event_params,
    known_forgotten,
    mask_known,
    raise_task,
    run_stored,
    store_written_edit,
    upsert_project,
    upsert_session,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from remem.db.snapshot import Execute

    Insert = Callable[[str, dict[str, object]], int | None]
    from remem.record.event import CapturedEvent

# INSERT_EVENT for a driver that tells the new row's id itself (transcripts.importer):
# RETURNING costs SQLite a temporary table for every statement.
INSERT_EVENT_WITHOUT_ID = INSERT_EVENT.removesuffix(" RETURNING id")
# The stored runs of many tool calls at once (store.SAME_TOOL_CALL's, for each of them).
STORED_TOOL_CALLS = "SELECT tool_use_id, host, kind FROM captured_events WHERE tool_use_id IN ({})"
CALLS_PER_READ = 500


class Batch:
    """Many events stored in one transaction, each as store_event would store it, with what the
    events repeat done once: the forgotten words read, each project's and session's id asked
    for, each session touched at the end with its latest time. A session's task is raised once
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
        if event.kind == "command":
            store_written_edit(event, self.store)
        if new_id is None:
            return None
        call = _tool_call(event)
        if call in self.asked:
            self.runs.add((call, event.host, event.kind))
        self.touched[session_id] = max(self.touched.get(session_id, event.event_at), event.event_at)
        if event.kind != "session_start":
            raised = self.raised.get(session_id)
            if raised is not None and raised[1] != event.captured_at:
                raise_task(execute, session_id, *raised)
            self.raised[session_id] = (new_id, event.captured_at)
        return new_id

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
