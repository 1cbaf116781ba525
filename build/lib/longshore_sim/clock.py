"""A virtual clock for the simulation: time moves only when someone advances it.

Theory of operation: `VirtualClock` implements `longshore.ports.clock.Clock`. `now()` reads a number that
only `advance()` (or `sleep()`, which is the same thing) moves forward, so a 30-second boot delay costs no
wall time. Work that must happen at a given virtual instant is registered with `call_at()`/`call_later()`;
advancing runs every due timer in time order, and sets `now()` to the timer's due time while it runs, so a
callback sees the instant it was scheduled for. A callback may itself advance the clock (a provisioner
that "sleeps" while batching): the nested advance runs the timers it passes, and the outer advance then
continues towards its own target, never moving time backwards.

Listeners (`add_listener`) hear about every change of `now()`; the Kubernetes API emulator uses this to
finish grace-period deletions and to end watches whose virtual timeout has passed.

The clock is safe to read and advance from several threads (the emulator serves HTTP on its own threads),
but timers run on whichever thread advanced the clock, outside the clock's lock.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

DEFAULT_START = 1_767_225_600.0
"""2026-01-01T00:00:00Z: a fixed start so that simulations are reproducible."""


@dataclass(order=True)
class Timer:
    """A callback due at a virtual instant; `cancel()` stops it from running."""

    due: float
    sequence: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock:
    """A `Clock` whose time is advanced explicitly, with timers that fire in virtual-time order."""

    def __init__(self, start: float = DEFAULT_START) -> None:
        self._now = float(start)
        self._timers: list[Timer] = []
        self._sequence = itertools.count()
        self._lock = threading.RLock()
        self._listeners: list[Callable[[float], None]] = []

    def now(self) -> float:
        with self._lock:
            return self._now

    def sleep(self, seconds: float) -> None:
        """Advance instead of blocking (the `Clock` port's contract for a virtual clock)."""
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, running every timer that falls due on the way."""
        if seconds < 0:
            raise ValueError(f"cannot advance a clock by a negative duration: {seconds!r} s")
        self.advance_to(self.now() + seconds)

    def advance_to(self, target: float) -> None:
        """Move time forward to `target` (no-op when `target` is in the past), running due timers in order."""
        while True:
            with self._lock:
                timer = self._pop_due(target)
                if timer is None:
                    moved = target > self._now
                    self._now = max(self._now, target)
                    now = self._now
                    break
                self._now = max(self._now, timer.due)
                now = self._now
            self._notify(now)
            timer.callback()
        if moved:
            self._notify(now)

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        """Run `callback` when virtual time reaches `when` (at the next advance if `when` has passed)."""
        with self._lock:
            timer = Timer(float(when), next(self._sequence), callback)
            heapq.heappush(self._timers, timer)
            return timer

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return self.call_at(self.now() + delay, callback)

    def next_due(self) -> float | None:
        """The due time of the earliest pending timer, or None."""
        with self._lock:
            while self._timers and self._timers[0].cancelled:
                heapq.heappop(self._timers)
            return self._timers[0].due if self._timers else None

    def add_listener(self, listener: Callable[[float], None]) -> None:
        """Call `listener(now)` after every change of time."""
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[float], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _pop_due(self, target: float) -> Timer | None:
        while self._timers:
            head = self._timers[0]
            if head.cancelled:
                heapq.heappop(self._timers)
                continue
            if head.due > target:
                return None
            return heapq.heappop(self._timers)
        return None

    def _notify(self, now: float) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(now)
