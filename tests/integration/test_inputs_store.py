"""The inputs of procedures in the database, on SQLite and PostgreSQL alike: a verified run
records the fingerprint of what it runs; schema 0017 comes and goes on a database holding
procedures, and the rebuild it asks for reads their inputs from the files as they are."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sqlalchemy import inspect, text

from remem.db import migrate
from remem.procedures import rebuild
from remem.record.inputs import READ_AT_REBUILD, READ_AT_VERIFICATION
from tests.integration.conftest import World, make_repository

MAKEFILE = "test:\n\tpytest -q\n\nlint:\n\truff check .\n"


def _inputs(world: World) -> list[tuple[str, list[tuple[str, str, str]]]]:
    rows = world.execute("SELECT workflow, inputs FROM procedures ORDER BY id")
    return [
        (workflow, [(i["path"], i["task"], i["read_by"]) for i in json.loads(inputs)])
        for workflow, inputs in rows
    ]


def test_a_verified_run_records_its_input_and_0017_migrates_and_rebuilds_it(
    world: World, tmp_path: Path
) -> None:
    shop = make_repository(tmp_path / "shop")
    (Path(shop) / "Makefile").write_text(MAKEFILE)
    for _ in range(2):
        world.post("make test", project=shop, branch=None)
    world.burst()
    assert _inputs(world) == [("make test", [("Makefile", "test", READ_AT_VERIFICATION)])]

    migrate.downgrade(world.engine, "0016")
    columns = {c["name"] for c in inspect(world.engine).get_columns("procedures")}
    assert {"inputs", "inputs_read_at"}.isdisjoint(columns)
    assert world.scalar("SELECT count(*) FROM procedures") == 1
    with world.engine.begin() as connection:
        connection.execute(text("DELETE FROM pending_jobs"))

    migrate.upgrade(world.engine)
    assert world.execute("SELECT inputs, inputs_read_at FROM procedures") == [("[]", None)]
    assert world.execute("SELECT name FROM pending_jobs") == [("rebuild_procedures",)]
    world.now += 60
    world.burst()  # the pending rebuild, then the re-derivation
    assert _inputs(world) == [("make test", [("Makefile", "test", READ_AT_REBUILD)])]
    assert world.scalar("SELECT inputs_read_at FROM procedures") == world.now


def test_a_rebuild_where_the_work_tree_is_gone_keeps_the_fingerprints(
    world: World, tmp_path: Path
) -> None:
    shop = make_repository(tmp_path / "shop")
    (Path(shop) / "Makefile").write_text(MAKEFILE)
    for _ in range(2):
        world.post("make test", project=shop, branch=None)
    world.burst()
    kept = _inputs(world)
    assert kept == [("make test", [("Makefile", "test", READ_AT_VERIFICATION)])]
    shutil.rmtree(shop)
    world.now += 60
    rebuild.rebuild(world.engine, world.now)
    world.burst()
    assert _inputs(world) == kept
