"""Starting `remem ui`: the home checked, the port bound and the address printed first, with
the standard library only; the site (Starlette, Jinja2, the read model) is imported after."""

from __future__ import annotations

import contextlib
import os
import socket
from typing import TYPE_CHECKING

from remem.db.snapshot import reading
from remem.errors import RememError
from remem.ui.guard import Owner

if TYPE_CHECKING:
    from remem.config import Settings


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (port 0: a free one). Only IPv4's loopback: the Host
    check accepts 127.0.0.1 alone, so `localhost` never reaches what listens on [::1]."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as exc:
        listener.close()
        raise RememError(
            f"Port {port} on 127.0.0.1 cannot be used ({exc.strerror}): pass --port N, or "
            "--port 0 for any free port."
        ) from None
    listener.listen(128)
    return listener


def serve(settings: Settings, port: int, open_browser: bool = False) -> None:
    """Serve the site until interrupted, after saying where."""
    with reading(settings):
        pass  # a home that cannot be read is said now, not on the first page
    listener = bind(port)
    owner = Owner(listener.getsockname()[1])
    address = owner.address()
    print(
        f"remem ui: {address} (for you only: its token works once, then your browser keeps a "
        "cookie; read-only but for its buttons; Ctrl-C stops it)",
        flush=True,
    )
    if open_browser:
        open_in_browser(settings.home, owner)
    try:
        import uvicorn

        from remem.ui.server import Site

        config = uvicorn.Config(
            Site(settings, owner).app(),
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
        )
        uvicorn.Server(config).run(sockets=[listener])
    finally:  # on Ctrl-C; a SIGTERM ends the process first, leaving a spent or dead token
        if owner.opener is not None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(owner.opener)


def open_in_browser(home: str, owner: Owner) -> None:
    """Open the address in the default browser through a file of the home that leads to it:
    a browser's command line is readable by every account, a file of the home by its owner
    only. The file goes when the token is spent."""
    import html
    import webbrowser
    from pathlib import Path

    opener = os.path.join(home, f"ui-open-{owner.port}.html")
    with contextlib.suppress(FileNotFoundError):
        os.remove(opener)  # a stale one of an earlier process on this port
    descriptor = os.open(opener, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(
            '<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" '
            f'content="0;url={html.escape(owner.address())}"><title>remem</title>\n'
        )
    owner.opener = opener
    webbrowser.open(Path(opener).as_uri())
