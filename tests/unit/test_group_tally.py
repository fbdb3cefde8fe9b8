"""The incremental group tally equals a re-derivation from every run, whatever the windows."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from remem.procedures import policy
from remem.procedures.tally import (
    FAILED,
    UNVERIFIED,
    VERIFIED,
    Aging,
    GroupRun,
    Tally,
    advance,
    decide,
    derive,
    session_lasts,
)

DAY = 86_400.0
START = 1_800_000_000.0
RULES = policy.Rules(min_verified_runs=2, max_age_s=14 * DAY, min_distinct_sessions=1)


@dataclass
class Home:
    """What the database holds for one group: its stored runs and its tally."""

    min_branches: int
    runs: list[GroupRun] = field(default_factory=list)
    tally: Tally | None = None
    status: str | None = None

    def verified(self) -> list[GroupRun]:
        return [run for run in self.runs if run.verdict == VERIFIED]

    def lasts(self) -> dict[int, float]:
        """Each session's latest verified run: the rows kept beside the tally."""
        return session_lasts(self.runs)

    def aging(self, cutoff: float) -> Aging:
        assert self.tally is not None
        old = self.tally.cutoff
        left = {run.event_id for run in self.verified() if old <= run.at < cutoff}
        fresh = [run.at for run in self.verified() if run.at >= cutoff]
        sessions = [s for s, at in self.lasts().items() if old <= at < cutoff]
        return Aging(len(left), min(fresh) if fresh else None, len(sessions))

    def nearby(self, window: list[GroupRun]) -> list[policy.Run]:
        times = [run.at for run in window if run.verdict == VERIFIED]
        if not times:
            return []
        start, end = min(times) - RULES.max_age_s, max(times) + RULES.max_age_s
        return [
            policy.Run(run.event_id, run.session_id, run.at, True, run.branch)
            for run in self.verified()
            if start <= run.at <= end
        ]

    def apply(self, window: list[GroupRun], now: float) -> None:
        """As promote.apply does: runs already stored count nothing again."""
        stored = {run.event_id for run in self.runs}
        new = [run for run in window if run.event_id not in stored]
        if self.tally is None:
            self.runs += new
            self.tally = derive(self.runs, now, RULES, self.min_branches)
        else:
            aging = self.aging(now - RULES.max_age_s)
            nearby = self.nearby(new)
            window_sessions = {run.session_id for run in new}
            known = {s: at for s, at in self.lasts().items() if s in window_sessions}
            self.tally = advance(
                self.tally, new, now, RULES, aging, nearby, self.min_branches, known
            )
            self.runs += new
        decision = decide(self.tally, self.status)
        if decision is not None:
            self.status = decision.status


def policy_runs(runs: list[GroupRun]) -> list[policy.Run]:
    return [
        policy.Run(
            run.event_id,
            run.session_id,
            run.at,
            run.verdict == VERIFIED,
            run.branch,
            run.cannot_run,
        )
        for run in runs
        if run.verdict != UNVERIFIED
    ]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[list[GroupRun]], list[float], list[bool]]:
    """Runs over a few weeks, with clock gaps, cut into windows delivered in any order (some
    twice), each applied at a later `now`; and where the user archives the procedure."""
    count = draw(st.integers(min_value=1, max_value=40))
    runs, at = [], START
    for event_id in range(1, count + 1):
        at += draw(st.sampled_from([60.0, 3_600.0, DAY, 10 * DAY, 20 * DAY]))
        verdict = draw(st.sampled_from([VERIFIED, VERIFIED, FAILED, UNVERIFIED]))
        runs.append(
            GroupRun(
                event_id=event_id,
                session_id=draw(st.integers(min_value=1, max_value=4)),
                at=at,
                verdict=verdict,
                branch=draw(st.sampled_from(["", "main", "main", "feature"])),
                command=draw(st.sampled_from(["make test", "make test 2>&1 | tail"])),
                masked=draw(st.booleans()),
                cannot_run=verdict == FAILED and draw(st.booleans()),
            )
        )
    order = draw(st.permutations(runs))
    cuts = sorted(draw(st.sets(st.integers(min_value=1, max_value=count), max_size=count)))
    windows, start = [], 0
    for cut in [*cuts, count]:
        if cut > start:
            windows.append(list(order[start:cut]))
            start = cut
    if draw(st.booleans()):  # a window applied again
        windows.insert(draw(st.integers(0, len(windows))), draw(st.sampled_from(windows)))
    nows, now = [], START
    for window in windows:
        latest = max((run.at for run in window), default=now)
        now = max(now, latest) + draw(st.sampled_from([0.0, 60.0, DAY, 15 * DAY, 40 * DAY]))
        nows.append(now)
    archives = [draw(st.booleans()) and draw(st.booleans()) for _ in windows]
    return windows, nows, archives


@settings(max_examples=300, deadline=None)
@given(histories(), st.sampled_from([1, 2]))
def test_the_tally_after_any_windows_equals_a_re_derivation(
    history: tuple[list[list[GroupRun]], list[float], list[bool]], min_branches: int
) -> None:
    windows, nows, archives = history
    home = Home(min_branches)
    for window, now, archive in zip(windows, nows, archives, strict=True):
        home.apply(window, now)
        assert home.tally == derive(home.runs, now, RULES, min_branches)
        assert Tally.from_json(home.tally.to_json()) == home.tally
        expected = policy.decide(policy_runs(home.runs), home.status, RULES, now, min_branches)
        found = decide(home.tally, home.status)
        if expected is None:
            assert found is None
        else:
            assert found is not None
            assert found == policy.Decision(**{**expected.__dict__, "evidence_event_ids": ()})
        if archive and home.status is not None:
            home.status = policy.ARCHIVED


@settings(max_examples=200, deadline=None)
@given(histories())
def test_maintenance_ageing_alone_equals_a_re_derivation(
    history: tuple[list[list[GroupRun]], list[float], list[bool]],
) -> None:
    """No window, only time passing: what maintenance does from the index on time."""
    windows, nows, _archives = history
    home = Home(1)
    for window, now in zip(windows, nows, strict=True):
        home.apply(window, now)
    assert home.tally is not None
    for later in (nows[-1] + DAY, nows[-1] + 13 * DAY, nows[-1] + 30 * DAY):
        aging = home.aging(later - RULES.max_age_s)
        home.tally = advance(home.tally, [], later, RULES, aging)
        assert home.tally == derive(home.runs, later, RULES)


def test_a_stale_group_cites_every_run_and_branch_it_was_verified_on() -> None:
    runs = [
        GroupRun(1, 1, START, VERIFIED, "main", "make test"),
        GroupRun(2, 2, START + DAY, VERIFIED, "feature", "make test"),
        GroupRun(3, 2, START + DAY + 60, VERIFIED, "feature", "make test"),
    ]
    tally = derive(runs, START + 30 * DAY, RULES, 2)
    decision = decide(tally, None)
    assert decision is not None
    assert (decision.status, decision.lately) == (policy.STALE, False)
    assert (decision.verified_runs, decision.distinct_sessions) == (3, 2)
    assert decision.branches == ("feature", "main")
    assert (decision.first_verified_at, decision.last_verified_at) == (START, START + DAY + 60)


def test_red_runs_never_break_and_runs_that_cannot_run_do() -> None:
    verified = [GroupRun(1, 1, START, VERIFIED, "main"), GroupRun(2, 1, START + 60, VERIFIED)]
    red = [GroupRun(i, 2, START + 60 * i, FAILED, "feature") for i in range(3, 9)]
    tally = derive(verified + red, START + DAY, RULES)
    decision = decide(tally, None)
    assert decision is not None
    assert (decision.status, decision.confidence) == (policy.ACTIVE, 0.86)
    blocked = [GroupRun(i, 3, START + 60 * i, FAILED, "feature", cannot_run=True) for i in (9, 10)]
    decision = decide(derive(verified + red + blocked, START + DAY, RULES), policy.ACTIVE)
    assert decision is not None
    assert (decision.status, decision.confidence) == (policy.BROKEN, 0.66)


def test_a_tally_does_not_age_backwards() -> None:
    tally = derive([GroupRun(1, 1, START, VERIFIED)], START + DAY, RULES)
    try:
        advance(tally, [], START, RULES, Aging(0, START))
    except ValueError as error:
        assert "derive it again" in str(error)
    else:
        raise AssertionError("a tally aged backwards")
