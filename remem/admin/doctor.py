"""`remem doctor`: every check a user would otherwise do by hand, each with a status and a fix."""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from remem.admin import agents_settings
from remem.admin.checks import FAIL, OK, WARN, Check
from remem.admin.hook_settings import AGENTS, settings_for
from remem.admin.status import spool_backlog, worker_health
from remem.admin.team_checks import team_checks
from remem.agent.counts import UNRESOLVED_CODEX
from remem.agent.export import outdated_drafts
from remem.capture import spool
from remem.capture.store import count_drops_since
from remem.config import Settings, load_settings
from remem.db import migrate
from remem.db.engine import integrity_check, make_engine
from remem.db.snapshot import engine_reader
from remem.db.sqlite import schema_head
from remem.errors import ConfigError, ConfigErrors, HomeUnusable, RememError
from remem.paths import foreign_owner
from remem.queue import counts as task_counts
from remem.record.event import DROPS_BY_DESIGN

CLOCK_SKEW_S = 300.0


def run_checks(
    environ: dict[str, str] | None = None, user_home: Path | None = None, cwd: str | None = None
) -> list[Check]:
    """All checks in order; a check that cannot run (no home, no database) says why once.
    `cwd` (the current directory by default) names the repository whose checkpoints are told."""
    try:
        settings = load_settings(environ)
    except RememError as exc:
        return [_unusable_settings(exc)]
    checks = [_home(settings), _config(settings)]
    if checks[0].status == FAIL:
        return checks
    engine = make_engine(settings.database_url, busy_timeout_s=2)
    try:
        database = _database(settings, engine)
        checks.append(database)
        if database.status != FAIL:
            checks += [
                _schema(engine),
                _failed_tasks(engine),
                _worker(settings, engine),
                _clock(engine),
                _codex_outcomes(engine),
                _dropped_payloads(engine),
                _drafts(engine),
            ]
        checks += team_checks(settings, engine if database.status != FAIL else None)
    finally:
        engine.dispose()
    checks.append(_spool(settings))
    checks += list(_hooks(user_home or Path.home(), settings.home))
    checks += _entire(settings, cwd or os.getcwd())
    return checks


def _entire(settings: Settings, cwd: str) -> list[Check]:
    """Said only where the current repository keeps Entire checkpoints: how to learn from them."""
    from remem.config import duration_text
    from remem.transcripts import entire

    storage = entire.has_checkpoints(cwd)
    if storage is None:
        return []
    detail = f"{storage.work_tree} keeps agents' sessions on {entire.said(storage)}: "
    if settings.import_entire:
        every = duration_text(settings.import_entire_interval_s)
        detail += f"the daemon imports new ones every {every} (`{entire.IMPORT_COMMAND}` now)"
    else:
        detail += f"run `{entire.IMPORT_COMMAND}` to learn from them"
    return [Check("entire", OK, detail)]


def _unusable_settings(exc: RememError) -> Check:
    if isinstance(exc, HomeUnusable):
        return Check("home", FAIL, str(exc), "set REMEM_HOME to a folder, then `remem init`")
    if isinstance(exc, ConfigErrors):
        return Check("config", FAIL, str(exc), "fix or remove those settings")
    if isinstance(exc, ConfigError) and exc.key is not None:
        return Check("config", FAIL, str(exc), "fix or remove that setting")
    return Check("config", FAIL, str(exc), "fix the file at that line")


def _config(settings: Settings) -> Check:
    if not os.path.exists(settings.config_file):
        return Check("config", OK, f"{settings.config_file} missing (defaults in use)")
    return Check("config", OK, f"{settings.config_file} parses")


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
    current, head = migrate.current_revision(engine), schema_head()
    if current != head:
        return Check("schema", FAIL, f"at {current or 'none'}, needs {head}", "remem db upgrade")
    return Check("schema", OK, f"at head ({head})")


def _failed_tasks(engine: Engine) -> Check:
    with engine_reader(engine) as execute:
        failed = task_counts.count_by_status(execute)["failed"]
        latest = task_counts.latest_failed(execute) if failed else None
    if latest is not None:
        reason = (latest[1] or "no error recorded")[:200]
        return Check(
            "tasks",
            FAIL,
            f"{failed} task(s) failed for good; latest, task {latest[0]}: {reason}",
            "see `remem tasks --status failed`, then `remem tasks retry ID`",
        )
    return Check("tasks", OK, "no failed task")


def _worker(settings: Settings, engine: Engine) -> Check:
    with engine_reader(engine) as execute:
        worker = worker_health(execute, settings, time.time())
        pending = task_counts.count_by_status(execute)["pending"]
    pid, state = worker["pid"], worker["state"]
    if state == "not running":
        return Check(
            "worker",
            WARN if pending else OK,
            f"no daemon running; {pending} task(s) pending",
            "run `remem worker`, `remem service install` or `remem service cron`",
        )
    if state == "dead":
        return Check(
            "worker",
            WARN,
            f"the daemon (pid {pid}) is gone; its heartbeat remains",
            "start it again: `remem worker` (the start clears the heartbeat)",
        )
    if state != "running":
        return Check(
            "worker",
            WARN,
            f"pid {pid} on {worker['hostname']} last seen {worker['heartbeat_age_s']:.0f}s ago",
            "check that machine's daemon, or restart it there: `remem worker`",
        )
    return Check("worker", OK, f"running, pid {pid}")


def _clock(engine: Engine) -> Check:
    with engine_reader(engine) as execute:
        newest = execute("SELECT max(captured_at) FROM captured_events", {})[0][0]
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
    with engine_reader(engine) as execute:
        count = execute(UNRESOLVED_CODEX, {"before": time.time() - 86_400})[0][0]
    if count:
        return Check(
            "codex",
            WARN,
            f"{count} Codex command(s) never got an outcome from their rollout file",
            "they never count; check that Codex writes rollouts (~/.codex/sessions)",
        )
    return Check("codex", OK, "every Codex outcome older than a day is resolved")


def _dropped_payloads(engine: Engine) -> Check:
    with engine_reader(engine) as execute:
        counts = count_drops_since(execute, time.time() - 86_400)
    lost = [(reason, count) for reason, count in counts if reason not in DROPS_BY_DESIGN]
    if lost:
        reason, count = lost[0]
        return Check(
            "drops",
            WARN,
            f"{sum(n for _r, n in lost)} payload(s) dropped in the last day; "
            f"commonest reason: {reason} ({count})",
            "see each one and its reason with `remem drops`",
        )
    return Check("drops", OK, "no payload dropped in the last day")


def _drafts(engine: Engine) -> Check:
    try:
        with engine_reader(engine) as execute:
            outdated = outdated_drafts(execute)
    except DBAPIError:  # no exports table: the schema check already says what to do
        return Check("drafts", WARN, "the registry of exported drafts cannot be read", "")
    if outdated:
        path, procedure_id, why = outdated[0]
        return Check(
            "drafts",
            WARN,
            f"{len(outdated)} exported draft(s) no longer match their procedure; "
            f"{path}: procedure {procedure_id} {why}",
            "update or remove the document made from it, or export it again "
            f"(`remem procedures export {procedure_id} --format ...`)",
        )
    return Check("drafts", OK, "every exported draft matches its procedure")


def _spool(settings: Settings) -> Check:
    backlog = spool_backlog(settings.spool_dir)
    if backlog["overflow_dropped"]:
        return Check(
            "spool",
            FAIL,
            f"{backlog['overflow_dropped']} event(s) dropped: the spool was full",
            "start the worker so it drains the spool; raise capture.spool_max_bytes",
        )
    if backlog["dead_letters"]:
        return Check(
            "spool",
            WARN,
            f"unreadable lines in {settings.spool_dir}/{spool.DEAD_LETTER_FILE}",
            "read them; delete the file once understood",
        )
    if backlog["pending"]:
        return Check(
            "spool",
            WARN,
            "events are waiting in the spool",
            "run `remem spool ingest` or start the worker",
        )
    return Check("spool", OK, "empty")


def _hooks(user_home: Path, remem_home: str | None = None) -> Iterator[Check]:
    """Per agent this machine has: are remem's hooks in its settings file, calling a remem-hook
    that exists (and for Codex, are hooks turned on)? One failure when no agent captures
    anything."""
    installed = 0
    for agent in AGENTS:
        folder = agents_settings.agent_folder(agent, user_home)
        if not folder.is_dir():
            # No advice to connect an agent this machine does not have.
            yield Check(f"hooks:{agent}", OK, f"not in use here: no {folder}")
            continue
        check = _agent_hooks(agent, user_home, remem_home)
        installed += check.status == OK
        yield check
    if not installed:
        yield Check(
            "hooks",
            FAIL,
            "no agent calls remem-hook: nothing is being captured",
            "run `remem hooks install all`",
        )


def _agent_hooks(agent: str, user_home: Path, remem_home: str | None) -> Check:
    name, install = f"hooks:{agent}", f"run `remem hooks install {agent}`"
    path = agents_settings.settings_file(agent, user_home)
    try:
        document = agents_settings.read_settings(path)[1]
    except agents_settings.AgentFileInvalid as exc:
        return Check(name, WARN, f"{path} {exc.problem}", f"fix the file, then {install}")
    commands = agents_settings.remem_commands(document)
    if not commands:
        return Check(name, WARN, f"no remem hook in {path}", install)
    named = {found for found in map(agents_settings.hook_executable, commands) if found}
    missing = sorted(executable for executable in named if not _runnable(executable))
    if missing:
        return Check(
            name, FAIL, f"{path} calls a missing {missing[0]}", f"{install}: it replaces it"
        )
    if agent == "codex" and not _codex_hooks_on(user_home):
        config = agents_settings.codex_config(user_home)
        return Check(
            name,
            WARN,
            f"{config} lacks `[features] codex_hooks = true`: Codex may run no hook",
            install,
        )
    detail = f"{path} calls remem-hook"
    if remem_home and not _as_installed(document, agent, remem_home):
        detail += f", not all as this remem would: `remem hooks install {agent}` updates it"
    return Check(name, OK, detail)


def _as_installed(document: object, agent: str, remem_home: str) -> bool:
    """Whether the hooks are as `remem hooks install` leaves them, with or without
    --advice-before."""
    return any(
        agents_settings.is_current(document, settings_for(agent, remem_home, None, before))
        for before in (False, True)
    )


def _codex_hooks_on(user_home: Path) -> bool:
    try:
        text = agents_settings.codex_config(user_home).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return agents_settings.codex_hooks_enabled(text)


def _runnable(path: str) -> bool:
    if os.sep not in path:
        return shutil.which(path) is not None
    return os.access(os.path.expanduser(path), os.X_OK)
