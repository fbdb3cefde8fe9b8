"""The worker log: private from its first line through every rotation, and holding no secret,
whether a message or an exception's traceback carries it."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.config import load_settings
from remem.record.redact import MASK
from tests.conftest import Home
from workers import logs


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


@pytest.fixture
def usual_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_every_log_file_is_private_after_rotations(
    home: Home, remem_logger: logging.Logger, usual_umask: None
) -> None:
    path = Path(logs.configure(load_settings(home.env)))
    (handler,) = remem_logger.handlers
    assert isinstance(handler, logs.PrivateRotatingFileHandler)
    handler.maxBytes = 200
    for number in range(40):
        remem_logger.info("line %s of the worker log", number, extra={"action": "test"})
    handler.flush()
    files = [path, path.with_name(f"{path.name}.1"), path.with_name(f"{path.name}.2")]
    assert all(file.exists() for file in files)
    assert [oct(file.stat().st_mode & 0o777) for file in files] == [oct(0o600)] * 3
    assert "line 39 of the worker log" in path.read_text()


TOKEN = "ghp_4fK9sLm2Qx7Rt8Vw1Yz3Bc5Nd6Hj0PqAeUi"


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
