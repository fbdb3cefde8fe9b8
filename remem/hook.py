"""`remem-hook`: one payload on stdin -> one stored (or spooled, or dropped) event.

The hot path of every agent tool call. Stdlib only (no SQLAlchemy), no git subprocess, no
migration, never creates a remem home. Exit 0 whenever the event was stored, spooled or dropped
with its reason recorded; exit 1 with one stderr line only when nothing could be saved (but 0
when a SessionStart digest was printed all the same); never 2, which would block the agent.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time

from remem import paths
from remem.capture.hosts import (
    before_event,
    build_event,
    cut_output,
    detect_host,
    payload_excerpt,
)
from remem.capture.store import drop_record, schema_revision, store_drop, store_event
from remem.config import Settings, load_settings, read_settings
from remem.db import sqlite as sqlite_settings
from remem.record.event import HOSTS, CapturedEvent, Dropped
from remem.record.identity import locate
from remem.record.output import without_lone_surrogates
from remem.record.sha import sha256_hex

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, BinaryIO

    Within = Callable[[sqlite3.Connection], None]

# Above MAX_PAYLOAD_BYTES a payload is kept only once its output is cut back under it; above
# MAX_READ_BYTES it is not even parsed, and is dropped as too large.
MAX_PAYLOAD_BYTES = 1024 * 1024
MAX_READ_BYTES = 64 * 1024 * 1024
_fast_exit = False  # set by run(): the process ends with os._exit straight after main()
_kept: sqlite3.Connection | None = None  # the connection _write left open, for the advice
DIGEST_WAIT_S = 0.5
NOTICE_CHARS = 300  # the config's problems, as the digest's first line says them
USAGE = "usage: remem-hook [--host claude-code|codex|cursor|generic] < payload.json"


class _Unavailable(Exception):
    """The database cannot take the record now; it goes to the spool with this reason."""


class _Invalid(Exception):
    """The database refused what the record holds (a constraint, a value it cannot store):
    it would refuse it from the spool too, so the payload is dropped with this detail."""


def _parse_args(argv: list[str]) -> tuple[str | None, list[str]]:
    """The host --host names, and a line for each argument not understood. A wrong argument
    must not cost the event: the hook goes on, detecting the host from the payload."""
    host, problems, index = None, [], 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        if arg == "--host" or arg.startswith("--host="):
            if arg == "--host":
                value = argv[index] if index < len(argv) else ""
                index += 1
            else:
                value = arg.split("=", 1)[1]
            host = value if value in HOSTS else None
            if host is None:
                problems.append(
                    f"remem-hook: unknown host {value!r} for --host, ignored (accepted: "
                    f"{', '.join(HOSTS)}); the host is detected from the payload"
                )
        elif arg not in ("-h", "--help"):
            problems.append(
                f"remem-hook: unknown argument {arg!r}, ignored "
                f"(accepted: --host {'|'.join(HOSTS)}, --help)"
            )
    return host, problems


def _read(source: BinaryIO) -> tuple[bytes, int]:
    """The payload and its true size. Past MAX_READ_BYTES only its first bytes are kept; the
    rest is drained all the same, so the agent never sees a broken pipe."""
    raw = source.read(MAX_PAYLOAD_BYTES + 1)
    if len(raw) <= MAX_PAYLOAD_BYTES:
        return raw, len(raw)
    chunks, size = [raw], len(raw)
    while chunk := source.read(1 << 20):
        size += len(chunk)
        if size <= MAX_READ_BYTES:
            chunks.append(chunk)
    return (raw if size > MAX_READ_BYTES else b"".join(chunks)), size


def _decode(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise Dropped("empty", "no payload on stdin")
    try:
        payload = json.loads(raw)
    except RecursionError:
        raise Dropped("not_json", "nested too deeply") from None
    except ValueError as exc:
        raise Dropped("not_json", type(exc).__name__) from None
    if not isinstance(payload, dict):
        raise Dropped("not_object", type(payload).__name__)
    if b"\\ud" in raw or b"\\uD" in raw:  # only an escape can carry a lone surrogate
        cleaned: dict[str, Any] = without_lone_surrogates(payload)
        return cleaned
    return payload


def _write(
    url: str, lock_timeout_s: float, kind: str, body: Any, within: Within | None = None
) -> None:
    """Store one record in one write transaction, with `within(connection)` run in it last:
    `within` must not raise."""
    path = paths.sqlite_path(url)
    if path is None:
        raise _Unavailable("database is not a SQLite file")
    try:
        connection = sqlite_settings.connect(path, lock_timeout_s, hot_path=True)
    except sqlite3.Error as exc:
        raise _Unavailable(f"cannot open database: {exc}") from None
    try:
        execute = sqlite_settings.executor(connection)
        connection.execute("BEGIN IMMEDIATE")
        if schema_revision(execute) != sqlite_settings.schema_head():
            raise _Unavailable("schema is not at this remem's revision")
        if kind == "event":
            store_event(execute, body)
        else:
            store_drop(execute, body)
        if within is not None:
            within(connection)
        if os.environ.get("REMEM_TEST_CRASH_AT") == "hook_write":  # the crash tests' switch
            os.kill(os.getpid(), 9)
        connection.execute("COMMIT")
    except (sqlite3.IntegrityError, sqlite3.DataError, OverflowError) as exc:
        connection.close()
        raise _Invalid(f"{type(exc).__name__}: {exc}") from None
    except sqlite3.Error as exc:
        connection.close()
        raise _Unavailable(f"database error: {exc}") from None
    except BaseException:
        connection.close()
        raise
    # When run() exits right after, the connection is left open on purpose: closing the last
    # connection checkpoints the WAL, which would cost every hook a millisecond. The commit is
    # already durable in the WAL, and the worker's connections checkpoint it. Past its bound the
    # WAL is emptied that way.
    global _kept
    if _fast_exit and not sqlite_settings.wal_past_bound(path):
        _kept = connection
    else:
        connection.close()


def save(
    home: str,
    kind: str,
    body: Any,
    settings: Settings | None = None,
    within: Within | None = None,
) -> str:
    """Store or spool one record; returns where it went. Raises OSError if neither worked.
    `within(connection)` runs in the record's write transaction when it is stored."""
    try:
        settings = settings or load_settings(home=home)
    except Exception as exc:  # a broken config must not lose the event
        reason = f"settings unreadable: {exc}"
    else:
        try:
            _write(settings.database_url, settings.lock_timeout_s, kind, body, within)
            return "stored"
        except _Unavailable as exc:
            reason = str(exc)
        except _Invalid as exc:
            if kind == "event":
                save(home, "drop", _invalid_drop(body, str(exc)), settings)
                return "dropped"
            reason = f"invalid record: {exc}"  # a refused drop: the spool's dead letters keep it
    return _spool(home, kind, body, reason, settings.spool_max_bytes if settings else None)


def _invalid_drop(event: CapturedEvent, detail: str) -> dict[str, Any]:
    payload = event.payload.encode("utf-8", "replace")
    return drop_record(
        "invalid_record",
        detail,
        event.host,
        event.hook_event,
        len(payload),
        sha256_hex(payload),
        event.captured_at,
        payload_excerpt(payload),
    )


def _spool(home: str, kind: str, body: Any, reason: str, max_bytes: int | None) -> str:
    """The fallback: append the record to the spool. Raises OSError if that fails too."""
    from remem.capture import spool  # the fallback path only

    record_body = body.as_dict() if isinstance(body, CapturedEvent) else dict(body)
    record = {"type": kind, kind: record_body, "spooled_at": time.time(), "spool_reason": reason}
    try:
        spool.append(os.path.join(home, paths.SPOOL_DIR), record, max_bytes)
    except spool.SpoolFull:
        return "dropped"
    return "spooled"


def capture(
    raw: bytes, host: str | None, now: float, size_bytes: int | None = None
) -> tuple[str, Any]:
    """('event', CapturedEvent) or ('drop', drop record) for one raw payload; size_bytes is
    the payload's true size when only its start was read."""
    size = len(raw) if size_bytes is None else size_bytes
    try:
        if size > MAX_READ_BYTES:
            raise Dropped("too_large", f"over {MAX_READ_BYTES} bytes: not read")
        payload = _decode(raw)
        host = host or detect_host(payload)
        if host is None:
            raise Dropped("unknown_host", "payload matches no known host shape")
        cut = _cut_oversized(payload, host) if size > MAX_PAYLOAD_BYTES else 0
        return "event", build_event(payload, host, now, locate, cut)
    except Dropped as dropped:
        reason, detail = dropped.reason, dropped.detail
        drop_host, hook_event = dropped.host or host, dropped.hook_event
    except Exception as exc:  # a bug here must never break the agent: record it and go on
        reason, detail, drop_host, hook_event = "internal_error", type(exc).__name__, host, None
    digest, excerpt = sha256_hex(raw), payload_excerpt(raw)
    return "drop", drop_record(reason, detail, drop_host, hook_event, size, digest, now, excerpt)


def _cut_oversized(payload: dict[str, Any], host: str) -> int:
    """Cut the output of a payload over MAX_PAYLOAD_BYTES; what it runs and how it ended are
    kept. Raises Dropped when it is still over the cap without most of its output."""
    cut = cut_output(payload, host)
    rest = json.dumps(payload, ensure_ascii=False).encode("utf-8", "replace")
    if cut == 0 or len(rest) > MAX_PAYLOAD_BYTES:
        detail = f"over {MAX_PAYLOAD_BYTES} bytes, even with its output cut"
        raise Dropped("too_large", detail, host, payload.get("hook_event_name"))
    return cut


def _cut_note(event: CapturedEvent, raw: bytes, size: int, now: float) -> dict[str, Any]:
    """The drop ledger's record that an oversized payload was kept with its output cut: where
    a user looks for what the hook did not store whole."""
    detail = f"event kept with its command and outcome; output cut from a {size}-byte payload"
    digest, excerpt = sha256_hex(raw), payload_excerpt(raw)
    note = drop_record(
        "output_cut", detail, event.host, event.hook_event, size, digest, now, excerpt
    )
    note["idempotency_key"] = f"output_cut:{event.idempotency_key}"  # once per event
    return note


def main(argv: list[str] | None = None, stdin: BinaryIO | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    source = sys.stdin.buffer if stdin is None else stdin
    if "-h" in args or "--help" in args:
        print(USAGE)
        print("Reads one hook payload (JSON) on stdin and records it in the remem home.")
        print("Example: remem-hook --host claude-code < payload.json")
        return 0
    host, problems = _parse_args(args)
    for problem in problems:
        sys.stderr.write(problem + "\n")
    home = paths.resolve_home()
    if not os.path.isdir(home):
        sys.stderr.write(f"remem-hook: no remem home at {home}: run `remem init`\n")
        return 1
    owner = paths.foreign_owner(home)
    if owner is not None:
        sys.stderr.write(f"remem-hook: {home} belongs to another user (uid {owner}); not used\n")
        return 1
    raw, size = _read(source)
    now = time.time()
    if b"PreToolUse" in raw:
        before = _before(home, raw, host, now)
        if before is not None:  # a command about to run: nothing is stored
            if before:
                _emit(before)
            return 0
    kind, body = capture(raw, host, now, size)
    settings, wrong, notice = _settings(home)
    # Where the database setting itself is in doubt, the event waits in the spool for the
    # worker, which reads it once the file is fixed: no second memory is started.
    doubt = settings is not None and bool(wrong) and _database_in_doubt(settings, wrong)
    storing = None if doubt else settings
    output = None
    # A SessionStart reads its digest in the event's own write transaction, and records there
    # what the printed page held: one commit for both.
    digests: list[str | None] = []
    within = None
    if kind == "event" and body.kind == "session_start" and storing is not None:
        within = _digest_within(storing, body, digests)
    try:
        saved = save(home, kind, body, storing, within)
    except OSError as exc:
        sys.stderr.write(f"remem-hook: could not store or spool the event: {exc.strerror}\n")
        return _digest_regardless(settings, notice, kind, body)
    except Exception as exc:  # a bug must cost the agent nothing: keep the record in the spool
        return _spool_after_bug(home, kind, body, exc)
    if kind == "event" and size > MAX_PAYLOAD_BYTES and saved != "dropped":
        from contextlib import suppress  # oversized payloads only

        with suppress(Exception):  # the event is saved: the note of its cut is a courtesy
            save(home, "drop", _cut_note(body, raw, size, now), settings)
    if kind == "event" and body.kind == "session_start" and settings is not None:
        # Printed last: a stdout the agent closed, or one that cannot encode the digest, must
        # not cost the event. An event that was not stored here, or whose transaction could
        # not read it (a full disk fails the read with the write), reads it on its own.
        text = digests[0] if digests and digests[0] else _read_digest(settings, body)
        output = _shaped(body, notice, text)
    if saved == "stored" and settings is not None and _advisable(kind, body):
        # After the event is stored: advice is a courtesy, the event is not.
        output = _advise_failure(settings, body, now)
    if output:
        _emit(output)
    return 0


def _digest_regardless(settings: Settings | None, notice: str | None, kind: str, body: Any) -> int:
    """A SessionStart that could not be saved (a full disk) still prints its digest, read from
    what the database holds, and exits 0 so that the host reads it."""
    if kind == "event" and body.kind == "session_start" and settings is not None:
        output = _shaped(body, notice, _read_digest(settings, body))
        if output:
            _emit(output)
            return 0
    return 1


def _database_in_doubt(settings: Settings, problems: Sequence[Any]) -> bool:
    """Whether a broken config.toml may name another database than the default: its
    `database.url` is wrong, or the file cannot be read as TOML and mentions a database."""
    if any(problem.key == "database.url" for problem in problems):
        return True
    if all(problem.key is not None for problem in problems):
        return False
    try:
        with open(settings.config_file, encoding="utf-8", errors="replace") as handle:
            return "database" in handle.read()
    except OSError:
        return True


def _settings(home: str) -> tuple[Settings | None, Sequence[Any], str | None]:
    """The settings, with its default for each one config.toml gets wrong, those problems,
    and the one line that says so, written once on stderr here and put at the top of a
    SessionStart digest: a broken config never switches the memory off in silence. None when
    nothing can be read (save() then spools with the reason)."""
    try:
        settings, problems = read_settings(home=home)
    except Exception:
        return None, (), None
    if not problems:
        return settings, problems, None
    said = "; ".join(each.brief for each in problems)
    if len(said) > NOTICE_CHARS:
        said = said[: NOTICE_CHARS - 1] + "…"
    notice = f"remem: {said} — using defaults; run remem doctor"
    sys.stderr.write(notice + "\n")
    return settings, problems, notice


def _advisable(kind: str, body: Any) -> bool:
    """A failed command on a host that reads what a failure hook prints (README: Advice)."""
    return (
        kind == "event"
        and body.host == "claude-code"
        and body.kind == "command"
        and body.outcome == "failure"
    )


def _advise_failure(settings: Settings, event: CapturedEvent, now: float) -> str | None:
    """What is known of this failure, recorded as given to its session, in Claude Code's
    shape; None when nothing is known, or all of it was said to this session already."""
    from remem.agent import advice  # failures only

    text = _advice(settings, lambda execute: advice.after_failure(execute, event, now))
    return _context(event.hook_event, text) if text else None


def _before(home: str, raw: bytes, host: str | None, now: float) -> str | None:
    """For a `PreToolUse` payload (remem hooks install --advice-before): what to say before
    the command runs, or "" for nothing; None for any other payload, which is captured.
    Never blocks: whatever goes wrong, nothing is said."""
    try:
        payload = _decode(raw)
        host = host or detect_host(payload)
        event = before_event(payload, host, now, locate) if host else None
    except Exception:  # not a payload this reads: capture decides what it is
        return None
    if event is None:
        return None
    from remem.agent import advice  # PreToolUse only

    try:
        settings, _problems = read_settings(home=home)
    except Exception:
        return ""
    text = _advice(settings, lambda execute: advice.before_command(execute, event, now))
    return _context("PreToolUse", text) if text else ""


def _advice(settings: Settings, advise: Any) -> str | None:
    """`advise(execute)` on the connection the event was written on (or a new one); None
    when the database cannot be read now or advice fails: it is a courtesy, never a cost."""
    path = paths.sqlite_path(settings.database_url)
    if path is None:
        return None
    try:
        connection = _kept or sqlite_settings.connect(path, settings.lock_timeout_s, hot_path=True)
    except sqlite3.Error:
        return None
    try:
        execute = sqlite_settings.executor(connection)
        if connection is not _kept and schema_revision(execute) != sqlite_settings.schema_head():
            return None
        text: str | None = advise(execute)
        return text
    except Exception:
        return None
    finally:
        if not _fast_exit:
            connection.close()


def _context(hook_event: str, text: str) -> str:
    """Claude Code's shape for context a hook adds for the model."""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": hook_event, "additionalContext": text}}
    )


def _spool_after_bug(home: str, kind: str, body: Any, exc: Exception) -> int:
    reason = f"internal error: {type(exc).__name__}"
    try:
        _spool(home, kind, body, reason, None)
    except Exception:
        sys.stderr.write(f"remem-hook: could not store or spool the event ({reason})\n")
        return 1
    return 0


def _digest_within(settings: Settings, event: CapturedEvent, digests: list[str | None]) -> Within:
    """What the event's write transaction runs for a SessionStart: the digest read on its
    connection, appended to `digests`, and what its printed page held recorded for the
    session's ledger (remem.agent.usage). Neither may cost the event: a failure costs the
    digest or the record, and the transaction goes on."""

    def within(connection: sqlite3.Connection) -> None:
        pages = _digest_pages(settings, event, connection)
        digests.append(pages[0][0] if pages else None)
        if pages and pages[0][1]:
            from remem.agent.usage import SHOWN_INSERT, shown_params  # imported with the digest

            params = shown_params(event.idempotency_key, pages[0][1], 1, event.captured_at)
            try:
                connection.execute(SHOWN_INSERT, params)
            except sqlite3.Error:  # undone alone: the event's insert and the digest stay
                return

    return within


def _read_digest(settings: Settings, event: CapturedEvent) -> str | None:
    """The SessionStart digest of an event that was not stored here, on a read-only
    connection. None when the database cannot be read within half a second, or holds nothing
    for this project. On a full disk a reader cannot make the WAL's shared-memory file (an I/O
    error, not a lock): the database is then read as its main file alone holds it, all of it
    once the last connection closed and checkpointed the WAL (a connection still open would
    have made that file)."""
    path = paths.sqlite_path(settings.database_url)
    if path is None:
        return None
    for immutable in (False, True):
        try:
            connection = sqlite_settings.connect_read_only(path, DIGEST_WAIT_S, immutable)
        except sqlite3.Error as exc:
            if _disk_refused(exc):
                continue
            return None
        try:
            pages = _digest_pages(settings, event, connection, raising=not immutable)
        except sqlite3.Error as exc:
            if _disk_refused(exc):
                continue
            return None
        finally:
            connection.close()
        return pages[0][0] if pages else None
    return None


def _disk_refused(exc: sqlite3.Error) -> bool:
    name = getattr(exc, "sqlite_errorname", "")
    return isinstance(name, str) and name.startswith(("SQLITE_IOERR", "SQLITE_FULL"))


def _digest_pages(
    settings: Settings, event: CapturedEvent, connection: sqlite3.Connection, raising: bool = False
) -> list[tuple[str, list[Any]]]:
    """The digest's pages, each with what it holds; none when nothing is known of the project
    or the read fails (the digest is a courtesy), unless `raising` a database error."""
    from remem.agent.context import read_context  # SessionStart only
    from remem.record.identity import spelt_root

    try:
        context = read_context(
            sqlite_settings.executor(connection),
            event.project_root,
            event.branch,
            event.directory,
            settings.inherit_from,
            spelt_root(event.cwd, event.directory) or None,
        )
        return context.pages_held(settings.context_max_chars, settings.context_max_lines)
    except sqlite3.Error:
        if raising:
            raise
        return []
    except Exception:
        return []


def _shaped(event: CapturedEvent, notice: str | None, digest: str | None) -> str | None:
    """The digest, below the config's notice when there is one, in the host's output shape;
    None when there is neither."""
    text = "\n".join(part for part in (notice, digest) if part)
    if not text:
        return None
    if event.host == "codex":
        return json.dumps(
            {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
        )
    if event.host == "cursor":
        return json.dumps({"additional_context": text})
    return text


def _emit(output: str) -> None:
    """Print the digest as UTF-8, as hosts read it, whatever PYTHONIOENCODING says. A closed
    pipe or a failing stdout costs one stderr line, never the exit code."""
    text = output if output.endswith("\n") else output + "\n"
    stream = sys.stdout
    try:
        buffer = getattr(stream, "buffer", None)
        if buffer is None:
            stream.write(text)
            stream.flush()
        else:
            stream.flush()
            buffer.write(text.encode("utf-8", "replace"))
            buffer.flush()
    except (OSError, UnicodeError, ValueError, AttributeError) as exc:
        _silence_stdout()
        try:
            sys.stderr.write(f"remem-hook: could not print the digest: {type(exc).__name__}\n")
        except (OSError, ValueError, AttributeError):
            return  # stderr is gone too: nothing left to tell


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null, so the flush at exit cannot fail on what is still buffered."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def run() -> None:
    """Console-script entry: skip interpreter teardown, which costs more than the capture."""
    global _fast_exit
    _fast_exit = True
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed stream: nothing left to say
            continue
    os._exit(code)


if __name__ == "__main__":
    run()
