"""`remem-hook`: one payload on stdin -> one stored (or spooled, or dropped) event.

The hot path of every agent tool call. Stdlib only (no SQLAlchemy), no git subprocess, no
migration, never creates a remem home. Exit 0 whenever the event was stored, spooled or dropped
with its reason recorded; exit 1 with one stderr line only when nothing could be saved; never 2,
which would block the agent.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time

from remem import paths
from remem.capture.event import HOSTS, CapturedEvent, Dropped
from remem.capture.hosts import build_event, detect_host, sha256_hex
from remem.capture.identity import locate
from remem.capture.store import drop_record, schema_revision, store_drop, store_event
from remem.db import sqlite as sqlite_settings
from remem.procedures import digest

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, BinaryIO

MAX_PAYLOAD_BYTES = 1024 * 1024
_fast_exit = False  # set by run(): the process ends with os._exit straight after main()
DIGEST_WAIT_S = 0.5
USAGE = "usage: remem-hook [--host claude-code|codex|cursor|generic] < payload.json"


class _Unavailable(Exception):
    """The database cannot take the record now; it goes to the spool with this reason."""


class _Invalid(Exception):
    """The database refused what the record holds (a constraint, a value it cannot store):
    it would refuse it from the spool too, so the payload is dropped with this detail."""


def _parse_args(argv: list[str]) -> str | None:
    host = None
    for index, arg in enumerate(argv):
        if arg.startswith("--host="):
            host = arg.split("=", 1)[1]
        elif arg == "--host" and index + 1 < len(argv):
            host = argv[index + 1]
    return host if host in HOSTS else None


def _decode(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise Dropped("too_large", f"over {MAX_PAYLOAD_BYTES} bytes")
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
        cleaned: dict[str, Any] = _without_lone_surrogates(payload)
        return cleaned
    return payload


def _without_lone_surrogates(value: Any) -> Any:
    """Lone surrogates are valid JSON but not UTF-8: they could be stored nowhere."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    return value


class _HookSettings:
    """The few settings the hook needs, read from config.toml only when the file sets one of
    them: tomllib alone would cost the hook a third of its time budget."""

    KEYS = ("url", "lock_timeout", "spool_max_bytes", "max_chars", "max_lines", "inherit_from")

    def __init__(self, home: str) -> None:
        self.database_url = os.environ.get("REMEM_DATABASE_URL") or paths.default_database_url(home)
        self.lock_timeout_s = 1.0
        self.spool_max_bytes = 256 * 1024 * 1024
        self.max_chars = digest.DEFAULT_MAX_CHARS
        self.max_lines = digest.DEFAULT_MAX_LINES
        self.inherit_from: Sequence[str] = digest.DEFAULT_INHERIT_FROM
        overridden = any(
            name.startswith(("REMEM_CAPTURE_", "REMEM_CONTEXT_")) for name in os.environ
        )
        if overridden or _config_mentions(home, self.KEYS):
            from remem.config import load_settings

            settings = load_settings()
            self.database_url, self.lock_timeout_s = settings.database_url, settings.lock_timeout_s
            self.max_chars, self.max_lines = settings.context_max_chars, settings.context_max_lines
            self.inherit_from = settings.inherit_from
            self.spool_max_bytes = settings.spool_max_bytes


def _config_mentions(home: str, keys: tuple[str, ...]) -> bool:
    try:
        with open(paths.config_path(home), encoding="utf-8", errors="replace") as handle:
            lines = handle.read(65536).splitlines()
    except OSError:
        return False
    return any(line.strip().startswith(keys) for line in lines)


def _write(url: str, lock_timeout_s: float, kind: str, body: Any) -> None:
    path = paths.sqlite_path(url)
    if path is None:
        raise _Unavailable("database is not a SQLite file")
    try:
        connection = sqlite_settings.connect(path, lock_timeout_s, hot_path=True)
    except sqlite3.Error as exc:
        raise _Unavailable(f"cannot open database: {exc}") from None
    try:

        def execute(sql: str, params: dict[str, Any]) -> Sequence[Sequence[Any]]:
            return connection.execute(sql, params).fetchall()

        connection.execute("BEGIN IMMEDIATE")
        if schema_revision(execute) != sqlite_settings.SCHEMA_HEAD:
            raise _Unavailable("schema is not at this remem's revision")
        if kind == "event":
            store_event(execute, body)
        else:
            store_drop(execute, body)
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
    # already durable in the WAL, and the worker's connections checkpoint it.
    if not _fast_exit:
        connection.close()


def save(home: str, kind: str, body: Any, settings: _HookSettings | None = None) -> str:
    """Store or spool one record; returns where it went. Raises OSError if neither worked."""
    try:
        settings = settings or _HookSettings(home)
    except Exception as exc:  # a broken config must not lose the event
        reason = f"settings unreadable: {exc}"
    else:
        try:
            _write(settings.database_url, settings.lock_timeout_s, kind, body)
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
    )


def _spool(home: str, kind: str, body: Any, reason: str, max_bytes: int | None) -> str:
    """The fallback: append the record to the spool. Raises OSError if that fails too."""
    from remem.capture import spool  # the fallback path only

    record_body = body.as_dict() if isinstance(body, CapturedEvent) else body
    record = {"type": kind, kind: record_body, "spooled_at": time.time(), "spool_reason": reason}
    try:
        spool.append(os.path.join(home, paths.SPOOL_DIR), record, max_bytes)
    except spool.SpoolFull:
        return "dropped"
    return "spooled"


def capture(raw: bytes, host: str | None, now: float) -> tuple[str, Any]:
    """('event', CapturedEvent) or ('drop', drop record) for one raw payload."""
    try:
        payload = _decode(raw)
        host = host or detect_host(payload)
        if host is None:
            raise Dropped("unknown_host", "payload matches no known host shape")
        return "event", build_event(payload, host, now, locate)
    except Dropped as dropped:
        reason, detail = dropped.reason, dropped.detail
        drop_host, hook_event = dropped.host or host, dropped.hook_event
    except Exception as exc:  # a bug here must never break the agent: record it and go on
        reason, detail, drop_host, hook_event = "internal_error", type(exc).__name__, host, None
    digest = sha256_hex(raw)
    return "drop", drop_record(reason, detail, drop_host, hook_event, len(raw), digest, now)


def main(argv: list[str] | None = None, stdin: BinaryIO | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    source = sys.stdin.buffer if stdin is None else stdin
    if "-h" in args or "--help" in args:
        print(USAGE)
        print("Reads one hook payload (JSON) on stdin and records it in the remem home.")
        print("Example: remem-hook --host claude-code < payload.json")
        return 0
    home = paths.resolve_home()
    if not os.path.isdir(home):
        sys.stderr.write(f"remem-hook: no remem home at {home}: run `remem init`\n")
        return 1
    owner = paths.foreign_owner(home)
    if owner is not None:
        sys.stderr.write(f"remem-hook: {home} belongs to another user (uid {owner}); not used\n")
        return 1
    raw = source.read(MAX_PAYLOAD_BYTES + 1)
    kind, body = capture(raw, _parse_args(args), time.time())
    if len(raw) > MAX_PAYLOAD_BYTES:
        # Drain the rest so the agent never sees a broken pipe, and record the true size.
        while chunk := source.read(1 << 20):
            body["size_bytes"] += len(chunk)
    try:
        settings: _HookSettings | None = _HookSettings(home)
    except Exception:  # save() spools with the reason; the digest is skipped
        settings = None
    output = None
    if kind == "event" and body.kind == "session_start" and settings is not None:
        # Read before the write, printed after it: a stdout the agent closed, or one that
        # cannot encode the digest, must not cost the event.
        output = _read_digest(settings, body)
    try:
        save(home, kind, body, settings)
    except OSError as exc:
        sys.stderr.write(f"remem-hook: could not store or spool the event: {exc.strerror}\n")
        return 1
    except Exception as exc:  # a bug must cost the agent nothing: keep the record in the spool
        return _spool_after_bug(home, kind, body, exc)
    if output:
        _emit(output)
    return 0


def _spool_after_bug(home: str, kind: str, body: Any, exc: Exception) -> int:
    reason = f"internal error: {type(exc).__name__}"
    try:
        _spool(home, kind, body, reason, None)
    except Exception:
        sys.stderr.write(f"remem-hook: could not store or spool the event ({reason})\n")
        return 1
    return 0


def _read_digest(settings: _HookSettings, event: CapturedEvent) -> str | None:
    """The SessionStart digest, read-only, in the host's output shape. None when the database
    cannot be read within half a second, or holds nothing for this project."""
    path = paths.sqlite_path(settings.database_url)
    if path is None:
        return None
    try:
        connection = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, timeout=DIGEST_WAIT_S, isolation_level=None
        )
        try:

            def execute(sql: str, params: dict[str, Any]) -> Sequence[Sequence[Any]]:
                return connection.execute(sql, params).fetchall()

            connection.execute("BEGIN")  # one snapshot for every statement of the digest
            entries = digest.read_entries(
                execute, event.project_root, event.branch, settings.inherit_from, event.directory
            )
            known_errors = digest.read_known_errors(execute, event.project_root)
        finally:
            connection.close()
        pages = digest.paginate(
            entries,
            digest.header_for(event.project_root, event.branch),
            settings.max_chars,
            settings.max_lines,
            known_errors,
        )
    except Exception:  # the digest is a courtesy: no failure of it may cost the event
        return None
    if not pages:
        return None
    if event.host == "codex":
        return json.dumps(
            {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": pages[0]}}
        )
    if event.host == "cursor":
        return json.dumps({"additional_context": pages[0]})
    return pages[0]


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
