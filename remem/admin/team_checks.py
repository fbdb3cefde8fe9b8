"""`remem doctor` on the team link: the team database as this machine reaches it now (it
connects, briefly), its schema, what is shared, and the link the daemon keeps locally."""

from __future__ import annotations

import time

from sqlalchemy import Engine, make_url
from sqlalchemy.exc import DBAPIError

from remem.admin.checks import FAIL, OK, WARN, Check
from remem.admin.status import age_text, team_label
from remem.config import Settings
from remem.db import migrate
from remem.db.engine import make_engine
from remem.db.snapshot import engine_reader
from remem.db.sqlite import schema_head
from remem.errors import team_schema_fix
from remem.team.state import one_line, read_link

# Doctor asks the team database once and answers at once: an unreachable server is a finding.
TEAM_CONNECT_TIMEOUT_S = 3


def team_checks(settings: Settings, engine: Engine | None) -> list[Check]:
    """The team database as this machine reaches it now, and the link the daemon keeps."""
    if not settings.team_database_url:
        return [Check("team", OK, "none (set [team] database_url to share memory)")]
    checks = _team_database(settings)
    checks.append(_team_share(settings))
    if engine is not None:
        checks.append(_team_link(engine))
    return checks


def _team_database(settings: Settings) -> list[Check]:
    label = team_label(settings)
    try:
        url = make_url(settings.team_database_url).update_query_dict(
            {"connect_timeout": str(TEAM_CONNECT_TIMEOUT_S)}
        )
        engine = make_engine(url.render_as_string(hide_password=False))
        try:
            current = migrate.current_revision(engine)
        finally:
            engine.dispose()
    except Exception as exc:  # any failure to reach it is the finding, never a crash
        return [
            Check(
                "team",
                WARN,
                f"{label} is unreachable: {one_line(str(getattr(exc, 'orig', None) or exc))}",
                "check that the server is up and reachable from this machine, and the host, "
                "port, user and password of [team] database_url (or REMEM_TEAM_DATABASE_URL); "
                "the daemon keeps the events until it answers",
            )
        ]
    reached = Check("team", OK, f"{label} reachable as machine {settings.team_machine}")
    return [reached, _team_schema(current)]


def _team_schema(current: str | None) -> Check:
    head = schema_head()
    if current == head:
        return Check("team schema", OK, f"at head ({head})")
    newer = current is not None and current > head
    found = f"newer than this remem ({head})" if newer else f"needs {head}"
    fix = team_schema_fix(current, head)
    return Check("team schema", FAIL, f"at {current or 'none'}, {found}", fix)


def _team_share(settings: Settings) -> Check:
    promote = (
        "this machine works the team's queue (promote = true)"
        if settings.team_promote
        else "this machine leaves the team's queue to others (promote = false)"
    )
    if not settings.team_share:
        return Check(
            "team share",
            WARN,
            f"nothing is shared: [team] share is empty; {promote}",
            'list the project keys to share under [team], e.g. share = ["github.com/your-org/*"]',
        )
    return Check("team share", OK, f"shares {', '.join(settings.team_share)}; {promote}")


def _team_link(engine: Engine) -> Check:
    try:
        with engine_reader(engine) as execute:
            link = read_link(execute)
    except DBAPIError:  # no link tables yet: the schema check already says what to do
        return Check("team link", WARN, "this home's team link cannot be read", "")
    now = time.time()

    def ago(at: float | None) -> str:
        return age_text(None if at is None else now - at)

    facts = (
        f"{link.projects} shared project(s) linked, {link.waiting} event(s) waiting to ship, "
        f"last ship {ago(link.shipped_at)}, last pull {ago(link.pulled_at)}"
    )
    if link.error is not None:
        return Check(
            "team link",
            WARN,
            f"the daemon's last try failed {ago(link.error_at)}: {one_line(link.error)}; {facts}",
            "see the team check above; the daemon tries again with backoff",
        )
    if link.contact_at is None:
        return Check(
            "team link",
            WARN,
            f"the daemon has not reached the team database yet; {facts}",
            "start the daemon: `remem worker` (or `remem service install`)",
        )
    return Check("team link", OK, f"the daemon reached it {ago(link.contact_at)}; {facts}")
