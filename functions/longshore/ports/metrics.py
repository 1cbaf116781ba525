"""Metrics as a port: services and handlers count and measure through `MetricsSink`, never through Powertools.

Theory of operation: a caller does `sink.emit(name, value, unit, dimensions)` with a name from
`core.telemetry` and a CloudWatch unit ("Count", "Milliseconds", "None" ...). The Lambda handlers wire
`adapters.powertools_metrics.PowertoolsMetricsSink` (EMF through Powertools); tests and the simulation wire
`adapters.memory_metrics.MemoryMetricsSink`, which keeps every point so an outcome can be asserted on.
Keeping the port this small is what lets services stay free of Powertools and cheap to import.

"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

Dimensions = Mapping[str, str]


class MetricsSink(Protocol):
    def emit(
        self, name: str, value: float, unit: str = "Count", dimensions: Dimensions | None = None
    ) -> None:
        """Record one data point of metric `name` (a `core.telemetry` name) with optional dimensions."""
        ...
