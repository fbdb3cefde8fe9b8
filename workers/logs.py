"""Worker logging: one line per operation with a stable action name, to $REMEM_HOME/logs."""

from __future__ import annotations

import logging
import os
from io import TextIOWrapper
from logging.handlers import RotatingFileHandler

from remem.config import Settings
from remem.record.redact import redact_text

LOG_FILE = "worker.log"
FORMAT = "%(asctime)s %(levelname)s %(action)s %(message)s"


class _Fields(logging.Filter):
    """Every record gets an action."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "action"):
            record.action = "-"
        return True


class _RedactingFormatter(logging.Formatter):
    """Redacts each entry as it is written, whole: the message, and an exception's text and
    traceback, which may quote a command or the row a database refused."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


class PrivateRotatingFileHandler(RotatingFileHandler):
    """Creates every log file 0600, whatever the umask: the first one and each one a rotation
    starts (the base class would create those 0644 under the usual umask)."""

    def _open(self) -> TextIOWrapper:
        descriptor = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return open(descriptor, "a", encoding=self.encoding, errors=self.errors)


def configure(settings: Settings, verbose: bool = False) -> str:
    os.makedirs(settings.log_dir, mode=0o700, exist_ok=True)
    path = os.path.join(settings.log_dir, LOG_FILE)
    handler = PrivateRotatingFileHandler(path, maxBytes=5 * 1024 * 1024, backupCount=3)
    handler.setFormatter(_RedactingFormatter(FORMAT))
    handler.addFilter(_Fields())
    root = logging.getLogger("remem")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else settings.log_level)
    root.propagate = False
    return path
