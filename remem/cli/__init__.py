"""The `remem` command. Importing the command modules registers them on the group."""

from remem.cli import forget, home, memory, work  # noqa: F401  (registration)
from remem.cli.app import cli, main

__all__ = ["cli", "main"]
