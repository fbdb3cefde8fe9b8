"""The schema head that the hook and every command compare with alembic_version, read from the
migrations' file names without Alembic, is Alembic's own head; every migration is named so
that it stays so when one is added."""

from __future__ import annotations

import os

from alembic.script import ScriptDirectory

from remem.db import migrate
from remem.db.sqlite import migrations_dir, schema_head


def _script() -> ScriptDirectory:
    return ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))


def test_the_schema_head_is_alembics_head() -> None:
    assert schema_head() == _script().get_current_head()


def test_every_migration_is_named_by_its_revision_in_one_numbered_line() -> None:
    oldest_first = list(reversed(list(_script().walk_revisions())))
    for number, revision in enumerate(oldest_first, start=1):
        assert revision.revision == f"{number:04d}", revision.path
        assert os.path.basename(revision.path).startswith(f"{revision.revision}_")
        assert revision.down_revision == (f"{number - 1:04d}" if number > 1 else None)
    files = [
        name
        for name in os.listdir(os.path.join(migrations_dir(), "versions"))
        if name.endswith(".py")
    ]
    assert len(files) == len(oldest_first)
