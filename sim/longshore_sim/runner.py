"""The scenario runner: replay a scenario on the simulated world, with the provisioner run the way the Lambda runs.

Theory of operation. A scenario (`sim.scenario`) names a cluster config, the workloads to create, and timed
steps. The runner builds a `SimulatedWorld` (moto + simulated cluster + production adapters), creates the
workloads, registers every step as a timer on the virtual clock, and then plays the *provisioner Lambda*:

- Invocations follow the deployed shape: one starts at every minute's schedule and at every trigger (the
  admission webhook, `handlers.trigger`, run in process on the emulator's pod CREATE; the interruption
  handler), each runs `services.provisioner.run_invocation` with a deadline of `lambda_timeout_s` (120 s,
  the stack's timeout) and ends after its first quiet pass or `deadline_margin_s` before the deadline. An
  invocation that crashes (an injected `SimulatedCrash`) dies on the spot, leaving its lease to expire,
  exactly like a killed Lambda, and the next one starts `retry_gap_s` later.
- Between passes the invocation waits `poll_s` (1 s) of virtual time, during which the cluster's
  controllers, scheduler and kubelets run. After a quiet invocation, when the world itself is quiet (no
  unbound pods, every claim initialized, no instance without a claim), every scheduled invocation before its
  next change (a step, a boot, a grace period) would find nothing, so the runner skips to the first one
  after it. That is what makes a 31-day scenario take seconds.

The disruption side runs on the same clock, as deployed (see `sim.world` for the wiring):

- *The planner* (`services.disruption.DisruptionService`), kept between passes like a warm container: a
  pass, then another when `services.disruption.next_pass_at` asks for one (10 s after an action, a pending
  re-validation, or the end of a `consolidateAfter` wait), as `run_invocation` does; otherwise the
  invocation ends and the next pass is at the next minute's schedule, or at once when the admission webhook
  reports a bound pod deleted (`PlannerCadence.trigger`). Scheduled passes that could not decide anything new
  are skipped: when every node was passed over for a reason only a change of the world can lift (no cheaper
  option, a PDB at its limit, do-not-disrupt=true...), the next pass is at the first schedule after the
  next instant time alone could change the answer (a node's expiry, a budget window opening or closing, the
  service forgetting a start it remembers) or after the world changes (any pod, node or PDB change, a
  launch, a termination, a step): `PlannerCadence`.
- *The workflows*: `StepFunctionsSimulator` executions wake on clock timers; their steps run in process.
- *The interruption queue*: the runner polls it every second of virtual time while it holds messages (an
  idle queue is not polled: messages only arrive through scenario steps, which schedule the next poll), and
  the handler's provisioner trigger makes the provisioner start a pass at once.
- *EC2 reclaiming spot capacity*: an `event` step with a spot warning terminates each warned instance
  `reclaimAfter` (120 s) after the warning if it is still running, through a client Longshore does not use.

Observations, all from outside the system under test: every CreateFleet request and launch (botocore hooks on
the launcher's client), every termination, the pods' first Unschedulable and first Running instants (scanned
after every reconcile of the simulated cluster), samples of nodes, pending and running pods and the cost per
hour of the live instances, and the `sim.checker.RuleChecker`'s violations. At the end, the LP lower bounds
(fluid and configuration) of the pods then running (`sim.lp_bound`) are computed, `sim.report.summarise`
builds the summary, and the scenario's `expect` block is evaluated into `checks`.
"""

from __future__ import annotations

import functools
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path
from typing import Any

from longshore.config import bundle_cluster, load_cluster
from longshore.core import cron
from longshore.core.claims import instance_id_of
from longshore.core.commands import RotationRequest
from longshore.core.model import ClusterConfig
from longshore.core.pod_manifest import pod_from_manifest
from longshore.core.reservations import drain_deadline
from longshore.services.disruption import (
    PASS_INTERVAL_S,
    REPLACEMENT_TIMEOUT_S,
    STARTED_TTL_S,
    PassReport,
    event_reason_for,
    next_pass_at,
)
from longshore.services.provisioner import LEASE_NAME, PassResult, ProvisionerSettings, run_invocation
from longshore.services.snapshot import daemonset_pods, unschedulable_condition
from longshore_sim.aws import SimulatedCrash
from longshore_sim.checker import RuleChecker, is_daemon_pod, is_running, node_of, pod_key
from longshore_sim.cluster.health import set_condition
from longshore_sim.config_change import changed_text, parse
from longshore_sim.kubeapi.meta import labels_of, metadata
from longshore_sim.lp_bound import BoundReport, lower_bounds
from longshore_sim.report import Observations, Sample, plot, summarise, write_summary
from longshore_sim.scenario import ConfigChange, Scenario, ScenarioError, Step
from longshore_sim.world import LAMBDA_TIMEOUT_S, SimulatedWorld, launched_instance_ids

SCHEDULE_S = 60.0  # EventBridge starts the provisioner and the planner every minute
PLANNER_MARGIN_S = 16.0
_TICK_EPS = (
    1e-6  # "strictly after" on the schedule grid  # handlers.planner.DEADLINE_MARGIN_S plus about one pass
)
AMI_REFRESH_S = 300.0  # handlers.planner.IMAGE_REFRESH_S: how long the planner may keep old AMIs
SPOT_WARNING = "EC2 Spot Instance Interruption Warning"
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$")
_RFC1123 = re.compile(r"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$")
_INSTANCE_ID = re.compile(r"\bi-[0-9a-f]{8}(?:[0-9a-f]{9})?\b")
_SECONDS_LEFT = re.compile(r"\((\d+)s left\)")
# Passed-over reasons that only a change of the world can lift (see PlannerCadence).
_STABLE_MARKERS = (
    "allows no disruption now",
    "=true",
    "covered by more than one PDB",
    "already being disrupted",
    "no budget limits",
    "would have nowhere to go",
    "nominated for pending pods",
)


@dataclass(frozen=True, slots=True)
class Progress:
    """The live progress line's figures."""

    virtual_s: float
    duration_s: float
    nodes: int
    pending: int
    running: int
    cost_per_hour: float
    fleet_requests: int
    invocations: int
    wall_s: float


@dataclass(frozen=True, slots=True)
class SimulationResult:
    summary: dict[str, Any]
    samples: list[Sample]


@dataclass
class _Counters:
    invocations: int = 0
    passes: int = 0
    crashes: int = 0
    launch_failures: int = 0
    failed_invocations: int = 0
    quiet_jumps: int = 0
    live_prices: dict[str, float] = field(default_factory=dict)
    launched_types: dict[str, int] = field(default_factory=dict)  # "type/capacity type" -> instances
    queue_polls: int = 0
    messages: int = 0


@dataclass
class Warned:
    """A node named by a spot interruption warning, and what became of it (times from the scenario's start)."""

    node: str
    instance_id: str
    warned_at: float
    reclaim_at: float
    pods_at_warning: int
    owners: list[str]  # "namespace/Kind/name" of the controllers of its pods at the warning
    evicted_and_running: bool | None = None
    reclaimed_running: bool = False


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
            self.runner.obs.notes.append(f"t={self.runner._t():.1f}s: a planner pass failed ({error})")
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
            self.schedule(self._tick(now + _TICK_EPS))
            return
        self._skipping = True
        self._fingerprint = self.fingerprint()
        at = self._tick(min(max(wake, now + _TICK_EPS), self.runner.end + SCHEDULE_S))
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


class ScenarioRunner:
    """Runs one scenario (see the module docstring); `run()` returns the summary and the samples."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        progress: Callable[[Progress], None] | None = None,
        lambda_timeout_s: float = LAMBDA_TIMEOUT_S,
        retry_gap_s: float = 1.0,
        settings: ProvisionerSettings | None = None,
        lenient_steps: bool = False,
        cost_bound: bool = True,
        karpenter_objects: bool = False,
    ) -> None:
        for step in scenario.steps:
            if step.event is not None and not scenario.resolve(step.event.file).is_file():
                raise ScenarioError(
                    f"{scenario.source}: steps (at {step.at:g}s): event: file: no such file "
                    f"{step.event.file!r} ({scenario.resolve(step.event.file)})"
                )
        self.scenario = scenario
        self.lenient_steps = lenient_steps  # a step with no node to act on is noted and skipped (chaos runs)
        self.cost_bound = (
            cost_bound  # solve the LP lower bounds for the summary (chaos, judging rules only, skips)
        )
        self.karpenter_objects = (
            karpenter_objects  # NodeClaims after every invocation (`longshore_sim.karpenter`)
        )
        self._objects: Any = None
        self.progress = progress
        self.lambda_timeout_s = lambda_timeout_s
        self.retry_gap_s = retry_gap_s
        self.settings = settings
        self.obs = Observations()
        self.counters = _Counters()
        self._crash_before_launch = 0
        self._trigger_pending = False
        self._poll_at: float | None = None
        self.warnings: list[Warned] = []
        self.rotations: list[str] = []

    # -- the run ----------------------------------------------------------------------------------------------

    def load_config(self) -> ClusterConfig:
        return load_cluster(
            self.scenario.config_paths(), region=self.scenario.region, cluster_name=self.scenario.cluster_name
        )

    def config_text(self) -> str:
        """The scenario's cluster as the SSM parameter holds it (`bundle_cluster`), read by every function."""
        return bundle_cluster(
            self.scenario.config_paths(), region=self.scenario.region, cluster_name=self.scenario.cluster_name
        )

    def run(self) -> SimulationResult:
        wall_started = time.perf_counter()
        config = self.load_config()
        self.config = config
        self._first_config_text = self.config_text()
        world = SimulatedWorld(
            config, boot_delay=self.scenario.boot_delay, config_text=self._first_config_text
        )
        with world:
            self.world = world
            self._wall_started = wall_started
            self.start = world.clock.now()
            self.end = self.start + self.scenario.duration
            self.checker = RuleChecker(world.cluster.store, config, origin=self.start)
            self.planner = PlannerCadence(self)
            world.launch_observers.append(self._on_launch)
            world.terminate_observers.append(self._on_terminate)
            world.step_observers.append(self._on_step)
            world.provisioner_triggers.append(self._on_trigger)
            world.planner_triggers.append(self.planner.trigger)
            world.ec2.meta.events.register_first(
                "before-parameter-build.ec2.CreateFleet",
                self._maybe_crash_before_launch,
                unique_id="longshore-sim-crash",
            )
            world.cluster.observe(lambda _sample: self._observe())
            for group in self.scenario.placement_groups:
                world.placement_groups.define(group.name, group.strategy, group.partition_count)
            for spec in self.scenario.capacity_reservations:
                world.reservations.add(
                    spec.instance_type,
                    spec.zone,
                    spec.count,
                    id=spec.id,
                    reservation_type=spec.type,
                    instance_match_criteria=spec.instance_match_criteria,
                    tags=dict(spec.tags),
                    end=None if spec.ends_after is None else self.start + spec.ends_after,
                    interruptible=spec.interruptible,
                )
            for relative in self.scenario.workloads:
                path = self.scenario.resolve(relative)
                if not path.is_file():
                    raise ScenarioError(
                        f"{self.scenario.source}: workloads: no such file {relative!r} ({path})"
                    )
                world.apply_file(path)
            for step in self.scenario.ordered_steps():
                world.clock.call_at(self.start + step.at, functools.partial(self._apply_step, step))
            self.planner.schedule(self.start)
            if self.karpenter_objects:
                from longshore_sim.karpenter import KarpenterObjects

                self._objects = KarpenterObjects(world)
            self._drive()
            world.advance_to(self.end)
            self._observe()
            summary = self._summary(time.perf_counter() - wall_started)
        return SimulationResult(summary, list(self.obs.samples))

    def _drive(self) -> None:
        """Play the provisioner Lambda's invocations until the end, as deployed: one starts at every minute's
        schedule and at every trigger (the admission webhook on pod creation, the interruption handler), and
        runs passes until one is quiet or its deadline comes. Scheduled invocations that would find the world
        unchanged are skipped: that is what makes a 31-day scenario take seconds."""
        world = self.world
        clock = world.clock
        settings = self.settings or ProvisionerSettings.from_config(self.config)
        while clock.now() < self.end:
            started = clock.now()
            deadline = min(started + self.lambda_timeout_s, self.end + settings.deadline_margin_s)
            self.counters.invocations += 1
            self._trigger_pending = False
            owner = f"sim-invocation-{self.counters.invocations}"
            service = world.service(owner, settings)
            world.provisioners.ends_in(deadline - clock.now())  # the handler's Kubernetes call budget
            current = [service]  # the service of the last pass (a changed config rebuilds it)
            reload = world.reloader(owner, settings)

            def reload_and_track(previous: Any, reload: Any = reload, current: Any = current) -> Any:
                fresh = reload(previous)
                if fresh is not None:
                    current[0] = fresh
                return fresh

            try:
                report = run_invocation(
                    service,
                    remaining_s=functools.partial(_remaining, deadline, clock.now),
                    idle_wait=self._idle_wait,
                    on_pass=self._on_pass,
                    reload=reload_and_track,
                )
            except Exception as error:
                if not isinstance(error, SimulatedCrash):
                    # An invocation that fails (the API server kept answering 5xx...) is one Lambda records as
                    # an error; the schedule or the next trigger starts another.
                    self.counters.failed_invocations += 1
                    self.obs.notes.append(f"t={self._t():.1f}s: a provisioner invocation failed ({error})")
                    self._sleep_unless_triggered(clock.now() + self.retry_gap_s)
                    continue
                # A killed Lambda runs no cleanup: put back the lease `run_invocation`'s `finally` released,
                # as the dead run left it (held until its last renewal plus the TTL).
                last = current[0]
                if last.lease_taken_at is not None:
                    world.lease.acquire(LEASE_NAME, last.owner, last.lease_taken_at, settings.lease_ttl_s)
                self.counters.crashes += 1
                self.obs.notes.append(f"t={self._t():.1f}s: the provisioner invocation was killed ({error})")
                world.cluster.sync_ec2()
                self._sleep_unless_triggered(clock.now() + self.retry_gap_s)  # Lambda's async retry
                continue
            if self._objects is not None:
                self._objects.publish()
            if report.stopped != "quiet":
                # The schedule's events queued behind the reserved concurrency of 1 start the next one.
                self._sleep_unless_triggered(clock.now() + self.retry_gap_s)
                continue
            self.counters.quiet_jumps += 1
            # Quiet: the next scheduled invocation, or a trigger. When the world itself is quiet, every
            # scheduled invocation before its next change would find nothing: skip to the first after it.
            after = self._next_event() if self._quiet() else clock.now()
            self._sleep_unless_triggered(min(self._tick(after), self.end))

    def _tick(self, at: float) -> float:
        """The first scheduled invocation (EventBridge, every minute) strictly after `at`."""
        return scheduled_at_or_after(self.start, at + _TICK_EPS)

    # -- waiting and quiet --------------------------------------------------------------------------------------

    def _idle_wait(self, seconds: float) -> None:
        if self._trigger_pending:
            self._trigger_pending = False
            return  # a trigger asked for a pass now
        self._sleep_unless_triggered(self.world.clock.now() + seconds)

    def _sleep_unless_triggered(self, target: float) -> None:
        """Let time pass until `target`, or until the provisioner is triggered (then at once)."""
        world = self.world
        clock = world.clock
        while True:
            now = clock.now()
            due = clock.next_due()
            if due is not None and due <= now:
                clock.advance_to(now)  # timers set for this very instant
                world.cluster.run_until(now)
                if self._trigger_pending:
                    break
                continue
            if now >= target or self._trigger_pending:
                break
            later = [d for d in (due, world.cluster.store.next_deadline()) if d is not None and d > now]
            world.cluster.run_until(min([target, *later]))
        self._trigger_pending = False

    def _on_trigger(self, reason: str) -> None:
        self._trigger_pending = True
        if not reason.startswith("admission: "):  # one per pod: counted in the summary instead
            self.obs.notes.append(f"t={self._t():.1f}s: provisioner triggered ({reason})")

    def _quiet(self) -> bool:
        self.world.cluster.reconcile()  # controllers first: a new Deployment has no pods until they run
        if self._objects is not None and self._objects.deletion_pending():
            return False
        for pod in self.world.cluster.store.view("pods"):
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                continue
            if not (pod.get("spec") or {}).get("nodeName") or phase == "Pending":
                return False
        claims = self.world.store.list()
        if any(c.state != "initialized" for c in claims):
            return False
        owned = {c.instance_id for c in claims if c.instance_id}
        return all(i in owned for i in self.world.live_instance_ids())

    def _next_event(self) -> float:
        now = self.world.clock.now()
        candidates = [self.end]
        for due in (self.world.clock.next_due(), self.world.cluster.store.next_deadline()):
            if due is not None:
                candidates.append(max(due, now))
        return min(candidates)

    # -- steps ------------------------------------------------------------------------------------------------

    def _apply_step(self, step: Step) -> None:
        try:
            self._apply_step_now(step)
        except ScenarioError as error:
            if not self.lenient_steps:
                raise
            self.obs.notes.append(f"t={step.at:g}s: {step.action} skipped: {error}")

    def _apply_step_now(self, step: Step) -> None:
        world = self.world
        note = f"t={step.at:g}s: {step.note or step.action}"
        if step.scale is not None:
            scale = step.scale
            current = world.cluster.store.try_get("deployments", scale.deployment, scale.namespace)
            if current is None:
                raise ScenarioError(
                    f"{self.scenario.source}: steps (at {step.at:g}s): scale: no Deployment "
                    f"{scale.namespace}/{scale.deployment}"
                )
            if scale.replicas < int((current.get("spec") or {}).get("replicas") or 0):
                self.checker.expect_removals(scale.namespace, scale.deployment)
            world.cluster.scale(scale.deployment, scale.replicas, scale.namespace)
            note = f"t={step.at:g}s: scale {scale.namespace}/{scale.deployment} to {scale.replicas}"
        elif step.delete is not None:
            self.checker.expect_removals(step.delete.namespace, step.delete.deployment)
            world.cluster.store.delete("deployments", step.delete.deployment, step.delete.namespace)
            note = f"t={step.at:g}s: delete {step.delete.namespace}/{step.delete.deployment}"
        elif step.apply is not None:
            created: list[str] = []
            for relative in step.apply.files:
                created += world.apply_file(self.scenario.resolve(relative))
            note = f"t={step.at:g}s: apply {', '.join(created)}"
        elif step.unavailable is not None:
            note = self._make_unavailable(step)
        elif step.reservation is not None:
            world.reservations.expire(
                step.reservation.id, "expired" if step.reservation.action == "expire" else "cancelled"
            )
            note = f"t={step.at:g}s: capacity reservation {step.reservation.id} " + (
                "expired" if step.reservation.action == "expire" else "cancelled"
            )
        elif step.crash is not None:
            if step.crash.point == "workflow-step-after-work":
                world.step_crashes += step.crash.times
                note = f"t={step.at:g}s: the next {step.crash.times} workflow step(s) crash after their work"
            else:
                if step.crash.point == "after-launch-before-record":
                    world.fleet.crash_after_create_fleet += 1
                else:
                    self._crash_before_launch += 1
                note = f"t={step.at:g}s: the next launch crashes the provisioner ({step.crash.point})"
        elif step.event is not None:
            note = self._deliver_event(step)
        elif step.rotate is not None:
            note = self._start_rotation(step)
        elif step.delete_node is not None:
            names = [
                str(metadata(n).get("name"))
                for n in self._choose_nodes(step.delete_node.nodes, step.delete_node.selector, "deleteNode")
            ]
            for name in names:
                world.cluster.store.delete("nodes", name)
            note = f"t={step.at:g}s: kubectl delete node {' '.join(names)}"
        elif step.node_health is not None:
            health = step.node_health
            names = [
                str(metadata(n).get("name"))
                for n in self._choose_nodes(health.nodes, health.selector, "nodeHealth")
            ]
            for name in names:
                set_condition(world.cluster.store, name, health.condition, health.status, world.clock.now())
            note = f"t={step.at:g}s: {health.condition}={health.status} on {' '.join(names)}"
        elif step.api_faults is not None:
            spec = step.api_faults
            fault = world.cluster.emulator.faults.add(
                resource=spec.resource, verb=spec.verb, status=spec.status
            )
            world.clock.call_at(
                world.clock.now() + spec.duration, lambda: world.cluster.emulator.faults.remove(fault)
            )
            note = f"t={step.at:g}s: the Kubernetes API answers {spec.status} for {spec.duration:g}s"
        elif step.api_timeouts is not None:
            note = self._time_out_api(step)
        elif step.dynamo_throttle is not None:
            throttle = step.dynamo_throttle
            for operation in throttle.operations:
                world.dynamo_throttle.throttle(operation, throttle.times)
            note = (
                f"t={step.at:g}s: DynamoDB throttles the next {throttle.times} call(s) of "
                f"{', '.join(throttle.operations)}"
            )
        elif step.lose_claim_table is not None:
            note = f"t={step.at:g}s: the claim table lost all {world.lose_claim_table()} of its items"
        elif step.config is not None:
            note = f"t={step.at:g}s: the cluster config changed: {self._change_config(step.config)}"
        elif step.cold_start is not None:
            world.cold_start_planner()
            note = f"t={step.at:g}s: the planner's container is replaced (cold start)"
        elif step.ami is not None:
            published = world.publish_amis(step.ami.release)
            self.planner.ami_changed()
            note = f"t={step.at:g}s: new AMI release {step.ami.release} ({len(published)} SSM parameters updated)"
        self.obs.notes.append(note)
        self.planner.poke()

    def _time_out_api(self, step: Step) -> str:
        spec = step.api_timeouts
        assert spec is not None
        world = self.world
        faults = world.cluster.emulator.faults
        world.time_out_kube_api()
        fault = faults.add(resource=spec.resource, verb=spec.verb, timeout=True, served=spec.served)
        world.clock.call_at(world.clock.now() + spec.duration, lambda: faults.remove(fault))
        served = ", served but unanswered" if spec.served else ""
        return f"t={step.at:g}s: Kubernetes API requests time out{served} for {spec.duration:g}s"

    def _change_config(self, change: ConfigChange) -> str:
        """Publish the changed config to the SSM parameter; the checker judges later decisions against it."""
        world = self.world
        text, what = changed_text(
            world.config_text or "", self._first_config_text, change, self.scenario.resolve, self.config
        )
        self.config = parse(text, self.config)
        world.publish_config(text)
        self.checker.config_published(world.clock.now(), self.config)
        return what

    # -- interruption events, EC2 reclaims, rotations ---------------------------------------------------------

    def _choose_nodes(self, chosen: int | list[str], selector: Mapping[str, str], where: str) -> list[JSON]:
        """Nodes for a step: the named ones, or the `chosen` oldest (then by name) matching `selector`."""
        nodes = [
            n
            for n in self.world.cluster.store.view("nodes")
            if all(labels_of(n).get(k) == v for k, v in selector.items())
            and instance_id_of(str((n.get("spec") or {}).get("providerID") or ""))
        ]
        if isinstance(chosen, list):
            by_name = {str(metadata(n).get("name")): n for n in nodes}
            missing = [name for name in chosen if name not in by_name]
            if missing:
                raise ScenarioError(f"{self.scenario.source}: {where}: nodes: no such node {missing[0]!r}")
            return [by_name[name] for name in chosen]
        ordered = sorted(
            nodes, key=lambda n: (str(metadata(n).get("creationTimestamp")), str(metadata(n).get("name")))
        )
        if len(ordered) < chosen:
            raise ScenarioError(
                f"{self.scenario.source}: {where}: nodes: {chosen} asked for, only {len(ordered)} node(s) match"
            )
        return ordered[:chosen]

    def _deliver_event(self, step: Step) -> str:
        spec = step.event
        assert spec is not None
        world = self.world
        where = f"steps (at {step.at:g}s): event"
        path = self.scenario.resolve(spec.file)
        try:
            template = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ScenarioError(
                f"{self.scenario.source}: {where}: file: cannot read {spec.file!r}: {error}"
            ) from error
        nodes = self._choose_nodes(spec.nodes, spec.selector, where)
        instance_ids = [instance_id_of(str((n.get("spec") or {}).get("providerID"))) or "" for n in nodes]
        # One event per group of as many nodes as the file names instances (a spot warning names one).
        per_event = max(1, len(instance_ids_in(template)))
        groups = [instance_ids[i : i + per_event] for i in range(0, len(instance_ids), per_event)] or [[]]
        events = [retime(substitute_instances(template, group), world.clock.now()) for group in groups]
        for event in events:
            for _ in range(spec.copies):
                world.send_event(event)
        self._schedule_poll()
        event = events[0]
        names = [str(metadata(n).get("name")) for n in nodes]
        if event.get("detail-type") == SPOT_WARNING:
            for name, instance_id in zip(names, instance_ids, strict=True):
                self._warn(name, instance_id, spec.reclaim_after)
        ids = (
            ", ".join(f"{n} ({i})" for n, i in zip(names, instance_ids, strict=True))
            or "the file's instances"
        )
        copies = f" x{spec.copies}" if spec.copies > 1 else ""
        return f"t={step.at:g}s: EventBridge delivers {event.get('detail-type')}{copies} for {ids}"

    def _warn(self, node: str, instance_id: str, reclaim_after: float) -> None:
        if any(w.instance_id == instance_id for w in self.warnings):
            return  # a repeated warning: the instance is still reclaimed when the first one said
        world = self.world
        now = world.clock.now()
        pods = [
            p
            for p in world.cluster.store.view("pods")
            if node_of(p) == node and not is_daemon_pod(p) and not metadata(p).get("deletionTimestamp")
        ]
        owners = sorted({_owner(p) for p in pods if _owner(p)})
        warned = Warned(
            node, instance_id, now - self.start, now + reclaim_after - self.start, len(pods), owners
        )
        self.warnings.append(warned)
        world.clock.call_at(now + reclaim_after, functools.partial(self._reclaim, warned))

    def _reclaim(self, warned: Warned) -> None:
        """EC2 takes the spot capacity back: terminate the instance if it still runs; judge the warned node."""
        world = self.world
        found = world.ec2_reader.describe_instances(InstanceIds=[warned.instance_id])["Reservations"]
        state = found[0]["Instances"][0]["State"]["Name"] if found else "terminated"
        now = world.clock.now()
        warned.evicted_and_running = self._evicted_and_running(warned)
        if state in ("pending", "running"):
            self.checker.note_termination(warned.node, warned.instance_id, now, "EC2 reclaim")
            world.ec2_reader.terminate_instances(InstanceIds=[warned.instance_id])
            world.cluster.sync_ec2()
            if self.counters.live_prices.pop(warned.instance_id, None) is not None:
                self.obs.nodes_terminated += 1
            warned.reclaimed_running = True
            self.obs.notes.append(
                f"t={self._t():g}s: EC2 reclaimed {warned.instance_id} (node {warned.node})"
            )
        self.planner.poke()

    def _evicted_and_running(self, warned: Warned) -> bool:
        """No evictable pod left on the node, and every controller that had pods there has all its replicas
        Running on other nodes."""
        store = self.world.cluster.store
        pods = store.view("pods")
        if any(
            node_of(p) == warned.node and not is_daemon_pod(p) and not metadata(p).get("deletionTimestamp")
            for p in pods
        ):
            return False
        for owner in warned.owners:
            namespace, kind, name = owner.split("/", 2)
            plural = {"ReplicaSet": "replicasets", "StatefulSet": "statefulsets"}.get(kind)
            controller = store.try_get(plural, name, namespace) if plural else None
            wanted = int(((controller or {}).get("spec") or {}).get("replicas") or 0)
            running = sum(
                1 for p in pods if _owner(p) == owner and is_running(p) and node_of(p) != warned.node
            )
            if running < wanted:
                return False
        return True

    def _schedule_poll(self, delay: float = 1.0) -> None:
        """The event source mapping polls within a second; while the queue holds messages, every second."""
        clock = self.world.clock
        at = self.start + math.floor(clock.now() - self.start) + delay
        if self._poll_at is not None and self._poll_at <= at:
            return
        self._poll_at = at
        clock.call_at(at, self._poll)

    def _poll(self) -> None:
        if self._poll_at is None or self.world.clock.now() < self._poll_at:
            return  # superseded by an earlier poll
        self._poll_at = None
        self.counters.queue_polls += 1
        self.counters.messages += self.world.poll_queue()
        if self.world.queue_depth() > 0:
            self._schedule_poll()
        self.planner.poke()

    def _start_rotation(self, step: Step) -> str:
        spec = step.rotate
        assert spec is not None
        world = self.world
        nodes = self._choose_nodes(spec.nodes, spec.selector, f"steps (at {step.at:g}s): rotate")
        request = RotationRequest(
            nodes=tuple(str(metadata(n).get("name")) for n in nodes),
            max_unavailable=spec.max_unavailable,
            surge=spec.surge,
            canary=spec.canary,
            drain_seconds=spec.drain_seconds,
            requested_at=float(int(world.clock.now())),
        )
        result = world.workflows.start_rotation(request)
        self.rotations.append(result.execution_name)
        return (
            f"t={step.at:g}s: rotation {result.execution_name} of {', '.join(request.nodes)} "
            f"(max unavailable {request.max_unavailable})"
        )

    def _make_unavailable(self, step: Step) -> str:
        spec = step.unavailable
        assert spec is not None
        world = self.world
        zones = spec.zones or list(world.zones)
        kinds = ("spot", "on-demand") if spec.capacity_type == "any" else (spec.capacity_type,)
        keys = [(t, z, c) for t in spec.instance_types for z in zones for c in kinds]
        for key in keys:
            world.fleet.make_unavailable(*key, code=spec.error_code)
        if spec.duration is not None:

            def restore() -> None:
                for key in keys:
                    world.fleet.make_available(*key)
                self.obs.notes.append(
                    f"t={self._t():g}s: capacity is back for {', '.join(spec.instance_types)}"
                )

            world.clock.call_later(spec.duration, restore)
        return (
            f"t={step.at:g}s: {spec.error_code} for {', '.join(spec.instance_types)} ({'/'.join(kinds)}) in "
            f"{', '.join(zones)}" + (f" for {spec.duration:g}s" if spec.duration is not None else "")
        )

    def _maybe_crash_before_launch(self, **_: Any) -> None:
        if self._crash_before_launch > 0:
            self._crash_before_launch -= 1
            raise SimulatedCrash("simulated crash before CreateFleet was sent")

    # -- observation --------------------------------------------------------------------------------------------

    def _t(self) -> float:
        return self.world.clock.now() - self.start

    def _on_pass(self, result: PassResult) -> None:
        self.counters.passes += 1
        self.counters.launch_failures += len(result.failed)
        if result.launches:
            self._observe()

    def _on_launch(self, parsed: dict[str, Any]) -> None:
        for instance_id in launched_instance_ids(parsed):
            instance = self.world.observed_instance(instance_id)
            tags = {t["Key"]: t["Value"] for t in instance.get("Tags") or []}
            claim = tags.get("karpenter.sh/nodeclaim")
            self.obs.nodes_launched += 1
            self.counters.live_prices[instance_id] = self.world.price_of_instance(instance)
            kind = f"{instance['InstanceType']}/{'spot' if instance.get('InstanceLifecycle') == 'spot' else 'on-demand'}"
            self.counters.launched_types[kind] = self.counters.launched_types.get(kind, 0) + 1
            same_claim = self.world.live_instance_ids("karpenter.sh/nodeclaim", claim) if claim else []
            self.checker.note_launch(claim, instance_id, same_claim)
        self.planner.poke()

    def _on_terminate(self, instance_ids: list[str]) -> None:
        now = self.world.clock.now()
        nodes = {
            instance_id_of(str((n.get("spec") or {}).get("providerID") or "")): str(metadata(n).get("name"))
            for n in self.world.cluster.store.view("nodes")
        }
        for instance_id in instance_ids:
            if self.counters.live_prices.pop(instance_id, None) is not None:
                self.obs.nodes_terminated += 1
                self.checker.note_termination(nodes.get(instance_id), instance_id, now, "by Longshore")
        self.planner.poke()

    def _on_step(self, step: str, state: dict[str, Any]) -> None:
        """Every workflow step's output (the execution history): when each disruption was decided, drain
        deadlines, and a look at the cluster."""
        if state.get("nodeName") and isinstance(state.get("requestedAt"), int | float):
            self.checker.note_decided(str(state["nodeName"]), float(state["requestedAt"]))
        if step == "taint" and state.get("nodeName"):
            deadline = state.get("deadline")
            self.checker.note_deadline(
                str(state["nodeName"]), float(deadline) if deadline is not None else None
            )
        self._observe()

    def _observe(self) -> None:
        now = self._t()
        pending = running = 0
        for pod in self.world.cluster.store.view("pods"):
            key = pod_key(pod)
            self.obs.pods_seen.add(key)
            if is_running(pod):
                running += 1
                self.obs.first_running.setdefault(key, now)
            elif not (pod.get("spec") or {}).get("nodeName") and not (pod.get("metadata") or {}).get(
                "deletionTimestamp"
            ):
                pending += 1
                if unschedulable_condition(pod):
                    self.obs.first_pending.setdefault(key, now)
        nodes = len(self.world.cluster.store.view("nodes"))
        cost = round(sum(self.counters.live_prices.values()), 6)
        sample = Sample(now, nodes, pending, running, cost)
        if self.obs.samples and self.obs.samples[-1].t == now:
            self.obs.samples[-1] = sample
        else:
            self.obs.samples.append(sample)
        self.checker.scan(self.world.clock.now())
        self.planner.maybe_changed()
        if self.progress is not None:
            self.progress(
                Progress(
                    now,
                    self.scenario.duration,
                    nodes,
                    pending,
                    running,
                    cost,
                    len(self.world.fleet_request_times),
                    self.counters.invocations,
                    time.perf_counter() - self._wall_started,
                )
            )

    # -- the summary ----------------------------------------------------------------------------------------------

    def _lp_bound(self) -> BoundReport | None:
        """Both LP lower bounds (fluid, configuration) of the pods running now; None when none runs."""
        store = self.world.cluster.store
        pods = [
            pod_from_manifest(p)
            for p in store.view("pods")
            if is_running(p)
            and not any(r.get("kind") == "DaemonSet" for r in (p["metadata"].get("ownerReferences") or []))
        ]
        if not pods:
            return None
        daemonsets, _ = daemonset_pods(store.view("daemonsets"))
        return lower_bounds(pods, self.config, self.world.catalog, daemonsets)

    def _summary(self, wall_seconds: float) -> dict[str, Any]:
        self.obs.fleet_requests = [t - self.start for t in self.world.fleet_request_times]
        self.obs.duplicate_launches = self.checker.duplicate_launches
        workflows = self._workflows()
        self.obs.disruptions_by_reason = dict(workflows.pop("disrupted_by_reason"))
        violations = self.checker.finish(self.world.clock.now(), self.obs.first_running)
        self.obs.violations = violations
        alive = set(self.checker.never_ran(self.obs.first_running)) | {
            pod_key(p) for p in self.world.cluster.store.view("pods") if is_running(p)
        }
        cost = sum(self.counters.live_prices.values())
        bounds = self._lp_bound() if self.cost_bound else None
        bound = bounds.best_per_hour if bounds else 0.0
        summary = summarise(
            self.scenario.name,
            self.obs,
            virtual_seconds=self.scenario.duration,
            wall_seconds=wall_seconds,
            cost_per_hour_final=cost,
            lp_bound_per_hour_final=bound,
            fluid_bound_per_hour_final=bounds.fluid.cost_per_hour if bounds else 0.0,
            configuration_bound_per_hour_final=bounds.configuration.cost_per_hour if bounds else 0.0,
            configuration_bound_converged=bounds.configuration.converged if bounds else True,
            pods_alive_at_end=alive,
            extra={
                "cost_ratio_final": round(cost / bound, 4) if bound else None,
                "instances_launched_by_type": dict(sorted(self.counters.launched_types.items())),
                "provisioner": {
                    "invocations": self.counters.invocations,
                    "passes": self.counters.passes,
                    "crashes": self.counters.crashes,
                    "failed_launches": self.counters.launch_failures,
                    "failed_invocations": self.counters.failed_invocations,
                    "quiet_fast_forwards": self.counters.quiet_jumps,
                    "triggered": len(self.world.triggered),
                    "webhook_triggers": self.world.webhook_triggers.get("provisioner", 0),
                },
                "pod_disruptions": self.checker.disruptions,
                "availability": {
                    "voluntary_unavailable_pod_seconds": round(
                        self.checker.voluntary_unavailable_pod_seconds, 3
                    ),
                    "unsafe_terminations": self.checker.unsafe_terminations,
                },
                "planner": {
                    "passes": self.planner.passes,
                    "decisions_by_reason": dict(sorted(self.planner.decisions.items())),
                    "abandoned": self.planner.abandoned,
                    "dropped_on_revalidation": self.planner.dropped,
                    "failed_passes": self.planner.failed,
                    "skips": len(self.planner.skipped_until),
                    "webhook_triggers": self.world.webhook_triggers.get("planner", 0),
                },
                "workflows": workflows,
                "interruption": self._interruption_summary(),
                "nodes_final": len(self.world.cluster.store.view("nodes")),
                "tainted_after_last_pod_left_s": self._emptiness(),
                "max_disrupting_at_once": dict(sorted(self.checker.max_disrupting.items())),
                "drains": self._drains(),
                **self._warning_summary(),
            },
        )
        summary["checks"] = evaluate_expectations(self.scenario, summary)
        return summary

    def _workflows(self) -> dict[str, Any]:
        """Disruption and rotation executions, read from the simulated Step Functions service."""
        sfn = self.world.workflows
        by_status: dict[str, int] = {}
        disrupted: dict[str, int] = {}
        failures: list[str] = []
        for execution in sfn.disruptions():
            by_status[execution.status] = by_status.get(execution.status, 0) + 1
            reason = str((execution.input or {}).get("reason"))
            if execution.status == "SUCCEEDED" and (execution.output or {}).get("outcome") == "disrupted":
                disrupted[reason] = disrupted.get(reason, 0) + 1
            elif execution.done and execution.status != "SUCCEEDED":
                failures.append(f"{execution.name}: {execution.error}: {execution.cause}")
        rotations = {e.name: e.status for e in sfn.rotations()}
        return {
            "disruption_executions": dict(sorted(by_status.items())),
            "rotations": rotations,
            "failed": failures[:20],
            "disrupted_by_reason": dict(sorted(disrupted.items())),
        }

    def _interruption_summary(self) -> dict[str, Any]:
        metrics = self.world.metrics
        from longshore.core import telemetry

        def total(name: str, **dims: str) -> int:
            return int(sum(p.value for p in metrics.named(name, **dims)))

        ignored: dict[str, int] = {}
        for point in metrics.named(telemetry.MESSAGES_IGNORED):
            reason = dict(point.dimensions).get(telemetry.DIM_REASON, "?")
            ignored[reason] = ignored.get(reason, 0) + int(point.value)
        actions: dict[str, int] = {}
        for point in metrics.named(telemetry.INTERRUPTION_ACTIONS):
            action = dict(point.dimensions).get(telemetry.DIM_ACTION, "?")
            actions[action] = actions.get(action, 0) + int(point.value)
        failed = sum(len(r.get("batchItemFailures") or []) for r in self.world.interruption_responses)
        return {
            "messages_delivered": self.counters.messages,
            "queue_polls": self.counters.queue_polls,
            "actions": dict(sorted(actions.items())),
            "ignored": dict(sorted(ignored.items())),
            "malformed": total(telemetry.MESSAGES_MALFORMED),
            "failed_deliveries": failed,
            "left_in_queue": self.world.queue_depth(),
        }

    def _drains(self) -> dict[str, dict[str, Any]]:
        """Per disrupted node (scenario seconds): tainted, its drain deadline, and when its last pod left."""
        out: dict[str, dict[str, Any]] = {}
        for node, tainted in sorted(self.checker.first_tainted.items()):
            deadline = self.checker.deadlines.get(node)
            out[node] = {
                "reason": self.checker.node_reasons.get(node),
                "tainted_s": tainted,
                "deadline_s": None if deadline is None else round(deadline - self.start, 3),
                "emptied_s": self.checker.last_pod_left.get(node),
            }
        return out

    def _emptiness(self) -> dict[str, float]:
        """For nodes disrupted as empty: seconds from their last pod leaving to the disruption taint."""
        out: dict[str, float] = {}
        for node, reason in sorted(self.checker.node_reasons.items()):
            left = self.checker.last_pod_left.get(node)
            tainted = self.checker.first_tainted.get(node)
            if reason == "empty" and left is not None and tainted is not None:
                out[node] = round(tainted - left, 3)
        return out

    def _warning_summary(self) -> dict[str, Any]:
        if not self.warnings:
            return {}
        requests = [t - self.start for t in self.world.fleet_request_times]
        cordoned: dict[str, float | None] = {}
        replacement: dict[str, float | None] = {}
        running: dict[str, bool | None] = {}
        for warned in self.warnings:
            tainted = self.checker.first_tainted.get(warned.node)
            cordoned[warned.node] = None if tainted is None else round(tainted - warned.warned_at, 3)
            after = [t for t in requests if t >= warned.warned_at]
            replacement[warned.node] = round(min(after) - warned.warned_at, 3) if after else None
            running[warned.node] = warned.evicted_and_running
        return {
            "cordoned_after_warning_s": cordoned,
            "replacement_requested_after_warning_s": replacement,
            "all_evicted_pods_running_before_reclaim": running,
            "warnings": [
                {
                    "node": w.node,
                    "instance_id": w.instance_id,
                    "warned_at_s": w.warned_at,
                    "reclaim_at_s": w.reclaim_at,
                    "pods_at_warning": w.pods_at_warning,
                    "still_running_at_reclaim": w.reclaimed_running,
                }
                for w in self.warnings
            ],
        }


JSON = Any


def _owner(pod: Mapping[str, Any]) -> str:
    """`namespace/Kind/name` of the pod's controller ("" for a bare pod)."""
    meta = metadata(pod)
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller", True):
            return f"{meta.get('namespace') or 'default'}/{ref.get('kind')}/{ref.get('name')}"
    return ""


def instance_ids_in(event: JSON) -> list[str]:
    """The distinct instance ids an event names, in order of first appearance."""
    order: list[str] = []
    for found in _INSTANCE_ID.findall(json.dumps(event)):
        if found not in order:
            order.append(found)
    return order


def substitute_instances(event: JSON, instance_ids: list[str]) -> JSON:
    """The event with its k-th distinct instance id replaced by `instance_ids[k]` (the rest unchanged)."""
    text = json.dumps(event)
    mapping = dict(zip(instance_ids_in(event), instance_ids, strict=False))
    return json.loads(_INSTANCE_ID.sub(lambda m: mapping.get(m.group(0), m.group(0)), text))


def retime(event: JSON, now: float) -> JSON:
    """The event with every timestamp moved so that its `time` is `now` (ISO 8601 `Z` and RFC 1123 forms)."""
    sent = (
        datetime.fromisoformat(str(event.get("time", "")).replace("Z", "+00:00"))
        if event.get("time")
        else None
    )
    delta = now - sent.timestamp() if sent is not None else 0.0

    def move(value: JSON) -> JSON:
        if isinstance(value, dict):
            return {k: move(v) for k, v in value.items()}
        if isinstance(value, list):
            return [move(v) for v in value]
        if isinstance(value, str) and _ISO.match(value):
            moved = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() + delta
            return datetime.fromtimestamp(moved, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if isinstance(value, str) and _RFC1123.match(value):
            moved = parsedate_to_datetime(value).timestamp() + delta
            return format_datetime(datetime.fromtimestamp(moved, UTC), usegmt=True)
        return value

    return move(event)


def scheduled_at_or_after(origin: float, at: float) -> float:
    """The first instant of the every-minute schedule that started at `origin` at or after `at`."""
    return origin + math.ceil((at - origin) / SCHEDULE_S - 1e-9) * SCHEDULE_S


def _remaining(deadline: float, now: Callable[[], float]) -> float:
    return deadline - now()


def evaluate_expectations(scenario: Scenario, summary: dict[str, Any]) -> dict[str, Any]:
    """The scenario's `expect` block, checked against the summary: {name: {expected, actual, ok}}."""
    expect = scenario.expect
    checks: dict[str, Any] = {}
    if expect.all_running:
        never = summary["pods"]["never_ran"]
        checks["all_running"] = {"expected": [], "actual": never[:20], "ok": not never}
    if expect.max_first_fleet_request_s is not None:
        actual = summary["first_fleet_request_after_pending_s"]
        checks["first_fleet_request_after_pending_s"] = {
            "expected": f"<= {expect.max_first_fleet_request_s:g}",
            "actual": actual,
            "ok": actual is not None and actual <= expect.max_first_fleet_request_s,
        }
    if expect.max_cost_ratio is not None:
        ratio = summary.get("cost_ratio_final")
        checks["cost_ratio_final"] = {
            "expected": f"<= {expect.max_cost_ratio:g}",
            "actual": ratio,
            "ok": ratio is not None and ratio <= expect.max_cost_ratio,
        }
    if expect.zero_violations:
        checks["violations"] = {
            "expected": 0,
            "actual": len(summary["violations"]),
            "ok": not summary["violations"],
        }
    availability = summary.get("availability") or {}
    checks["availability"] = {  # every scenario: no voluntary unavailability, no unsafe termination
        "expected": {"voluntary_unavailable_pod_seconds": 0, "unsafe_terminations": 0},
        "actual": availability,
        "ok": not availability.get("voluntary_unavailable_pod_seconds")
        and not availability.get("unsafe_terminations"),
    }
    window = expect.taint_after_last_pod_left_s
    if window is not None:
        seen = summary.get("tainted_after_last_pod_left_s") or {}
        checks["tainted_after_last_pod_left_s"] = {
            "expected": f"first empty node {window.min:g}..{window.max:g}, none before {window.min:g}",
            "actual": seen,
            # The first node goes as soon as its wait is over; the budget may hold the others back longer.
            "ok": bool(seen)
            and window.min <= min(seen.values()) <= window.max
            and all(v >= window.min for v in seen.values()),
        }
    for key, limit, name in (
        ("cordoned_after_warning_s", expect.cordon_after_warning_s, "cordon"),
        ("replacement_requested_after_warning_s", expect.replacement_after_warning_s, "replacement"),
    ):
        if limit is not None:
            seen = summary.get(key) or {}
            checks[key] = {
                "expected": f"<= {limit:g} for every warned node ({name})",
                "actual": seen,
                "ok": bool(seen) and all(v is not None and v <= limit for v in seen.values()),
            }
    if expect.evicted_pods_running_before_reclaim:
        seen = summary.get("all_evicted_pods_running_before_reclaim") or {}
        checks["all_evicted_pods_running_before_reclaim"] = {
            "expected": True,
            "actual": seen,
            "ok": bool(seen) and all(v is True for v in seen.values()),
        }
    for reason, least in sorted(expect.min_disruptions.items()):
        actual = summary["disruptions_by_reason"].get(reason, 0)
        checks[f"disruptions_{reason}"] = {"expected": f">= {least}", "actual": actual, "ok": actual >= least}
    if expect.final_nodes is not None:
        checks["nodes_final"] = {
            "expected": expect.final_nodes,
            "actual": summary["nodes_final"],
            "ok": summary["nodes_final"] == expect.final_nodes,
        }
    checks["duplicate_launches"] = {
        "expected": 0,
        "actual": summary["duplicate_launches"],
        "ok": summary["duplicate_launches"] == 0,
    }
    return checks


def run_scenario(
    scenario: Scenario, report_dir: Path | None = None, **kwargs: Any
) -> tuple[SimulationResult, Path | None]:
    """Run a scenario and, when `report_dir` is given, write `summary.json` and `timeline.png` there."""
    result = ScenarioRunner(scenario, **kwargs).run()
    if report_dir is not None:
        write_summary(report_dir, result.summary)
        plot(report_dir, scenario.name, result.samples)
    return result, report_dir
