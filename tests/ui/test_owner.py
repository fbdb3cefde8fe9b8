"""`remem ui` answers its owner only: another account of the machine (`nobody`, run with
runuser as CI runs as root) reads nothing and changes nothing; the printed token works once,
then the cookie it was exchanged for; a request body past the cap is refused unread, so the
process does not grow whatever is sent."""

from __future__ import annotations

import html
import json
import os
import shutil
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import pytest
from playwright.sync_api import expect

from tests.conftest import Home, wait_for
from tests.ui.conftest import BUILD, TEST, Served, Watched, browser_test, build_memory, leads_to
from tests.ui.test_site import procedure_id

_NOT_ROOT = pytest.mark.skipif(
    os.geteuid() != 0 and not os.environ.get("CI"),
    reason="acting as another account (runuser -u nobody) needs root; CI runs as root",
)

# What another account runs: the standard library's HTTP client, as any local program could.
AS_ANYONE = """
import http.client, json, sys
port, method, path, body = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] or None
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
headers = {"Content-Type": "application/x-www-form-urlencoded"} if body else {}
connection.request(method, path, body=body, headers=headers)
answer = connection.getresponse()
print(json.dumps({"status": answer.status, "body": answer.read().decode("utf-8", "replace")}))
"""


def as_nobody(served: Served, method: str, path: str, body: str = "") -> tuple[int, str]:
    runuser = shutil.which("runuser")
    assert runuser is not None, "runuser (util-linux) is needed to act as another account"
    asked = [str(served.port), method, path, body]
    result = subprocess.run(
        [runuser, "-u", "nobody", "--", "/usr/bin/python3", "-c", AS_ANYONE, *asked],
        capture_output=True,
        text=True,
        timeout=30,
        cwd="/",
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    return int(answer["status"]), str(answer["body"])


@_NOT_ROOT
def test_another_account_reads_nothing_and_changes_nothing(
    served: Served, home: Home, project: Path
) -> None:
    assert subprocess.run(["id", "-u", "nobody"], capture_output=True).stdout.strip() != b"0"
    test = procedure_id(home, TEST)
    served.enter()  # the owner is in: the site is open, to its owner
    assert served.request("GET", "/")[0] == 200
    _status, page = served.request("GET", f"/procedure/{test}")
    form_token = page.split('name="token" value="', 1)[1].split('"', 1)[0]
    reads = ["/", f"/procedure/{test}", "/search?q=make", "/report", "/forget", "/static/remem.css"]
    reads += [f"/?token={served.token}", "/?token=guess"]
    for path in reads:
        status, text = as_nobody(served, "GET", path)
        assert status == 403, path
        for recorded in (str(project), BUILD, TEST, form_token, "Procedure"):
            assert recorded not in text, (path, recorded)
        assert "answers only the account that started `remem ui`" in text
    writes = [
        (f"/procedure/{test}/archive", f"token={form_token}"),
        ("/forget", f"token={form_token}&pattern=make"),
    ]
    for path, body in writes:
        assert as_nobody(served, "POST", path, body)[0] == 403, path
    assert {p["status"] for p in home.procedures()} == {"active"}
    assert BUILD in [p["command"] for p in home.procedures()]
    assert served.request("GET", "/")[0] == 200  # the owner is still in


def test_the_token_works_once_then_the_cookie(served: Served, home: Home, project: Path) -> None:
    status, headers, body = served.exchange(
        "GET", f"/report?since=7d&token={served.token}", owner=False
    )
    # A page that leads on to the page asked for, holding nothing of the memory.
    assert (status, leads_to(body)) == (200, "/report?since=7d")
    assert "Failing calls" not in body and "location" not in headers
    cookie = headers["set-cookie"]
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {part.strip() for part in cookie.split(";")}
    served.cookie = cookie.split(";", 1)[0]
    # A token leads to the page it was given for, the rest of its query kept as sent.
    again = Served(home)
    try:
        wanted = f"/branch?project={quote(str(project), safe='')}&branch=caf%C3%A9"
        status, _headers, body = again.exchange("GET", f"{wanted}&token={again.token}", owner=False)
        assert (status, leads_to(body)) == (200, wanted)
    finally:
        again.stop()
    # Spent: the same address, without the cookie, is refused and sets nothing.
    status, headers, body = served.exchange("GET", f"/?token={served.token}", owner=False)
    assert status == 403 and "set-cookie" not in headers and "Projects" not in body
    status, page = served.request("GET", "/report?since=7d")
    assert status == 200 and "over the last 7d" in page
    name, value = served.cookie.split("=", 1)
    forged = {"Cookie": f"{name}={value[:-1]}x"}
    assert served.request("GET", "/", headers=forged, owner=False)[0] == 403
    other_port = {"Cookie": f"remem_ui_{served.port + 1}={value}"}
    assert served.request("GET", "/", headers=other_port, owner=False)[0] == 403
    assert served.request("GET", "/", owner=False)[0] == 403


def test_a_post_without_the_cookie_is_refused(served: Served, home: Home) -> None:
    test = procedure_id(home, TEST)
    _status, page = served.request("GET", f"/procedure/{test}")
    form_token = page.split('name="token" value="', 1)[1].split('"', 1)[0]
    for path, body in (
        (f"/procedure/{test}/archive", f"token={form_token}"),
        ("/forget", f"token={form_token}&pattern=pytest"),
        (f"/procedure/{test}/archive?token={served.token}", f"token={form_token}"),
    ):
        status, _headers, answer = served.exchange("POST", path, body, owner=False)
        assert status == 403 and "Would forget" not in answer, path
    assert {p["status"] for p in home.procedures()} == {"active"}
    assert TEST in [p["command"] for p in home.procedures()]
    status, _headers, _answer = served.exchange(
        "POST", f"/procedure/{test}/archive", f"token={form_token}"
    )
    assert status == 303  # the same request from the owner


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


STREAMED_MIB = 64


def post_large(served: Served, headers: dict[str, str], chunked: bool) -> tuple[int, float]:
    """POST a large body, streaming it while the answer is awaited: the status and the
    seconds the answer took. The body is at most STREAMED_MIB MiB, whatever is declared."""
    sock = socket.create_connection(("127.0.0.1", served.port), timeout=30)
    head = f"POST /forget HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n"
    head += "Content-Type: application/x-www-form-urlencoded\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    sock.sendall(head.encode() + b"\r\n")
    block = b"pattern=" + b"a" * (64 * 1024 - 8)

    def stream() -> None:
        try:
            for _ in range(STREAMED_MIB * 16):
                sock.sendall(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
        except OSError:
            pass  # the server answered and closed: the rest is never sent

    sender = threading.Thread(target=stream, daemon=True)
    started = time.monotonic()
    sender.start()
    try:
        answer = sock.recv(64)
    finally:
        elapsed = time.monotonic() - started
        sock.close()
        sender.join(timeout=30)
    return int(answer.split(b" ", 2)[1]), elapsed


def test_a_large_body_is_refused_before_it_is_read(served: Served) -> None:
    served.enter()
    cookie = {"Cookie": str(served.cookie)}
    before = rss_kib(served.process.pid)
    claimed = {"Content-Length": "800000000"}
    cases = [
        (claimed, False, 403),  # not the owner: refused before anything else
        ({**claimed, **cookie}, False, 413),
        ({"Transfer-Encoding": "chunked", **cookie}, True, 413),  # no length said
        ({"Transfer-Encoding": "chunked"}, True, 403),
    ]
    for headers, chunked, expected in cases:
        status, elapsed = post_large(served, headers, chunked)
        assert status == expected, headers
        assert elapsed < 10, (headers, elapsed)
    grown_mib = (rss_kib(served.process.pid) - before) / 1024
    assert grown_mib < STREAMED_MIB / 4, grown_mib
    assert served.request("GET", "/")[0] == 200  # still serving
    status, page = served.request("POST", "/forget", "pattern=x&token=" + "t" * 5000)
    assert status == 413 and "at most 4096 bytes" in page


@browser_test
def test_open_hands_the_browser_a_file_of_the_home_never_the_token(
    home: Home, project: Path, watched: Watched, tmp_path: Path
) -> None:
    # A browser's command line is readable by every account: what --open passes is recorded.
    build_memory(home, project)
    recorded, browser = tmp_path / "argv", tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {recorded}\n')
    browser.chmod(0o755)
    served = Served(home, "--open", env={"BROWSER": str(browser)})
    try:
        wait_for(lambda: recorded.exists() and recorded.read_text().endswith("\n"), timeout=15)
        (argument,) = recorded.read_text().splitlines()
        assert served.token not in argument and argument.startswith("file://")
        opener = Path(unquote(urlsplit(argument).path))
        assert opener.parent == home.path
        assert stat.S_IMODE(opener.stat().st_mode) == 0o600
        assert served.address in html.unescape(opener.read_text())
        watched.page.goto(argument)  # as the browser opens it: the file leads to the site
        watched.page.wait_for_url(served.url)
        expect(watched.page.locator("h1")).to_have_text("Projects")
        assert not opener.exists()  # gone with the token it held
        assert served.request("GET", f"/?token={served.token}", owner=False)[0] == 403
    finally:
        served.stop()
    assert watched.problems == []
