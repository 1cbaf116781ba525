"""Retrying Kubernetes API calls: which failures are transient, and how long to back off.

Theory of operation: the API server answers 5xx when it is overloaded or restarting, 429 when API Priority
and Fairness throttles us, and connections time out; all of these are worth a few retries with exponential
backoff (`RetryPolicy`). A 429 from the Eviction API that carries a `DisruptionBudget` cause is *not*
transient: it is a PodDisruptionBudget's answer, and the drain handles it (`is_pdb_refusal`). Everything else
(4xx) is returned to the caller at once. A `Retry-After` header lengthens the wait up to the policy's longest
delay. This is the only retry layer: the API client is built with urllib3's retries off. Sleeping goes through an
injected function so tests and the simulation do not wait in real time.

A call never outlives its invocation: with a `CallBudget` whose deadline the handler set from the Lambda
context (`get_remaining_time_in_millis`, less `CallBudget.reserve_s` to end cleanly), each attempt's read (and
connect) timeout is cut to the time left (`CallBudget.timeout`), a backoff that would cross the deadline is
not slept, and once less than `MIN_ATTEMPT_S` is left no attempt starts: the call raises
`ClusterUnavailableError(out_of_time=True)` naming what it was doing and how many attempts it made. Without a
deadline (tests, the CLI) the policy alone bounds a call: 5 attempts of up to 30 s, about 150 s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from urllib3.exceptions import HTTPError as Urllib3Error

from longshore.ports.kube import ClusterUnavailableError

T = TypeVar("T")


MIN_ATTEMPT_S = 1.0  # an attempt needs at least this long to be worth starting
RESERVE_S = 5.0  # left at the end of an invocation after the last Kubernetes call: release leases, report


class CallBudget:
    """How long the current invocation's Kubernetes calls may still take (one per container, shared by every
    adapter of it; the handler moves its deadline at the start of each invocation).

    `now` is the adapters' clock (the Lambda's wall clock; the simulation's virtual one). No deadline: no limit."""

    def __init__(self, now: Callable[[], float], reserve_s: float = RESERVE_S) -> None:
        self._now = now
        self.reserve_s = reserve_s
        self.deadline: float | None = None

    def ends_in(self, seconds: float | None) -> None:
        """The invocation ends `seconds` from now: calls stop `reserve_s` before that (None: no limit)."""
        self.deadline = None if seconds is None else self._now() + seconds - self.reserve_s

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - self._now()

    def timeout(self, timeout: tuple[float, float]) -> tuple[float, float]:
        """`timeout` (connect, read) cut to the time left, never below `MIN_ATTEMPT_S`."""
        left = self.left()
        if left is None:
            return timeout
        cut = max(MIN_ATTEMPT_S, left)
        return (min(timeout[0], cut), min(timeout[1], cut))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 5
    first_delay_s: float = 0.2
    max_delay_s: float = 5.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (0-based)."""
        return float(min(self.max_delay_s, self.first_delay_s * (2**attempt)))


def status_body(error: Any) -> dict[str, Any]:
    """The `Status` object an ApiException carries, or {} when the body is not one."""
    body = getattr(error, "body", None)
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str) or not body:
        return {}
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def is_pdb_refusal(error: Any) -> bool:
    """A PodDisruptionBudget refused an eviction: 429 with a DisruptionBudget cause, or the 500 that the API
    server answers for a pod covered by more than one PDB."""
    status = getattr(error, "status", None)
    body = status_body(error)
    message = str(body.get("message", "")).lower()
    causes = (body.get("details") or {}).get("causes") or []
    budget_cause = any(str(c.get("reason", "")) == "DisruptionBudget" for c in causes if isinstance(c, dict))
    if status == 429:
        return budget_cause or "disruption budget" in message
    if status == 500:
        return "more than one poddisruptionbudget" in message
    return False


def retry_after_s(error: BaseException) -> float:
    """Seconds the server asked us to wait (`Retry-After` in seconds), or 0."""
    headers = getattr(error, "headers", None) or {}
    try:
        return max(0.0, float(headers.get("Retry-After", 0)))
    except (TypeError, ValueError, AttributeError):
        return 0.0


def is_transient(error: BaseException) -> bool:
    status = getattr(error, "status", None)
    if isinstance(status, int):
        return status >= 500 or status == 429
    return isinstance(error, Urllib3Error | ConnectionError | TimeoutError)


def call_with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    sleep: Callable[[float], None],
    what: str,
    transient: Callable[[BaseException], bool] = is_transient,
    budget: CallBudget | None = None,
) -> T:
    """`call()`, retried on transient failures; `ClusterUnavailableError` once the attempts are spent, or
    `ClusterUnavailableError(out_of_time=True)` once `budget` has no time for another attempt."""
    last: BaseException | None = None
    attempts = 0
    for attempt in range(policy.attempts):
        left = budget.left() if budget is not None else None
        if left is not None and left < MIN_ATTEMPT_S:
            raise _out_of_time(what, attempts, last)
        try:
            attempts += 1
            return call()
        except Exception as error:
            if not transient(error):
                raise
            last = error
            if attempt + 1 < policy.attempts:
                pause = max(policy.delay(attempt), min(policy.max_delay_s, retry_after_s(error)))
                left = budget.left() if budget is not None else None
                if left is not None and left - pause < MIN_ATTEMPT_S:
                    raise _out_of_time(what, attempts, last) from error
                sleep(pause)
    detail = getattr(last, "status", None) or type(last).__name__
    raise ClusterUnavailableError(
        f"{what}: the API server kept failing ({detail}) after {policy.attempts} attempts"
    )


def _out_of_time(what: str, attempts: int, last: BaseException | None) -> ClusterUnavailableError:
    detail = f", the last failing with {getattr(last, 'status', None) or type(last).__name__}" if last else ""
    return ClusterUnavailableError(
        f"{what}: the invocation's time for Kubernetes calls ran out after {attempts} attempt(s){detail}",
        out_of_time=True,
    )
