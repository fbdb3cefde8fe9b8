"""The site `remem ui` serves: Starlette routes over remem.ui.views, rendered by Jinja2 with
autoescape on, behind remem.ui.guard, which answers only its owner at this machine's own address.

Reads open a read-only snapshot per request. The only writes are the user's: archive and
unarchive a procedure, forget by pattern after a preview; each is a POST from this site's own
page that carries the process's random form token, so another site cannot make one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs, quote

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from remem.config import Settings, parse_duration
from remem.db.snapshot import reading
from remem.db.vocabulary import LARGEST_ID
from remem.errors import NotFound, RememError
from remem.json_contract import date, rfc3339
from remem.record.quote import elsewhere, escape_unsafe, inert_path
from remem.ui import views
from remem.ui.guard import ASGIApp, Guard, Owner

DEFAULT_SINCE = "30d"


def _environment() -> jinja2.Environment:
    templates = files("remem.ui") / "templates"
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(
        recorded=lambda text: escape_unsafe(str(text)) if text is not None else "",
        # In a <pre>: each line escaped on its own, the line breaks kept as breaks.
        recorded_lines=lambda text: "\n".join(
            escape_unsafe(line) for line in str(text or "").replace("\r\n", "\n").split("\n")
        ),
        path=lambda text: inert_path(str(text)),
        elsewhere=elsewhere,
        day=date,
        time=lambda at: (rfc3339(at) or "").replace("T", " ").rstrip("Z"),
        q=lambda text: quote(str(text), safe=""),
    )
    return environment


class Site:
    """The routes, holding the settings, the token and the templates."""

    def __init__(self, settings: Settings, owner: Owner) -> None:
        self.settings = settings
        self.owner = owner
        self.token = secrets.token_urlsafe(32)  # the forms': never the address's
        self.templates = _environment()
        self.stylesheet = (files("remem.ui") / "static" / "remem.css").read_bytes()

    def render(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        template = self.templates.get_template(name)
        return HTMLResponse(template.render(token=self.token, **values), status)

    def failed(self, exc: RememError) -> HTMLResponse:
        status = 404 if isinstance(exc, NotFound) else 400
        return self.render("error.html", status, title="Not shown", message=str(exc))

    def app(self) -> ASGIApp:
        routes = [
            Route("/", self.projects),
            Route("/branch", self.branch),
            Route("/procedure/{procedure_id:int}", self.procedure),
            Route("/procedure/{procedure_id:int}/{verb:str}", self.archive, methods=["POST"]),
            Route("/report", self.report),
            Route("/search", self.search),
            Route("/forget", self.forget_form),
            Route("/forget", self.forget, methods=["POST"]),
            Route("/static/remem.css", self.css),
        ]
        return Guard(Starlette(routes=routes), self.owner)

    # --- pages -----------------------------------------------------------------------------

    def _since(self, request: Request) -> tuple[str, float]:
        since = request.query_params.get("since", DEFAULT_SINCE)
        try:
            return since, parse_duration(since)
        except ValueError as exc:
            raise RememError(f"since={since}: {exc}.") from None

    def projects(self, request: Request) -> Response:
        try:
            since, since_s = self._since(request)
            with reading(self.settings) as execute:
                rows = views.projects(execute, since_s, time.time())
        except RememError as exc:
            return self.failed(exc)
        return self.render("projects.html", title="Projects", rows=rows, since=since)

    def branch(self, request: Request) -> Response:
        root = request.query_params.get("project")
        if not root:
            return self.failed(RememError("Say which project: /branch?project=ROOT&branch=NAME."))
        name = request.query_params.get("branch") or None
        try:
            with reading(self.settings) as execute:
                page = views.branch(execute, self.settings, root, name)
        except RememError as exc:
            return self.failed(exc)
        return self.render("branch.html", title=name or "no branch", page=page)

    def procedure(self, request: Request) -> Response:
        try:
            procedure_id = _procedure_id(request)
            evidence_page = int(request.query_params.get("page", "1"))
            with reading(self.settings) as execute:
                page = views.procedure(execute, procedure_id, evidence_page)
        except ValueError:
            return self.failed(RememError("page= counts from 1."))
        except RememError as exc:
            return self.failed(exc)
        return self.render("procedure.html", title=f"Procedure {procedure_id}", page=page)

    def report(self, request: Request) -> Response:
        try:
            since, since_s = self._since(request)
            with reading(self.settings) as execute:
                page = views.report(execute, since_s, time.time())
        except RememError as exc:
            return self.failed(exc)
        return self.render("report.html", title="Report", page=page, since=since)

    def search(self, request: Request) -> Response:
        pattern = request.query_params.get("q", "")
        root = request.query_params.get("project") or None
        found, problem = None, None
        if pattern:
            try:
                number = int(request.query_params.get("page", "1"))
                with reading(self.settings) as execute:
                    found = views.search(execute, pattern, root, number)
            except ValueError:
                problem = "page= counts from 1."
            except RememError as exc:
                problem = str(exc)
        return self.render(
            "search.html", title="Search", pattern=pattern, root=root, found=found, problem=problem
        )

    def css(self, _request: Request) -> Response:
        return Response(self.stylesheet, media_type="text/css")

    # --- actions ---------------------------------------------------------------------------

    async def _form(self, request: Request) -> dict[str, str] | None:
        """The POSTed form when it carries this process's token and comes from this site;
        None otherwise."""
        origin = request.headers.get("origin")
        if origin is not None and origin != self.owner.origin:
            return None
        body = (await request.body()).decode("utf-8", "replace")
        form = {name: values[-1] for name, values in parse_qs(body).items()}
        given = form.get("token", "")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return None
        return form

    def refused(self) -> HTMLResponse:
        return self.render(
            "error.html",
            403,
            title="Refused",
            message="This action needs the page's token: open the page from the address "
            "`remem ui` printed and use its button.",
        )

    async def archive(self, request: Request) -> Response:
        form = await self._form(request)
        if form is None:
            return self.refused()
        verb = request.path_params["verb"]
        if verb not in ("archive", "unarchive"):
            return self.failed(NotFound(f"No action {verb}: archive or unarchive."))
        try:
            procedure_id = _procedure_id(request)
            await run_in_threadpool(self._archive, procedure_id, verb)
        except RememError as exc:
            return self.failed(exc)
        return RedirectResponse(f"/procedure/{procedure_id}", 303)

    def _archive(self, procedure_id: int, verb: str) -> None:
        from remem.admin.home import open_engine
        from remem.procedures.promote import archive, unarchive

        engine = open_engine(self.settings)
        try:
            (archive if verb == "archive" else unarchive)(engine, procedure_id, time.time())
        finally:
            engine.dispose()

    def forget_form(self, request: Request) -> Response:
        return self.render("forget.html", title="Forget", pattern="", project="", plan=None)

    async def forget(self, request: Request) -> Response:
        form = await self._form(request)
        if form is None:
            return self.refused()
        pattern, project = form.get("pattern", ""), form.get("project", "")
        try:
            if not pattern:
                raise RememError("Give a pattern: a regular expression, as the search takes one.")
            report = await run_in_threadpool(
                self._forget, pattern, project or None, form.get("confirm")
            )
        except RememError as exc:
            return self.render(
                "forget.html", 400, title="Forget", pattern=pattern, project=project,
                plan=None, problem=str(exc),
            )  # fmt: skip
        summary = report.as_json()
        if not report.applied:
            return self.render(
                "forget.html", title="Forget", pattern=pattern, project=project,
                plan=summary, empty=report.plan.empty(), seal=_seal(report.plan.as_json()),
            )  # fmt: skip
        return self.render("forgotten.html", title="Forgotten", pattern=pattern, summary=summary)

    def _forget(self, pattern: str, project: str | None, seal: str | None) -> Any:
        """A dry run without `seal`; with it, the forget itself, refused when what the pattern
        finds is no longer what the preview showed."""
        from remem.admin.forget import forget_everywhere
        from remem.admin.home import open_engine
        from remem.forgetting.erase import Outside
        from remem.forgetting.selection import Selection, compile_pattern
        from workers.work import rederive

        compile_pattern(pattern)
        if project is not None:  # a directory of it, as `remem forget --project` takes
            from remem.record.identity import locate_given

            project = locate_given(project)[0]

        def confirm(found: Any) -> None:
            if not hmac.compare_digest(_seal(found.as_json()), seal or ""):
                raise RememError("What the pattern finds changed since the preview: preview again.")

        engine = open_engine(self.settings)
        try:
            return forget_everywhere(
                engine,
                self.settings,
                Selection((), (), pattern, project),
                dry_run=seal is None,
                confirm=confirm,
                rederive=rederive,
                outside=Outside(os.path.expanduser("~")),
            )
        finally:
            engine.dispose()


def _procedure_id(request: Request) -> int:
    """The id in the path; one no row can have is not found, as any absent one."""
    procedure_id = int(request.path_params["procedure_id"])
    if procedure_id > LARGEST_ID:
        raise NotFound(f"No procedure {procedure_id}: see the projects' procedures.")
    return procedure_id


def _seal(plan: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(plan, sort_keys=True, default=str).encode()).hexdigest()
