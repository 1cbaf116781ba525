"""`ports.metrics.MetricsSink` in memory: every point kept, for tests and the simulation report.

Theory of operation: points are appended under a lock (the simulation's API server threads never emit, but
tests may run services concurrently). `total(name, **dims)` sums the values of one metric whose dimensions
include `dims`, `last(name)` reads a gauge, so tests assert outcomes ("3 claims were created in pool a")
rather than calls.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from longshore.ports.metrics import Dimensions


@dataclass(frozen=True, slots=True)
class MetricPoint:
    name: str
    value: float
    unit: str
    dimensions: tuple[tuple[str, str], ...] = ()


class MemoryMetricsSink:
    """Keeps every emitted point in order."""

    def __init__(self) -> None:
        self._points: list[MetricPoint] = []
        self._lock = threading.Lock()

    def emit(
        self, name: str, value: float, unit: str = "Count", dimensions: Dimensions | None = None
    ) -> None:
        point = MetricPoint(name, float(value), unit, tuple(sorted((dimensions or {}).items())))
        with self._lock:
            self._points.append(point)

    @property
    def points(self) -> tuple[MetricPoint, ...]:
        with self._lock:
            return tuple(self._points)

    def named(self, name: str, **dimensions: str) -> tuple[MetricPoint, ...]:
        """Points of metric `name` whose dimensions include every `dimensions` pair."""
        wanted = set(dimensions.items())
        return tuple(p for p in self.points if p.name == name and wanted <= set(p.dimensions))

    def total(self, name: str, **dimensions: str) -> float:
        return sum(p.value for p in self.named(name, **dimensions))

    def last(self, name: str, **dimensions: str) -> float | None:
        found = self.named(name, **dimensions)
        return found[-1].value if found else None
