from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.json_contract import date
from remem.procedures.groups import recommended
from remem.procedures.policy import (
    Decision,
    Rules,
    Run,
    Where,
    command_hash,
    confidence,
    decide,
    qualified,
    rank_files,
    render_body,
    slug,
    topic_key,
)
from remem.record.redact import MASK

DAY = 86400.0
NOW = 1_750_000_000.0  # 2025-06-15 15:06:40 UTC
RULES = Rules(min_verified_runs=2, max_age_s=14 * DAY, min_distinct_sessions=1)
CUTOFF = NOW - RULES.max_age_s


def ok(event_id: int, at: float, session_id: int = 1) -> Run:
    return Run(event_id=event_id, session_id=session_id, at=at, succeeded=True)


def fail(event_id: int, at: float, session_id: int = 1) -> Run:
    """A run that could not run (command not found, ...): what breaks a procedure."""
    return Run(event_id, session_id, at, succeeded=False, cannot_run=True)


def red(event_id: int, at: float, session_id: int = 1) -> Run:
    """A run whose tool ran and reported failures: the code is red."""
    return Run(event_id, session_id, at, succeeded=False)


def decided(runs: list[Run], existing_status: str | None = None, rules: Rules = RULES) -> Decision:
    decision = decide(runs, existing_status, rules, NOW)
    assert decision is not None
    return decision


# --- promotion ---------------------------------------------------------------------------------


def test_one_successful_run_never_promotes_a_new_group() -> None:
    assert decide([ok(1, NOW - 60)], None, RULES, NOW) is None


def test_no_runs_promote_nothing() -> None:
    assert decide([], None, RULES, NOW) is None


def test_two_runs_in_one_session_promote_to_active() -> None:
    decision = decided([ok(7, NOW - 120), ok(3, NOW - 60)])

    assert decision.status == "active"
    assert decision.confidence == 0.86
    assert decision.evidence_event_ids == (3, 7)
    assert decision.verified_runs == 2
    assert decision.distinct_sessions == 1


@pytest.mark.parametrize(
    ("successes", "expected"),
    [(2, 0.86), (3, 0.94), (4, 0.95), (5, 0.95), (12, 0.95)],
)
def test_confidence_grows_with_fresh_runs_up_to_the_cap(successes: int, expected: float) -> None:
    runs = [ok(i, NOW - 60 * i) for i in range(1, successes + 1)]

    decision = decided(runs)

    assert decision.confidence == expected
    assert decision.verified_runs == successes


def test_runs_in_two_sessions_count_two_distinct_sessions() -> None:
    decision = decided([ok(1, NOW - 120, session_id=10), ok(2, NOW - 60, session_id=11)])

    assert decision.distinct_sessions == 2
    assert decision.status == "active"


def test_min_distinct_sessions_blocks_runs_from_a_single_session() -> None:
    rules = Rules(min_verified_runs=2, max_age_s=14 * DAY, min_distinct_sessions=2)

    assert decide([ok(1, NOW - 120), ok(2, NOW - 60)], None, rules, NOW) is None


def test_min_distinct_sessions_is_met_by_two_sessions() -> None:
    rules = Rules(min_verified_runs=2, max_age_s=14 * DAY, min_distinct_sessions=2)

    decision = decided([ok(1, NOW - 120, session_id=1), ok(2, NOW - 60, session_id=2)], rules=rules)

    assert decision.distinct_sessions == 2


def test_runs_further_apart_than_max_age_never_promote() -> None:
    assert decide([ok(1, CUTOFF - 61), ok(2, NOW - 60)], None, RULES, NOW) is None


def test_runs_that_qualified_once_stay_promoted_when_they_age_out() -> None:
    """Promotion is a fact about the runs, not about when the worker looked: re-deriving a
    procedure later (a rebuild) gives the same procedure, stale instead of gone."""
    runs = [ok(1, CUTOFF - 3 * DAY), ok(2, CUTOFF - 2 * DAY)]

    decision = decided(runs)

    assert (decision.status, decision.lately) == ("stale", False)
    assert (decision.verified_runs, decision.distinct_sessions) == (2, 1)
    assert decision.evidence_event_ids == (1, 2)


def test_a_run_older_than_max_age_counts_toward_promotion_with_a_run_within_max_age_of_it() -> None:
    decision = decided([ok(1, CUTOFF - 1), ok(2, NOW - 60)])

    assert decision.verified_runs == 1
    assert decision.evidence_event_ids == (2,)


def test_a_project_group_needs_runs_on_two_branches() -> None:
    one_branch = [Run(1, 1, NOW - 60, True, "a"), Run(2, 2, NOW - 30, True, "a")]
    two_branches = [Run(1, 1, NOW - 60, True, "a"), Run(2, 2, NOW - 30, True, "b")]

    assert decide(one_branch, None, RULES, NOW, min_branches=2) is None
    decision = decide(two_branches, None, RULES, NOW, min_branches=2)
    assert decision is not None
    assert decision.branches == ("a", "b")


@given(offsets=st.lists(st.integers(min_value=0, max_value=60), max_size=8))
def test_qualified_is_a_window_of_max_age_holding_enough_runs(offsets: list[int]) -> None:
    runs = [ok(i, NOW - offset * DAY) for i, offset in enumerate(offsets)]
    times = sorted(NOW - offset * DAY for offset in offsets)
    expected = any(sum(1 for t in times if end - RULES.max_age_s <= t <= end) >= 2 for end in times)

    assert qualified(runs, RULES) is expected


def test_a_run_exactly_at_the_cutoff_counts() -> None:
    decision = decided([ok(1, CUTOFF), ok(2, NOW - 60)])

    assert decision.verified_runs == 2
    assert decision.evidence_event_ids == (1, 2)


def test_old_runs_are_left_out_of_the_evidence_of_a_fresh_procedure() -> None:
    decision = decided([ok(1, CUTOFF - DAY), ok(2, NOW - 120), ok(3, NOW - 60)])

    assert decision.evidence_event_ids == (2, 3)
    assert decision.verified_runs == 2
    assert decision.first_verified_at == CUTOFF - DAY


def test_an_existing_procedure_whose_runs_all_aged_out_is_stale() -> None:
    runs = [ok(4, CUTOFF - 2 * DAY), ok(2, CUTOFF - DAY)]

    decision = decided(runs, existing_status="active")

    assert (decision.status, decision.lately) == ("stale", False)
    assert (decision.verified_runs, decision.distinct_sessions) == (2, 1)
    assert decision.evidence_event_ids == (2, 4)


def test_an_existing_procedure_with_one_fresh_run_stays_active() -> None:
    decision = decided([ok(1, CUTOFF - DAY), ok(2, NOW - 60)], existing_status="stale")

    assert decision.status == "active"
    assert decision.verified_runs == 1


def test_failures_never_count_as_verifications() -> None:
    runs = [fail(1, NOW - 300), fail(2, NOW - 200), ok(3, NOW - 100)]

    assert decide(runs, None, RULES, NOW) is None


def test_failures_alone_promote_nothing() -> None:
    assert decide([fail(1, NOW - 200), fail(2, NOW - 100)], None, RULES, NOW) is None


def test_one_failure_after_the_latest_success_costs_exactly_ten_points() -> None:
    runs = [ok(1, NOW - 300), ok(2, NOW - 200), fail(3, NOW - 100)]

    decision = decided(runs)

    assert decision.status == "active"
    assert decision.confidence == 0.76
    assert decision.verified_runs == 2


def test_two_failures_in_a_row_after_the_latest_success_break_it() -> None:
    runs = [ok(1, NOW - 400), ok(2, NOW - 300), fail(3, NOW - 200), fail(4, NOW - 100)]

    decision = decided(runs)

    assert decision.status == "broken"
    assert decision.confidence == 0.66


def test_red_runs_neither_break_nor_penalise() -> None:
    runs = [ok(1, NOW - 400), ok(2, NOW - 300), *(red(i, NOW - 300 + i) for i in range(3, 9))]

    decision = decided(runs)

    assert (decision.status, decision.confidence) == ("active", 0.86)
    assert decided([*runs, fail(9, NOW - 10)]).confidence == 0.76


def test_a_later_success_restores_active_and_removes_the_penalty() -> None:
    runs = [
        ok(1, NOW - 500),
        ok(2, NOW - 400),
        fail(3, NOW - 300),
        fail(4, NOW - 200),
        ok(5, NOW - 100),
    ]

    decision = decided(runs, existing_status="broken")

    assert decision.status == "active"
    assert decision.confidence == 0.94


def test_failures_before_the_latest_success_do_not_penalise() -> None:
    runs = [ok(1, NOW - 400), fail(2, NOW - 300), fail(3, NOW - 200), ok(4, NOW - 100)]

    decision = decided(runs)

    assert decision.status == "active"
    assert decision.confidence == 0.86


def test_a_failure_at_the_same_time_orders_by_event_id() -> None:
    at = NOW - 100
    before = decided([ok(1, NOW - 200), fail(4, at), ok(5, at)])
    after = decided([ok(1, NOW - 200), ok(5, at), fail(6, at)])

    assert before.confidence == 0.86
    assert after.confidence == 0.76


def test_runs_at_the_same_time_order_by_event_id_whatever_the_input_order() -> None:
    at = NOW - 100
    runs = [ok(7, at), ok(5, at), fail(6, at)]

    decision = decided(runs)

    assert decision.confidence == 0.86
    assert decision.last_verified_at == at


def test_confidence_floors_at_zero_with_many_failures() -> None:
    runs = [ok(1, NOW - 1000), ok(2, NOW - 900)] + [fail(i, NOW - 800 + i) for i in range(3, 20)]

    decision = decided(runs)

    assert decision.status == "broken"
    assert decision.confidence == 0.0


@pytest.mark.parametrize("existing_status", [None, "active", "broken", "stale"])
def test_archived_is_never_revived(existing_status: str | None) -> None:
    runs = [ok(i, NOW - 60 * i, session_id=i) for i in range(1, 6)]

    assert decide(runs, existing_status, RULES, NOW) is not None
    assert decide(runs, "archived", RULES, NOW) is None


def test_shuffled_runs_give_the_same_decision() -> None:
    runs = [
        ok(1, NOW - 500, session_id=1),
        fail(2, NOW - 400, session_id=2),
        ok(3, NOW - 300, session_id=2),
        ok(4, NOW - 200, session_id=3),
        fail(5, NOW - 100, session_id=3),
    ]
    shuffled = runs[:]
    random.Random(4).shuffle(shuffled)
    assert shuffled != runs

    assert decide(shuffled, None, RULES, NOW) == decided(runs)


def test_first_and_last_verified_at_are_the_earliest_and_latest_successes() -> None:
    runs = [
        fail(1, NOW - 900),
        ok(9, NOW - 700),
        ok(2, NOW - 500),
        ok(8, NOW - 300),
        fail(3, NOW - 100),
    ]

    decision = decided(runs)

    assert decision.first_verified_at == NOW - 700
    assert decision.last_verified_at == NOW - 300


# --- confidence --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fresh", "failures", "expected"),
    [
        (0, 0, 0.70),
        (1, 0, 0.78),
        (2, 0, 0.86),
        (3, 0, 0.94),
        (4, 0, 0.95),
        (2, 1, 0.76),
        (2, 2, 0.66),
        (4, 3, 0.65),
        (2, 9, 0.0),
        (2, 50, 0.0),
    ],
)
def test_confidence_formula(fresh: int, failures: int, expected: float) -> None:
    assert confidence(fresh, failures) == expected


@pytest.mark.parametrize("fresh", range(0, 8))
@pytest.mark.parametrize("failures", range(0, 12))
def test_confidence_is_rounded_to_two_places(fresh: int, failures: int) -> None:
    value = confidence(fresh, failures)

    assert value == round(value, 2)
    assert 0.0 <= value <= 0.95


# --- property ----------------------------------------------------------------------------------

RUNS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=4),
        # Half-day steps make equal times common and put some runs exactly at the cutoff.
        st.integers(min_value=0, max_value=40).map(lambda half_days: NOW - half_days * DAY / 2),
        st.booleans(),
        st.booleans(),
    ),
    max_size=12,
).map(
    lambda rows: [
        Run(event_id=i, session_id=s, at=at, succeeded=good, cannot_run=not good and blocked)
        for i, (s, at, good, blocked) in enumerate(rows, start=1)
    ]
)


@given(
    runs=RUNS,
    existing_status=st.sampled_from([None, "active", "broken", "stale"]),
    data=st.data(),
)
def test_decide_is_a_deterministic_function_of_the_set_of_runs(
    runs: list[Run], existing_status: str | None, data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(runs))

    decision = decide(runs, existing_status, RULES, NOW)

    assert decide(shuffled, existing_status, RULES, NOW) == decision
    if decision is not None:
        success_ids = {run.event_id for run in runs if run.succeeded}
        assert 0.0 <= decision.confidence <= 0.95
        assert list(decision.evidence_event_ids) == sorted(decision.evidence_event_ids)
        assert set(decision.evidence_event_ids) <= success_ids


# --- command helpers ---------------------------------------------------------------------------

LONG_A = "pytest " + "x" * 193 + "a" * 100
LONG_B = "pytest " + "x" * 193 + "b" * 100


def test_long_commands_share_a_prefix() -> None:
    assert len(LONG_A) == len(LONG_B) == 300
    assert LONG_A[:200] == LONG_B[:200]


def test_command_hash_tells_long_commands_with_a_common_start_apart() -> None:
    assert command_hash(LONG_A) != command_hash(LONG_B)
    assert command_hash(LONG_A) == command_hash(LONG_A)


def test_topic_key_tells_long_commands_with_a_common_start_apart() -> None:
    assert topic_key(LONG_A) != topic_key(LONG_B)
    assert topic_key(LONG_A) == topic_key(LONG_A)


def test_topic_key_tells_one_workflow_in_two_places_apart() -> None:
    assert topic_key("npm test", ("branch", "main", ".")) != topic_key(
        "npm test", ("branch", "main", "frontend")
    )


def test_slug_is_at_most_64_characters() -> None:
    assert len(slug(LONG_A)) <= 64
    assert slug(LONG_A).startswith("pytest-xxx")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("make test", "make-test"),
        ("pytest -k 'Foo Bar'", "pytest-k-foo-bar"),
        ("&&", "command"),
    ],
)
def test_slug_is_lowercase_words_joined_by_dashes(command: str, expected: str) -> None:
    assert slug(command) == expected


# --- rendering ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epoch_s", "expected"),
    [(0.0, "1970-01-01"), (86399.9, "1970-01-01"), (86400.0, "1970-01-02"), (NOW, "2025-06-15")],
)
def test_iso_date_is_the_utc_calendar_day(epoch_s: float, expected: str) -> None:
    assert date(epoch_s) == expected


@pytest.fixture
def far_east_timezone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "XYZ-14")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("far_east_timezone")
def test_iso_date_ignores_the_local_timezone() -> None:
    assert time.localtime(NOW).tm_mday == 16

    assert date(NOW) == "2025-06-15"


def sample_decision() -> Decision:
    return Decision(
        status="active",
        confidence=0.86,
        verified_runs=2,
        distinct_sessions=1,
        evidence_event_ids=(3, 7),
        first_verified_at=NOW - 3 * DAY,
        last_verified_at=NOW,
    )


def test_render_body_says_what_where_when_and_how_sure() -> None:
    decision = sample_decision()

    body = render_body("make test", Where("/src/shop", "main"), decision, ["app.py", "tests/t.py"])

    assert "make test" in body
    assert "/src/shop" in body
    assert "main" in body
    assert "2025-06-12" in body
    assert "2025-06-15" in body
    assert "0.86" in body
    assert "app.py" in body
    assert "tests/t.py" in body


def test_render_body_shows_no_epoch_numbers() -> None:
    decision = sample_decision()

    body = render_body("make test", Where("/src/shop", "main"), decision, [])

    assert str(int(decision.first_verified_at)) not in body
    assert str(int(decision.last_verified_at)) not in body


def test_render_body_without_a_branch_says_no_branch() -> None:
    body = render_body("make test", Where("/src/shop", ""), sample_decision(), [])

    assert "no branch" in body


def test_render_body_shows_confidence_with_two_decimals() -> None:
    decision = Decision(
        status="active",
        confidence=0.7,
        verified_runs=1,
        distinct_sessions=1,
        evidence_event_ids=(1,),
        first_verified_at=NOW,
        last_verified_at=NOW,
    )

    body = render_body("make test", Where("/src/shop", "main"), decision, [])

    assert "0.70" in body


def test_render_body_without_files_names_none() -> None:
    with_files = render_body("make test", Where("/src/shop", "main"), sample_decision(), ["app.py"])
    without = render_body("make test", Where("/src/shop", "main"), sample_decision(), [])

    assert "app.py" in with_files
    assert "app.py" not in without
    assert len(without) < len(with_files)


def test_render_body_names_the_directory_and_every_branch_for_a_project_procedure() -> None:
    decision = Decision("active", 0.86, 2, 2, (3, 7), NOW - DAY, NOW, ("a", "b"))

    body = render_body("npm test", Where("/src/shop", "", "frontend", True), decision, [], 0)

    assert "/src/shop/frontend (on every branch)" in body
    assert "on 2 branches" in body


def test_render_body_counts_the_files_it_does_not_name() -> None:
    body = render_body("make", Where("/src/shop", "main"), sample_decision(), ["a.py"], 4)

    assert "a.py +4 more" in body


def test_render_body_marks_a_command_whose_credentials_were_redacted() -> None:
    command = f"AWS_SECRET_ACCESS_KEY={MASK} ./deploy.sh --token {MASK}"
    body = render_body(command, Where("/src/shop", "main"), sample_decision(), [])
    first = body.splitlines()[0]
    assert first == (
        f"Run `{command}` (needs your credentials: redacted in memory) in /src/shop on branch main."
    )
    plain = render_body("make build", Where("/src/shop", "main"), sample_decision(), [])
    assert "credentials" not in plain


# --- the command shown, the files named ------------------------------------------------------

DEPLOY = f"./deploy.sh --token {MASK}"


def test_a_verified_variant_without_redactions_is_preferred_whatever_the_counts() -> None:
    found = [
        (DEPLOY, False, 9, 9),
        ("./deploy.sh  --env prod", False, 1, 1),
        ("./deploy.sh --env  prod", False, 0, 4),  # never verified: never recommended
    ]
    # shown as the command it runs: one run's spelling (its spaces) is no part of it
    assert recommended(found, "./deploy.sh --env prod") == "./deploy.sh --env prod"


def test_a_redacted_variant_is_still_recommended_when_it_is_the_only_verified_one() -> None:
    found = [(DEPLOY, False, 3, 3), ("./deploy.sh --token ok", False, 0, 2)]
    assert recommended(found, DEPLOY) == DEPLOY


def test_the_workflow_is_preferred_when_only_a_masked_variant_ran_without_redactions() -> None:
    found = [
        (f"make deploy > out-{MASK}.log", False, 2, 2),
        ("make deploy 2>&1 | tail -5", True, 2, 2),
    ]
    assert recommended(found, "make deploy") == "make deploy"
    assert recommended(found[:1], "make deploy") == found[0][0]


def test_runs_that_followed_no_edit_name_no_file() -> None:
    assert rank_files([]) == ([], 0)
    assert rank_files([[], [], []]) == ([], 0)


def test_files_rank_by_how_many_runs_they_preceded_then_by_name() -> None:
    edited = [["src/b.py", "src/a.py"], ["src/b.py"], [], ["src/c.py", "src/b.py", "src/b.py"]]
    assert rank_files(edited) == (["src/b.py", "src/a.py", "src/c.py"], 0)


def test_files_keep_five_and_count_the_rest() -> None:
    edited = [[f"f{n}.py" for n in range(8)], ["f7.py", "f6.py"]]
    assert rank_files(edited) == (["f6.py", "f7.py", "f0.py", "f1.py", "f2.py"], 3)
    assert rank_files(edited, kept=1) == (["f6.py"], 7)


def test_a_variant_that_is_its_workflow_but_for_its_spelling_shows_as_the_workflow() -> None:
    assert recommended([("bun run lint 2>&1", False, 3, 3)], "bun run lint") == "bun run lint"
    assert recommended([("timeout 60 make test", False, 2, 2)], "make test") == "make test"
    # What the workflow does not say stays: a file the output is written to.
    written = "make test > out.log"
    assert recommended([(written, False, 2, 2)], written) == written
