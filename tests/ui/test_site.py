"""`remem ui` in a real browser: every page opens without an error, shows what the memory
holds as `remem context` and the read model say it, its links lead where they say, its
buttons archive and unarchive, and nothing another site sends or a recorded text says runs."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from playwright.sync_api import expect

from remem.record.quote import inert_path
from tests.acceptance.test_context import context
from tests.conftest import Home
from tests.ui.conftest import BUILD, TEST, Served, Watched, browser_test, build_memory


def procedure_id(home: Home, command: str) -> int:
    """The procedure of the command: the project-wide one where there is one."""
    found = [p for p in home.procedures() if p["command"] == command]
    found.sort(key=lambda p: (p["scope"] != "project", p["id"]))
    return int(found[0]["id"])


def branch_path(project: Path, branch: str) -> str:
    return f"/branch?project={quote(str(project), safe='')}&branch={branch}"


def visit(watched: Watched, served: Served, path: str, shot: Path) -> Any:
    page = watched.page
    if not watched.entered:
        watched.enter(served)
    answer = page.goto(served.url.rstrip("/") + path)
    assert answer is not None and answer.status == 200, (path, answer and answer.status)
    page.screenshot(path=str(shot), full_page=True)
    return page


@browser_test
def test_every_page_opens_and_says_what_the_memory_holds(
    served: Served, watched: Watched, home: Home, project: Path, tmp_path: Path
) -> None:
    build, test = procedure_id(home, BUILD), procedure_id(home, TEST)
    pages = {
        "projects": ("/", str(project)),
        "branch": (branch_path(project, "main"), "The digest this branch gets now"),
        "procedure": (f"/procedure/{test}", TEST),
        "report": ("/report", "Failing calls per session, by week"),
        "search": ("/search?q=make", BUILD),
        "forget": ("/forget", "Preview"),
    }
    for name, (path, expected) in pages.items():
        page = visit(watched, served, path, tmp_path / f"ui-{name}.png")
        assert expected in page.locator("main").inner_text(), name
    assert (tmp_path / "ui-procedure.png").stat().st_size > 0
    page = visit(watched, served, f"/procedure/{build}", tmp_path / "ui-procedure-build.png")
    assert page.locator("svg.timeline .lane-name").all_text_contents() == ["main", "feature"]
    assert watched.problems == []


@browser_test
def test_a_procedures_timeline_has_a_mark_per_run(
    served: Served, watched: Watched, home: Home, tmp_path: Path
) -> None:
    # make build: two passing runs on main, two on feature. The tests: one failure, two passes.
    for command, passed, failed in ((BUILD, 4, 0), (TEST, 2, 1)):
        page = visit(
            watched, served, f"/procedure/{procedure_id(home, command)}", tmp_path / "p.png"
        )
        assert page.locator("svg.timeline circle.mark.pass").count() == passed, command
        assert page.locator("svg.timeline circle.mark.fail").count() == failed, command
        shown = home.json("procedures", "show", str(procedure_id(home, command)))
        assert len(shown["evidence"]) == passed
    assert watched.problems == []


@browser_test
def test_the_branch_page_shows_the_digest_remem_context_prints(
    served: Served, watched: Watched, home: Home, project: Path, tmp_path: Path
) -> None:
    page = visit(watched, served, branch_path(project, "main"), tmp_path / "branch.png")
    shown = page.locator("pre.digest").all_text_contents()
    printed = [context(home, project, "--page", str(n)).stdout for n in range(1, len(shown) + 1)]
    assert shown and shown == printed
    assert BUILD in shown[0] and TEST in shown[0]


@browser_test
def test_the_branch_page_says_where_a_command_passed_instead(
    served: Served, watched: Watched, project: Path, tmp_path: Path
) -> None:
    page = visit(watched, served, branch_path(project, "main"), tmp_path / "branch.png")
    (line,) = [text for text in page.locator("main li").all_inner_texts() if "instead of" in text]
    assert line.startswith("instead of node assets/build.js (Could not resolve")
    assert ", node build.js in assets/ passed · 1 failure(s) in 1 session(s)" in line
    assert watched.problems == []


@browser_test
def test_links_lead_from_the_projects_to_a_procedure_and_its_search(
    served: Served, watched: Watched, home: Home, project: Path, tmp_path: Path
) -> None:
    # A click only starts loading the next page: each check waits (a few seconds at most)
    # for what that page shows, not what the last one showed.
    page = visit(watched, served, "/", tmp_path / "start.png")
    page.get_by_role("link", name="feature", exact=True).click()
    expect(page.locator("h1")).to_have_text(re.compile(r"^feature"))
    page.locator("a.procedure-link", has_text=BUILD).first.click()
    expect(page.locator("h1")).to_have_text(re.compile(r"^Procedure"))
    expect(page.locator("p.command")).to_have_text(BUILD)
    page.get_by_role("link", name="Projects").click()
    page.get_by_role("link", name="main", exact=True).click()
    expect(page).to_have_url(re.compile(re.escape(branch_path(project, "main")) + "$"))
    page.get_by_role("link", name="Search").first.click()
    page.locator("form.search input[name=q]").fill("pytest")
    page.locator("form.search button").click()
    expect(page.locator("li.hit.procedure")).to_have_count(1)
    page.locator("li.hit.procedure a").click()
    expect(page.locator("p.command")).to_have_text(TEST)
    assert watched.problems == []


@browser_test
def test_archive_then_unarchive_changes_the_digest(
    served: Served, watched: Watched, home: Home, project: Path, tmp_path: Path
) -> None:
    test = procedure_id(home, TEST)
    page = visit(watched, served, f"/procedure/{test}", tmp_path / "before.png")
    page.get_by_role("button", name="Archive").click()
    assert page.locator("h1 .status").inner_text() == "archived"
    visit(watched, served, branch_path(project, "main"), tmp_path / "archived.png")
    digest = page.locator("pre.digest").first.text_content()
    assert TEST not in digest and BUILD in digest
    assert TEST not in context(home, project).stdout
    visit(watched, served, f"/procedure/{test}", tmp_path / "again.png")
    page.get_by_role("button", name="Unarchive").click()
    assert page.locator("h1 .status").inner_text() == "active"
    visit(watched, served, branch_path(project, "main"), tmp_path / "back.png")
    assert TEST in page.locator("pre.digest").first.text_content()
    assert TEST in context(home, project).stdout
    assert watched.problems == []


@browser_test
def test_forget_previews_then_forgets_on_confirmation(
    served: Served, watched: Watched, home: Home, tmp_path: Path
) -> None:
    page = visit(watched, served, "/forget", tmp_path / "forget.png")
    warning = page.locator("p.masked-for-good").inner_text()
    assert "words that hold a match are masked for good, here and on every team machine" in warning
    page.locator("input[name=pattern]").fill("pytest")
    page.get_by_role("button", name="Preview").click()
    assert "Would forget (dry run)" in page.locator("main").inner_text()
    assert [p["command"] for p in home.procedures()].count(TEST) == 1  # a preview changes nothing
    page.screenshot(path=str(tmp_path / "forget-preview.png"), full_page=True)
    page.get_by_role("button", name="Forget all of this for good").click()
    assert "Forgotten" in page.locator("main").inner_text()
    assert TEST not in [p["command"] for p in home.procedures()]
    assert home.json("recall", "pytest", "--all-projects")["total"] == 0
    assert watched.problems == []


def test_a_post_without_the_token_or_from_another_site_is_refused(
    served: Served, home: Home
) -> None:
    test = procedure_id(home, TEST)
    status, page = served.request("GET", f"/procedure/{test}")
    (token,) = re.findall(r'name="token" value="([^"]+)"', page)
    forged = [
        ("", {}),
        ("token=not-the-token", {}),
        (f"token={token}", {"Origin": "http://evil.example"}),
    ]
    for body, headers in forged:
        status, _page = served.request("POST", f"/procedure/{test}/archive", body, headers)
        assert status == 403, (body, headers)
    status, _page = served.request("GET", f"/procedure/{test}/archive")
    assert status == 405
    assert {p["status"] for p in home.procedures()} == {"active"}
    status, _page = served.request("POST", "/forget", "pattern=make")
    assert status == 403
    assert BUILD in [p["command"] for p in home.procedures()]
    # The token of the page makes the same request work.
    status, _page = served.request("POST", f"/procedure/{test}/archive", f"token={token}")
    assert status == 303
    assert [p["status"] for p in home.procedures() if p["id"] == test] == ["archived"]


def test_a_request_for_another_host_is_refused(served: Served) -> None:
    # localhost is refused too: it may name [::1], where something else can listen on the port.
    for host in (
        "evil.example",
        f"evil.example:{served.port}",
        "127.0.0.1",
        f"127.0.0.1:{served.port + 1}",
        f"localhost:{served.port}",
        f"[::1]:{served.port}",
    ):
        status, page = served.request("GET", "/", headers={"Host": host})
        assert status == 421 and "Projects" not in page, host
    status, page = served.request("GET", "/", headers={"Host": f"127.0.0.1:{served.port}"})
    assert status == 200 and "<h1>Projects</h1>" in page


def test_every_answer_forbids_scripts(served: Served) -> None:
    for owner in (True, False):  # a page, and a refusal
        status, headers, _page = served.exchange("GET", "/", owner=owner)
        assert status == (200 if owner else 403)
        policy = headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src" not in policy
        assert "unsafe-inline" not in policy


HOSTILE_DIRECTORY = "x\"'><img src=x onerror=alert(1)>"
HOSTILE_COMMAND = "make dist NOTE='<script>alert(2)</script>'"
HOSTILE_ERROR = "Exit code 1\n</pre><script>alert(3)</script><b onmouseover=alert(4)>"


@browser_test
def test_recorded_markup_and_a_hostile_directory_name_stay_text(
    home: Home, tmp_path: Path, watched: Watched
) -> None:
    from tests.acceptance.test_context import make_project
    from tests.acceptance.test_truthful_digest import Agent

    hostile = make_project(tmp_path / HOSTILE_DIRECTORY, name="<script>alert(5)<")
    agent = Agent(home, hostile)
    agent.failed(HOSTILE_COMMAND, "h1", HOSTILE_ERROR)
    agent.ran(HOSTILE_COMMAND, "h1")
    agent.ran(HOSTILE_COMMAND, "h2")
    build_memory(home, make_project(tmp_path))
    served = Served(home)
    try:
        (shown,) = [p for p in home.procedures() if p["command"] == HOSTILE_COMMAND]
        paths = [
            "/",
            branch_path(hostile, "main"),
            f"/procedure/{shown['id']}",
            "/report",
            "/search?q=" + quote("script"),
            "/search?q=" + quote("<script>"),
        ]
        for number, path in enumerate(paths):
            page = visit(watched, served, path, tmp_path / f"hostile-{number}.png")
            assert page.locator("script").count() == 0, path
            assert page.locator("img").count() == 0, path
        page = visit(watched, served, f"/procedure/{shown['id']}", tmp_path / "hostile.png")
        text = page.locator("main").inner_text()
        assert HOSTILE_COMMAND in text and "<script>alert(3)</script>" in text
        assert page.locator("main b").count() == 0
        visit(watched, served, "/", tmp_path / "hostile-projects.png")
        assert inert_path(str(hostile)) in page.locator("main").inner_text()
    finally:
        served.stop()
    assert watched.problems == []


def test_unarchive_decides_the_procedure_again_from_its_runs(home: Home, project: Path) -> None:
    from tests.acceptance.test_truthful_digest import Agent

    build_memory(home, project)
    test = procedure_id(home, TEST)
    home.remem("procedures", "archive", str(test))
    Agent(home, project).ran(TEST, "s4")  # a run while archived revives nothing...
    home.remem("worker", "--burst")
    (archived,) = [p for p in home.procedures() if p["id"] == test]
    assert (archived["status"], archived["verified_runs"]) == ("archived", 2)
    assert TEST not in context(home, project).stdout
    printed = home.remem("procedures", "unarchive", str(test)).stdout
    assert printed == f"Procedure {test} is active.\n"
    (back,) = [p for p in home.procedures() if p["id"] == test]
    assert (back["status"], back["verified_runs"]) == ("active", 3)  # ...but it counts
    assert TEST in context(home, project).stdout
    missing = home.remem("procedures", "unarchive", "999", check=False)
    assert missing.returncode == 1 and "No procedure 999" in missing.stderr


def test_a_forget_is_refused_when_the_preview_no_longer_holds(
    served: Served, home: Home, project: Path
) -> None:
    from tests.acceptance.test_truthful_digest import Agent

    _status, page = served.request("GET", "/forget")
    (token,) = re.findall(r'name="token" value="([^"]+)"', page)
    status, preview = served.request("POST", "/forget", f"token={token}&pattern=pytest")
    assert status == 200 and "Would forget (dry run)" in preview
    (seal,) = re.findall(r'name="confirm" value="([^"]+)"', preview)
    Agent(home, project).ran(f"{TEST} -x", "s5")  # a new match since the preview
    body = f"token={token}&pattern=pytest&confirm={seal}"
    status, answer = served.request("POST", "/forget", body)
    assert status == 400 and "changed since the preview" in answer
    assert TEST in [p["command"] for p in home.procedures()]


def test_a_port_in_use_is_said_with_what_to_do(home: Home) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = home.remem("ui", "--port", str(port), check=False)
    assert result.returncode == 1
    assert f"Port {port} on 127.0.0.1 cannot be used" in result.stderr
    assert "--port 0" in result.stderr


def test_an_id_no_row_can_have_is_not_found(served: Served, home: Home) -> None:
    test = procedure_id(home, TEST)
    _status, page = served.request("GET", f"/procedure/{test}")
    (token,) = re.findall(r'name="token" value="([^"]+)"', page)
    for number in ("9" * 30, str(2**63), str(2**63 - 1)):
        status, answer = served.request("GET", f"/procedure/{number}")
        assert status == 404 and f"No procedure {number}" in answer, number
        status, answer = served.request("POST", f"/procedure/{number}/archive", f"token={token}")
        assert status == 404 and f"No procedure {number}" in answer, number
    status, answer = served.request("GET", f"/procedure/{test}?page={'9' * 30}")
    assert status == 404 and "evidence page(s)" in answer
    assert {p["status"] for p in home.procedures()} == {"active"}


def test_a_catastrophic_forget_pattern_returns_promptly(
    served: Served, home: Home, project: Path
) -> None:
    from tests.acceptance.test_truthful_digest import Agent

    # `(a+)+$` backtracks 2^40 times over this in Python's `re`; RE2 is linear.
    Agent(home, project).ran("./run.sh " + "a" * 40 + "!", "s6")
    _status, page = served.request("GET", "/forget")
    (token,) = re.findall(r'name="token" value="([^"]+)"', page)

    def preview(pattern: str) -> tuple[int, str]:
        return served.request("POST", "/forget", f"token={token}&pattern={quote(pattern)}")

    started = time.monotonic()
    status, answer = preview("(a+)+$")
    assert time.monotonic() - started < 10
    assert status == 200 and "Nothing here matches." in answer
    status, answer = preview("(a+)+!")
    assert status == 200 and "<li>1 event(s)</li>" in answer
    status, answer = preview("(a)\\1")
    assert status == 400 and "no backreferences or lookaround" in answer


@browser_test
def test_a_lesson_attempt_shows_its_output_line_by_line(
    home: Home, project: Path, watched: Watched, tmp_path: Path
) -> None:
    from tests.acceptance.test_truthful_digest import Agent

    agent = Agent(home, project)
    output = "Exit code 2\nchecking the schema of orders\nno column named total_cents"
    agent.failed("./check.sh", "s7", output)
    agent.ran("./check.sh", "s7")
    agent.ran("./check.sh", "s8")
    home.remem("worker", "--burst")
    served = Served(home)
    try:
        page = visit(
            watched, served, f"/procedure/{procedure_id(home, './check.sh')}", tmp_path / "l.png"
        )
        (shown,) = page.locator("ol.attempts pre.excerpt").all_inner_texts()
    finally:
        served.stop()
    assert "\\u000a" not in shown and "\\n" not in shown.replace("\n", "")
    lines = shown.splitlines()
    assert "checking the schema of orders" in lines and "no column named total_cents" in lines
    assert watched.problems == []


@browser_test
def test_a_branch_page_names_the_default_branch_it_inherits_from(
    served: Served, watched: Watched, project: Path, tmp_path: Path
) -> None:
    # The settings name main and master; this project's default branch is main.
    page = visit(watched, served, branch_path(project, "main"), tmp_path / "main.png")
    text = page.locator("main").inner_text()
    assert "reach this branch" not in text and "master" not in text
    assert page.locator("p.default-branch").inner_text().startswith("main is a default branch")
    page = visit(watched, served, branch_path(project, "feature"), tmp_path / "feature.png")
    said = page.locator("p.inherits-from")
    expected = "Procedures of main reach this branch unless it has its own verdict."
    assert said.inner_text() == expected
    assert "master" not in page.locator("main").inner_text()
    assert page.locator("p.default-branch").count() == 0
    said.get_by_role("link", name="main").click()
    expect(page).to_have_url(re.compile(re.escape(branch_path(project, "main")) + "$"))
    assert watched.problems == []


@browser_test
def test_variants_say_their_runs_and_how_many_verified(
    served: Served, watched: Watched, home: Home, tmp_path: Path
) -> None:
    # The tests failed once, then passed twice: three runs of the one form, two verified.
    test = procedure_id(home, TEST)
    page = visit(watched, served, f"/procedure/{test}", tmp_path / "variants.png")
    rows = page.locator("table.variants tr").all_inner_texts()
    assert rows[0].split("\t") == ["command as run", "runs, failed ones too"]
    assert rows[1:] == [f"{TEST}\t3 runs (2 verified)"]
    assert "2 verified run(s)" in page.locator("main").inner_text()
    shown = home.remem("procedures", "show", str(test)).stdout
    assert f'  3 runs (2 verified)  "{TEST}"\n' in shown
    (variant,) = home.json("procedures", "show", str(test))["variants"]
    assert variant == {"command": TEST, "runs": 3, "verified": 2}
    assert watched.problems == []


def test_the_address_is_printed_before_the_site_is_imported() -> None:
    # What runs before the print: the command, the home check, the port and the keys.
    heavy = ("starlette", "jinja2", "uvicorn", "sqlalchemy", "remem.ui.server", "remem.ui.views")
    probe = (
        "import sys, remem.cli.ui, remem.ui.start; "
        f"print([name for name in {heavy!r} if name in sys.modules])"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert loaded == "[]\n"


@browser_test
def test_the_printed_address_opens_the_site_in_one_browser_only(
    served: Served, watched: Watched, chromium: Any, tmp_path: Path
) -> None:
    page = visit(watched, served, "/", tmp_path / "owner.png")
    assert page.url == served.url  # the token is gone from the address
    assert page.evaluate("document.cookie") == ""  # HttpOnly: no script of a page reads it
    other = Watched(chromium)
    try:
        for address in (served.address, served.url):
            answer = other.page.goto(address)
            assert answer is not None and answer.status == 403, address
            text = other.page.locator("body").inner_text()
            assert "answers only the account that started `remem ui`" in text
            assert "Projects" not in text
        assert other.context.cookies() == []
    finally:
        other.close()
    page.reload()
    expect(page.locator("h1")).to_have_text("Projects")
    assert watched.problems == []
