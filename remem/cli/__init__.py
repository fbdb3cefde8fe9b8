"""The `remem` command. Its entry point is remem.cli.fast.main: the plain reads answered with
the stdlib, click and the commands (remem.cli.commands) loaded for everything else. Importing
this package costs nothing."""
