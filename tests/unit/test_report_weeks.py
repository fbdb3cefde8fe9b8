"""`remem report`'s failing calls per session, week by week (remem/admin/report.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from remem.admin.report import weeks


def at(day: str) -> float:
    return datetime.fromisoformat(f"{day}T12:00:00").replace(tzinfo=UTC).timestamp()


def test_sessions_are_summed_by_the_iso_week_they_started_in_oldest_first() -> None:
    found = weeks(
        [(at("2026-12-01"), 3), (at("2026-11-24"), 1), (at("2026-11-30"), 0), (at("2026-11-29"), 2)]
    )
    assert [week.as_json() for week in found] == [
        {"week": "2026-W48", "sessions": 2, "failing_calls": 3, "per_session": 1.5},
        {"week": "2026-W49", "sessions": 2, "failing_calls": 3, "per_session": 1.5},
    ]
    assert weeks([]) == ()


def test_the_week_of_a_new_year_is_the_iso_one() -> None:
    (week,) = weeks([(at("2027-01-01"), 4)])
    assert (week.week, week.sessions, week.as_json()["per_session"]) == ("2026-W53", 1, 4.0)
