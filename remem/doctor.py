"""`remem doctor`: every check a user would otherwise do by hand, each with a status and a fix."""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from remem.capture import spool
from remem.config import Settings, load_settings
from remem.db import migrate
from remem.db.engine import READ_ONLY, integrity_check, make_engine
from remem.errors import RememError
from remem.paths import foreign_owner
from remem.queue.heartbeats import list_heartbeats

OK, WARN, FAIL = "ok", "warn", "fail"
CLOCK_SKEW_S = 300.0


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""

    def as_json(self) -> dict[str, str]:
        return asdict(self)


def run_checks(environ: dict[str, str] | None = None, user_home: Path | None = None) -> list[Check]:
    """All checks in order; a check that cannot run (no home, no database) says why once."""
    try:
        settings = load_settings(environ)
    except RememError as exc:
        return [Check("config", FAIL, str(exc), "fix the named setting")]
    checks = [_home(settings), Check("config", OK, f"{settings.config_file} parses")]
    if checks[0].status == FAIL:
        return checks
    engine = make_engine(settings.database_url, busy_timeout_s=2)
    try:
        database = _database(settings, engine)
        checks.append(database)
        if database.status != FAIL:
            checks += [_schema(engine), _failed_tasks(engine), _worker(engine), _clock(engine)]
            checks.append(_codex_outcomes(engine))
    finally:
        engine.dispose()
    checks.append(_spool(settings))
    checks += list(_hooks(user_home or Path.home()))
    return checks


def _home(settings: Settings) -> Check:
    home = settings.home
    if not os.path.isdir(home):
        return Check("home", FAIL, f"no remem home at {home}", "run `remem init`")
    owner = foreign_owner(home)
    if owner is not None:
        return Check("home", FAIL, f"{home} belongs to uid {owner}", "use your own REMEM_HOME")
    mode = stat.S_IMODE(os.stat(home).st_mode)
    if mode & 0o077:
        return Check(
            "home",
            WARN,
            f"{home} is mode {mode:o}: others can read what agents ran",
            f"chmod 700 {home}",
        )
    return Check("home", OK, f"{home} (mode 700)")


def _database(settings: Settings, engine: Engine) -> Check:
    path = settings.sqlite_file
    if path is not None and not os.path.isfile(path):
        return Check("database", FAIL, f"{path} does not exist", "run `remem init`")
    try:
        verdict = integrity_check(engine)
    except Exception as exc:
        return Check(
            "database",
            FAIL,
            f"cannot read {path or 'the database'}: {exc}",
            "move the file aside and run `remem init`, or restore a backup",
        )
    if verdict != "ok":
        return Check("database", FAIL, f"integrity_check: {verdict}", "restore a backup")
    if path is not None and not os.access(path, os.W_OK):
        return Check("database", FAIL, f"{path} is read-only", f"chmod u+w {path}")
    return Check("database", OK, f"{path or 'database'} passes integrity_check")


def _schema(engine: Engine) -> Check:
    current, head = migrate.current_revision(engine), migrate.head_revision()
    if current != head:
        return Check("schema", FAIL, f"at {current or 'none'}, needs {head}", "remem db upgrade")
    return Check("schema", OK, f"at head ({head})")


def _scalar(engine: Engine, sql: str) -> Any:
    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        return connection.execute(text(sql)).scalar()


def _failed_tasks(engine: Engine) -> Check:
    failed = _scalar(engine, "SELECT count(*) FROM extraction_tasks WHERE status = 'failed'")
    if failed:
        with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
            latest = connection.execute(
                text(
                    "SELECT id, last_error FROM extraction_tasks WHERE status = 'failed' "
                    "ORDER BY updated_at DESC, id DESC LIMIT 1"
                )
            ).one()
        reason = (latest.last_error or "no error recorded")[:200]
        return Check(
            "tasks",
            FAIL,
            f"{failed} task(s) failed for good; latest, task {latest.id}: {reason}",
            "see `remem tasks --status failed`, then `remem tasks retry ID`",
        )
    return Check("tasks", OK, "no failed task")


def _worker(engine: Engine) -> Check:
    now = time.time()
    beats = list_heartbeats(engine)
    if not beats:
        pending = _scalar(engine, "SELECT count(*) FROM extraction_tasks WHERE status='pending'")
        status = WARN if pending else OK
        return Check(
            "worker",
            status,
            f"no daemon running; {pending} task(s) pending",
            "run `remem worker`, `remem service install` or `remem service cron`",
        )
    newest = beats[0]
    if newest.health(now) != "running":
        return Check(
            "worker",
            WARN,
            f"pid {newest.pid} last seen {now - newest.heartbeat_at:.0f}s ago",
            "restart it: `remem worker`",
        )
    return Check("worker", OK, f"running, pid {newest.pid}")


def _clock(engine: Engine) -> Check:
    newest = _scalar(engine, "SELECT max(captured_at) FROM captured_events")
    now = time.time()
    if newest is not None and newest > now + CLOCK_SKEW_S:
        return Check(
            "clock",
            FAIL,
            f"events were captured {newest - now:.0f}s in the future",
            "fix the system clock (NTP); ages and max_age depend on it",
        )
    return Check("clock", OK, "no event is from the future")


def _codex_outcomes(engine: Engine) -> Check:
    from remem.status import UNRESOLVED_CODEX

    with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
        count = connection.execute(
            text(UNRESOLVED_CODEX), {"before": time.time() - 86_400}
        ).scalar_one()
    if count:
        return Check(
            "codex",
            WARN,
            f"{count} Codex command(s) never got an outcome from their rollout file",
            "they never count; check that Codex writes rollouts (~/.codex/sessions)",
        )
    return Check("codex", OK, "every Codex outcome older than a day is resolved")


def _spool(settings: Settings) -> Check:
    directory = settings.spool_dir
    names = os.listdir(directory) if os.path.isdir(directory) else []
    waiting = sum(
        1 for n in names if n == spool.ACTIVE_FILE or n.startswith(spool.INGESTING_PREFIX)
    )
    dead = spool.DEAD_LETTER_FILE in names
    overflow = spool.read_overflow(directory).get("dropped", 0)
    if overflow:
        return Check(
            "spool",
            FAIL,
            f"{overflow} event(s) dropped: the spool was full",
            "start the worker so it drains the spool; raise capture.spool_max_bytes",
        )
    if dead:
        return Check(
            "spool",
            WARN,
            f"unreadable lines in {directory}/{spool.DEAD_LETTER_FILE}",
            "read them; delete the file once understood",
        )
    if waiting:
        return Check(
            "spool",
            WARN,
            "events are waiting in the spool",
            "run `remem spool ingest` or start the worker",
        )
    return Check("spool", OK, "empty")


HOOK_FILES: dict[str, Callable[[Path], Path]] = {
    "claude-code": lambda home: home / ".claude" / "settings.json",
    "codex": lambda home: home / ".codex" / "hooks.json",
    "cursor": lambda home: home / ".cursor" / "hooks.json",
}


def _commands(document: Any) -> Iterator[str]:
    if isinstance(document, dict):
        for key, value in document.items():
            if key == "command" and isinstance(value, str):
                yield value
            else:
                yield from _commands(value)
    elif isinstance(document, list):
        for item in document:
            yield from _commands(item)


def _hooks(user_home: Path) -> Iterator[Check]:
    installed = 0
    for host, locate in HOOK_FILES.items():
        path = locate(user_home)
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError):
            yield Check(
                f"hooks:{host}",
                WARN,
                f"no remem hook in {path}",
                "paste the settings `remem init` prints",
            )
            continue
        commands = [c for c in _commands(document) if "remem-hook" in c]
        if not commands:
            yield Check(
                f"hooks:{host}",
                WARN,
                f"no remem hook in {path}",
                "paste the settings `remem init` prints",
            )
            continue
        named = {path for path in map(_executable, commands) if path}
        missing = sorted(path for path in named if not _runnable(path))
        if missing:
            yield Check(
                f"hooks:{host}",
                FAIL,
                f"{path} calls a missing {missing[0]}",
                "run `remem init` again and paste the new settings",
            )
            continue
        installed += 1
        yield Check(f"hooks:{host}", OK, f"{path} calls remem-hook")
    if not installed:
        yield Check(
            "hooks",
            FAIL,
            "no agent calls remem-hook: nothing is being captured",
            "paste the settings `remem init` prints into your agent",
        )


def _executable(command: str) -> str | None:
    for word in command.split():
        if "remem-hook" in word:
            return word.strip("'\"")
    return None


def _runnable(path: str) -> bool:
    if os.sep not in path:
        return shutil.which(path) is not None
    return os.access(os.path.expanduser(path), os.X_OK)
