"""`python -m remem`: the same as the `remem` command (service units use this interpreter)."""

from remem.cli.fast import main

main()
