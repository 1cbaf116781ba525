"""Disruption budgets: counts, percentages rounded up, schedules, reasons, fail-closed."""

from __future__ import annotations

import calendar
from dataclasses import replace

from longshore.core.disruption import budgets
from longshore.core.model import Budget, Disruption
from tests.builders import pool

MONDAY_10AM = float(calendar.timegm((2026, 11, 23, 10, 0, 0)))
MONDAY_8PM = float(calendar.timegm((2026, 11, 23, 20, 0, 0)))


def with_budgets(*items: Budget):  # type: ignore[no-untyped-def]
    return replace(pool("p"), disruption=Disruption(budgets=items))


def test_percentage_rounds_up_and_counts_disrupting_nodes() -> None:
    p = with_budgets(Budget(nodes="10%"))
    assert budgets.allowance(p, budgets.EMPTY, 11, 0, MONDAY_10AM).allowed == 2
    assert budgets.allowance(p, budgets.EMPTY, 11, 1, MONDAY_10AM).allowed == 1
    assert budgets.allowance(p, budgets.EMPTY, 11, 5, MONDAY_10AM).allowed == 0


def test_minimum_of_active_budgets_and_reasons_filter() -> None:
    p = with_budgets(Budget(nodes="5"), Budget(nodes="1", reasons=(budgets.DRIFTED,)))
    assert budgets.allowance(p, budgets.DRIFTED, 100, 0, MONDAY_10AM).allowed == 1
    assert budgets.allowance(p, budgets.EMPTY, 100, 0, MONDAY_10AM).allowed == 5


def test_scheduled_freeze_applies_only_inside_its_window() -> None:
    freeze = Budget(nodes="0", schedule="0 9 * * mon-fri", duration_seconds=8 * 3600)
    p = with_budgets(Budget(nodes="10%"), freeze)
    inside = budgets.allowance(p, budgets.DRIFTED, 20, 0, MONDAY_10AM)
    assert inside.allowed == 0
    assert inside.limiting_budget == freeze
    assert "schedule '0 9 * * mon-fri'" in inside.describe("p", budgets.DRIFTED)
    assert budgets.allowance(p, budgets.DRIFTED, 20, 0, MONDAY_8PM).allowed == 2


def test_invalid_schedule_fails_closed() -> None:
    p = with_budgets(Budget(nodes="50%", schedule="not a cron", duration_seconds=60))
    assert budgets.allowance(p, budgets.EMPTY, 10, 0, MONDAY_10AM).allowed == 0
