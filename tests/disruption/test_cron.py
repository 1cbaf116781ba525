"""Cron parsing and window arithmetic for disruption budgets."""

from __future__ import annotations

import calendar

import pytest

from longshore.core import cron


def at(*fields: int) -> float:
    return float(calendar.timegm((*fields, 0)[:6] if len(fields) == 5 else fields))


def test_business_hours_window_is_active_inside_and_not_outside() -> None:
    weekdays_9am = cron.parse("0 9 * * mon-fri")
    monday = (2026, 11, 23)
    assert weekdays_9am.window_active(at(*monday, 9, 0), 8 * 3600)
    assert weekdays_9am.window_active(at(*monday, 16, 59), 8 * 3600)
    assert not weekdays_9am.window_active(at(*monday, 17, 0), 8 * 3600)
    assert not weekdays_9am.window_active(at(*monday, 8, 59), 8 * 3600)
    assert not weekdays_9am.window_active(at(2026, 11, 22, 10, 0), 8 * 3600)  # Sunday


def test_window_crossing_midnight() -> None:
    nightly = cron.parse("0 22 * * *")
    assert nightly.window_active(at(2026, 11, 24, 1, 30), 4 * 3600)
    assert not nightly.window_active(at(2026, 11, 24, 2, 0), 4 * 3600)


def test_macros_steps_and_lists() -> None:
    assert cron.parse("@daily").matches(at(2026, 1, 1, 0, 0))
    every_15 = cron.parse("*/15 * * * *")
    assert every_15.minutes == frozenset({0, 15, 30, 45})
    assert cron.parse("0 0 1,15 * *").days == frozenset({1, 15})


def test_day_of_month_or_day_of_week_when_both_restricted() -> None:
    schedule = cron.parse("0 0 13 * fri")
    assert schedule.matches(at(2026, 11, 13, 0, 0))  # the 13th
    assert schedule.matches(at(2026, 11, 20, 0, 0))  # a Friday


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("0 9 * *", "expected 5"),
        ("61 * * * *", "minute: 61 is outside 0-59"),
        ("* 25 * * *", "hour: 25 is outside 0-23"),
        ("* * * * funday", "day of week: 'funday'"),
        ("*/0 * * * *", "step '0'"),
        ("5-1 * * * *", "runs backwards"),
        ("@reboot", "unknown macro"),
    ],
)
def test_invalid_expressions_say_which_field(expression: str, message: str) -> None:
    with pytest.raises(cron.CronError, match=message):
        cron.parse(expression)
