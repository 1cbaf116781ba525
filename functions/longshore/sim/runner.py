"""The scenario runner: replay a scenario on the simulated world, with the provisioner run the way the Lambda runs.

Theory of operation. A scenario (`sim.scenario`) names a cluster config, the workloads to create, and timed
steps. The runner builds a `SimulatedWorld` (moto + simulated cluster + production adapters), creates the
workloads, registers every step as a timer on the virtual clock, and then plays the *provisioner Lambda*:

- Invocations follow the deployed shape: each runs `services.provisioner.run_invocation` with a deadline of
  `lambda_timeout_s` (120 s, the stack's timeout) and stops starting passes `deadline_margin_s` before it; the
  schedule's next event, queued behind the reserved concurrency of 1, starts the next invocation
  `retry_gap_s` later. An invocation that crashes (an injected `SimulatedCrash`) dies on the spot, leaving its
  lease to expire, exactly like a killed Lambda, and the next one starts `retry_gap_s` later.
- Between passes that found nothing to do, the invocation waits `poll_s` (1 s) of virtual time, during which
  the cluster's controllers, scheduler and kubelets run. When the world is *quiet* (no unbound pods, every
  claim initialized, no instance without a claim), nothing a pass could do would change anything until the
  next timer (a step, a boot, a grace period), so the runner ends the invocation and jumps the clock there,
  keeping the invocation schedule's phase. That is what makes a 31-day scenario take seconds.

Observations, all from outside the system under test: every CreateFleet request and launch (botocore hooks on
the launcher's client), every termination, the pods' first Unschedulable and first Running instants (scanned
after every reconcile of the simulated cluster), samples of nodes, pending and running pods and the cost per
hour of the live instances, and the `sim.checker.RuleChecker`'s violations. At the end, the fluid LP bound of
the pods then running (`sim.lp_bound`) is computed and `sim.report.summarise` builds the summary; the
scenario's `expect` block is evaluated into `checks`.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longshore.config import load_cluster
from longshore.core.model import ClusterConfig
from longshore.core.pods import pod_from_manifest
from longshore.services.provisioner import LEASE_NAME, PassResult, ProvisionerSettings, run_invocation
from longshore.services.snapshot import daemonset_pods, unschedulable_condition
from longshore.sim.aws import SimulatedCrash
from longshore.sim.checker import RuleChecker, is_running, pod_key
from longshore.sim.lp_bound import fluid_lower_bound
from longshore.sim.report import Observations, Sample, plot, summarise, write_summary
from longshore.sim.scenario import Scenario, ScenarioError, Step
from longshore.sim.world import LAMBDA_TIMEOUT_S, SimulatedWorld, launched_instance_ids

UNSUPPORTED_STEPS = ("event", "rotate")


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
    quiet_jumps: int = 0
    live_prices: dict[str, float] = field(default_factory=dict)
    launched_types: dict[str, int] = field(default_factory=dict)  # "type/capacity type" -> instances


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
    ) -> None:
        unsupported = [s for s in scenario.steps if s.action in UNSUPPORTED_STEPS]
        if unsupported:
            step = unsupported[0]
            raise ScenarioError(
                f"{scenario.source}: steps: a `{step.action}` step (at {step.at:g}s) is not simulated by "
                "`longshore simulate` yet; supported: scale, delete, apply, unavailable, crash, note"
            )
        self.scenario = scenario
        self.progress = progress
        self.lambda_timeout_s = lambda_timeout_s
        self.retry_gap_s = retry_gap_s
        self.settings = settings
        self.obs = Observations()
        self.counters = _Counters()
        self._crash_before_launch = 0

    # -- the run ----------------------------------------------------------------------------------------------

    def load_config(self) -> ClusterConfig:
        return load_cluster(
            self.scenario.config_paths(), region=self.scenario.region, cluster_name=self.scenario.cluster_name
        )

    def run(self) -> SimulationResult:
        wall_started = time.perf_counter()
        config = self.load_config()
        self.config = config
        with SimulatedWorld(config, boot_delay=self.scenario.boot_delay) as world:
            self.world = world
            self._wall_started = wall_started
            self.start = world.clock.now()
            self.end = self.start + self.scenario.duration
            self.checker = RuleChecker(world.cluster.store, config)
            world.launch_observers.append(self._on_launch)
            world.terminate_observers.append(self._on_terminate)
            world.ec2.meta.events.register_first(
                "before-parameter-build.ec2.CreateFleet",
                self._maybe_crash_before_launch,
                unique_id="longshore-sim-crash",
            )
            world.cluster.observe(lambda _sample: self._observe())
            for relative in self.scenario.workloads:
                path = self.scenario.resolve(relative)
                if not path.is_file():
                    raise ScenarioError(
                        f"{self.scenario.source}: workloads: no such file {relative!r} ({path})"
                    )
                world.apply_file(path)
            for step in self.scenario.ordered_steps():
                world.clock.call_at(self.start + step.at, functools.partial(self._apply_step, step))
            self._drive()
            world.advance_to(self.end)
            self._observe()
            summary = self._summary(time.perf_counter() - wall_started)
        return SimulationResult(summary, list(self.obs.samples))

    def _drive(self) -> None:
        """Play back-to-back provisioner invocations until the end, fast-forwarding over quiet stretches."""
        world = self.world
        clock = world.clock
        settings = self.settings or ProvisionerSettings.from_config(self.config)
        run_length = self.lambda_timeout_s - settings.deadline_margin_s
        period = run_length + self.retry_gap_s
        anchor = self.start
        while clock.now() < self.end:
            now = clock.now()
            started = _window_start(anchor, now, run_length, period)
            if started > now:
                world.advance_to(min(started, self.end))
                continue
            deadline = min(started + self.lambda_timeout_s, self.end + settings.deadline_margin_s)
            self.counters.invocations += 1
            service = world.service(f"sim-invocation-{self.counters.invocations}", settings)
            try:
                report = run_invocation(
                    service,
                    remaining_s=functools.partial(_remaining, deadline, clock.now),
                    idle_wait=self._idle_wait,
                    on_pass=self._on_pass,
                )
            except SimulatedCrash as error:
                # A killed Lambda runs no cleanup: put back the lease `run_invocation`'s `finally` released,
                # as the dead run left it (held until its last renewal plus the TTL).
                if service.lease_taken_at is not None:
                    world.lease.acquire(
                        LEASE_NAME, service.owner, service.lease_taken_at, settings.lease_ttl_s
                    )
                self.counters.crashes += 1
                self.obs.notes.append(f"t={self._t():.1f}s: the provisioner invocation was killed ({error})")
                world.cluster.sync_ec2()
                anchor = clock.now() + self.retry_gap_s
                continue
            if report.stopped == "quiet":
                self.counters.quiet_jumps += 1
                world.advance_to(self._next_event())
                anchor = started
            else:
                anchor = started + period

    # -- waiting and quiet --------------------------------------------------------------------------------------

    def _idle_wait(self, seconds: float) -> bool:
        if self._quiet():
            return False
        self.world.sleep(seconds)
        return True

    def _quiet(self) -> bool:
        self.world.cluster.reconcile()  # controllers first: a new Deployment has no pods until they run
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
        return all(i["InstanceId"] in owned for i in self.world.live_instances())

    def _next_event(self) -> float:
        now = self.world.clock.now()
        candidates = [self.end]
        for due in (self.world.clock.next_due(), self.world.cluster.store.next_deadline()):
            if due is not None:
                candidates.append(max(due, now))
        return min(candidates)

    # -- steps ------------------------------------------------------------------------------------------------

    def _apply_step(self, step: Step) -> None:
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
        elif step.crash is not None:
            if step.crash.point == "after-launch-before-record":
                world.fleet.crash_after_create_fleet += 1
            else:
                self._crash_before_launch += 1
            note = f"t={step.at:g}s: the next launch crashes the provisioner ({step.crash.point})"
        self.obs.notes.append(note)

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
            found = self.world.ec2_reader.describe_instances(InstanceIds=[instance_id])["Reservations"]
            instance = found[0]["Instances"][0]
            tags = {t["Key"]: t["Value"] for t in instance.get("Tags") or []}
            claim = tags.get("karpenter.sh/nodeclaim")
            self.obs.nodes_launched += 1
            self.counters.live_prices[instance_id] = self.world.price_of_instance(instance)
            kind = f"{instance['InstanceType']}/{'spot' if instance.get('InstanceLifecycle') == 'spot' else 'on-demand'}"
            self.counters.launched_types[kind] = self.counters.launched_types.get(kind, 0) + 1
            same_claim = []
            if claim:
                same_claim = [
                    i["InstanceId"]
                    for r in self.world.ec2_reader.describe_instances(
                        Filters=[
                            {"Name": "tag:karpenter.sh/nodeclaim", "Values": [claim]},
                            {"Name": "instance-state-name", "Values": ["pending", "running"]},
                        ]
                    )["Reservations"]
                    for i in r["Instances"]
                ]
            self.checker.note_launch(claim, instance_id, same_claim)

    def _on_terminate(self, instance_ids: list[str]) -> None:
        for instance_id in instance_ids:
            if self.counters.live_prices.pop(instance_id, None) is not None:
                self.obs.nodes_terminated += 1

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
        self.checker.scan(now)
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

    def _lp_bound(self) -> float | None:
        store = self.world.cluster.store
        pods = [
            pod_from_manifest(p)
            for p in store.view("pods")
            if is_running(p)
            and not any(r.get("kind") == "DaemonSet" for r in (p["metadata"].get("ownerReferences") or []))
        ]
        if not pods:
            return 0.0
        daemonsets, _ = daemonset_pods(store.view("daemonsets"))
        return fluid_lower_bound(pods, self.config, self.world.catalog, daemonsets).cost_per_hour

    def _summary(self, wall_seconds: float) -> dict[str, Any]:
        now = self._t()
        self.obs.fleet_requests = [t - self.start for t in self.world.fleet_request_times]
        self.obs.duplicate_launches = self.checker.duplicate_launches
        self.obs.disruptions_by_reason = (
            {"unexpected": self.checker.disruptions} if self.checker.disruptions else {}
        )
        violations = self.checker.finish(now, self.obs.first_running)
        self.obs.violations = violations
        alive = set(self.checker.never_ran(self.obs.first_running)) | {
            pod_key(p) for p in self.world.cluster.store.view("pods") if is_running(p)
        }
        cost = sum(self.counters.live_prices.values())
        bound = self._lp_bound()
        summary = summarise(
            self.scenario.name,
            self.obs,
            virtual_seconds=self.scenario.duration,
            wall_seconds=wall_seconds,
            cost_per_hour_final=cost,
            lp_bound_per_hour_final=bound,
            pods_alive_at_end=alive,
            extra={
                "cost_ratio_final": round(cost / bound, 4) if bound else None,
                "instances_launched_by_type": dict(sorted(self.counters.launched_types.items())),
                "provisioner": {
                    "invocations": self.counters.invocations,
                    "passes": self.counters.passes,
                    "crashes": self.counters.crashes,
                    "failed_launches": self.counters.launch_failures,
                    "quiet_fast_forwards": self.counters.quiet_jumps,
                },
            },
        )
        summary["checks"] = evaluate_expectations(self.scenario, summary)
        return summary


def _remaining(deadline: float, now: Callable[[], float]) -> float:
    return deadline - now()


def _window_start(anchor: float, now: float, run_length: float, period: float) -> float:
    """Start of the invocation live at `now` (or of the next one, when `now` falls in the gap between two)."""
    if now < anchor:
        return anchor
    started = anchor + math.floor((now - anchor) / period) * period
    return started + period if now >= started + run_length else started


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
