"""The database file a process opened, known by its identity rather than its path.

SQLite goes on writing the file it opened when its path comes to name another one, or none:
the file deleted, moved away, or replaced by a copy. A daemon that went on would write where no
one reads, and take the spool's events with it. Stdlib only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

DELETED = "deleted or moved away"
REPLACED = "replaced by another file"


@dataclass(frozen=True)
class DatabaseFile:
    path: str
    device: int
    inode: int

    @classmethod
    def opened(cls, path: str) -> DatabaseFile | None:
        """The file at the path now; None when there is none (an engine not yet connected)."""
        try:
            status = os.stat(path)
        except FileNotFoundError:
            return None
        return cls(path, status.st_dev, status.st_ino)

    def change(self) -> str | None:
        """None while the path still names the file opened; else what became of it."""
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            return DELETED
        if (status.st_dev, status.st_ino) != (self.device, self.inode):
            return REPLACED
        return None
