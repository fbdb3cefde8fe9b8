"""Worker logging: one line per operation with a stable action name, to $REMEM_HOME/logs."""

from __future__ import annotations

import logging
import os
from logging.handlers import RotatingFileHandler

from remem.capture.redact import redact_text
from remem.config import Settings

LOG_FILE = "worker.log"
FORMAT = "%(asctime)s %(levelname)s %(action)s %(message)s"


class _Fields(logging.Filter):
    """Every record gets an action, and its message is redacted before it is written."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "action"):
            record.action = "-"
        record.msg = redact_text(record.getMessage())
        record.args = None
        return True


def configure(settings: Settings, verbose: bool = False) -> str:
    os.makedirs(settings.log_dir, mode=0o700, exist_ok=True)
    path = os.path.join(settings.log_dir, LOG_FILE)
    if not os.path.exists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    handler = RotatingFileHandler(path, maxBytes=5 * 1024 * 1024, backupCount=3)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(_Fields())
    root = logging.getLogger("remem")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else settings.log_level)
    root.propagate = False
    return path
