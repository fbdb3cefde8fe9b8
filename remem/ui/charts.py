"""The geometry of the site's charts, drawn on the server as inline SVG: pure functions of
plain data. The templates write the shapes out, so every label is escaped there."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from remem.json_contract import rfc3339

WIDTH = 640
BAR_HEIGHT = 80
MAX_BAR_WIDTH = 40
LANE_HEIGHT = 28
LABEL_WIDTH = 140  # the timeline's branch names, left of its lanes
MARK_RADIUS = 5


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str  # the value's own words: the bar's tooltip
    caption: str  # under the bar


@dataclass(frozen=True)
class Bars:
    width: int
    height: int
    bars: tuple[Bar, ...]


def bars(values: Sequence[tuple[str, float, str]], width: int = WIDTH) -> Bars:
    """(caption, value, tooltip) as bars scaled to the largest value, oldest first."""
    if not values:
        return Bars(width, BAR_HEIGHT + 16, ())
    top = max(value for _caption, value, _label in values) or 1.0
    step = width / len(values)
    bar_width = min(step * 0.7, MAX_BAR_WIDTH)
    shapes = []
    for index, (caption, value, label) in enumerate(values):
        height = BAR_HEIGHT * value / top
        shapes.append(
            Bar(
                round(index * step + (step - bar_width) / 2, 1),
                round(BAR_HEIGHT - height, 1),
                round(bar_width, 1),
                round(height, 1),
                label,
                caption,
            )
        )
    return Bars(width, BAR_HEIGHT + 16, tuple(shapes))


@dataclass(frozen=True)
class Run:
    """One run on a timeline: when, on which branch, whether it passed, and its tooltip."""

    at: float
    branch: str
    passed: bool
    label: str


@dataclass(frozen=True)
class Mark:
    x: float
    y: float
    passed: bool
    label: str


@dataclass(frozen=True)
class Lane:
    y: float
    branch: str


@dataclass(frozen=True)
class Timeline:
    width: int
    height: int
    left: int
    lanes: tuple[Lane, ...]
    marks: tuple[Mark, ...]
    first: str  # the day of the first run and of the last, under the axis
    last: str


def timeline(runs: Sequence[Run], width: int = WIDTH + LABEL_WIDTH) -> Timeline:
    """A lane per branch (in order of their first run), a mark per run placed by its time."""
    ordered = sorted(runs, key=lambda run: run.at)
    branches: list[str] = []
    for run in ordered:
        if run.branch not in branches:
            branches.append(run.branch)
    lanes = tuple(Lane(LANE_HEIGHT * (i + 0.5), b) for i, b in enumerate(branches))
    if not ordered:
        return Timeline(width, LANE_HEIGHT, LABEL_WIDTH, (), (), "", "")
    start, end = ordered[0].at, ordered[-1].at
    span = (end - start) or 1.0
    room = width - LABEL_WIDTH - 2 * MARK_RADIUS
    marks = tuple(
        Mark(
            round(
                LABEL_WIDTH
                + MARK_RADIUS
                + room * ((run.at - start) / span if end > start else 0.5),
                1,
            ),
            LANE_HEIGHT * (branches.index(run.branch) + 0.5),
            run.passed,
            run.label,
        )
        for run in ordered
    )
    return Timeline(
        width,
        LANE_HEIGHT * len(lanes) + 18,
        LABEL_WIDTH,
        lanes,
        marks,
        _minute(start),
        _minute(end),
    )


def _minute(at: float) -> str:
    return (rfc3339(at) or "")[:16].replace("T", " ")
