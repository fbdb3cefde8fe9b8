"""The `remem` command.

Importing this package costs nothing: `main` answers the plain reads with the stdlib
(remem.cli.fast) and loads click and the commands (remem.cli.commands) for everything else.
"""

from __future__ import annotations


def main() -> None:
    from remem.cli.fast import main as front_door

    front_door()
