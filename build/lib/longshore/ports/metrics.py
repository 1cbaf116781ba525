"""Metrics as a port: services and handlers count and measure through `MetricsSink`, never through Powertools.

Theory of operation: a caller does `sink.emit(name, value, unit, dimensions)` with a name from
`core.telemetry` and a CloudWatch unit ("Count", "Milliseconds", "None" ...). The Lambda handlers wire
`adapters.powertools_metrics.PowertoolsMetricsSink` (EMF through Powertools); tests and the simulation wire
`adapters.memory_metrics.MemoryMetricsSink`, which keeps every point so an outcome can be asserted on.
Keeping the port this small is what lets services stay free of Powertools and cheap to import.

`PutSink` is the older `put(name, value, unit, dimensions)` shape the interruption and workflow-steps handlers
used to take; the simulation still wraps its `MetricsSink` in one. `emitting()` turns either into a
`MetricsSink`; both go once no caller passes a `put` sink.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

Dimensions = Mapping[str, str]


class MetricsSink(Protocol):
    def emit(
        self, name: str, value: float, unit: str = "Count", dimensions: Dimensions | None = None
    ) -> None:
        """Record one data point of metric `name` (a `core.telemetry` name) with optional dimensions."""
        ...


@runtime_checkable
class PutSink(Protocol):
    """Transitional: the older sink shape (see the module docstring)."""

    def put(self, name: str, value: float, unit: str, dimensions: Dimensions | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class _PutAsEmit:
    sink: PutSink

    def emit(
        self, name: str, value: float, unit: str = "Count", dimensions: Dimensions | None = None
    ) -> None:
        self.sink.put(name, value, unit, dimensions)


def emitting(sink: MetricsSink | PutSink) -> MetricsSink:
    """`sink` as a `MetricsSink` (a `PutSink` is adapted)."""
    return _PutAsEmit(sink) if isinstance(sink, PutSink) else sink
