"""The site as a person sees it: `remem ui` started as a real process on a home built by real
hook payloads and the worker, opened in the system's Chromium by Playwright (no browser is
downloaded). Without /usr/bin/chromium the browser tests are skipped, except under CI, where
they fail and say why."""

from __future__ import annotations

import html
import http.client
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from tests.acceptance.test_context import make_project, set_branch
from tests.acceptance.test_truthful_digest import Agent
from tests.conftest import REMEM, Home, wait_for

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
_NO_CHROMIUM = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),
    reason=f"{CHROMIUM} is absent: `apt-get install chromium` to run the browser tests",
)


def browser_test(test: Callable[..., None]) -> Callable[..., None]:
    """A test in Chromium: marked `browser`, skipped without it unless CI is set."""
    marked: Callable[..., None] = pytest.mark.browser(_NO_CHROMIUM(test))
    return marked


BUILD = "make build"
TEST = "python -m pytest -q"
FAILED = "Exit code 1\nE   assert 0 == 3\n1 failed in 0.12s"


def leads_to(page: str) -> str | None:
    """Where a page that leads on (a meta refresh) leads."""
    found = re.search(r'<meta http-equiv="refresh" content="0;url=([^"]*)">', page)
    return html.unescape(found.group(1)) if found else None


class Served:
    """A running `remem ui`: the address it printed (with its one-time token), its origin,
    and the cookie its owner got for the token, once one was."""

    def __init__(self, home: Home, *options: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [REMEM, "ui", "--port", "0", *options],
            env={**home.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: list[str] = []
        assert self.process.stdout is not None
        reader = threading.Thread(target=lambda: lines.append(self.process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        wait_for(lambda: lines or self.process.poll() is not None, timeout=15)
        assert lines and lines[0].startswith("remem ui: http://127.0.0.1:"), (
            lines,
            self.process.poll(),
        )
        self.address = lines[0].split()[2]
        parts = urlsplit(self.address)
        self.url = f"http://{parts.netloc}/"
        self.port = int(parts.netloc.rsplit(":", 1)[1])
        self.token = parse_qs(parts.query)["token"][0]
        self.cookie: str | None = None  # "name=value", as a browser sends it back
        # Up once it answers; without the token or the cookie, that is a refusal.
        wait_for(lambda: self.request("GET", "/", owner=False)[0] == 403, timeout=15)

    def enter(self) -> None:
        """Spend the token as a browser would, keeping the cookie it is exchanged for."""
        status, headers, body = self.exchange("GET", f"/?token={self.token}", owner=False)
        assert status == 200 and leads_to(body) == "/", (status, headers, body)
        self.cookie = headers["set-cookie"].split(";", 1)[0]

    def request(
        self,
        method: str,
        path: str,
        body: str | None = None,
        headers: dict[str, str] | None = None,
        owner: bool = True,
    ) -> tuple[int, str]:
        """An answer to a request sent as the owner (with the cookie), or as anyone."""
        status, _headers, answer = self.exchange(method, path, body, headers, owner)
        return status, answer

    def exchange(
        self,
        method: str,
        path: str,
        body: str | None = None,
        headers: dict[str, str] | None = None,
        owner: bool = True,
    ) -> tuple[int, dict[str, str], str]:
        if owner and self.cookie is None:
            self.enter()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            sent = {"Host": f"127.0.0.1:{self.port}"}
            if owner:
                sent["Cookie"] = str(self.cookie)
            sent.update(headers or {})
            if body is not None:
                sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
            connection.request(method, path, body=body, headers=sent)
            answer = connection.getresponse()
            got = {name.lower(): value for name, value in answer.getheaders()}
            return answer.status, got, answer.read().decode()
        except OSError:
            return 0, {}, ""
        finally:
            connection.close()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()


def build_memory(home: Home, project: Path) -> None:
    """`make build` verified on main and on feature (a project-wide procedure); the tests
    failed once on main, then passed twice (a procedure with a lesson); the asset build
    failed from the root and passed from assets/ (a substitution)."""
    agent = Agent(home, project)
    agent.ran(BUILD, "s1")
    agent.failed(TEST, "s1", FAILED)
    agent.edited("src/cart.py", "s1", "total = 10")
    agent.ran(TEST, "s1")
    agent.ran(TEST, "s2")
    agent.ran(BUILD, "s2")
    agent.failed("node assets/build.js", "s2", 'Exit code 1\nCould not resolve "js/app.js"')
    agent.ran(f"cd {project}/assets && node build.js", "s2")
    set_branch(project, "feature")
    agent.ran(BUILD, "s3")
    agent.ran(BUILD, "s3")
    set_branch(project, "main")
    home.remem("worker", "--burst")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.fixture
def served(home: Home, project: Path) -> Iterator[Served]:
    build_memory(home, project)
    site = Served(home)
    try:
        yield site
    finally:
        site.stop()


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is absent and CI is set: `apt-get install chromium` (.ci/run does)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


class Watched:
    """A page whose console errors, uncaught errors and dialogs are kept."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1200, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(10_000)
        self.problems: list[str] = []
        self.entered = False
        self.page.on(
            "console",
            lambda message: (
                self.problems.append(f"console {message.type}: {message.text}")
                if message.type in ("error", "warning")
                else None
            ),
        )
        self.page.on("pageerror", lambda error: self.problems.append(f"pageerror: {error}"))
        self.page.on(
            "dialog",
            lambda dialog: (self.problems.append(f"dialog: {dialog.message}"), dialog.dismiss()),
        )

    def enter(self, served: Served) -> None:
        """Open the address `remem ui` printed, as its owner does: the token is exchanged for
        the cookie and the browser lands on the same page without it. Once the token is
        spent, the browser is given the owner's cookie instead."""
        if served.cookie is not None:
            name, value = served.cookie.split("=", 1)
            self.context.add_cookies([{"name": name, "value": value, "url": served.url}])
        else:
            self.page.goto(served.address)
            self.page.wait_for_url(served.url)
            expect(self.page.locator("h1")).to_have_text("Projects")
            (cookie,) = [c for c in self.context.cookies() if c["name"].startswith("remem_ui_")]
            served.cookie = f"{cookie['name']}={cookie['value']}"
        self.entered = True

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watched(chromium: Any) -> Iterator[Watched]:
    found = Watched(chromium)
    try:
        yield found
    finally:
        found.close()
