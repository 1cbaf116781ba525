"""One Logger, Tracer and Metrics for every Lambda function, and the one decorator order they are applied in.

`entry_point` wraps a handler as Powertools recommends: the Lambda context goes into every log line first,
then the invocation is traced, and the metrics the invocation emitted are flushed (as EMF) last, even when the
handler raises. `logged_entry_point` only logs: the trigger function answers the webhook in about a
millisecond and keeps Tracer and Metrics (X-Ray patching costs about 0.5 s at cold start) out of its
container. The Tracer and the Metrics are made on first use, so importing this module costs only the Logger.
The service name comes from `POWERTOOLS_SERVICE_NAME` (the stack sets it per function).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger

from longshore.core import telemetry

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "longshore"))

F = TypeVar("F", bound=Callable[..., Any])


@functools.cache
def tracer() -> Any:
    from aws_lambda_powertools import Tracer

    return Tracer()


@functools.cache
def metrics() -> Any:
    from aws_lambda_powertools import Metrics

    return Metrics(namespace=telemetry.NAMESPACE)


def entry_point(handler: F) -> F:
    """The handler with the Lambda context logged, the invocation traced and its metrics flushed."""
    wrapped = logger.inject_lambda_context(tracer().capture_lambda_handler(metrics().log_metrics(handler)))
    return wrapped  # type: ignore[no-any-return]


def metrics_entry_point(handler: F) -> F:
    """The handler with its metrics flushed, and nothing else: the workflow steps run many short invocations
    whose logs carry the execution name instead of the Lambda context."""
    return metrics().log_metrics(handler)  # type: ignore[no-any-return]


def logged_entry_point(handler: F) -> F:
    """The handler with the Lambda context logged, and nothing else (see the module docstring)."""
    return logger.inject_lambda_context(handler)  # type: ignore[no-any-return]
