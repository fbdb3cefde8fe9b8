"""The worker log holds no secret, whether a message or an exception's traceback carries it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.capture.redact import MASK
from remem.config import load_settings
from tests.conftest import Home
from workers import logs

TOKEN = "ghp_4fK9sLm2Qx7Rt8Vw1Yz3Bc5Nd6Hj0PqAeUi"


@pytest.fixture
def remem_logger() -> Iterator[logging.Logger]:
    """The `remem` logger as configure() leaves it, restored afterwards."""
    logger = logging.getLogger("remem")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    try:
        yield logger
    finally:
        for handler in logger.handlers:
            handler.close()
        logger.handlers[:], logger.level, logger.propagate = saved[0], saved[1], saved[2]


def push(token: str) -> None:
    raise RuntimeError(f"git push refused the token {token}")


def test_an_exception_and_its_traceback_are_redacted(
    home: Home, remem_logger: logging.Logger
) -> None:
    path = Path(logs.configure(load_settings(home.env)))
    try:
        push(TOKEN)
    except RuntimeError:
        remem_logger.exception("task failed", extra={"action": "fail"})
    remem_logger.info("pushed with %s", TOKEN, extra={"action": "complete"})
    for handler in remem_logger.handlers:
        handler.flush()

    written = path.read_text()
    assert TOKEN not in written
    assert "Traceback (most recent call last)" in written
    assert f"RuntimeError: git push refused the token {MASK}\n" in written
    assert f"INFO complete pushed with {MASK}\n" in written
