"""Time as a port: production reads the wall clock, the simulation and tests drive a virtual one."""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait; a virtual clock advances instead of blocking."""
        ...
