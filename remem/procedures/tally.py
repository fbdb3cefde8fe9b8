"""A group's tally (DESIGN.md §5): the counters and short tails the promotion rules need, kept
up to date from each window's runs alone. Pure: `derive` computes it from all of a group's runs
(the oracle), `advance` from the previous tally and a window's new runs; both must agree.

Runs age out of `max_age` without being read again: the caller counts, from an index on time,
the verified runs and the sessions that crossed the cutoff since the tally was last brought up
to date (`Aging`). Each session's latest verified run is kept beside the tally, one row per
session, so the tally itself stays small however many sessions ran the workflow.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from remem.procedures import policy
from remem.shell.wrappers import through_wrapper

VERIFIED, FAILED, UNVERIFIED = "verified", "failed", "unverified"
Key = tuple[float, int]  # (at, event_id): the order of a group's runs


class GroupRun(NamedTuple):
    """One run of a group's workflow: verified and failed runs count once per event, an
    unverified one once per step (it only adds to its variant's runs)."""

    event_id: int
    session_id: int
    at: float
    verdict: str
    branch: str = ""
    command: str = ""
    masked: bool = False
    cannot_run: bool = False  # a failed run that could not run at all (remem/shell/runnable.py)

    @property
    def breaks(self) -> bool:
        """A failure that says the workflow cannot run here: one that could not run, unless
        through a wrapper (`rtk bun run test` refused by rtk says nothing of `bun run test`)."""
        return self.cannot_run and not through_wrapper(self.command)


class Aging(NamedTuple):
    """What the index on time says about the stored verified runs at the new cutoff."""

    left: int  # distinct verified events with old cutoff <= at < new cutoff
    oldest_fresh_at: float | None  # the earliest stored verified run at or after the new cutoff
    sessions_left: int = 0  # sessions whose latest verified run is in that range


@dataclass(frozen=True)
class Tally:
    cutoff: float  # now - max_age when it was last brought up to date
    fresh_runs: int = 0  # distinct verified events at or after the cutoff
    oldest_fresh_at: float | None = None
    fresh_sessions: int = 0  # sessions with a verified run at or after the cutoff
    branches: dict[str, float] = field(default_factory=dict)  # fresh named branch -> latest run
    all_branches: tuple[str, ...] = ()  # named branches it was ever verified on
    first: Key | None = None  # the earliest verified run
    last: Key | None = None  # the latest verified run
    failures: tuple[Key, ...] = ()  # failed runs after the latest verified one, in order
    blocked: tuple[Key, ...] = ()  # those of them that could not run: only these break it
    all_runs: int = 0  # distinct verified events ever, what a stale procedure shows
    all_sessions: int = 0  # sessions with a verified run ever
    qualified: bool = False  # enough runs within max_age at some moment (policy.qualified)
    # (command, masked) -> [verified runs, all runs]
    variants: dict[tuple[str, bool], tuple[int, int]] = field(default_factory=dict)

    def to_json(self) -> str:
        data: dict[str, Any] = {
            "cutoff": self.cutoff,
            "fresh_runs": self.fresh_runs,
            "oldest_fresh_at": self.oldest_fresh_at,
            "fresh_sessions": self.fresh_sessions,
            "branches": sorted(self.branches.items()),
            "all_branches": list(self.all_branches),
            "first": self.first,
            "last": self.last,
            "failures": [list(key) for key in self.failures],
            "blocked": [list(key) for key in self.blocked],
            "all_runs": self.all_runs,
            "all_sessions": self.all_sessions,
            "qualified": self.qualified,
            "variants": sorted([c, m, v, r] for (c, m), (v, r) in self.variants.items()),
        }
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, encoded: str) -> Tally:
        data = json.loads(encoded)
        return cls(
            cutoff=data["cutoff"],
            fresh_runs=data["fresh_runs"],
            oldest_fresh_at=data["oldest_fresh_at"],
            fresh_sessions=data["fresh_sessions"],
            branches=dict(data["branches"]),
            all_branches=tuple(data["all_branches"]),
            first=_key(data["first"]),
            last=_key(data["last"]),
            failures=tuple((at, int(e)) for at, e in data["failures"]),
            blocked=tuple((at, int(e)) for at, e in data.get("blocked", ())),
            all_runs=data.get("all_runs", 0),
            all_sessions=data.get("all_sessions", 0),
            qualified=data["qualified"],
            variants={(c, bool(m)): (v, r) for c, m, v, r in data["variants"]},
        )


def _key(value: Sequence[Any] | None) -> Key | None:
    return None if value is None else (value[0], int(value[1]))


def _by_event(runs: Iterable[GroupRun]) -> tuple[list[GroupRun], list[GroupRun]]:
    """Verified and failed runs, one per event (a later step of the event wins), and the
    unverified ones, one per step."""
    verified: dict[int, GroupRun] = {}
    failed: dict[int, GroupRun] = {}
    unverified = []
    for run in runs:
        if run.verdict == VERIFIED:
            verified[run.event_id] = run
        elif run.verdict == FAILED:
            failed[run.event_id] = run
        else:
            unverified.append(run)
    return list(verified.values()) + list(failed.values()), unverified


def derive(
    runs: Iterable[GroupRun], now: float, rules: policy.Rules, min_branches: int = 1
) -> Tally:
    """The tally of all of a group's runs at `now`: the oracle `advance` must agree with."""
    counted, unverified = _by_event(runs)
    empty = Tally(cutoff=now - rules.max_age_s)
    tally = _add(empty, counted, unverified, {})
    successes = [_policy_run(run) for run in counted if run.verdict == VERIFIED]
    return replace(tally, qualified=policy.qualified(successes, rules, min_branches))


def advance(
    tally: Tally,
    runs: Sequence[GroupRun],
    now: float,
    rules: policy.Rules,
    aging: Aging,
    nearby: Sequence[policy.Run] = (),
    min_branches: int = 1,
    known_sessions: Mapping[int, float] | None = None,
) -> Tally:
    """The tally after a window: aged to `now`, then with the window's runs, which the tally
    has not counted yet. `nearby` are the stored verified runs within `max_age` of a new
    verified run; read only while the group has not qualified. `known_sessions` holds the
    stored latest verified run of each of the window's sessions that has one."""
    cutoff = now - rules.max_age_s
    if cutoff < tally.cutoff:
        raise ValueError("a tally cannot age backwards: derive it again")
    aged = replace(
        tally,
        cutoff=cutoff,
        fresh_runs=tally.fresh_runs - aging.left,
        oldest_fresh_at=aging.oldest_fresh_at,
        fresh_sessions=tally.fresh_sessions - aging.sessions_left,
        branches={b: at for b, at in tally.branches.items() if at >= cutoff},
    )
    counted, unverified = _by_event(runs)
    advanced = _add(aged, counted, unverified, known_sessions or {})
    if advanced.qualified:
        return advanced
    successes = [_policy_run(run) for run in counted if run.verdict == VERIFIED]
    if not successes or (len(advanced.all_branches) < min_branches and min_branches > 1):
        return advanced
    qualified = policy.qualified([*nearby, *successes], rules, min_branches)
    return replace(advanced, qualified=qualified)


def _policy_run(run: GroupRun) -> policy.Run:
    return policy.Run(
        run.event_id, run.session_id, run.at, run.verdict == VERIFIED, run.branch, run.breaks
    )


def session_lasts(runs: Iterable[GroupRun]) -> dict[int, float]:
    """Each session's latest verified run among `runs`: the rows kept beside the tally."""
    lasts: dict[int, float] = {}
    for run in runs:
        if run.verdict == VERIFIED:
            lasts[run.session_id] = max(lasts.get(run.session_id, run.at), run.at)
    return lasts


def _add(
    tally: Tally,
    counted: Sequence[GroupRun],
    unverified: Sequence[GroupRun],
    known_sessions: Mapping[int, float],
) -> Tally:
    fresh, oldest, fresh_sessions = tally.fresh_runs, tally.oldest_fresh_at, tally.fresh_sessions
    # A session counts as fresh once: by a stored run at or after the cutoff, or its first
    # fresh run here.
    seen = {s for s, at in known_sessions.items() if at >= tally.cutoff}
    seen_ever = set(known_sessions)
    all_runs, all_sessions = tally.all_runs, tally.all_sessions
    branches = dict(tally.branches)
    all_branches = set(tally.all_branches)
    first, last = tally.first, tally.last
    failures, blocked = list(tally.failures), list(tally.blocked)
    variants = dict(tally.variants)
    for run in sorted(counted, key=lambda r: (r.at, r.event_id, r.verdict)):
        key = (run.at, run.event_id)
        verified, runs = variants.get((run.command, run.masked), (0, 0))
        success = run.verdict == VERIFIED
        variants[(run.command, run.masked)] = (verified + int(success), runs + 1)
        if not success:
            failures.append(key)
            if run.breaks:
                blocked.append(key)
            continue
        all_runs += 1
        if run.session_id not in seen_ever:
            seen_ever.add(run.session_id)
            all_sessions += 1
        first = key if first is None or key < first else first
        last = key if last is None or key > last else last
        if run.branch:
            all_branches.add(run.branch)
        if run.at >= tally.cutoff:
            fresh += 1
            oldest = run.at if oldest is None else min(oldest, run.at)
            if run.session_id not in seen:
                seen.add(run.session_id)
                fresh_sessions += 1
            if run.branch:
                branches[run.branch] = max(branches.get(run.branch, run.at), run.at)
    for run in unverified:
        verified, runs = variants.get((run.command, run.masked), (0, 0))
        variants[(run.command, run.masked)] = (verified, runs + 1)
    after = sorted(key for key in failures if last is None or key > last)
    blocked_after = sorted(key for key in blocked if last is None or key > last)
    return replace(
        tally,
        fresh_runs=fresh,
        oldest_fresh_at=oldest,
        fresh_sessions=fresh_sessions,
        branches=branches,
        all_branches=tuple(sorted(all_branches)),
        first=first,
        last=last,
        failures=tuple(after),
        blocked=tuple(blocked_after),
        all_runs=all_runs,
        all_sessions=all_sessions,
        variants=variants,
    )


def decide(tally: Tally, existing_status: str | None) -> policy.Decision | None:
    """policy.decide from the tally: the same procedure, without its evidence ids (they live
    in their own table)."""
    if existing_status == policy.ARCHIVED or tally.last is None or tally.first is None:
        return None
    if existing_status is None and not tally.qualified:
        return None
    blocked = len(tally.blocked)
    if blocked >= policy.FAILURES_TO_BREAK:
        status = policy.BROKEN
    elif not tally.fresh_runs:
        status = policy.STALE
    else:
        status = policy.ACTIVE
    lately = bool(tally.fresh_runs)
    branches = sorted(tally.branches) if lately else list(tally.all_branches)
    return policy.Decision(
        status=status,
        confidence=policy.confidence(tally.fresh_runs, blocked),
        verified_runs=tally.fresh_runs if lately else tally.all_runs,
        distinct_sessions=tally.fresh_sessions if lately else tally.all_sessions,
        evidence_event_ids=(),
        first_verified_at=tally.first[0],
        last_verified_at=tally.last[0],
        branches=tuple(branches),
        lately=lately,
    )


def variant_rows(tally: Tally) -> list[tuple[str, bool, int, int]]:
    """(command, masked, verified runs, all runs), as groups.recommended reads them."""
    return [(c, m, v, r) for (c, m), (v, r) in tally.variants.items()]
