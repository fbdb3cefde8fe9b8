"""`remem drops`: the payloads the hook did not store whole, and why."""

from __future__ import annotations

from typing import Any

import click

from remem.cli.app import cli, open_home, print_json, print_table


@cli.command()
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Newest N only."
)
@click.option("--json", "as_json", is_flag=True, help="Print the dropped payloads as JSON.")
def drops(limit: int, as_json: bool) -> None:
    """List dropped payloads, newest first: when, from which host and hook event, why, how
    large, and the start of each payload with its secrets redacted ("-" when it was dropped
    before remem kept excerpts). A payload kept with its output cut is listed as output_cut.

    \b
    Example:
      remem drops --limit 10
      remem drops --json
    """
    from remem.capture.store import list_drops
    from remem.db.engine import READ_ONLY, executor

    _settings_unused, engine = open_home()
    try:
        with engine.connect().execution_options(**{READ_ONLY: True}) as connection:
            rows = list_drops(executor(connection), limit)
    finally:
        engine.dispose()
    if as_json:
        print_json([{**row, "dropped_at": _iso(row["dropped_at"])} for row in rows])
        return
    if not rows:
        click.echo("No dropped payloads.")
        return
    print_table(
        "Dropped payloads",
        ["id", "time (UTC)", "host", "hook event", "reason", "detail", "size", "excerpt"],
        [_cells(row) for row in rows],
    )


def _cells(row: dict[str, Any]) -> list[str]:
    from rich.markup import escape  # what a payload holds must print as text, never as markup

    return [
        str(row["id"]),
        _iso(row["dropped_at"])[:19].replace("T", " "),
        escape(row["host"] or "-"),
        escape(row["hook_event"] or "-"),
        escape(row["reason"]),
        escape(row["detail"] or ""),
        _size(row["size_bytes"]),
        escape((row["excerpt"] or "").rstrip() or "-"),
    ]


def _iso(epoch_s: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch_s, UTC).isoformat().replace("+00:00", "Z")


def _size(size_bytes: int) -> str:
    if size_bytes < 1024:
        return f"{size_bytes} B"
    if size_bytes < 1024 * 1024:
        return f"{size_bytes / 1024:.1f} KiB"
    return f"{size_bytes / (1024 * 1024):.1f} MiB"
