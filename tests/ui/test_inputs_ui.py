"""`remem ui` says when what a procedure runs changed since it was last verified, in a real
browser: the branch page's digest, its procedures table and the procedure's page, before and
after the Makefile's test target changed and a script was deleted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acceptance.test_context import context
from tests.acceptance.test_inputs import MAKEFILE, _repository, _touch_later, _verify
from tests.acceptance.test_truthful_digest import Agent
from tests.conftest import Home
from tests.ui.conftest import Served, Watched, browser_test
from tests.ui.test_site import branch_path, procedure_id, visit

COMMANDS = ("make test", "make lint", "./scripts/check.sh")


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return _repository(tmp_path)


@pytest.fixture
def site(home: Home, shop: Path) -> Iterator[Served]:
    _verify(home, Agent(home, shop), COMMANDS, "s1")
    served = Served(home)
    try:
        yield served
    finally:
        served.stop()


def _row(page: object, command: str) -> str:
    rows = page.locator("table.procedures tr").all_inner_texts()  # type: ignore[attr-defined]
    return next(row for row in rows if command in row)


@browser_test
def test_the_ui_says_what_changed_and_what_is_gone(
    site: Served, watched: Watched, home: Home, shop: Path, tmp_path: Path
) -> None:
    path = branch_path(shop, "main")
    page = visit(watched, site, path, tmp_path / "before.png")
    digest = page.locator("pre.digest").first.inner_text()
    assert digest == context(home, shop).stdout
    assert "changed since last verified" not in digest
    assert page.locator(".inputs-changed, .inputs-missing").count() == 0

    (shop / "Makefile").write_text(MAKEFILE.replace("$(FLAGS) tests/", "$(FLAGS) -x tests/"))
    _touch_later(shop / "Makefile")
    (shop / "scripts" / "check.sh").unlink()

    page = visit(watched, site, path, tmp_path / "after.png")
    digest = page.locator("pre.digest").first.inner_text()
    assert digest == context(home, shop).stdout
    assert "— changed since last verified: Makefile (test)" in digest
    assert "- `./scripts/check.sh`  missing: scripts/check.sh" in digest
    assert "— changed since last verified: Makefile (test)" in _row(page, "make test")
    assert "changed" not in _row(page, "make lint")
    assert "— missing: scripts/check.sh" in _row(page, "./scripts/check.sh")

    test = procedure_id(home, "make test")
    page = visit(watched, site, f"/procedure/{test}", tmp_path / "procedure.png")
    warning = page.locator("p.inputs").inner_text()
    assert warning == "— changed since last verified: Makefile (test)"
    assert watched.problems == []
