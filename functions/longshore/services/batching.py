"""Batching pending pods: wait until they stop arriving (1 s idle) or the window is full (10 s), on the injected clock.

Theory of operation (kubernetes-sigs/karpenter `pkg/controllers/provisioning/batcher.go`): a scale-up creates pods over a few
seconds; planning at the first one would launch a small node and then another. So once provisionable pods are
seen, the batcher looks again every `idle_s`: while new pods (by uid) keep appearing and `max_s` has not passed
since the first look, it waits once more; otherwise the batch is closed. The same pods seen again do not extend
the window. Time is the injected `Clock`, so the simulation spends no wall time in a window and tests can
drive it. The batcher only decides when to stop waiting: the caller re-reads the cluster after it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from longshore.ports.clock import Clock


@dataclass(frozen=True, slots=True)
class BatchWindow:
    """How a batch closed: the pods' uids, how long it was open, and how many looks it took."""

    uids: frozenset[str]
    waited_s: float
    looks: int


def collect_batch(
    look: Callable[[], Iterable[str]],
    clock: Clock,
    *,
    idle_s: float,
    max_s: float,
    first: Iterable[str] | None = None,
) -> BatchWindow:
    """Look for provisionable pods (by uid) until none appear for `idle_s` or `max_s` passes.

    `first` is the result of a first look the caller already made. Returns at once with an empty window when
    the first look finds nothing.
    """
    seen = frozenset(look() if first is None else first)
    looks = 1
    if not seen:
        return BatchWindow(seen, 0.0, looks)
    started = clock.now()
    while True:
        left = max_s - (clock.now() - started)
        if left <= 0:
            break
        clock.sleep(min(idle_s, left))
        current = frozenset(look())
        looks += 1
        new = current - seen
        seen = seen | current
        if not new:
            break
    return BatchWindow(seen, clock.now() - started, looks)
