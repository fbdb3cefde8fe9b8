"""Errors that reach the user. Each message says what to do next."""

from __future__ import annotations


class RememError(Exception):
    """Base class: the CLI prints the message on one line and exits 1."""

    exit_code = 1


class HomeNotFound(RememError):
    def __init__(self, home: str) -> None:
        super().__init__(f"No remem home at {home}: run `remem init` (or fix REMEM_HOME).")
        self.home = home


class DatabaseVanished(RememError):
    """The database file the worker opened is no longer at its path."""

    def __init__(self, path: str, change: str) -> None:
        super().__init__(
            f"The database file {path} was {change} while the worker ran: it stopped without "
            "writing to it, and the spool keeps what the hooks captured meanwhile. Start the "
            "worker again to open the file now at that path."
        )
        self.path = path
        self.change = change


class ConfigError(RememError):
    """A setting that cannot be used: names the file, the line where known, and the key."""

    def __init__(self, path: str, key: str, problem: str, line: int | None = None) -> None:
        where = path if line is None else f"{path}, line {line}"
        super().__init__(f"{where}: `{key}` {problem}")
        self.path = path
        self.key: str | None = key
        self.line = line
        self.problem = f"`{key}` {problem}"

    @property
    def brief(self) -> str:
        """The problem named by the file's name alone, as the hook says it in one line."""
        where = self.path.rsplit("/", 1)[-1]
        return f"{where}{'' if self.line is None else f' line {self.line}'}: {self.problem}"


class ConfigSyntaxError(ConfigError):
    """The config file is not TOML at all: there is no setting to name, only a line."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        RememError.__init__(
            self,
            f"{path}{'' if line is None else f', line {line}'} is not valid TOML ({problem}): "
            "fix that line, or move the file aside to use the defaults.",
        )
        self.path = path
        self.key = None
        self.line = line
        self.problem = f"not valid TOML ({problem})"


class ConfigErrors(ConfigError):
    """Every setting that cannot be used, named at once: fixing one need not reveal the next."""

    def __init__(self, problems: list[ConfigError]) -> None:
        RememError.__init__(
            self, f"{len(problems)} settings cannot be used: " + "; ".join(map(str, problems))
        )
        self.problems = problems
        self.path = problems[0].path
        self.key = problems[0].key
        self.line = problems[0].line
        self.problem = problems[0].problem

    @property
    def brief(self) -> str:
        return "; ".join(each.brief for each in self.problems)


NEW_HOME = (
    "point REMEM_HOME at a folder of your own (or move that path aside) and run `remem init`."
)


class HomeUnusable(RememError):
    """REMEM_HOME names something that cannot be a home: a file, or a folder we cannot enter."""

    def __init__(self, home: str, problem: str, fix: str = NEW_HOME) -> None:
        super().__init__(f"The remem home {home} {problem}: {fix}")
        self.home = home


class HomeNotOwned(HomeUnusable):
    def __init__(self, home: str, owner_uid: int) -> None:
        super().__init__(
            home,
            f"belongs to another user (uid {owner_uid})",
            "remem refuses to read or write it. Use your own home (REMEM_HOME) or fix its owner.",
        )


class SchemaBehind(RememError):
    def __init__(self, current: str | None, head: str) -> None:
        shown = current or "none"
        super().__init__(
            f"Database schema is at {shown}, this remem needs {head}: run `remem db upgrade`."
        )


class TeamSchemaMismatch(RememError):
    """The team database is at another revision than this remem: nothing is shipped or pulled
    until one machine runs the upgrade (or this one is upgraded)."""

    def __init__(self, current: str | None, head: str) -> None:
        super().__init__(
            f"The team database schema is at {current or 'none'}, this remem needs {head}: "
            f"{team_schema_fix(current, head)}."
        )


def team_schema_fix(current: str | None, head: str) -> str:
    """What brings the team database and this remem to one revision (revisions are zero-padded
    numbers: text order is their order)."""
    if current is not None and current > head:
        return "upgrade remem on this machine"
    return "run `remem db upgrade --team` (from any one machine of the team)"


class DatabaseUnavailable(RememError):
    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"Cannot open the database {url}: {reason}")


class NotFound(RememError):
    pass


class PermanentTaskError(RememError):
    """A task that can never succeed as it is (bad data): failed at once, no retries burned."""
