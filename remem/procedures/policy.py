"""Promotion policy (DESIGN.md §5): pure functions of a group's runs and `now`."""

from __future__ import annotations

import functools
import hashlib
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from remem.procedures.digest import inert_command, inert_path

ACTIVE, BROKEN, STALE, ARCHIVED = "active", "broken", "stale", "archived"
BASE_CONFIDENCE = 0.70
CONFIDENCE_PER_RUN = 0.08
MAX_CONFIDENCE = 0.95
PENALTY_PER_FAILURE = 0.10
FAILURES_TO_BREAK = 2
WORKFLOW_KEY_CHARS = 64

_SEPARATORS = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")


@dataclass(frozen=True)
class Run:
    event_id: int
    session_id: int
    at: float
    succeeded: bool


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


def normalise_command(command: str) -> str:
    return " ".join(command.split())


def command_hash(command: str) -> str:
    return hashlib.sha256(command.encode("utf-8", "surrogatepass")).hexdigest()


def slug(command: str, limit: int = WORKFLOW_KEY_CHARS) -> str:
    text = re.sub(r"[^a-z0-9]+", "-", command.lower()).strip("-")
    return text[:limit].rstrip("-") or "command"


def topic_key(command: str) -> str:
    """The slug names it for people; the hash keeps two long commands with a common start apart."""
    return f"{slug(command, 48)}-{command_hash(command)[:12]}"


def is_ignored(command: str, ignore_commands: Iterable[str]) -> bool:
    return _is_ignored(command, tuple(ignore_commands))


@functools.lru_cache(maxsize=4096)
def _is_ignored(command: str, ignore_commands: tuple[str, ...]) -> bool:
    """True when every part of a compound command is a read-only or navigation command:
    `cd app && make test` is a procedure, `cd app && ls` is not."""
    ignored = _normalised_entries(tuple(ignore_commands))
    parts = [part for part in _SEPARATORS.split(normalise_command(command)) if part]
    return bool(parts) and all(
        any(part == entry or part.startswith(entry + " ") for entry in ignored) for part in parts
    )


@functools.lru_cache(maxsize=8)
def _normalised_entries(ignore_commands: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(normalise_command(entry) for entry in ignore_commands if entry.strip())


def confidence(fresh_successes: int, failures_since_success: int) -> float:
    raw = min(BASE_CONFIDENCE + CONFIDENCE_PER_RUN * fresh_successes, MAX_CONFIDENCE)
    return round(max(raw - PENALTY_PER_FAILURE * failures_since_success, 0.0), 2)


def decide(
    runs: Sequence[Run], existing_status: str | None, rules: Rules, now: float
) -> Decision | None:
    """The procedure a group's runs justify, or None: not (yet) promoted, or archived by the
    user, which new evidence never revives."""
    if existing_status == ARCHIVED:
        return None
    ordered = sorted(runs, key=lambda run: (run.at, run.event_id))
    successes = [run for run in ordered if run.succeeded]
    if not successes:
        return None
    cutoff = now - rules.max_age_s
    fresh = [run for run in successes if run.at >= cutoff]
    sessions = len({run.session_id for run in fresh})
    if existing_status is None and (
        len(fresh) < rules.min_verified_runs or sessions < rules.min_distinct_sessions
    ):
        return None
    last_success = successes[-1]
    failures = sum(
        1
        for run in ordered
        if not run.succeeded and (run.at, run.event_id) > (last_success.at, last_success.event_id)
    )
    if failures >= FAILURES_TO_BREAK:
        status = BROKEN
    elif not fresh:
        status = STALE
    else:
        status = ACTIVE
    evidence = fresh or successes
    return Decision(
        status=status,
        confidence=confidence(len(fresh), failures),
        verified_runs=len(fresh),
        distinct_sessions=sessions,
        evidence_event_ids=tuple(sorted(run.event_id for run in evidence)),
        first_verified_at=successes[0].at,
        last_verified_at=last_success.at,
    )


def iso_date(epoch_s: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(epoch_s))


def render_body(
    command: str, project: str, branch: str, decision: Decision, files: Sequence[str]
) -> str:
    where = f"{project} on branch {branch}" if branch else f"{project} (no branch)"
    runs = "run" if decision.verified_runs == 1 else "runs"
    sessions = "session" if decision.distinct_sessions == 1 else "sessions"
    if not decision.verified_runs:
        return "\n".join(
            [
                f"Run {inert_command(command)} in {where}.",
                "No recent successful run: it last passed on "
                f"{iso_date(decision.last_verified_at)}; "
                f"confidence {decision.confidence:.2f} ({decision.status}).",
            ]
        )
    lines = [
        f"Run {inert_command(command)} in {where}.",
        f"Verified by {decision.verified_runs} successful {runs} in "
        f"{decision.distinct_sessions} {sessions}, first on "
        f"{iso_date(decision.first_verified_at)}, last on {iso_date(decision.last_verified_at)}; "
        f"confidence {decision.confidence:.2f} ({decision.status}).",
    ]
    if files:
        lines.append("Files edited before it passed: " + ", ".join(map(inert_path, files)) + ".")
    return "\n".join(lines)
