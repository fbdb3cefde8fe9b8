"""Memory coverage: real sessions replayed in time order through the real hook, and how often
what an earlier session had already fixed was in front of the agent when it came back.

Each transcript is one session; sessions run in the order they started, on a fresh remem home
in a temporary directory (nothing is written outside it), each replayed through the real hook
(bench/replay.py: its digest, its calls, the advice printed) and followed by `remem worker
--burst`, so that the next session reads what this one taught. The fixture transcripts are
read from ../shared/fixtures/transcripts, else from their copy in tests/fixtures/transcripts.

Counted per session, judged from the transcripts and not from what remem learnt:
- errors an earlier session of the project fixed (a run failed with the error, by remem's
  error key, and a later run of the same command, with more or fewer arguments, passed in that
  session), and whether the digest or the advice shown in this session, up to and including
  the advice answering the failure, quoted that error;
- failed commands whose substitute remem had recorded before the session started, and whether
  the digest or advice named the substitute;
- and, once every session ran, whether the digest a next session of each project would start
  with quotes each error its sessions fixed.

With --corpus, the development corpus instead (../shared/corpus, each subfolder one project's
Claude Code sessions; none there: a one-line note, no figures): each project replayed alone the
same way, its folders (/Users/…) made relocated inside the temporary directory, a worktree
under `…/worktrees/NAME/` made a worktree of the folder named NAME. Before each session the
digest is read as `remem context` prints it for the session's folder, every page (the first is
what SessionStart shows). Judged from the transcripts, per project, summed over its sessions:
1. noise: digest procedure lines (a list item opening with a command in backquotes) that do
   no work by remem's judgement of commands (remem/shell/kinds.py, through wrappers: `rtk git
   status`, `timeout 60 …`): reads,
   shell set-up, bookkeeping (git add/commit/push/fetch/branch/checkout of a branch, issue and
   pull-request listings), inline scripts and file writes; of all procedure lines;
2. failures (a non-zero status, or a hidden one whose output shows a failure) answered with
   advice by the hook, and of those the advice that quotes the failure's own error: a line it
   quotes (`- "…"`, as JSON, less a closing `…` where it was cut) is in the output, digits aside;
3. failures whose error (remem's error key) an earlier session of the project met, and of those
   the ones whose error the digest (any page), or advice up to and including the failure's,
   quoted; each failure counts;
4. knowable substitutions: a workflow the session failed that failed in earlier sessions and
   never passed there, while another for the same purpose (remem/shell/purpose.py) passed
   unmasked at least twice; once per workflow and session; shown when the digest names both,
   or advice up to the failure names the other;
5. first-page procedure lines the session then ran (a step's workflow or family, or a step a
   placeholder line stands for: `bun test <test file>` for `bun test a.test.ts`).

../shared/tools/usefulness.py measures the same five on the same corpus, with differences:
it feeds each session by `remem import` and posts only its failures to the hook (on a copy of
the home as it was at the session's start), where this replays every call live, so advice here
may also draw on the session's own earlier passes; it judges commands by regular expressions of
its own, so its noise leaves out bookkeeping other than `git add` (commit, push, fetch, checkout,
`gh pr checks`) and file writes, which count here; its failures are the recorded non-zero
statuses only; it checks a quote by its first 40 characters with only `\"` unescaped (a quoted
`\t` is off target there, a tab here); its errors are its own salient-line patterns matched by
their first 30 characters, remem's error key here; its substitutes are any command of the same
tool word (`bun run lint` for `bun run test`), here the same purpose only; and its steps are
split on `&&` only, here by remem's analysis (a `cd` before, a pipe after). An error here is
the same by remem's key, its paths masked: `fatal: pathspec 'b' did not match any files` comes
back after `fatal: pathspec 'a' …`, and bookkeeping's failures count (a commit hook's
`[FAILED] markdownlint --fix`); there, a line naming another path is another error, and a line
none of its patterns knows is none. Both learn the same procedures by the last session; where
they count other digest lines, it is in the session a procedure is first shown to, not in what
is finally shown (not traced further: there runs carry the times they happened at, here all
fall within minutes).

    .venv/bin/python bench/coverage.py [--transcripts DIR] [--without-digest] [--json]
    .venv/bin/python bench/coverage.py --corpus [DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import REPO, relocated, remem_env, session_start
from replay import Session, Told, hook, load_sessions, prepare, remem, replay

from remem.agent.advice import QUOTED_CHARS, error_of
from remem.agent.digest import COMMAND_CHARS
from remem.shell.analysis import Step, analyse
from remem.shell.kinds import BOOKKEEPING
from remem.shell.purpose import same_purpose
from remem.shell.recognisers import error_key, judge
from remem.transcripts.common import TranscriptCall

TRANSCRIPTS = REPO.parent / "shared" / "fixtures" / "transcripts"
if not TRANSCRIPTS.is_dir():
    TRANSCRIPTS = REPO / "tests" / "fixtures" / "transcripts"
QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"')
CUT = "…"
NEVER_RAN = "<tool_use_error>"  # the agent's call was refused: no command ran


@dataclass(frozen=True)
class Run:
    """A command call as the transcript tells it: failed or not, the workflows it ran, and
    the error key of its failure."""

    index: int
    failed: bool
    workflows: frozenset[str]
    error: str | None
    key: str | None


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
    # Bookkeeping fails and is fixed too (`git push` until `git push --set-upstream …`).
    kept = (s.workflow for s in steps if s.procedural or s.kind == BOOKKEEPING)
    workflows = frozenset(kept) or frozenset({command})
    reported = payload.get("hook_event_name") == "PostToolUseFailure"
    failed = reported or call.exit_code not in (None, 0)
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
            sources = {kind for kind, text in told.upto(run.index) if names(text, instead)}
            found[workflow] = {
                "workflow": workflow,
                "instead": instead,
                "shown_by": sorted(sources),
            }
    return list(found.values())


def names(text: str, command: str) -> bool:
    """Whether the text names the command: as much of it as the digest and advice quote, in
    a code span or as a JSON string."""
    shown = command[: min(COMMAND_CHARS, QUOTED_CHARS - 1)]
    return shown in text or json.dumps(shown, ensure_ascii=False)[1:-1] in text


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
        carried = [next_session(env, project, digest) for project in projects.values()]
    return {
        "sessions": results,
        "projects": carried,
        "totals": totals(results, carried),
        "digest": digest,
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
    }


def next_session(env: dict[str, str], project: Project, shown: bool) -> dict[str, Any]:
    """The errors the project's sessions fixed, and whether the digest a next session there
    would start with (`shown`: when its host runs the SessionStart hook) quotes each."""
    assert project.last is not None
    session, user_root, workspace = project.last
    start = session_start(Path(session.cwd), f"next-{session.session_id}", str(session.path))
    said = hook(env, session.host, relocated(start, user_root, workspace))
    digest = said if shown else ""
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


# --- the development corpus: what a project's sessions were shown, by five figures -----------

CORPUS = REPO.parent / "shared" / "corpus"
PROCEDURE_LINE = re.compile(r"^- `([^`]+)`", re.M)
ADVICE_QUOTE = re.compile(r'^- ("(?:[^"\\\n]|\\.)*")', re.M)
PLACEHOLDER = re.compile(r"<[a-z][a-z ]*>")
DIGITS = re.compile(r"\d+")
VERIFIED_TWICE = 2  # passes in earlier sessions that make a sibling a known substitute
TARGETS = {
    "noise": ("reads and bookkeeping among the digest's procedure lines", "≤ 2%"),
    "on_target": ("advice that quotes the failure's own error", "≥ 95%"),
    "met_again": ("errors an earlier session met that came back, shown", "≥ 80%"),
    "substitutions": ("substitutions shown, of those knowable", "≥ 80%"),
    "page_one": ("first-page procedure lines the session then ran", "≥ 30%"),
}


@dataclass(frozen=True)
class Ran:
    """A command call's steps as the corpus replay judges them: (workflow, family, masked,
    procedural) per step, and its Run."""

    run: Run
    output: str
    steps: tuple[tuple[str, str, bool, bool], ...]


@dataclass
class History:
    """What a project's earlier sessions did, from their transcripts: the error keys their
    failures met, the workflows that failed, and the unmasked passes of each workflow."""

    met: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    passes: dict[str, int] = field(default_factory=dict)

    def learn(self, ran: list[Ran]) -> None:
        for call in ran:
            if call.run.failed:
                self.met.update({call.run.key} if call.run.key else ())
                self.failed.update(w for w, _f, _m, work in call.steps if work)
                continue
            for workflow, _family, masked, work in call.steps:
                if work and not masked:
                    self.passes[workflow] = self.passes.get(workflow, 0) + 1


def ran_of(session: Session) -> list[Ran]:
    found = []
    for run in runs_of(session):
        payload = session.calls[run.index].payload
        command = payload["tool_input"]["command"]
        steps = analyse(command).steps
        found.append(Ran(run, output_of(payload) or "", tuple(judged(s) for s in steps)))
    return found


def judged(step: Step) -> tuple[str, str, bool, bool]:
    return step.workflow, step.family, step.masked, step.procedural


def does_work(line: str) -> bool:
    """Whether a digest procedure line runs work, by remem's own judgement of commands
    (remem/shell/kinds.py): not only reads, shell set-up, bookkeeping, inline scripts or file
    writes, seen through wrappers. A placeholder (`<test file>`) stands for one word."""
    command = PLACEHOLDER.sub("FILE", line.removesuffix(CUT))
    return any(step.procedural for step in analyse(command).steps)


def quotes_own_error(answer: str, output: str) -> bool:
    """Whether the advice quotes an error line that is in the failure's output, digits aside
    (a line the advice cut short, by what it kept)."""
    printed = DIGITS.sub("#", output)
    for quoted in ADVICE_QUOTE.findall(answer):
        try:
            line = str(json.loads(quoted, strict=False)).removesuffix(CUT).strip()  # raw tabs
        except ValueError:
            continue
        if line and DIGITS.sub("#", line) in printed:
            return True
    return False


def covers(line: str, workflow: str) -> bool:
    """A digest line names a workflow: the same text, or its placeholders each standing for
    one or more words that are no options (`bun test <test file>`, `bun test a.test.ts`)."""
    if line == workflow:
        return True
    if not PLACEHOLDER.search(line):
        return False
    words = r"[^\s-]\S*(?: [^\s-]\S*)*"
    return re.fullmatch(words.join(map(re.escape, PLACEHOLDER.split(line))), workflow) is not None


def shown_before(run: Run, digest: str, told: Told, branch: str) -> bool:
    """Whether the digest (any page), or advice up to and including the failure's, quoted
    the run's error."""
    assert run.key is not None
    texts = [digest, *(text for kind, text in told.upto(run.index) if kind == "advice")]
    return any(carries(text, run.key, branch) for text in texts)


def context_pages(env: dict[str, str], cwd: str) -> list[str]:
    """Every page of the digest for a directory, as `remem context` prints them."""
    pages: list[str] = []
    while not pages or f"--page {len(pages) + 1}" in pages[-1]:
        text = remem(env, "context", "--cwd", cwd, "--page", str(len(pages) + 1))
        if not text.strip():
            break
        pages.append(text)
    return pages


def corpus_session(
    session: Session, ran: list[Ran], told: Told, pages: list[str], history: History
) -> tuple[Counter[str], list[str]]:
    """The five figures' counts for one session of the corpus, and what each missed."""
    counts, misses = Counter[str](), []
    digest = "\n".join(pages)
    for line in PROCEDURE_LINE.findall(digest):
        counts["procedure_lines"] += 1
        if not does_work(line):
            counts["noise_lines"] += 1
            misses.append(f"NOISE {line}")
    failures = [call for call in ran if call.run.failed]
    counts["failures"] = len(failures)
    for call in failures:
        answer = told.answers.get(call.run.index)
        if answer:
            counts["advised"] += 1
            if quotes_own_error(answer, call.output):
                counts["on_target"] += 1
            else:
                quoted = next(iter(ADVICE_QUOTE.findall(answer)), "")
                misses.append(f"OFF TARGET {call.run.error} <- {quoted}")
        if call.run.key in history.met:
            counts["met_again"] += 1
            if shown_before(call.run, digest, told, session.branch):
                counts["met_again_shown"] += 1
            else:
                misses.append(f"NOT SHOWN {call.run.error}")
    for call, workflow, siblings in knowable_substitutions(failures, history):
        advice = " ".join(text for kind, text in told.upto(call.run.index) if kind == "advice")
        counts["knowable"] += 1
        if any(
            (names(digest, other) and names(digest, workflow)) or names(advice, other)
            for other in siblings
        ):
            counts["knowable_shown"] += 1
        else:
            misses.append(f"SUBSTITUTE NOT SHOWN {workflow} -> {siblings[0]}")
    page_one = PROCEDURE_LINE.findall(pages[0]) if pages else []
    run_here = {text for call in ran for w, f, _m, _p in call.steps for text in (w, f) if text}
    counts["page_one_lines"] += len(page_one)
    for line in page_one:
        if any(covers(line, workflow) for workflow in run_here):
            counts["page_one_run"] += 1
        else:
            misses.append(f"NOT RUN {line}")
    return counts, misses


def knowable_substitutions(
    failures: list[Ran], history: History
) -> list[tuple[Ran, str, list[str]]]:
    """The session's failed workflows, once each, that failed in earlier sessions and never
    passed there, while another for the same purpose (remem/shell/purpose.py) passed at least
    twice: (the first failure, the workflow, those others)."""
    found: dict[str, tuple[Ran, str, list[str]]] = {}
    for call in failures:
        for workflow, _family, _masked, work in call.steps:
            if not work or workflow in found or workflow not in history.failed:
                continue
            if history.passes.get(workflow):
                continue
            siblings = [
                other
                for other, passes in history.passes.items()
                if passes >= VERIFIED_TWICE and same_purpose(workflow, other)
            ]
            if siblings:
                found[workflow] = (call, workflow, siblings)
    return list(found.values())


def evaluate_project(folder: Path) -> dict[str, Any]:
    """One project of the corpus replayed, oldest session first, on a fresh home of its own;
    the five figures summed over its sessions."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="remem-corpus-") as scratch:
        space = Path(scratch)
        env = {**remem_env(space / "home"), "HOME": str(space / "user-home")}
        (space / "user-home").mkdir()
        remem(env, "init")
        sessions = load_sessions(folder)
        cwds = [session.cwd for session in sessions]
        history, totals_, misses = History(), Counter[str](), []
        for session in sessions:
            print(f"replaying {folder.name}/{session.name}", file=sys.stderr)
            user_root, workspace, _repository = prepare(session, space / "fs", cwds)
            here = session.cwd.replace(user_root, str(workspace), 1)
            pages = context_pages(env, here)
            told = replay(env, session, user_root, workspace, True)
            ran = ran_of(session)
            counts, missed = corpus_session(session, ran, told, pages, history)
            totals_.update(counts)
            misses += [f"{session.name}: {miss}" for miss in missed]
            history.learn(ran)
            remem(env, "worker", "--burst")
    return {
        "project": folder.name,
        "sessions": len(sessions),
        "commands": sum(len(runs_of(session)) for session in sessions),
        **{name: totals_[name] for name in COUNTS},
        "seconds": round(time.monotonic() - started, 1),
        "misses": misses,
    }


def evaluate_corpus(directory: Path) -> dict[str, Any]:
    """Every project of the corpus (each subfolder one), replayed apart."""
    projects = []
    if not directory.is_dir():
        print(f"no corpus at {directory}: skipped", file=sys.stderr)
    else:
        for folder in sorted(p for p in directory.iterdir() if p.is_dir()):
            projects.append(evaluate_project(folder))
    return {
        "corpus": str(directory),
        "projects": projects,
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
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


SECTION_TITLE = "## Memory coverage"


def markdown(report: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md section of the totals (bench/report.py writes it)."""
    t = report["totals"]
    lines = [
        SECTION_TITLE,
        "",
        f"`bench/coverage.py` at {report['date']}: {t['sessions']} real sessions of "
        f"{t['projects']} projects (the "
        "fixture transcripts) replayed in the order they started through the real hook, a "
        "worker burst after each; errors keyed by remem's error key, judged from the "
        f"transcripts. {t['commands']:,} commands, {t['failures']} of them failed.",
        "",
        "| what | figure |",
        "|---|--:|",
        f"| errors an earlier session had fixed that came back | {t['fixed_earlier']} |",
        "| memory coverage: of those, shown in the digest or advice before they came back | "
        f"{share(t['fixed_earlier_shown'], t['fixed_earlier'])} |",
        f"| failed commands whose substitute was already known | {t['substitutes_known']} |",
        f"| of those, offered the substitute | "
        f"{share(t['substitutes_offered'], t['substitutes_known'])} |",
        "| errors the sessions fixed, quoted by the digest a next session of their project "
        f"starts with | {share(t['fixed_carried'], t['fixed'])} |",
    ]
    if t["sessions"] == t["projects"]:
        lines += [
            "",
            "Every session here is of a project of its own, so no error an earlier session "
            "fixed could come back: the first two rows wait for transcripts of a project's "
            "later sessions. The last row is what such a session would be told.",
        ]
    return lines


def share(shown: int, of: int) -> str:
    return f"{shown} of {of}" + (f" ({shown / of:.0%})" if of else " (—)")


COUNTS = (
    "procedure_lines", "noise_lines", "failures", "advised", "on_target", "met_again",
    "met_again_shown", "knowable", "knowable_shown", "page_one_lines", "page_one_run",
)  # fmt: skip
CORPUS_TITLE = "## Usefulness on the development corpus"
FIGURES = (  # key: (what, shown, of)
    ("noise", "noise_lines", "procedure_lines"),
    ("on_target", "on_target", "advised"),
    ("met_again", "met_again_shown", "met_again"),
    ("substitutions", "knowable_shown", "knowable"),
    ("page_one", "page_one_run", "page_one_lines"),
)


def corpus_markdown(report: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md section of the corpus replay (bench/report.py writes it)."""
    projects = report["projects"]
    lines = [CORPUS_TITLE, ""]
    if not projects:
        return [*lines, f"`bench/coverage.py --corpus`: no corpus at `{report['corpus']}`."]
    described = ", ".join(
        f"{p['project']} ({p['sessions']} sessions, {p['commands']:,} commands, "
        f"{p['seconds']:.0f} s)"
        for p in projects
    )
    lines += [
        f"`bench/coverage.py --corpus` at {report['date']}: each project's sessions replayed "
        f"in the order they started through the real hook, a worker burst after each: "
        f"{described}. Judged from the transcripts; the digest is every page `remem context` "
        "printed before the session (the first is what the SessionStart hook shows). "
        "`../shared/tools/usefulness.py` measures the same on the same corpus by other means; "
        "the docstring of `bench/coverage.py` says where they differ.",
        "",
        "| what | target | " + " | ".join(p["project"] for p in projects) + " |",
        "|---|--:|" + "--:|" * len(projects),
    ]
    for key, shown, of in FIGURES:
        what, target = TARGETS[key]
        cells = " | ".join(share(p[shown], p[of]) for p in projects)
        lines.append(f"| {what} | {target} | {cells} |")
    cells = " | ".join(f"{p['advised']} of {p['failures']}" for p in projects)
    lines.append(f"| failures answered with advice | — | {cells} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=Path, default=TRANSCRIPTS, help="claude/, codex/")
    parser.add_argument(
        "--without-digest",
        action="store_true",
        help="run no SessionStart hook, as a host where it is not installed",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        nargs="?",
        const=CORPUS,
        help=f"replay this corpus instead, each subfolder a project (default {CORPUS})",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.corpus is not None:
        report = evaluate_corpus(args.corpus)
        print(json.dumps(report, indent=1) if args.json else "\n".join(corpus_markdown(report)))
        return 0
    report = evaluate(args.transcripts, digest=not args.without_digest)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
