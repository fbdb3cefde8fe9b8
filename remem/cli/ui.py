"""`remem ui`: the memory as a local site."""

from __future__ import annotations

import click

from remem.cli.app import cli, current_settings


@cli.command("ui")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="The port on 127.0.0.1 (default: the ui.port setting, 7767; 0 picks a free one).",
)
@click.option(
    "--open",
    "open_browser",
    is_flag=True,
    help="Open the printed address in the default browser (through a file of the home: a "
    "browser's command line is readable by every account).",
)
def ui_command(port: int | None, open_browser: bool) -> None:
    """Serve a local site of what the memory holds, on 127.0.0.1 only, until Ctrl-C: the
    projects, each branch's digest, each procedure's evidence across branches, the report
    and a search. Its only writes are buttons: archive or unarchive a procedure, and forget
    by pattern after a preview.

    It answers you only: the address it prints holds a one-time token, which your browser
    exchanges for a cookie on first use; any other request, from another account of this
    machine or another site, is refused. To open the site in a second browser, start it again.

    \b
    Example:
      remem ui --open
      remem ui --port 8800
    """
    from remem.ui.start import serve

    settings = current_settings()
    serve(settings, settings.ui_port if port is None else port, open_browser)
