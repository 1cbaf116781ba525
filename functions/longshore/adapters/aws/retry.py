"""Client configuration and throttling: botocore's own retries first, then one bounded retry of our own.

Theory of operation: every client we create uses botocore's `standard` retry mode (`CLIENT_CONFIG`), which
already retries throttling codes such as EC2's `RequestLimitExceeded` with jittered exponential backoff. When a
call is still throttled after botocore gives up, `call_with_backoff` retries it a bounded number of times more
with its own exponential backoff, sleeping through the injected `sleep` (the Lambda's clock; a virtual clock in
the simulation), and then re-raises, so a throttled run fails one claim cleanly instead of looping.

DynamoDB holds every decision's state, so its calls go through `PatientClient`: throttling *and* server errors
(5xx) get the same bounded backoff after botocore's own attempts, so a pass survives a throttled table instead
of failing its invocation. Conditional-check failures and other 4xx pass through at once: they are answers.

A `LazyClient` makes its client at its first attribute access and never before, so a client a function
rarely needs (IAM, Pricing) costs nothing at cold start; it then answers as the client itself would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import ClientError as ClientError  # type: ignore[import-untyped]

T = TypeVar("T")

THROTTLING_CODES: Final = frozenset(
    {
        "RequestLimitExceeded",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestThrottled",
        "SlowDown",
    }
)

#: botocore retries: standard mode (throttles, 5xx, transient errors), 4 attempts in all.
CLIENT_CONFIG: Final = Config(
    retries={"total_max_attempts": 4, "mode": "standard"}, connect_timeout=5, read_timeout=30
)

OWN_RETRIES: Final = 4
BASE_DELAY_S: Final = 1.0
MAX_DELAY_S: Final = 8.0


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def is_throttle(error: BaseException) -> bool:
    return isinstance(error, ClientError) and error_code(error) in THROTTLING_CODES


def backoff_delays(
    retries: int = OWN_RETRIES, base_s: float = BASE_DELAY_S, cap_s: float = MAX_DELAY_S
) -> tuple[float, ...]:
    """The sleeps between our own attempts: base, 2*base, 4*base... capped (deterministic, no jitter)."""
    return tuple(min(cap_s, base_s * 2**i) for i in range(retries))


def is_server_error(error: BaseException) -> bool:
    """A 5xx answer (DynamoDB's `InternalServerError`, `ServiceUnavailable`...)."""
    if not isinstance(error, ClientError):
        return False
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return isinstance(status, int) and status >= 500


def is_transient(error: BaseException) -> bool:
    return is_throttle(error) or is_server_error(error)


def call_with_backoff(
    call: Callable[[], T],
    sleep: Callable[[float], None],
    retries: int = OWN_RETRIES,
    transient: Callable[[BaseException], bool] = is_throttle,
) -> T:
    """`call()`, retried after `transient` errors (throttling by default) with bounded exponential backoff;
    other errors pass through."""
    delays = backoff_delays(retries)
    for delay in delays:
        try:
            return call()
        except ClientError as error:
            if not transient(error):
                raise
            sleep(delay)
    return call()


class PatientClient:
    """A boto3 client whose every operation is `call_with_backoff(..., transient=is_transient)`.

    A conditional write that succeeded before its 5xx answer fails its condition when retried, exactly as under
    botocore's own retries: callers read that as a lost race and re-read, which is safe (never a second owner).
    """

    def __init__(self, client: Any, sleep: Callable[[float], None]) -> None:
        self._client = client
        self._sleep = sleep
        self.meta = client.meta
        self.exceptions = client.exceptions

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if not callable(method) or name in ("get_paginator", "get_waiter", "can_paginate"):
            return method

        def patient(*args: Any, **kwargs: Any) -> Any:
            return call_with_backoff(lambda: method(*args, **kwargs), self._sleep, transient=is_transient)

        return patient


def client(session: Any, service: str, region: str | None = None) -> Any:
    """A boto3 client of `session` with Longshore's retry configuration (the way handlers should create them)."""
    return session.client(service, region_name=region, config=CLIENT_CONFIG)


class LazyClient:
    """A boto3 client created on first use: IAM and Pricing are needed only to launch or refresh prices, so
    they are kept off the cold start."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._client: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            self._client = self._make()
        return getattr(self._client, name)
