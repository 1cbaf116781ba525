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

- *The planner* (`services.disruption.DisruptionService`), kept between passes like a warm container, with
  passes on the deployed cadence and scheduled passes that could decide nothing new skipped:
  `sim.planner_cadence`.
- *The workflows*: `StepFunctionsSimulator` executions wake on clock timers; their steps run in process.
- *Steps* (workload changes, faults, events, EC2 reclaiming warned spot capacity, rotations):
  `sim.scenario_steps`; the interruption queue is polled every second of virtual time while it holds
  messages, and the handler's provisioner trigger makes the provisioner start a pass at once.

Observations, all from outside the system under test: every CreateFleet request and launch (botocore hooks on
the launcher's client), every termination, the pods' first Unschedulable and first Running instants (scanned
after every reconcile of the simulated cluster), samples of nodes, pending and running pods and the cost per
hour of the live instances, and the `sim.checker.RuleChecker`'s violations. At the end, the LP lower bounds
(fluid and configuration) of the pods then running are computed and the summary built, with the scenario's
`expect` block evaluated into `checks`: `sim.run_summary`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longshore.config import bundle_cluster, load_cluster
from longshore.core.claims import instance_id_of
from longshore.core.model import ClusterConfig
from longshore.services.provisioner import LEASE_NAME, PassResult, ProvisionerSettings, run_invocation
from longshore.services.snapshot import unschedulable_condition
from longshore_sim.aws import SimulatedCrash
from longshore_sim.checker import RuleChecker
from longshore_sim.kubeapi.meta import metadata
from longshore_sim.manifest_reads import is_running, pod_key
from longshore_sim.planner_cadence import TICK_EPS, PlannerCadence, scheduled_at_or_after
from longshore_sim.report import Observations, Sample, plot, write_summary
from longshore_sim.run_summary import summarise_run
from longshore_sim.scenario import Scenario, ScenarioError
from longshore_sim.scenario_steps import StepPlayer
from longshore_sim.world import LAMBDA_TIMEOUT_S, SimulatedWorld, launched_instance_ids


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
        self._trigger_pending = False
        self.steps = StepPlayer(self)

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
        self.first_config_text = self.config_text()
        world = SimulatedWorld(
            config, boot_delay=self.scenario.boot_delay, config_text=self.first_config_text
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
                self.steps.maybe_crash_before_launch,
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
                world.clock.call_at(self.start + step.at, functools.partial(self.steps.apply, step))
            self.planner.schedule(self.start)
            if self.karpenter_objects:
                from longshore_sim.karpenter import KarpenterObjects

                self._objects = KarpenterObjects(world)
            self._drive()
            world.advance_to(self.end)
            self._observe()
            summary = summarise_run(self, time.perf_counter() - wall_started)
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
                    self.obs.notes.append(
                        f"t={self.elapsed():.1f}s: a provisioner invocation failed ({error})"
                    )
                    self._sleep_unless_triggered(clock.now() + self.retry_gap_s)
                    continue
                # A killed Lambda runs no cleanup: put back the lease `run_invocation`'s `finally` released,
                # as the dead run left it (held until its last renewal plus the TTL).
                last = current[0]
                if last.lease_taken_at is not None:
                    world.lease.acquire(LEASE_NAME, last.owner, last.lease_taken_at, settings.lease_ttl_s)
                self.counters.crashes += 1
                self.obs.notes.append(
                    f"t={self.elapsed():.1f}s: the provisioner invocation was killed ({error})"
                )
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
        return scheduled_at_or_after(self.start, at + TICK_EPS)

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
            self.obs.notes.append(f"t={self.elapsed():.1f}s: provisioner triggered ({reason})")

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

    # -- observation --------------------------------------------------------------------------------------------

    def elapsed(self) -> float:
        """Seconds of virtual time since the scenario started."""
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
        now = self.elapsed()
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


def _remaining(deadline: float, now: Callable[[], float]) -> float:
    return deadline - now()


def run_scenario(
    scenario: Scenario, report_dir: Path | None = None, **kwargs: Any
) -> tuple[SimulationResult, Path | None]:
    """Run a scenario and, when `report_dir` is given, write `summary.json` and `timeline.png` there."""
    result = ScenarioRunner(scenario, **kwargs).run()
    if report_dir is not None:
        write_summary(report_dir, result.summary)
        plot(report_dir, scenario.name, result.samples)
    return result, report_dir
