"""`remem drops`: the payloads the hook did not store whole, and why."""

from __future__ import annotations

from typing import Any

import click

from remem.cli.app import cli, current_settings, json_option, print_table


@cli.command()
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Newest N only."
)
@json_option("the dropped payloads")
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
    from remem.db.snapshot import read_snapshot

    with read_snapshot(current_settings()) as execute:
        rows = list_drops(execute, limit)
    print_table(
        "Dropped payloads",
        ["id", "time (UTC)", "host", "hook event", "reason", "detail", "size", "excerpt"],
        [_cells(row) for row in rows],
        empty="No dropped payloads.",
        json=rows if as_json else None,
    )


def _cells(row: dict[str, Any]) -> list[str]:
    """The row's cells as recorded: the table (remem.record.table) escapes their controls and
    reads no markup."""
    from remem.json_contract import rfc3339

    return [
        str(row["id"]),
        (rfc3339(row["dropped_at"]) or "")[:19].replace("T", " "),
        row["host"] or "-",
        row["hook_event"] or "-",
        row["reason"],
        row["detail"] or "",
        _size(row["size_bytes"]),
        (row["excerpt"] or "").rstrip() or "-",
    ]


def _size(size_bytes: int) -> str:
    if size_bytes < 1024:
        return f"{size_bytes} B"
    if size_bytes < 1024 * 1024:
        return f"{size_bytes / 1024:.1f} KiB"
    return f"{size_bytes / (1024 * 1024):.1f} MiB"
