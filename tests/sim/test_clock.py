"""VirtualClock: time moves only when advanced; timers fire in order at their own instant; nesting is safe."""

from __future__ import annotations

import pytest

from longshore.ports.clock import Clock
from longshore_sim.clock import DEFAULT_START, VirtualClock


def test_is_a_clock_port() -> None:
    clock: Clock = VirtualClock()
    assert clock.now() == DEFAULT_START


def test_sleep_advances_without_blocking() -> None:
    clock = VirtualClock(start=100.0)
    clock.sleep(3600)
    assert clock.now() == 3700.0


def test_timers_fire_in_order_at_their_due_time() -> None:
    clock = VirtualClock(start=0.0)
    fired: list[tuple[str, float]] = []
    clock.call_at(20, lambda: fired.append(("b", clock.now())))
    clock.call_at(10, lambda: fired.append(("a", clock.now())))
    clock.call_later(50, lambda: fired.append(("late", clock.now())))
    clock.advance(30)
    assert fired == [("a", 10.0), ("b", 20.0)]
    assert clock.now() == 30.0
    assert clock.next_due() == 50.0


def test_cancelled_timer_does_not_fire() -> None:
    clock = VirtualClock(start=0.0)
    fired: list[str] = []
    timer = clock.call_at(5, lambda: fired.append("x"))
    timer.cancel()
    clock.advance(10)
    assert fired == []
    assert clock.next_due() is None


def test_a_timer_may_advance_the_clock_itself() -> None:
    clock = VirtualClock(start=0.0)
    fired: list[tuple[str, float]] = []
    clock.call_at(10, lambda: (fired.append(("sleeper", clock.now())), clock.sleep(15)))
    clock.call_at(20, lambda: fired.append(("inner", clock.now())))
    clock.advance(12)
    assert fired == [("sleeper", 10.0), ("inner", 20.0)]
    assert clock.now() == 25.0


def test_listeners_hear_time_changes() -> None:
    clock = VirtualClock(start=0.0)
    heard: list[float] = []
    clock.add_listener(heard.append)
    clock.call_at(4, lambda: None)
    clock.advance(10)
    clock.advance(0)
    assert heard == [4.0, 10.0]


def test_negative_advance_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        VirtualClock().advance(-1)
