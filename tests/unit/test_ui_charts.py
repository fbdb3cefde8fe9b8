"""The site's charts are geometry of plain data: a mark per run in its branch's lane, placed
by time; bars scaled to the largest value."""

from __future__ import annotations

from remem.ui.charts import Run, bars, timeline


def test_a_timeline_has_a_mark_per_run_in_its_branchs_lane_in_time_order() -> None:
    runs = [
        Run(300.0, "feature", True, "c"),
        Run(100.0, "main", False, "a"),
        Run(200.0, "main", True, "b"),
        Run(200.0, "main", True, "b again"),
    ]
    drawn = timeline(runs, width=540)
    assert [lane.branch for lane in drawn.lanes] == ["main", "feature"]
    assert [mark.label for mark in drawn.marks] == ["a", "b", "b again", "c"]
    assert [mark.passed for mark in drawn.marks] == [False, True, True, True]
    lanes = {lane.branch: lane.y for lane in drawn.lanes}
    assert [mark.y for mark in drawn.marks] == [lanes["main"]] * 3 + [lanes["feature"]]
    xs = [mark.x for mark in drawn.marks]
    assert xs[0] == drawn.left + 5 and xs[-1] == drawn.width - 5
    assert xs[1] == xs[2] == (xs[0] + xs[-1]) / 2


def test_one_run_sits_in_the_middle_and_none_draws_nothing() -> None:
    (mark,) = timeline([Run(50.0, "main", True, "only")], width=540).marks
    assert mark.x == 140 + 5 + (540 - 140 - 10) / 2
    assert timeline([]).marks == () and timeline([]).lanes == ()


def test_bars_are_scaled_to_the_largest_value() -> None:
    drawn = bars([("W1", 2, "two"), ("W2", 4, "four"), ("W3", 0, "none")], width=300)
    assert [bar.height for bar in drawn.bars] == [40.0, 80.0, 0.0]
    assert [bar.y + bar.height for bar in drawn.bars] == [80.0] * 3
    assert [bar.label for bar in drawn.bars] == ["two", "four", "none"]
    assert bars([]).bars == ()
