"""`remem forget` on a team (a real PostgreSQL server): another machine's copy of what was
forgotten, shipped after the forget, is forgotten on arrival; every machine masks it from its
next pull on; `--team-vacuum` rewrites the tables that held it."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import Engine

from tests.acceptance.test_team import TOKEN, Machine, clone, machines, rows

__all__ = ["machines"]  # the fixture, used by name


def test_a_copy_shipped_after_the_forget_is_forgotten_on_arrival(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, bob, team = machines
    shop_a = clone(tmp_path / "alice" / "shop", "git@github.com:acme/shop.git")
    shop_b = clone(tmp_path / "bob" / "shop", "git@github.com:acme/shop.git")
    alice.run(shop_a, f"./deploy.sh --mode {TOKEN}", "a1")
    bob.run(shop_b, f"./deploy.sh --mode {TOKEN}", "b1")  # captured, not shipped yet
    alice.burst()

    summary = json.loads(
        alice.remem("forget", "--match", "zq8Kp2", "--team-vacuum", "--yes", "--json").stdout
    )
    recorded = rows(team, "SELECT bucket, salt, digest FROM forgotten_texts")
    bob.burst()  # ships his copy, then pulls what the team forgot
    bob.run(shop_b, f"cat .env | grep {TOKEN}", "b2")

    assert summary["team"]["forgotten"] is True
    assert summary["team"]["plan"]["events_deleted"] == 1
    assert "captured_events" in summary["team"]["vacuumed"]
    assert len(recorded) == 1 and not any(TOKEN in str(value) for value in recorded[0])
    commands = [command for (command,) in rows(team, "SELECT command FROM captured_events")]
    assert commands == ["./deploy.sh --mode [forgotten]"]
    # Bob's machine pulled the record with the team's memory: his hook masks it from then on.
    assert "cat .env | grep [forgotten]" in bob.commands()


def test_without_team_vacuum_forget_says_the_server_keeps_the_bytes_for_now(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, _bob, _team = machines
    shop = clone(tmp_path / "alice" / "shop", "git@github.com:acme/shop.git")
    alice.run(shop, f"./deploy.sh --mode {TOKEN}", "a1")
    alice.burst()

    out = alice.remem("forget", "--match", "zq8Kp2", "--yes").stdout

    assert "heap and WAL keep the deleted bytes until VACUUM FULL" in out
    assert "--team-vacuum runs it" in out
