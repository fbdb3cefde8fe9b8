"""Memory coverage: real sessions replayed in time order through the real hook, and how often
what an earlier session had already fixed was in front of the agent when it came back.

Each transcript is one session; sessions run in the order they started, on a fresh remem home
in a temporary directory (nothing is written outside it). Per session: the SessionStart hook
(its digest kept), then each call as the host's hooks send it (PreToolUse before a Claude Code
command, then PostToolUse or PostToolUseFailure with its outcome; the advice printed kept), then
`remem worker --burst`, so that the next session reads what this one taught.

A session's directory becomes a git repository in the temporary directory; `X-worktrees/Y` is
a worktree of repository X, on the session's branch. Sessions of one repository share it.

Counted per session, judged from the transcripts and not from what remem learnt:
- errors an earlier session of the project fixed (a run failed with the error, by remem's
  error key, and a later run of the same workflow in that session passed), and whether the
  digest or the advice shown in this session, up to the failure, quoted that error;
- failed commands whose substitute remem had recorded before the session started, and whether
  the digest or advice named the substitute.

    .venv/bin/python bench/coverage.py [--transcripts DIR] [--without-digest] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import REPO, add_worktree, git, make_repository, relocated, remem_env, session_start

from remem.agent.advice import QUOTED_CHARS, error_of
from remem.shell.analysis import analyse
from remem.shell.recognisers import error_key, judge
from remem.transcripts import read_claude, read_codex
from remem.transcripts.common import TranscriptCall

VENV_BIN = Path(sys.executable).parent
TRANSCRIPTS = REPO.parent / "shared" / "fixtures" / "transcripts"
if not TRANSCRIPTS.is_dir():
    TRANSCRIPTS = REPO / "tests" / "fixtures" / "transcripts"
READERS = {"claude": ("claude-code", read_claude), "codex": ("codex", read_codex)}
WORKTREES = "-worktrees"
QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"')
CUT = "…"
NEVER_RAN = "<tool_use_error>"  # the agent's call was refused: no command ran


@dataclass(frozen=True)
class Session:
    name: str  # the transcript, relative to the transcripts directory
    path: Path
    host: str
    calls: tuple[TranscriptCall, ...]
    cwd: str
    branch: str

    @property
    def session_id(self) -> str:
        return str(self.calls[0].payload.get("session_id") or self.name)

    @property
    def started_at(self) -> float:
        return min((call.at for call in self.calls if call.at is not None), default=0.0)


@dataclass(frozen=True)
class Run:
    """A command call as the transcript tells it: failed or not, the workflows it ran, and
    the error key of its failure."""

    index: int
    failed: bool
    workflows: frozenset[str]
    error: str | None
    key: str | None


@dataclass
class Told:
    """What this session was shown: the digest, then each piece of advice with the index of
    the call it came with."""

    digest: str = ""
    advice: list[tuple[int, str]] = field(default_factory=list)

    def upto(self, index: int) -> list[tuple[str, str]]:
        shown = [("digest", self.digest)] if self.digest else []
        return shown + [("advice", text) for at, text in self.advice if at <= index]


def load_sessions(directory: Path) -> list[Session]:
    """Every transcript's session with at least one call, in the order they started."""
    sessions = []
    for folder, (host, read) in READERS.items():
        for path in sorted((directory / folder).glob("*.jsonl")):
            calls = tuple(read(str(path)))
            if not calls:
                continue
            first = calls[0]
            cwd = first.session_cwd or str(first.payload.get("cwd"))
            branch = next((call.branch for call in calls if call.branch), None) or "main"
            name = str(path.relative_to(directory))
            sessions.append(Session(name, path, host, calls, cwd, branch))
    return sorted(sessions, key=lambda s: (s.started_at, s.name))


# --- projects -----------------------------------------------------------------------------------


def repository_of(cwd: str) -> str:
    """The repository a session directory belongs to: X for `X-worktrees/Y`, else itself."""
    parent = Path(cwd).parent
    if parent.name.endswith(WORKTREES):
        return str(parent.parent / parent.name.removesuffix(WORKTREES))
    return cwd


def prepare(session: Session, space: Path) -> tuple[str, Path, Path]:
    """The session's directories made under `space` as they were on the machine it ran on:
    (the root its paths are moved from, where they are moved to, the project's repository)."""
    recorded = repository_of(session.cwd)
    user_root = str(Path(recorded).parent)
    workspace = space / user_root.lstrip("/")
    repository = workspace / Path(recorded).name
    here = workspace / Path(session.cwd).relative_to(user_root)
    if recorded != session.cwd:
        if not repository.exists():
            make_repository(repository)
        if not here.exists():
            add_worktree(repository, here, session.branch)
    elif not repository.exists():
        make_repository(repository, session.branch)
    elif (repository / ".git" / "HEAD").read_text().split("/")[-1].strip() != session.branch:
        git("checkout", "-q", "-B", session.branch, cwd=repository)
    for call in session.calls:
        cwd = str(call.payload.get("cwd") or "")
        if cwd.startswith(session.cwd + "/"):
            (workspace / Path(cwd).relative_to(user_root)).mkdir(parents=True, exist_ok=True)
    return user_root, workspace, repository.resolve()


# --- the replay -----------------------------------------------------------------------------


def hook(env: dict[str, str], host: str, payload: bytes) -> str:
    """What the hook printed for a payload, as the agent reads it."""
    result = subprocess.run(
        [str(VENV_BIN / "remem-hook"), "--host", host],
        input=payload,
        env=env,
        capture_output=True,
        timeout=60,
    )
    if result.returncode != 0:
        raise RuntimeError(f"remem-hook exited {result.returncode}: {result.stderr.decode()}")
    printed = result.stdout.decode()
    if printed.startswith("{"):
        shaped = json.loads(printed)
        return str(shaped.get("hookSpecificOutput", shaped).get("additionalContext", ""))
    return printed


def remem(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [str(VENV_BIN / "remem"), *args], env=env, capture_output=True, text=True, timeout=600
    )
    if result.returncode != 0:
        raise RuntimeError(f"remem {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result.stdout


def before(payload: dict[str, Any]) -> dict[str, Any]:
    """The PreToolUse payload of a command, from its PostToolUse one."""
    dropped = ("tool_response", "error", "is_interrupt")
    return {
        **{k: v for k, v in payload.items() if k not in dropped},
        "hook_event_name": "PreToolUse",
    }


def replay(
    env: dict[str, str], session: Session, user_root: str, workspace: Path, digest: bool
) -> Told:
    """The session through the real hook: SessionStart, then each call (PreToolUse first for
    a Claude Code command); what was printed to the agent."""
    told = Told()
    if digest:
        start = session_start(Path(session.cwd), session.session_id, str(session.path))
        told.digest = hook(env, session.host, relocated(start, user_root, workspace))
    for index, call in enumerate(session.calls):
        if session.host == "claude-code" and call.payload.get("tool_name") == "Bash":
            said = hook(env, session.host, relocated(before(call.payload), user_root, workspace))
            if said:
                told.advice.append((index, said))
        said = hook(env, session.host, relocated(call.payload, user_root, workspace))
        if said:
            told.advice.append((index, said))
    return told


# --- what the transcripts tell --------------------------------------------------------------


def output_of(payload: dict[str, Any]) -> str | None:
    """What a command printed; None for a call that was stopped, left running or never ran."""
    if payload.get("hook_event_name") == "PostToolUseFailure":
        error = str(payload.get("error") or "")
        return None if payload.get("is_interrupt") or NEVER_RAN in error else error
    response = payload.get("tool_response")
    if isinstance(response, str):
        return response
    if not isinstance(response, dict) or response.get("interrupted"):
        return None
    if response.get("backgroundTaskId"):
        return None
    return f"{response.get('stdout') or ''}\n{response.get('stderr') or ''}"


def run_of(index: int, call: TranscriptCall, branch: str) -> Run | None:
    payload = call.payload
    command = (payload.get("tool_input") or {}).get("command")
    output = output_of(payload) if payload.get("tool_name") == "Bash" else None
    if not isinstance(command, str) or output is None:
        return None
    steps = analyse(command).steps
    workflows = frozenset(s.workflow for s in steps if s.procedural) or frozenset({command})
    failed = payload.get("hook_event_name") == "PostToolUseFailure" or call.exit_code not in (
        None,
        0,
    )
    if not failed and any(s.masked for s in steps) and judge(command, output) == "failure":
        failed = True  # `… | tail` hid the status; the output did not
    line = error_of(command, output, None) if failed else None
    return Run(index, failed, workflows, line, error_key(line, branch) if line else None)


def runs_of(session: Session) -> list[Run]:
    found = (run_of(i, call, session.branch) for i, call in enumerate(session.calls))
    return [run for run in found if run is not None]


def same_command(one: frozenset[str], other: frozenset[str]) -> bool:
    """Whether two runs ran one command, given more or fewer arguments (`git push` and `git
    push --set-upstream origin x`; `mix test` and `mix test test/a_test.exs`)."""
    return any(a == b or a.startswith(b + " ") or b.startswith(a + " ") for a in one for b in other)


def fixed_errors(runs: list[Run]) -> dict[str, str]:
    """The errors a session fixed (key -> error line): a later run of the failing command
    passed."""
    fixed: dict[str, str] = {}
    for position, run in enumerate(runs):
        if run.failed and run.key and run.error and run.key not in fixed:
            later = runs[position + 1 :]
            if any(not o.failed and same_command(o.workflows, run.workflows) for o in later):
                fixed[run.key] = run.error
    return fixed


def shown_keys(text: str, branch: str) -> set[str]:
    """The error keys of every line of a text and of every quoted string in it."""
    pieces = text.splitlines()
    for quoted in QUOTED.findall(text):
        try:
            pieces.append(json.loads(quoted))
        except ValueError:
            continue
    return {error_key(piece.strip(), branch) for piece in pieces if piece.strip()}


def carries(text: str, key: str, branch: str) -> bool:
    """Whether the text quotes the error: whole, or cut short with an ellipsis."""
    for shown in shown_keys(text, branch):
        if shown == key or (shown.endswith(CUT) and key.startswith(shown[:-1].rstrip())):
            return True
    return False


# --- judging a session ------------------------------------------------------------------------


@dataclass
class Project:
    """What the sessions of one project left so far: the errors they fixed (key -> line), and
    where the last of them ran."""

    name: str
    fixed: dict[str, str] = field(default_factory=dict)
    last: tuple[Session, str, Path] | None = None


def substitutions(env: dict[str, str], repository: Path) -> dict[str, str]:
    """The substitutes remem has recorded in the project: failing workflow -> the command that
    passed instead."""
    found = json.loads(remem(env, "procedures", "errors", "--project", str(repository), "--json"))
    return {
        item["workflow"]: item["instead"] for item in found if item.get("kind") == "substitution"
    }


def fixed_before(
    session: Session, runs: list[Run], told: Told, fixed: set[str]
) -> list[dict[str, Any]]:
    """The session's failures with an error an earlier session fixed, once per error, and
    what the session had been shown of it by then."""
    found: dict[str, dict[str, Any]] = {}
    for run in runs:
        if run.failed and run.key in fixed and run.key not in found:
            shown = told.upto(run.index)
            sources = {kind for kind, text in shown if carries(text, run.key, session.branch)}
            found[run.key] = {"error": run.error, "key": run.key, "shown_by": sorted(sources)}
    return list(found.values())


def substitutes_known(runs: list[Run], told: Told, known: dict[str, str]) -> list[dict[str, Any]]:
    """The session's failed workflows whose substitute was recorded before it started, once
    per workflow, and whether the session had been shown the substitute by then."""
    found: dict[str, dict[str, Any]] = {}
    for run in runs:
        for workflow in sorted(run.workflows & known.keys() - found.keys() if run.failed else ()):
            instead = known[workflow]
            named = instead[: QUOTED_CHARS - 1]
            sources = {kind for kind, text in told.upto(run.index) if named in text}
            found[workflow] = {
                "workflow": workflow,
                "instead": instead,
                "shown_by": sorted(sources),
            }
    return list(found.values())


def judge_session(
    session: Session, runs: list[Run], told: Told, fixed: set[str], known: dict[str, str]
) -> dict[str, Any]:
    return {
        "transcript": session.name,
        "host": session.host,
        "session": session.session_id,
        "branch": session.branch,
        "calls": len(session.calls),
        "commands": len(runs),
        "failures": sum(run.failed for run in runs),
        "digest_chars": len(told.digest),
        "advice_given": len(told.advice),
        "fixed_earlier": fixed_before(session, runs, told, fixed),
        "substitutes_known": substitutes_known(runs, told, known),
    }


def evaluate(directory: Path, digest: bool = True) -> dict[str, Any]:
    """Every session of `directory` replayed on a fresh home; per session and in total."""
    with tempfile.TemporaryDirectory(prefix="remem-coverage-") as scratch:
        space = Path(scratch)
        env = {**remem_env(space / "home"), "HOME": str(space / "user-home")}
        (space / "user-home").mkdir()
        remem(env, "init")
        projects: dict[Path, Project] = {}
        results = []
        for session in load_sessions(directory):
            print(f"replaying {session.name} ({len(session.calls)} calls)", file=sys.stderr)
            user_root, workspace, repository = prepare(session, space / "fs")
            project = projects.setdefault(repository, Project(repository.name))
            known = substitutions(env, repository)
            told = replay(env, session, user_root, workspace, digest)
            runs = runs_of(session)
            result = judge_session(session, runs, told, set(project.fixed), known)
            results.append({**result, "project": project.name})
            project.fixed.update(fixed_errors(runs))
            project.last = (session, user_root, workspace)
            remem(env, "worker", "--burst")
        carried = [next_session(env, project) for project in projects.values()]
    return {
        "sessions": results,
        "projects": carried,
        "totals": totals(results, carried),
        "digest": digest,
    }


def next_session(env: dict[str, str], project: Project) -> dict[str, Any]:
    """The errors the project's sessions fixed, and whether the digest a next session there
    would start with quotes each."""
    assert project.last is not None
    session, user_root, workspace = project.last
    start = session_start(Path(session.cwd), f"next-{session.session_id}", str(session.path))
    digest = hook(env, session.host, relocated(start, user_root, workspace))
    fixed = [
        {"error": line, "key": key, "carried": carries(digest, key, session.branch)}
        for key, line in project.fixed.items()
    ]
    return {"project": project.name, "fixed": fixed}


def totals(results: list[dict[str, Any]], carried: list[dict[str, Any]]) -> dict[str, Any]:
    errors = [e for result in results for e in result["fixed_earlier"]]
    fixed = [e for project in carried for e in project["fixed"]]
    substitutes = [s for result in results for s in result["substitutes_known"]]
    covered = sum(bool(e["shown_by"]) for e in errors)
    offered = sum(bool(s["shown_by"]) for s in substitutes)
    return {
        "sessions": len(results),
        "projects": len({result["project"] for result in results}),
        "commands": sum(result["commands"] for result in results),
        "failures": sum(result["failures"] for result in results),
        "fixed_earlier": len(errors),
        "fixed_earlier_shown": covered,
        "by_digest": sum("digest" in e["shown_by"] for e in errors),
        "by_advice": sum("advice" in e["shown_by"] for e in errors),
        "memory_coverage": covered / len(errors) if errors else None,
        "substitutes_known": len(substitutes),
        "substitutes_offered": offered,
        "fixed": len(fixed),
        "fixed_carried": sum(e["carried"] for e in fixed),
    }


# --- output -------------------------------------------------------------------------------------


def ratio(shown: int, of: int) -> str:
    return f"{shown}/{of}" + (f" ({shown / of:.0%})" if of else "")


def print_table(report: dict[str, Any]) -> None:
    header = (
        "session",
        "project",
        "commands",
        "failed",
        "fixed before",
        "shown",
        "subst.",
        "offered",
    )
    print(f"{header[0]:<26}{header[1]:<22}" + "".join(f"{h:>13}" for h in header[2:]))
    for r in report["sessions"]:
        errors, subs = r["fixed_earlier"], r["substitutes_known"]
        cells = (
            r["commands"], r["failures"], len(errors), sum(bool(e["shown_by"]) for e in errors),
            len(subs), sum(bool(s["shown_by"]) for s in subs),
        )  # fmt: skip
        print(f"{r['transcript']:<26}{r['project'][:21]:<22}" + "".join(f"{c:>13}" for c in cells))
        for error in errors:
            print(f"    {'+' if error['shown_by'] else '-'} {error['error']}")
    t = report["totals"]
    print()
    print(
        f"memory coverage: {ratio(t['fixed_earlier_shown'], t['fixed_earlier'])} errors an "
        f"earlier session fixed were shown (digest {t['by_digest']}, advice {t['by_advice']})"
    )
    print(f"substitutes: {ratio(t['substitutes_offered'], t['substitutes_known'])} offered")
    print(
        f"carried forward: {ratio(t['fixed_carried'], t['fixed'])} errors the sessions fixed are "
        "in the digest a next session of their project starts with"
    )
    for project in report["projects"]:
        for error in project["fixed"]:
            print(f"    {'+' if error['carried'] else '-'} {project['project']}: {error['error']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=Path, default=TRANSCRIPTS, help="claude/, codex/")
    parser.add_argument(
        "--without-digest",
        action="store_true",
        help="run no SessionStart hook, as a host where it is not installed",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    report = evaluate(args.transcripts, digest=not args.without_digest)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
