"""One planner Lambda invocation: passes of `DisruptionService` at Karpenter's cadence until nothing is due.

Rules:

- Every invocation makes at least one pass. Another pass follows when `next_pass_at` asks for one and it
  can end `margin_s` (plus the longest pass so far) before the invocation's deadline.
- A pass that acted, holds a consolidation awaiting re-validation, dropped one, or staged a surge asks for
  the next pass in `PASS_INTERVAL_S`; a "not yet" wait asks for the instant it ends (never sooner than the
  interval); anything else waits for the world to change, and the invocation stops ("quiet").
- With a lease port and an owner, only one invocation decides at a time: each pass first takes or renews the
  `LEASE_NAME` lease for `LEASE_TTL_S`; while another holds it the invocation stops ("lease-held"); the lease
  is released when the invocation ends, however it ends.
- A pass whose Kubernetes call runs out of the invocation's time (`ClusterUnavailableError.out_of_time`, the
  adapter's `CallBudget`) ends the invocation cleanly: `stopped` "out-of-time", `unfinished` names the call;
  the lease is released and the next invocation decides again.
- With `reload`, every pass after the first starts by asking it for the planner rebuilt on a changed cluster
  config (`wiring.container.Container.refresh`, which hands the old planner's memory over): a changed budget,
  limit or requirement is decided on from the next pass, not the next invocation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from longshore.ports.kube import ClusterUnavailableError
from longshore.services.invocation import InvocationReport, Stopped

if TYPE_CHECKING:
    from longshore.services.disruption import DisruptionService, PassReport

PASS_INTERVAL_S: Final = 10.0
LEASE_NAME: Final = "planner"
# Renewed every pass; a holder that died blocks the next invocation this long at most.
LEASE_TTL_S: Final = 120.0


@dataclass(frozen=True, slots=True)
class PlannerTotals:
    """The planner's own totals of one invocation (inside its `services.invocation.InvocationReport`)."""

    started: tuple[str, ...]
    pending: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"started": list(self.started), "pending": list(self.pending)}


PlannerInvocation: TypeAlias = InvocationReport[PlannerTotals]


def next_pass_at(
    service: DisruptionService, report: PassReport, interval_s: float = PASS_INTERVAL_S
) -> float | None:
    """When another pass could decide something this one did not; None when only a change of the world can.

    A pass that acted, holds a consolidation awaiting re-validation, dropped one, or staged a surge asks for
    the next pass in `interval_s` (Karpenter's 10 s cadence). A node passed over with a "not yet" reason
    (empty, or pods changed, for less than the pool's `consolidateAfter`) asks for the instant that wait
    ends. Everything else (no cheaper option, a PDB at its limit, a budget of 0, do-not-disrupt...) waits for
    the world to change, which the next scheduled invocation (every minute) or a trigger notices.
    """
    if report.acted or report.pending is not None or report.dropped or service.staged:
        return report.now + interval_s
    waits = [p.retry_at for p in report.plan.passed_over if p.retry_at is not None]
    if not waits:
        return None
    return max(min(waits), report.now + interval_s)


def run_invocation(
    service: DisruptionService,
    *,
    remaining_s: Callable[[], float],
    wait: Callable[[float], None],
    margin_s: float = 15.0,
    interval_s: float = PASS_INTERVAL_S,
    on_pass: Callable[[PassReport], None] | None = None,
    owner: str = "",
    reload: Callable[[], DisruptionService | None] | None = None,
) -> PlannerInvocation:
    """Pass, then pass again when `next_pass_at` asks and the wait ends `margin_s` before the deadline.

    The invocation stops as soon as a pass leaves nothing that time alone could change ("quiet"), so a quiet
    cluster costs one pass a minute, not a minute of Lambda time. A consolidation awaiting re-validation or
    an emptiness wait keeps the invocation (and the pending decision, in memory) alive. With a lease port
    and an `owner`, every pass first takes or renews the `planner` lease; while another invocation holds it
    this one stops ("lease-held") without deciding anything, and the lease is released at the end.
    `reload` gives the planner on a changed config before every pass after the first (None: unchanged).
    """
    clock = service.ports.clock
    lease = service.ports.lease if owner else None
    passes, longest = 0, 0.0
    started: list[str] = []
    last: PassReport | None = None
    stopped: Stopped = "deadline"
    unfinished = ""
    try:
        while True:  # at least one pass, then as many as are due and fit
            if lease is not None and not lease.acquire(LEASE_NAME, owner, clock.now(), LEASE_TTL_S):
                stopped = "lease-held"
                break
            if passes and reload is not None:
                service = reload() or service
            began = clock.now()
            try:
                last = service.run_pass()
            except ClusterUnavailableError as error:
                if not error.out_of_time:
                    raise
                stopped, unfinished = "out-of-time", str(error)  # the pass did not finish: end cleanly
                break
            longest = max(longest, clock.now() - began)
            passes += 1
            started.extend(r.execution_name for a in last.acted for r in a.executions if r.started)
            if on_pass is not None:
                on_pass(last)
            due = next_pass_at(service, last, interval_s)
            if due is None:
                stopped = "quiet"
                break
            pause = max(due - clock.now(), 0.0)
            if remaining_s() <= margin_s + longest + pause:
                break
            wait(pause)
    finally:
        if lease is not None:
            lease.release(LEASE_NAME, owner)
    pending = last.pending.node_names if last is not None and last.pending is not None else ()
    return InvocationReport(passes, PlannerTotals(tuple(started), pending), stopped, unfinished)
