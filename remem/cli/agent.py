"""What the agent asks mid-session, and a procedure as a draft document: `remem recall`,
`remem mcp` and `remem procedures export`."""

from __future__ import annotations

import shlex

import click

from remem.cli.app import (
    CWD_OPTION,
    ROW_ID,
    cli,
    current_settings,
    json_option,
    page_option,
    print_json,
)
from remem.cli.memory import procedures
from remem.db.snapshot import reading
from remem.db.vocabulary import EXPORT_FORMATS as FORMATS
from remem.errors import RememError


@cli.command("recall")
@click.argument("pattern")
@CWD_OPTION
@click.option("--all-projects", is_flag=True, help="Search every project, not only this one.")
@click.option("--since", default=None, help='Only what happened within this long, e.g. "30d".')
@page_option("the answer")
@json_option("the hits of the page")
def recall_command(
    pattern: str,
    cwd: str | None,
    all_projects: bool,
    since: str | None,
    page: int,
    as_json: bool,
) -> None:
    """Search the procedures, their variants, the lessons (error text and fixes) and the
    captured commands of this project for a regular expression (case-insensitive unless it
    holds a capital), newest first. Each hit has its id, status and evidence count. A page
    holds at most 30,000 characters; its last line says how to read on.

    \b
    Example:
      remem recall 'migrat' --since 30d
      remem recall 'ModuleNotFoundError' --all-projects --json
    """
    import time

    from remem.agent import recall
    from remem.config import parse_duration
    from remem.record.identity import locate_given

    regex = recall.compile_pattern(pattern)
    since_at = None
    if since is not None:
        try:
            since_at = time.time() - parse_duration(since)
        except ValueError as exc:
            raise RememError(f"--since {since}: {exc}.") from None
    root = None if all_projects else locate_given(cwd)[0]
    settings = current_settings()
    with reading(settings) as execute:
        hits = recall.search(execute, regex, root, since_at)

    def order(number: int) -> str:
        """The same search, one page on; a pattern that opens with a dash comes after `--`."""
        words = ["--cwd", cwd] if cwd is not None else []
        words += ["--all-projects"] if all_projects else []
        words += ["--since", since] if since is not None else []
        words += ["--page", str(number)] + (["--json"] if as_json else [])
        if pattern.startswith("-"):
            return shlex.join(["remem", "recall", *words, "--", pattern])
        return shlex.join(["remem", "recall", pattern, *words])

    if as_json:
        more = lambda at, pages: recall.footer(at, pages, len(hits), order)  # noqa: E731
        print_json(recall.answer(hits, page, root, pattern, more))
        return
    if not hits:
        from remem.record.quote import inert_path

        where = f"in {inert_path(root)}" if root else "in any project"
        click.echo(f"No procedure, lesson or command {where} matches {pattern!r}.")
        return
    pages_text = recall.text_pages(
        hits, recall.header_for(pattern, root, since_at), order, show_project=root is None
    )
    if not 1 <= page <= len(pages_text):
        raise RememError(f"The answer has {len(pages_text)} page(s): ask for --page 1 to "
                         f"{len(pages_text)}.")  # fmt: skip
    click.echo(pages_text[page - 1], nl=False)


@cli.command("mcp")
def mcp_command() -> None:
    """Serve the memory to an agent over stdio as a read-only Model Context Protocol server,
    with the tools procedures, procedure, recall and lessons. The agent starts it; `remem init`
    prints how to register it with Claude Code, Codex and Cursor.

    \b
    Example:
      claude mcp add --transport stdio --scope user remem -- remem mcp
    """
    from remem.agent.mcp import serve

    serve()


@procedures.command("export")
@click.argument("procedure_id", type=ROW_ID)
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True, help="What to write.")
@click.option(
    "--out",
    type=click.Path(),
    default=None,
    help="Directory for the draft (default: remem-drafts/ in the procedure's project).",
)
@click.option("--force", is_flag=True, help="Overwrite a draft that was edited since export.")
@json_option("what was written")
def procedures_export(
    procedure_id: int, fmt: str, out: str | None, force: bool, as_json: bool
) -> None:
    """Write an active procedure as a draft a person reviews and moves into the repository: a
    Claude Code skill (SKILL.md), an AGENTS.md section, or a runbook. remem never writes into
    .claude/, .codex/, .cursor/, a skills folder, another agent's rule folder (.clinerules/,
    .windsurf/, .github/instructions/…), AGENTS.md or CLAUDE.md itself, refuses a draft holding
    a secret or recorded text that reads like an order to the agent, and never overwrites a
    draft edited since export without --force.

    \b
    Example:
      remem procedures export 3 --format claude-skill
      mv remem-drafts/make-test .claude/skills/
    """
    import time

    from remem.agent import export
    from remem.cli.app import open_home
    from remem.db.engine import executor

    settings = current_settings()
    with reading(settings) as execute:
        draft = export.prepare(execute, procedure_id, fmt, out)
    with open_home() as (_settings, engine), engine.begin() as connection:
        outcome = export.write(executor(connection), draft, time.time(), force)
    if as_json:
        print_json(
            {
                "procedure_id": procedure_id,
                "format": fmt,
                "path": draft.path,
                "outcome": outcome,
                "draft_sha256": draft.draft_sha256,
            }
        )
        return
    from remem.record.quote import inert_path

    verb = "Wrote" if outcome == "written" else "Already up to date:"
    click.echo(f"{verb} {inert_path(draft.path)} ({fmt} draft of procedure {procedure_id}).")
    click.echo("Review it, then move it into place yourself; remem does not.")
