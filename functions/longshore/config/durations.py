"""Durations as Karpenter writes them (`720h`, `1m30s`, `Never`), parsed into whole seconds.

Theory of operation: Kubernetes stores these fields as Go `time.Duration` strings, and each Karpenter CRD
narrows them with a pattern: `expireAfter` and `consolidateAfter` take `([0-9]+(s|m|h))+` or `Never`,
a budget `duration` only hours and minutes. `parse_duration` checks the pattern the caller names and returns
seconds (`None` for `Never`); errors are `ValueError`s whose message says what forms are accepted.

Bounds: Go's `time.ParseDuration` refuses anything past `math.MaxInt64` nanoseconds (about 292 years), so
Karpenter can never hold a longer duration; `MAX_SECONDS` is that bound, checked on the text's length first
(so a 400-digit `expireAfter` is a validation error, never an integer the planner cannot add to a time).
"""

from __future__ import annotations

import re

_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1}
#: Go's longest duration, 2**63 - 1 ns (`2562047h47m16.854775807s`), in whole seconds.
MAX_SECONDS = (2**63 - 1) // 10**9
_MAX_CHARS = 64
_TERM = re.compile(r"([0-9]+)([hms])")

# Patterns from the Karpenter CRDs (core pkg/apis/v1/nodepool.go, duration.go).
HMS = re.compile(r"^([0-9]+(s|m|h))+$")
BUDGET = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")
# Go's time.ParseDuration for settings such as batchIdleDuration (fractions and ms allowed).
_GO = re.compile(r"^(([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h))+$")
_GO_TERM = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: object, *, allow_never: bool = True, pattern: re.Pattern[str] = HMS) -> int | None:
    """Whole seconds for a Karpenter duration string; `None` for `Never` (when allowed)."""
    if not isinstance(text, str):
        raise ValueError(f"expected a duration string such as '30s', '5m' or '720h', got {text!r}")
    if text == "Never":
        if allow_never:
            return None
        raise ValueError("'Never' is not allowed here; give a duration such as '30s', '5m' or '8h'")
    if len(text) > _MAX_CHARS:
        raise ValueError(f"{text[:20]!r}... ({len(text)} characters) is not a duration: {_too_long()}")
    if not pattern.match(text):
        forms = "'8h', '30m' or '1h30m'" if pattern is BUDGET else "'30s', '5m', '720h' or '1h30m'"
        never = " or 'Never'" if allow_never else ""
        raise ValueError(f"{text!r} is not a duration: use forms like {forms}{never}")
    seconds = sum(int(amount) * _UNIT_SECONDS[unit] for amount, unit in _TERM.findall(text))
    if seconds > MAX_SECONDS:
        raise ValueError(f"{text!r} is out of range: {_too_long()}")
    return seconds


def _too_long() -> str:
    return f"a duration is at most {format_seconds(MAX_SECONDS)} (Go's time.Duration)"


def parse_go_duration(text: object) -> float:
    """Seconds for a Go duration string (`1s`, `500ms`, `1m30s`), as used by Karpenter's global settings."""
    if not isinstance(text, str) or len(text) > _MAX_CHARS or not _GO.match(text):
        shown = f"{text[:20]!r}..." if isinstance(text, str) and len(text) > _MAX_CHARS else repr(text)
        raise ValueError(f"{shown} is not a duration: use forms like '1s', '500ms' or '1m30s'")
    seconds = sum(float(amount) * _GO_UNITS[unit] for amount, unit in _GO_TERM.findall(text))
    if seconds > MAX_SECONDS:
        raise ValueError(f"{text!r} is out of range: {_too_long()}")
    return seconds


def format_seconds(seconds: int | None) -> str:
    """`2592000` -> `720h`, `90` -> `1m30s`, `None` -> `Never` (the way Karpenter prints durations)."""
    if seconds is None:
        return "Never"
    if seconds == 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(
        f"{amount}{unit}" for amount, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if amount
    )
