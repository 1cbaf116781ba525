"""The planner Lambda's passes on the virtual clock, as deployed (see `sim.runner` for the whole run).

Rules:
- A pass, then another when `services.disruption.next_pass_at` asks for one (10 s after an action, a pending
  re-validation, or the end of a `consolidateAfter` wait) before the invocation's deadline; otherwise the
  invocation ends and the next pass is at the next minute's schedule, or at once when the admission webhook
  reports a bound pod deleted (`PlannerCadence.trigger`).
- Scheduled passes that could not decide anything new are skipped: when every node was passed over for a
  reason only a change of the world can lift (no cheaper option, a PDB at its limit, do-not-disrupt=true...),
  the next pass is at the first schedule after the next instant time alone could change the answer (a node's
  expiry, a budget window opening or closing, the service forgetting a start it remembers) or after the world
  changes (any pod, node or PDB change, a launch, a termination, a step).
- A pass that raises fails its invocation, as a Lambda does; the schedule starts the next one.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from longshore.core import cron
from longshore.core.reservations import drain_deadline
from longshore.services.disruption import (
    PASS_INTERVAL_S,
    REPLACEMENT_TIMEOUT_S,
    STARTED_TTL_S,
    PassReport,
    event_reason_for,
    next_pass_at,
)
from longshore_sim.kubeapi.meta import metadata
from longshore_sim.world import LAMBDA_TIMEOUT_S

if TYPE_CHECKING:
    from longshore_sim.runner import ScenarioRunner

SCHEDULE_S = 60.0  # EventBridge starts the provisioner and the planner every minute
PLANNER_MARGIN_S = 16.0  # handlers.planner.DEADLINE_MARGIN_S plus about one pass
TICK_EPS = 1e-6  # "strictly after" on the schedule grid
AMI_REFRESH_S = 300.0  # handlers.planner.IMAGE_REFRESH_S: how long the planner may keep old AMIs
_SECONDS_LEFT = re.compile(r"\((\d+)s left\)")
# Passed-over reasons that only a change of the world can lift.
_STABLE_MARKERS = (
    "allows no disruption now",
    "=true",
    "covered by more than one PDB",
    "already being disrupted",
    "no budget limits",
    "would have nowhere to go",
    "nominated for pending pods",
)


class PlannerCadence:
    """The planner Lambda's passes on the virtual clock (see the module docstring for the skipping rule)."""

    def __init__(self, runner: ScenarioRunner) -> None:
        self.runner = runner
        self.world = runner.world
        self.origin = runner.start
        self.passes = 0
        self.skipped_until: list[tuple[float, float]] = []
        self.decisions: dict[str, int] = {}
        self.abandoned = 0
        self.dropped = 0
        self.failed = 0
        self._timer: Any = None
        self._next: float | None = None
        self._skipping = False
        self._fingerprint: object = None
        self._ami_changed_at: float | None = None
        self._invocation_deadline: float | None = None
        self._invocation_running = False
        self._fresh_invocation = True
        self.triggered = 0

    # -- scheduling -----------------------------------------------------------------------------------------
    def _slot(self, at: float) -> float:
        """The first pass instant of the 10 s grid at or after `at`."""
        return self.origin + math.ceil((at - self.origin) / PASS_INTERVAL_S - 1e-9) * PASS_INTERVAL_S

    def _tick(self, at: float) -> float:
        """The first scheduled invocation (EventBridge, every minute) at or after `at`."""
        return scheduled_at_or_after(self.origin, at)

    def schedule(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._next = at
        self._timer = self.world.clock.call_at(at, self._pass)

    def poke(self) -> None:
        """Something changed while the planner was idle: the next scheduled invocation (within a minute)
        notices it. A change that comes with a trigger (a pod deleted) starts a pass at once: `trigger()`."""
        if not self._skipping:
            return
        self._skipping = False
        tick = self._tick(self.world.clock.now())
        if self._next is None or self._next > tick:
            self.schedule(tick)

    def trigger(self, reason: str) -> None:
        """The admission webhook's trigger (a pod was deleted): an invocation starts now, unless one is
        already running (its loop sees the change at its next pass)."""
        if self._invocation_running:
            return
        self.triggered += 1
        self._skipping = False
        self._fresh_invocation = True
        self.schedule(self.world.clock.now())

    def maybe_changed(self) -> None:
        if self._skipping and self.fingerprint() != self._fingerprint:
            self.poke()

    def ami_changed(self) -> None:
        self._ami_changed_at = self.world.clock.now()

    def fingerprint(self) -> object:
        store = self.world.cluster.store
        return hash(
            frozenset(
                (plural, str(metadata(o).get("uid")), str(metadata(o).get("resourceVersion")))
                for plural in ("nodes", "pods", "poddisruptionbudgets")
                for o in store.view(plural)
            )
        )

    # -- one pass -------------------------------------------------------------------------------------------
    def _pass(self) -> None:
        """One pass of the planner Lambda, then when the next one is: within the invocation when
        `services.disruption.next_pass_at` asks for one before the invocation's deadline; otherwise at the
        next scheduled invocation, skipping those that would find the world unchanged (`_wake`)."""
        self._timer = None
        self._next = None
        now = self.world.clock.now()
        fresh = False
        if self._fresh_invocation or self._invocation_deadline is None or now >= self._invocation_deadline:
            self._invocation_deadline = now + LAMBDA_TIMEOUT_S - PLANNER_MARGIN_S
            self._fresh_invocation, fresh = False, True
        self._invocation_running = True
        try:
            # every pass takes the container's planner, rebuilt first if the cluster config changed
            service = self.world.planner_invocation() if fresh else self.world.planner_pass()
            if fresh:  # the handler's Kubernetes call budget: the Lambda's whole timeout from now
                self.world.planners.ends_in(LAMBDA_TIMEOUT_S)
            report = service.run_pass()
        except Exception as error:  # the invocation fails, as a Lambda does; the schedule starts the next
            self.failed += 1
            self.runner.obs.notes.append(f"t={self.runner.elapsed():.1f}s: a planner pass failed ({error})")
            self._invocation_running, self._fresh_invocation = False, True
            self.schedule(self._tick(self.world.clock.now()))
            return
        self.passes += 1
        for acted in report.acted:
            if acted.outcome == "abandoned":
                self.abandoned += 1
            else:
                reason = acted.decision.reason
                self.decisions[reason] = self.decisions.get(reason, 0) + 1
        self.dropped += len(report.dropped)
        now = self.world.clock.now()
        due = next_pass_at(self.world.planner, report, PASS_INTERVAL_S)
        if due is not None:
            self._skipping = False
            if due > self._invocation_deadline:
                # The wait outlasts this invocation. Scheduled invocations start every minute and each can
                # wait ~100 s, so one of them passes exactly at `due`.
                self._invocation_running = False
                self._fresh_invocation = True
            self.schedule(max(due, now))
            return
        self._invocation_running = False  # quiet: the invocation ends
        wake = self._wake(report, now)
        if wake is None:
            self._skipping = False
            self.schedule(self._tick(now + TICK_EPS))
            return
        self._skipping = True
        self._fingerprint = self.fingerprint()
        at = self._tick(min(max(wake, now + TICK_EPS), self.runner.end + SCHEDULE_S))
        self.skipped_until.append((now, at))
        self.schedule(at)

    def _wake(self, report: PassReport, now: float) -> float | None:
        """When the next pass could decide differently if nothing changes; None: in 10 s (no skipping)."""
        service = self.world.planner
        if report.acted or report.pending is not None or report.dropped or service.staged:
            return None
        if self.world.sfn.running():
            return None
        if self._ami_changed_at is not None and now - self._ami_changed_at <= AMI_REFRESH_S + PASS_INTERVAL_S:
            return None
        wake = math.inf
        # What the service remembers expires by itself: its started disruptions and its replacements (nominated).
        for started in service.started.values():
            wake = min(wake, started.at + STARTED_TTL_S + 1)
        for launched_at in service.replacement_claims.values():
            wake = min(wake, launched_at + STARTED_TTL_S + REPLACEMENT_TIMEOUT_S + 1)
        for skipped in report.plan.passed_over:
            reason = skipped.reason
            left = _SECONDS_LEFT.search(reason)
            if left is not None:
                wake = min(wake, now + int(left.group(1)) + 1)
            elif "(schedule " in reason:
                wake = min(wake, self._next_window_change(now))
            elif event_reason_for(skipped) == "Unconsolidatable" or any(m in reason for m in _STABLE_MARKERS):
                continue
            else:
                return None  # "not yet" reasons, or any this rule does not know: keep the cadence
        config = self.runner.config
        for claim in self.world.store.list():
            try:
                after = config.pool(claim.nodepool).expiry.after_seconds
            except KeyError:
                continue
            if after is not None:
                expires = (claim.launched_at or claim.created_at or now) + after
                if expires > now:
                    wake = min(wake, expires)
            block_drain = drain_deadline(claim.reservation_type, claim.reservation_end)  # a Capacity Block
            if block_drain is not None and block_drain > now:
                wake = min(wake, block_drain)
        return wake if math.isfinite(wake) else self.runner.end + PASS_INTERVAL_S

    def _next_window_change(self, now: float) -> float:
        """The next minute at which a scheduled budget window of any pool opens or closes (within 8 days)."""
        best = now + 8 * 86400
        for pool in self.runner.config.node_pools:
            for budget in pool.disruption.budgets:
                if budget.schedule is None:
                    continue
                try:
                    schedule = cron.parse(budget.schedule)
                except cron.CronError:
                    continue
                duration = budget.duration_seconds or 0
                minute = (int(now) // 60 + 1) * 60
                while minute < best:
                    if schedule.matches(minute):
                        best = min(best, minute)
                        break
                    minute += 60
                if schedule.window_active(now, duration):
                    start = int(now) // 60 * 60
                    while start > now - duration and not schedule.matches(start):
                        start -= 60
                    best = min(best, start + duration)
        return best


def scheduled_at_or_after(origin: float, at: float) -> float:
    """The first instant of the every-minute schedule that started at `origin` at or after `at`."""
    return origin + math.ceil((at - origin) / SCHEDULE_S - 1e-9) * SCHEDULE_S
