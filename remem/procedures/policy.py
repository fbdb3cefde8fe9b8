"""Promotion policy (DESIGN.md §5): pure functions of a group's runs and `now`."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from remem.db.vocabulary import ACTIVE as ACTIVE
from remem.db.vocabulary import ARCHIVED as ARCHIVED
from remem.db.vocabulary import BROKEN as BROKEN
from remem.db.vocabulary import STALE as STALE
from remem.json_contract import date
from remem.record.quote import NEEDS_CREDENTIALS, inert_command, inert_path, needs_credentials

BASE_CONFIDENCE = 0.70
CONFIDENCE_PER_RUN = 0.08
MAX_CONFIDENCE = 0.95
PENALTY_PER_FAILURE = 0.10
FAILURES_TO_BREAK = 2
WORKFLOW_KEY_CHARS = 64
FILES_KEPT = 5


class Run(NamedTuple):
    """One verified or failed run of a group. A named tuple: a group's whole history is made of
    them for every decision, and a tuple is the cheapest immutable record to build."""

    event_id: int
    session_id: int
    at: float
    succeeded: bool
    branch: str = ""
    cannot_run: bool = False  # a failure that could not run at all, rather than found red code


@dataclass(frozen=True)
class Rules:
    min_verified_runs: int
    max_age_s: float
    min_distinct_sessions: int


@dataclass(frozen=True)
class Decision:
    status: str
    confidence: float
    verified_runs: int
    distinct_sessions: int
    evidence_event_ids: tuple[int, ...]
    first_verified_at: float
    last_verified_at: float
    branches: tuple[str, ...] = ()
    # Whether a verified run is within max_age. When none is, the runs and sessions are all of
    # them: a stale procedure shows what verified it, and when.
    lately: bool = True


def command_hash(command: str) -> str:
    return hashlib.sha256(command.encode("utf-8", "surrogatepass")).hexdigest()


def slug(command: str, limit: int = WORKFLOW_KEY_CHARS) -> str:
    text = re.sub(r"[^a-z0-9]+", "-", command.lower()).strip("-")
    return text[:limit].rstrip("-") or "command"


def topic_key(workflow: str, context: Sequence[str] = ()) -> str:
    """The slug names it for people; the hash (of the workflow and where it applies) keeps two
    long workflows with a common start, or one workflow in two places, apart."""
    return f"{slug(workflow, 48)}-{command_hash(chr(0).join([*context, workflow]))[:12]}"


def confidence(fresh_successes: int, failures_since_success: int) -> float:
    raw = min(BASE_CONFIDENCE + CONFIDENCE_PER_RUN * fresh_successes, MAX_CONFIDENCE)
    return round(max(raw - PENALTY_PER_FAILURE * failures_since_success, 0.0), 2)


def qualified(successes: Sequence[Run], rules: Rules, min_branches: int = 1) -> bool:
    """Whether at some moment `max_age` held enough verified runs, from enough sessions (and
    branches, for a project-wide procedure). Once true it stays true: a procedure is stale
    when its runs age out, not unpromoted, so re-deriving at any later time gives it back."""
    ordered = sorted(successes, key=lambda run: (run.at, run.event_id))
    start = 0
    for end, last in enumerate(ordered):
        while ordered[start].at < last.at - rules.max_age_s:
            start += 1
        window = ordered[start : end + 1]
        # Across branches, only named ones count: a detached HEAD is no second branch.
        branches = {run.branch for run in window if run.branch or min_branches == 1}
        if (
            len({run.event_id for run in window}) >= rules.min_verified_runs
            and len({run.session_id for run in window}) >= rules.min_distinct_sessions
            and len(branches) >= min_branches
        ):
            return True
    return False


def decide(
    runs: Sequence[Run],
    existing_status: str | None,
    rules: Rules,
    now: float,
    min_branches: int = 1,
) -> Decision | None:
    """The procedure a group's runs justify, or None: never qualified, or archived by the
    user, which new evidence never revives."""
    if existing_status == ARCHIVED:
        return None
    ordered = sorted(runs, key=lambda run: (run.at, run.event_id))
    successes = [run for run in ordered if run.succeeded]
    if not successes:
        return None
    if existing_status is None and not qualified(successes, rules, min_branches):
        return None
    cutoff = now - rules.max_age_s
    fresh = [run for run in successes if run.at >= cutoff]
    last_success = successes[-1]
    # Only runs that could not run break a procedure: red code on one branch says nothing of
    # whether the command works (its branch's digest says it fails there).
    blocked = sum(
        1
        for run in ordered
        if not run.succeeded
        and run.cannot_run
        and (run.at, run.event_id) > (last_success.at, last_success.event_id)
    )
    if blocked >= FAILURES_TO_BREAK:
        status = BROKEN
    elif not fresh:
        status = STALE
    else:
        status = ACTIVE
    evidence = fresh or successes
    return Decision(
        status=status,
        confidence=confidence(len({run.event_id for run in fresh}), blocked),
        verified_runs=len({run.event_id for run in evidence}),
        distinct_sessions=len({run.session_id for run in evidence}),
        evidence_event_ids=tuple(sorted({run.event_id for run in evidence})),
        first_verified_at=successes[0].at,
        last_verified_at=last_success.at,
        branches=tuple(sorted({run.branch for run in evidence if run.branch})),
        lately=bool(fresh),
    )


def rank_files(
    edited_before_runs: Iterable[Iterable[str]], kept: int = FILES_KEPT
) -> tuple[list[str], int]:
    """A procedure's files: those edited before its verified runs, each run's set of edits
    counted once, the most often edited first (then by name); at most `kept`, and how many
    more. Runs that followed no edit add nothing: a procedure whose runs never did names no
    file."""
    counts: Counter[str] = Counter(name for names in edited_before_runs for name in set(names))
    ranked = sorted(counts, key=lambda name: (-counts[name], name))
    return ranked[:kept], max(len(ranked) - kept, 0)


@dataclass(frozen=True)
class Where:
    """Where a procedure applies, as its body says it."""

    project: str
    branch: str
    directory: str = "."
    project_wide: bool = False

    def describe(self) -> str:
        place = self.project if self.directory == "." else f"{self.project}/{self.directory}"
        place = inert_path(place)
        if self.project_wide:
            return f"{place} (on every branch)"
        return (
            f"{place} on branch {inert_path(self.branch)}"
            if self.branch
            else f"{place} (no branch)"
        )


def render_body(
    command: str,
    where: Where,
    decision: Decision,
    files: Sequence[str],
    files_more: int = 0,
) -> str:
    runs = "run" if decision.verified_runs == 1 else "runs"
    sessions = "session" if decision.distinct_sessions == 1 else "sessions"
    credentials = f" ({NEEDS_CREDENTIALS})" if needs_credentials(command) else ""
    lines = [f"Run {inert_command(command)}{credentials} in {where.describe()}."]
    branches = ""
    if where.project_wide:
        branches = f" on {len(decision.branches)} branches"
    lately = "" if decision.lately else "No recent successful run: "
    verified = "Verified" if decision.lately else "verified"
    lines.append(
        f"{lately}{verified} by {decision.verified_runs} successful {runs} in "
        f"{decision.distinct_sessions} {sessions}{branches}, first on "
        f"{date(decision.first_verified_at)}, last on {date(decision.last_verified_at)}; "
        f"confidence {decision.confidence:.2f} ({decision.status})."
    )
    if files:
        named = ", ".join(map(inert_path, files))
        more = f" +{files_more} more" if files_more else ""
        lines.append(f"Files edited before it passed: {named}{more}.")
    return "\n".join(lines)
