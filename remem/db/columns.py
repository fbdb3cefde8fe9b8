"""The columns of a captured event, declared once: the schema builds its table from them, and
the hook's INSERT, the spool's checks and shipping's SELECT are written from them. Stdlib only:
the hook imports this."""

from __future__ import annotations

TEXT, INTEGER, REAL = "text", "integer", "real"
JSON_LIST = "json_list"  # text holding a JSON list of strings (an event's files)

# name: (kind, required). The order is the table's. The id column is the database's own.
EVENT_COLUMN_KINDS = {
    "idempotency_key": (TEXT, True),
    "session_id": (INTEGER, True),
    "project_id": (INTEGER, True),
    "host": (TEXT, True),
    "hook_event": (TEXT, True),
    "kind": (TEXT, True),
    "tool_name": (TEXT, False),
    "tool_use_id": (TEXT, False),
    "command": (TEXT, False),
    "outcome": (TEXT, False),
    "exit_code": (INTEGER, False),
    "exit_code_source": (TEXT, False),
    "error_excerpt": (TEXT, False),
    # The run's output, redacted: its head and tail when long (summaries are at the end).
    "output_excerpt": (TEXT, False),
    "branch": (TEXT, False),
    "cwd": (TEXT, True),
    # cwd relative to its work tree's root ('.' at the root); NULL on events captured before
    # it was recorded, until `remem procedures rebuild` fills it in.
    "directory": (TEXT, False),
    "files": (JSON_LIST, False),
    "change_hash": (TEXT, False),
    "transcript_path": (TEXT, False),
    "payload": (TEXT, True),
    "event_at": (REAL, True),
    "captured_at": (REAL, True),
    # The time the payload claimed, when it was not usable (not finite, negative, or in the
    # future) and event_at was clamped to the capture time instead.
    "event_at_reported": (TEXT, False),
}
EVENT_COLUMNS = tuple(EVENT_COLUMN_KINDS)

# A captured event, before it is stored, names its session and project by key and root; the
# row holds their ids.
BY_NAME = {"session_id": "session_key", "project_id": "project_root"}
EVENT_FIELDS = tuple(BY_NAME.get(name, name) for name in EVENT_COLUMNS)


def names(columns: tuple[str, ...], prefix: str = "") -> str:
    """`a, b, c`, or `e.a, e.b, e.c` with a prefix: a SELECT's or an INSERT's column list."""
    return ", ".join(prefix + name for name in columns)


def insert(table: str, columns: tuple[str, ...]) -> str:
    """INSERT INTO table (columns) VALUES (:columns), each value a named parameter."""
    return f"INSERT INTO {table} ({names(columns)}) VALUES ({names(columns, ':')})"
