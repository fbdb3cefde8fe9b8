"""`remem hooks`: install remem's hooks into the agents' own settings files, take them out, or
print them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from remem.cli.app import cli, current_settings, json_option, options, print_json
from remem.errors import RememError

if TYPE_CHECKING:
    from pathlib import Path

    from remem.admin.agents_settings import AgentChange

AGENT_NAMES = ("claude-code", "codex", "cursor")
AGENT = click.Choice([*AGENT_NAMES, "all"])


class NoAgentFound(RememError):
    def __init__(self, user_home: Path) -> None:
        super().__init__(
            f"No agent folder in {user_home} (.claude, .codex, .cursor): name the agent, "
            "e.g. `remem hooks install claude-code`."
        )


@cli.group()
def hooks() -> None:
    """Connect your agents: merge remem's hooks into Claude Code's, Codex's and Cursor's own
    settings files (every other key and hook kept, a backup beside each changed file).

    \b
    Example:
      remem hooks install all --dry-run
      remem hooks install all
      remem hooks show codex
    """


# The arguments of `install` and `uninstall`.
_CHANGE = options(
    click.argument("agent", type=AGENT, default="all"),
    click.option("--dry-run", is_flag=True, help="Print the diff of each file; write nothing."),
    json_option("what changed"),
)


@hooks.command("install")
@_CHANGE
@click.option(
    "--advice-before",
    is_flag=True,
    help="Also warn Claude Code before a command that keeps failing here (a PreToolUse hook: "
    "one more process per command). Off unless given at each install.",
)
def hooks_install(agent: str, dry_run: bool, as_json: bool, advice_before: bool) -> None:
    """Merge remem's hooks into an agent's settings file: ~/.claude/settings.json,
    ~/.codex/hooks.json (and `[features] codex_hooks = true` in ~/.codex/config.toml),
    ~/.cursor/hooks.json. `all` (the default) means every agent whose folder exists.

    An older remem entry is replaced, never doubled; a second install changes nothing. A file
    that is not valid JSON is refused and left as it is.

    \b
    Example:
      remem hooks install all --dry-run
      remem hooks install claude-code --advice-before
    """
    from pathlib import Path

    from remem.admin.agents_settings import AGENT_FOLDERS, install
    from remem.db.snapshot import require_home

    settings = current_settings()
    require_home(settings.home)
    user_home = Path.home()
    agents = _chosen(agent, user_home)
    changes = install(agents, user_home, settings.home, dry_run, advice_before)
    _report(changes, dry_run, as_json, "installed in", "already installed in")
    skipped = [name for name in AGENT_NAMES if agent == "all" and name not in agents]
    if not as_json:
        for name in skipped:
            click.echo(
                f"{name}: skipped, no {user_home / AGENT_FOLDERS[name]} "
                f"(to install anyway: `remem hooks install {name}`)"
            )
        if not dry_run and any(change.changed for change in changes):
            click.echo("Start a new agent session to load the hooks.")


@hooks.command("uninstall")
@_CHANGE
def hooks_uninstall(agent: str, dry_run: bool, as_json: bool) -> None:
    """Take remem's hooks out of an agent's settings file, keeping everything else; a file
    left empty is removed. Codex's `[features] codex_hooks = true` goes too (config.toml back
    as it was before, byte for byte) when remem added it, the file is as remem left it and no
    other hook is left in ~/.codex/hooks.json; otherwise it stays, and the command says why.

    \b
    Example:
      remem hooks uninstall cursor --dry-run
      remem hooks uninstall all
    """
    from pathlib import Path

    from remem.admin.agents_settings import uninstall
    from remem.paths import resolve_home

    agents = AGENT_NAMES if agent == "all" else (agent,)
    changes = uninstall(agents, Path.home(), resolve_home(), dry_run)
    _report(changes, dry_run, as_json, "removed from", "no remem hook in")


@hooks.command("show")
@click.argument("agent", type=AGENT, default="all")
@json_option("the settings")
def hooks_show(agent: str, as_json: bool) -> None:
    """Print the hook settings `remem hooks install` merges, to read or to paste by hand.

    \b
    Example:
      remem hooks show claude-code
      remem hooks show --json
    """
    from pathlib import Path

    from remem.admin import agents_settings
    from remem.admin.hook_settings import render_instructions, settings_for
    from remem.paths import resolve_home

    home = resolve_home()
    agents = AGENT_NAMES if agent == "all" else (agent,)
    if not as_json:
        click.echo(render_instructions(home, agents=agents))
        return
    user_home = Path.home()
    shown: dict[str, dict[str, object]] = {}
    for name in agents:
        shown[name] = {
            "file": str(agents_settings.settings_file(name, user_home)),
            "settings": settings_for(name, home),
        }
        if name == "codex":
            shown[name]["config_file"] = str(agents_settings.codex_config(user_home))
            shown[name]["config"] = {"features": {agents_settings.CODEX_FLAG: True}}
    print_json(shown)


def _chosen(agent: str, user_home: Path) -> tuple[str, ...]:
    from remem.admin.agents_settings import present_agents

    if agent != "all":
        return (agent,)
    found = present_agents(user_home)
    if not found:
        raise NoAgentFound(user_home)
    return found


def _report(
    changes: list[AgentChange], dry_run: bool, as_json: bool, done: str, nothing: str
) -> None:
    if as_json:
        print_json({"dry_run": dry_run, "agents": [change.as_json() for change in changes]})
        return
    for change in changes:
        # Only the files there are, or that this writes: a file that does not exist is no news.
        files = [file for file in change.files if file.changed or file.before is not None]
        if dry_run:
            for file in files:
                if file.changed:
                    click.echo(file.diff(), nl=False)
                else:
                    click.echo(f"{file.path}: no change")
            continue
        if not files:
            click.echo(f"{change.agent}: no settings file, so no remem hook")
            continue
        paths = ", ".join(str(file.path) for file in files)
        backups = [str(file.backup) for file in files if file.backup]
        line = f"{change.agent}: {done if change.changed else nothing} {paths}"
        if any(file.before is not None and file.after is None for file in change.files):
            line += " (the file held nothing else: removed)"
        click.echo(line + (f"; backup {', '.join(backups)}" if backups else ""))
        if change.kept:
            click.echo(f"{change.agent}: {change.kept}")


def remem_invocation() -> str:
    """How to call this remem again: `remem` when PATH finds this one, else its path (a fresh
    clone's .venv/bin/remem is not on PATH)."""
    import os
    import shlex
    import shutil
    import sys

    own = os.path.realpath(sys.argv[0])
    found = shutil.which("remem")
    if os.path.basename(own) != "remem" or (found and os.path.realpath(found) == own):
        return "remem"
    return shlex.quote(sys.argv[0])


def echo_init_hooks(
    changes: list[AgentChange],
    asked_for: bool | None,
    found: tuple[str, ...],
    connected: tuple[str, ...],
    user_home: Path,
) -> None:
    """What `remem init` did about hooks, that the agents are connected already, or the one
    command that connects them."""
    remem = remem_invocation()
    click.echo("")
    for change in changes:
        state = "installed in" if change.changed else "already installed in"
        paths = ", ".join(str(file.path) for file in change.files)
        click.echo(f"Hooks for {change.agent}: {state} {paths}")
    if asked_for and not found:
        click.echo(f"No agent folder in {user_home} (.claude, .codex, .cursor): no hook installed.")
    if changes:
        click.echo(f"Start a new agent session to load them; `{remem} doctor` checks them.")
        return
    if connected:
        click.echo(f"Hooks connected: {', '.join(connected)} (`{remem} doctor` checks them).")
    if found and set(connected) >= set(found):
        return
    click.echo("Connect your agents (Claude Code, Codex, Cursor) with:")
    click.echo(f"  {remem} hooks install all")
    click.echo(f"(`{remem} hooks show` prints the settings, to paste by hand instead.)")
