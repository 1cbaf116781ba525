"""`ports.metrics.MetricsSink` on Powertools Metrics (CloudWatch embedded metric format).

Theory of operation: undimensioned points go to the handler's shared `Metrics` object, which Powertools
flushes as one EMF blob when the invocation ends (`@metrics.log_metrics`). A point with dimensions is written
at once with `single_metric`, because one EMF blob carries one dimension set and claims created by pool,
type and capacity type must not share theirs with the cluster-wide gauges. The namespace is
`core.telemetry.NAMESPACE`; names outside `core.telemetry.ALL_METRICS` are refused, so a typo fails a test
instead of creating a metric no dashboard reads.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from longshore.core import telemetry
from longshore.ports.metrics import Dimensions


class UnknownMetricError(ValueError):
    """A metric name that `core.telemetry` does not list."""


class PowertoolsMetricsSink:
    """Emit through a Powertools `Metrics` instance (the handler's module-level one)."""

    def __init__(self, metrics: Any) -> None:
        self._metrics = metrics

    def emit(
        self, name: str, value: float, unit: str = "Count", dimensions: Dimensions | None = None
    ) -> None:
        if name not in telemetry.ALL_METRICS:
            raise UnknownMetricError(
                f"metric {name!r} is not in longshore.core.telemetry; add it there first"
            )
        if not dimensions:
            self._metrics.add_metric(name=name, unit=MetricUnit(unit), value=value)
            return
        with single_metric(
            name=name, unit=MetricUnit(unit), value=value, namespace=telemetry.NAMESPACE
        ) as one:
            for key, dimension in sorted(dimensions.items()):
                one.add_dimension(name=key, value=dimension)
