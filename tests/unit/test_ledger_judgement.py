"""The session ledger's judgement (remem/procedures/ledger.py) and the digest's order by use
(remem/agent/usage.py), on plain data."""

from __future__ import annotations

from remem.agent.usage import FAILING, IGNORED, UNKNOWN, USED, Use, failing_since, use_rank
from remem.db.vocabulary import FOLLOW_FILE
from remem.procedures.ledger import FOLLOW_CALLS, Call, Given, Run, Shown, judge

TEST, BUILD, VENV = "hash-make-test", "hash-make-build", "hash-venv-pytest"


def shown_test(event_id: int = 1) -> Shown:
    return Shown(event_id, 100.0, "procedure", 7, ".", TEST)


def run(event_id: int, workflow: str, passed: bool, error: str | None = None) -> Run:
    return Run(event_id, 100.0 + event_id, ".", workflow, passed, error)


def call(event_id: int, workflow: str, failed: bool = False) -> Call:
    return Call(event_id, 100.0 + event_id, failed, frozenset({(".", workflow)}))


def test_a_shown_procedure_that_runs_and_passes_is_used_and_passed() -> None:
    (judged,) = judge([shown_test()], [], [run(2, TEST, True)], [])
    assert (judged.used, judged.passed, judged.failed_after) == (True, True, False)
    assert (judged.procedure_id, judged.workflow_hash) == (7, TEST)


def test_a_procedure_not_run_or_run_only_before_it_was_shown_is_not_used() -> None:
    (judged,) = judge([shown_test(event_id=5)], [], [run(2, TEST, True), run(6, BUILD, True)], [])
    assert (judged.used, judged.passed) == (False, False)


def test_a_procedure_whose_last_run_failed_failed_after_being_followed() -> None:
    runs = [run(2, TEST, True), run(3, TEST, False)]
    (judged,) = judge([shown_test()], [], runs, [])
    assert (judged.used, judged.passed, judged.failed_after, judged.failed_at) == (
        True,
        True,
        True,
        103.0,
    )
    (again,) = judge([shown_test()], [], [*runs, run(4, TEST, True)], [])
    assert (again.failed_after, again.failed_at) == (False, None)


def test_a_procedure_shown_twice_in_a_session_is_judged_once() -> None:
    judged = judge([shown_test(1), shown_test(3)], [], [run(2, TEST, True)], [])
    assert len(judged) == 1 and judged[0].used


def test_a_shown_known_error_met_again_is_a_repeat() -> None:
    error = Shown(1, 100.0, "known_error", error_key_hash="k1")
    (repeat,) = judge([error], [], [run(2, TEST, False, "k1")], [])
    assert repeat.repeated and repeat.item_key == "k1"
    (other,) = judge([error], [], [run(2, TEST, False, "k2"), run(3, TEST, True)], [])
    assert not other.repeated


def test_advice_is_followed_when_its_substitute_runs_within_the_next_calls() -> None:
    advice = Given(2, 102.0, "substitution", f"pytest>{VENV}", (VENV,))
    calls = [call(2, "pytest", failed=True), call(3, "ls"), call(4, VENV)]
    (judged,) = judge([], [advice], [], calls)
    assert (judged.followed, judged.failed_after) == (True, False)
    assert judged.item_key == f"substitution:pytest>{VENV}"
    assert (judged.directory, judged.workflow_hash) == (".", VENV)
    failed = [*calls[:2], call(4, VENV, failed=True)]
    (then_failed,) = judge([], [advice], [], failed)
    assert (then_failed.followed, then_failed.failed_after, then_failed.failed_at) == (
        True,
        True,
        104.0,
    )


def test_advice_followed_too_late_or_never_is_not_followed() -> None:
    advice = Given(2, 102.0, "known_error", "k", (BUILD,))
    late = [call(3 + n, "ls") for n in range(FOLLOW_CALLS)] + [call(3 + FOLLOW_CALLS, BUILD)]
    (judged,) = judge([], [advice], [], late)
    assert not judged.followed
    (nothing,) = judge([], [Given(2, 102.0, "known_error", "k", ())], [], [call(3, BUILD)])
    assert not nothing.followed


def test_advice_is_followed_when_the_next_calls_edit_a_file_it_named() -> None:
    advice = Given(2, 102.0, "known_error", "k", (BUILD, f"{FOLLOW_FILE}config/test.exs"))
    edit = Call(3, 103.0, False, frozenset(), frozenset({"config/test.exs"}))
    (judged,) = judge([], [advice], [], [edit])
    assert (judged.followed, judged.failed_after) == (True, False)
    other = Call(3, 103.0, False, frozenset(), frozenset({"lib/app.ex"}))
    (ignored,) = judge([], [advice], [], [other])
    assert not ignored.followed


def test_advice_before_a_command_counts_from_its_time() -> None:
    advice = Given(None, 103.0, "before", f"pytest>{VENV}", (VENV,))
    (judged,) = judge([], [advice], [], [call(2, VENV), call(3, VENV)])
    assert judged.followed  # the call at 103.0: the one the warning came before
    (early,) = judge([], [advice], [], [call(2, VENV)])
    assert not early.followed


def test_the_digest_ranks_used_and_passing_first_and_ignored_or_failing_last() -> None:
    assert use_rank(Use(3, 2, 2), 50.0) == USED
    assert use_rank(None, 50.0) == UNKNOWN
    assert use_rank(Use(4, 0, 0), 50.0) == UNKNOWN  # not shown often enough to tell
    assert use_rank(Use(5, 0, 0), 50.0) == IGNORED
    assert use_rank(Use(5, 1, 0), 50.0) == UNKNOWN  # used, never passing: not ignored
    assert USED < UNKNOWN < IGNORED < FAILING


def test_followed_then_failed_is_ranked_down_until_it_passes_again() -> None:
    failed = Use(3, 2, 2, failed_at=60.0)
    assert failing_since(failed, 50.0) and use_rank(failed, 50.0) == FAILING
    assert not failing_since(failed, 70.0) and use_rank(failed, 70.0) == USED
