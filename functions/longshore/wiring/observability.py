"""One Logger, Tracer and Metrics for every Lambda function, and the one decorator order they are applied in.

`entry_point` wraps a handler as Powertools recommends: the Lambda context goes into every log line first,
then the invocation is traced, and the metrics the invocation emitted are flushed (as EMF) last, even when the
handler raises. The service name comes from `POWERTOOLS_SERVICE_NAME` (the stack sets it per function).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer

from longshore.core import telemetry

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "longshore"))
tracer = Tracer()
metrics = Metrics(namespace=telemetry.NAMESPACE)

F = TypeVar("F", bound=Callable[..., Any])


def entry_point(handler: F) -> F:
    """The handler with the Lambda context logged, the invocation traced and its metrics flushed."""
    wrapped = logger.inject_lambda_context(tracer.capture_lambda_handler(metrics.log_metrics(handler)))
    return wrapped  # type: ignore[return-value]
