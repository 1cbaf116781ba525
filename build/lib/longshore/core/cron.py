"""Five-field cron schedules (UTC), as Karpenter's disruption budgets use them.

Theory of operation: an expression is parsed once into five frozensets of allowed values (minute, hour,
day of month, month, day of week). Matching follows Vixie cron: when both day-of-month and day-of-week are
restricted, a day matches if either does. A budget window is active at `now` when some firing time `f`
satisfies `f <= now < f + duration`; `window_active` walks back minute by minute over at most `duration`,
skipping whole hours and days that cannot match, so an 8-hour window costs at most a few hundred checks.
Macros (`@daily`, `@hourly`, ...) and month/day names are accepted; `@reboot` and time zones are not.
"""

from __future__ import annotations

import calendar
import time  # gmtime only converts a given instant; no clock is read here
from dataclasses import dataclass

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_DAYS = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),
)


class CronError(ValueError):
    """An invalid cron expression; the message says which field and why."""


@dataclass(frozen=True, slots=True)
class Cron:
    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool

    def day_matches(self, year: int, month: int, day: int) -> bool:
        if month not in self.months:
            return False
        weekday = (calendar.weekday(year, month, day) + 1) % 7  # Monday=0 in calendar -> Sunday=0
        in_days, in_weekdays = day in self.days, weekday in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return in_days or in_weekdays
        return in_days and in_weekdays

    def matches(self, epoch_seconds: float) -> bool:
        """True when the minute containing `epoch_seconds` is a firing time."""

        t = time.gmtime(int(epoch_seconds))
        return (
            t.tm_min in self.minutes
            and t.tm_hour in self.hours
            and self.day_matches(t.tm_year, t.tm_mon, t.tm_mday)
        )

    def window_active(self, now: float, duration_seconds: int) -> bool:
        """True when a firing time f exists with f <= now < f + duration."""

        minute = int(now) // 60 * 60
        earliest = now - duration_seconds
        while minute > earliest:
            t = time.gmtime(minute)
            if not self.day_matches(t.tm_year, t.tm_mon, t.tm_mday):
                minute = minute - (t.tm_hour * 3600 + t.tm_min * 60) - 60  # last minute of the previous day
                continue
            if t.tm_hour not in self.hours:
                minute = minute - t.tm_min * 60 - 60  # last minute of the previous hour
                continue
            if t.tm_min in self.minutes:
                return True
            minute -= 60
        return False


def _parse_value(token: str, names: dict[str, int], field: str) -> int:
    lowered = token.lower()
    if lowered in names:
        return names[lowered]
    if not token.isdigit():
        raise CronError(f"{field}: {token!r} is not a number" + (" or a name" if names else ""))
    return int(token)


def _parse_field(text: str, field: str, low: int, high: int, names: dict[str, int]) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise CronError(f"{field}: empty list item in {text!r}")
        step = 1
        if "/" in part:
            part, step_text = part.split("/", 1)
            if not step_text.isdigit() or int(step_text) == 0:
                raise CronError(f"{field}: step {step_text!r} must be a positive integer")
            step = int(step_text)
        if part in ("*", "?"):
            start, end = low, high
        elif "-" in part:
            a, b = part.split("-", 1)
            start, end = _parse_value(a, names, field), _parse_value(b, names, field)
        else:
            start = _parse_value(part, names, field)
            end = high if step > 1 else start
        for bound in (start, end):
            if not low <= bound <= high:
                raise CronError(f"{field}: {bound} is outside {low}-{high}")
        if start > end:
            raise CronError(f"{field}: range {part!r} runs backwards")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def parse(expression: str) -> Cron:
    """Parse a cron expression, raising CronError with the field and reason."""
    text = MACROS.get(expression.strip().lower(), expression.strip())
    if text.startswith("@"):
        raise CronError(f"unknown macro {expression!r} (use one of {', '.join(sorted(MACROS))})")
    parts = text.split()
    if len(parts) != 5:
        raise CronError(
            f"{expression!r} has {len(parts)} fields; expected 5 (minute hour day-of-month month day-of-week)"
        )
    parsed = [
        _parse_field(part, name, low, high, names)
        for part, (name, low, high, names) in zip(parts, _FIELDS, strict=True)
    ]
    weekdays = frozenset(d % 7 for d in parsed[4])
    return Cron(
        expression,
        parsed[0],
        parsed[1],
        parsed[2],
        parsed[3],
        weekdays,
        days_restricted=parts[2] not in ("*", "?"),
        weekdays_restricted=parts[4] not in ("*", "?"),
    )
