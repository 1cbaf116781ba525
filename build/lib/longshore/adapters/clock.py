"""`ports.clock.Clock` on the wall clock: what every Lambda handler runs on.

Theory of operation: `now()` is `time.time()` (epoch seconds, the unit every claim timestamp and deadline
uses) and `sleep()` blocks the process. Tests and the simulation wire a virtual clock instead
(`sim.clock.VirtualClock`), which advances rather than blocks.
"""

from __future__ import annotations

import time


class WallClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
