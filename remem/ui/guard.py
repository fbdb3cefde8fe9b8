"""Who `remem ui` answers: its owner only. Other sites are kept out by the Host check (a page
that rebinds its name to 127.0.0.1 still sends its own name); other accounts of this machine
by a key only the owner holds: the address `remem ui` prints carries a one-time token, which
the first request exchanges for a cookie. Every request without the cookie or the token is
refused, reads included, and a request body is refused past a small cap before it is read.

Plain ASGI and the standard library: the address is printed before the site is imported.
"""

from __future__ import annotations

import contextlib
import hmac
import html
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The site's forms hold a pattern, a project root and two tokens: far below this.
MAX_BODY_BYTES = 4096
TOKEN = "token"

# No script runs anywhere on the site; styles come from its own stylesheet only.
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # "no-referrer" would send Origin: null
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]

UNKNOWN_HOST = "Unknown host: open the address `remem ui` printed (http://127.0.0.1:PORT/…)."
NOT_OWNER = (
    "This site answers only the account that started `remem ui`: open the address it printed "
    "(its token works once; the browser that opened it keeps a cookie). For another browser, "
    "start `remem ui` again."
)
TOO_LARGE = f"A request body is at most {MAX_BODY_BYTES} bytes here."
LEAD_ON = (
    '<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={location}">'
    '<link rel="icon" href="data:,"><title>remem</title>'
    '<p>Opening <a href="{location}">remem</a>…</p>\n'
)


class Owner:
    """The keys of one `remem ui` process: the token its address carries, good for one
    exchange, and the cookie that exchange sets."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.token: str | None = secrets.token_urlsafe(32)
        self.cookie_value = secrets.token_urlsafe(32)
        # Cookies are shared by every port of a host: each process keeps its own name.
        self.cookie_name = f"remem_ui_{port}"
        self.opener: str | None = None  # the file `--open` gave the browser

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def address(self) -> str:
        return f"{self.origin}/?{TOKEN}={self.token}"

    def holds_cookie(self, headers: list[tuple[bytes, bytes]]) -> bool:
        expected = self.cookie_value.encode()
        for name, value in headers:
            if name != b"cookie":
                continue
            for pair in value.split(b";"):
                key, _, given = pair.strip().partition(b"=")
                if key == self.cookie_name.encode() and hmac.compare_digest(given, expected):
                    return True
        return False

    def spend(self, given: str) -> bool:
        """Whether `given` is the token, which is then spent: a second use is refused."""
        if self.token is None or not hmac.compare_digest(given.encode(), self.token.encode()):
            return False
        self.token = None
        if self.opener is not None:  # it holds the token: gone with it
            with contextlib.suppress(OSError):
                os.remove(self.opener)
        return True

    def set_cookie(self) -> bytes:
        return f"{self.cookie_name}={self.cookie_value}; HttpOnly; SameSite=Strict; Path=/".encode()


class Guard:
    """The ASGI application in front of the site: Host, then owner, then body size, and the
    security headers on every answer."""

    def __init__(self, app: ASGIApp, owner: Owner) -> None:
        self.app = app
        self.owner = owner
        self.host = f"127.0.0.1:{owner.port}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no websocket, no lifespan: nothing else is served
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        hosts = [value for name, value in headers if name == b"host"]
        if len(hosts) != 1 or hosts[0].lower() != self.host:
            await refuse(send, 421, UNKNOWN_HOST)
            return
        if not self.owner.holds_cookie(headers):
            await self._enter(scope, send)
            return
        body = await read_capped(scope, receive)
        if body is None:
            await refuse(send, 413, TOO_LARGE)
            return
        await self.app(scope, replay(body, receive), secured(send))

    async def _enter(self, scope: Scope, send: Send) -> None:
        """Without the cookie: the token's one exchange for it, or a refusal. The body, if
        any, is never read."""
        query = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
        given = [value for name, value in query if name == TOKEN]
        if scope["method"] not in ("GET", "HEAD") or len(given) != 1:
            await refuse(send, 403, NOT_OWNER)
            return
        if not self.owner.spend(given[0]):
            await refuse(send, 403, NOT_OWNER)
            return
        rest = urlencode([(name, value) for name, value in query if name != TOKEN])
        location = quote(scope["path"], safe="/") + (f"?{rest}" if rest else "")
        # A page that leads on, not a 303: a redirect keeps the navigation's initiator, and
        # one begun elsewhere (the file `--open` hands the browser) would not carry a
        # SameSite=Strict cookie. This page's own navigation does.
        body = LEAD_ON.format(location=html.escape(location)).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"set-cookie", self.owner.set_cookie()),
                    *SECURITY_HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def read_capped(scope: Scope, receive: Receive) -> bytes | None:
    """The request body, or None past MAX_BODY_BYTES: a declared length is judged before a
    byte is read, a streamed body as it comes."""
    declared = [value for name, value in scope["headers"] if name == b"content-length"]
    if declared:
        try:
            length = int(declared[0])
        except ValueError:
            return None
        if length > MAX_BODY_BYTES:
            return None
    parts, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(parts)


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body already read, then waits as the server's does."""
    given = False

    async def receive_again() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return receive_again


def secured(send: Send) -> Send:
    async def send_secured(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
        await send(message)

    return send_secured


async def refuse(send: Send, status: int, text: str) -> None:
    """A plain answer that names no data, and closes the connection: a body sent with the
    request is never read."""
    body = text.encode() + b"\n"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
