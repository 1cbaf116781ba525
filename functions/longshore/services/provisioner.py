"""The provisioner: pending pods become node claims, launched on EC2 and followed until their nodes are ready.

Theory of operation. `ProvisionerService.run_pass()` is one loop of Karpenter's provisioner, written against
ports only (Kubernetes, the claim store, offering availability, the lease, the launcher, the instances, the
clock and a metrics sink):

1. *Lease.* Take (or renew) the `provisioner` lease in the store. A run that cannot does nothing this pass,
   so two runs (a retried Lambda, an overlapping schedule) never plan and launch at once. A held lease is
   renewed only once `lease_renew_s` (15 s) old, so every pass starts with at least 45 s of its 60 s TTL left.
2. *Lifecycle.* Registration, initialization, launch and registration timeouts, adoption after a crash and
   orphan collection (`services.lifecycle`), so capacity that timed out is forgotten before planning. Then
   static NodePools are brought to their `replicas` (`services.static_pools`); pods never launch for them.
3. *Batch.* Look for provisionable pods (`services.snapshot.provisionable`: Unschedulable, not DaemonSet,
   mirror or nominated) and wait, on the injected clock, until they stop arriving (1 s idle) or 10 s pass.
4. *Snapshot.* Nodes first, then pods, so capacity is never over-estimated; claims from the store (those
   still in flight count as capacity); DaemonSet templates; the offerings marked unavailable (ICE cache).
   The pods and nodes go through the container's `services.warm_snapshot`, which parses and rebuilds only
   what changed since its last pass and keeps each unchanged node's free room and topology records for the
   solver (`core.scheduling.node_bases`); what it returns equals a rebuild.
5. *Plan.* `core.scheduling.solve` places pods on existing nodes, then in-flight claims, then new claims at
   least cost. Pods nothing can hold get a `FailedScheduling` Event with the engine's reason
   (`services.provisioner_events`); the pass goes on.
6. *Launch.* Each new claim goes through `Launcher.launch` (the record is written before CreateFleet, the
   claim id is deterministic, capacity errors fall back across the claim's options inside the launcher). A
   claim whose every option is refused is forgotten and its offerings are marked unavailable for 3 minutes,
   so the next passes plan around them (or leave the pods pending, with an Event saying why) and CreateFleet
   is retried only after the TTL: no tight loop against a stocked-out pool.
7. *Measure.* Pending pods, decision latency, claims created by pool/type/capacity type, launch failures by
   reason and the cluster's cost per hour go to the `MetricsSink`; every lifecycle action logs one line.

`run_invocation` (`services.provisioner_invocation`, re-exported here) is the Lambda's loop (the handler and
the simulation both call it): passes, waiting `poll_s` between passes that found nothing to do, until a pass
is quiet (nothing pending, nothing about to be, no claim in flight) or shortly before the deadline; then the
lease is released.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from longshore.core import telemetry
from longshore.core.catalog import Catalog
from longshore.core.claims import LaunchResult, NodeClaim
from longshore.core.drain import parse_timestamp
from longshore.core.fleet_metrics import fleet_gauges
from longshore.core.model import ClusterConfig
from longshore.core.pods import Pod
from longshore.core.scheduling import Plan, SchedulingInput
from longshore.ports.clock import Clock
from longshore.ports.cloud import CapacityReservations, Instances, Launcher, PlacementGroups
from longshore.ports.kube import Cluster
from longshore.ports.metrics import MetricsSink
from longshore.ports.store import ClaimStore, Lease, OfferingAvailability
from longshore.ports.workflow import DisruptionWorkflow
from longshore.services import buffer_pods, snapshot, volume_topology, warm_snapshot
from longshore.services.batching import collect_batch
from longshore.services.buffer_status import BufferReporter, BufferStatusWriter
from longshore.services.launch_requests import launch_request
from longshore.services.lifecycle import Lifecycle, LifecycleOutcome, needs_cloud
from longshore.services.placement_groups import groups_by_class as groups_by_class
from longshore.services.provisioner_events import PodEvents
from longshore.services.provisioner_invocation import ProvisionerInvocation as ProvisionerInvocation
from longshore.services.provisioner_invocation import ProvisionerTotals as ProvisionerTotals
from longshore.services.provisioner_invocation import run_invocation as run_invocation
from longshore.services.reservation_sync import reservations_by_class
from longshore.services.static_pools import StaticOutcome, StaticPools

log = logging.getLogger(__name__)

LEASE_NAME: Final = "provisioner"
PENDING_TOO_LONG_S: Final = 600.0

PassStatus = Literal["idle", "planned", "settled", "lease-held", "lease-lost"]


@dataclass(frozen=True, slots=True)
class ProvisionerSettings:
    """Timings of the provisioner loop (defaults are Karpenter's where it has one)."""

    batch_idle_s: float = 1.0
    batch_max_s: float = 10.0
    lease_ttl_s: float = 60.0
    lease_renew_s: float = 15.0  # a held lease is renewed once this old: every pass starts with >= 45 s of it
    event_repeat_s: float = 120.0  # Karpenter's recorder de-duplicates identical events for 2 min
    max_events_per_pass: int = 50
    poll_s: float = 1.0
    deadline_margin_s: float = 15.0  # stop starting passes this long before the invocation's deadline
    cloud_check_interval_s: float = 60.0  # EC2 is read at least this often (lost instances, orphans)
    replan_interval_s: float = (
        10.0  # unchanged pending pods are planned again this often (Karpenter's requeue)
    )
    verdict_wait_s: float = 30.0  # how long a new unbound pod without a scheduler verdict keeps the loop open
    exit_when_quiet: bool = (
        True  # end the invocation after a pass with nothing to follow (see run_invocation)
    )

    @staticmethod
    def from_config(config: ClusterConfig) -> ProvisionerSettings:
        return ProvisionerSettings(
            batch_idle_s=config.settings.batch_idle_seconds, batch_max_s=config.settings.batch_max_seconds
        )


@dataclass(frozen=True, slots=True)
class LaunchOutcome:
    claim_id: str
    status: str
    nodepool: str
    instance_type: str | None = None
    capacity_type: str | None = None
    price: float | None = None
    reason: str = ""
    claim: NodeClaim | None = None


@dataclass(frozen=True, slots=True)
class PassResult:
    """What one pass saw and did."""

    status: PassStatus
    started_at: float
    pending: int = 0
    in_flight: int = 0
    launches: tuple[LaunchOutcome, ...] = ()
    unschedulable: tuple[tuple[str, str], ...] = ()
    lifecycle: LifecycleOutcome = field(default_factory=LifecycleOutcome)
    decision_ms: float = 0.0
    batch_s: float = 0.0
    awaiting: int = 0  # unbound pods the scheduler has not judged yet (`snapshot.awaiting_verdict`)

    @property
    def quiet(self) -> bool:
        """Nothing a pass in the next seconds could do that the next scheduled one could not: no pods to
        plan (or the same ones as a plan that could do nothing for them), none about to become provisionable,
        and no claim between launch and initialization."""
        if self.status not in ("idle", "settled") or self.awaiting:
            return False
        return all(c.state in ("initialized", "deleting") for c in self.lifecycle.claims)

    @property
    def launched(self) -> tuple[str, ...]:
        return tuple(o.claim_id for o in self.launches if o.status in ("launched", "adopted"))

    @property
    def failed(self) -> tuple[LaunchOutcome, ...]:
        return tuple(o for o in self.launches if o.status == "failed")


CatalogSource = Callable[[], Catalog]


class ProvisionerService:
    """One provisioner run's state: its lease owner id, its pod cache and the Events it already posted (`PodEvents`)."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        store: ClaimStore,
        offerings: OfferingAvailability,
        lease: Lease,
        launcher: Launcher,
        instances: Instances,
        catalog: CatalogSource,
        config: ClusterConfig,
        clock: Clock,
        metrics: MetricsSink,
        owner: str,
        settings: ProvisionerSettings | None = None,
        workflow: DisruptionWorkflow | None = None,
        buffers: buffer_pods.BufferSource | None = None,
        reservations: CapacityReservations | None = None,
        placement_groups: PlacementGroups | None = None,
    ) -> None:
        self._reservations = reservations  # capacity reservations (`core.reservations`)
        self._placement_groups = placement_groups  # partitions as offerings (`core.placement_groups`)
        self._cluster = cluster
        self._store = store
        self._offerings = offerings
        self._lease = lease
        self._launcher = launcher
        self._catalog = catalog
        self._buffers = buffers  # CapacityBuffers (`services.buffer_pods`), their state (`buffer_status`)
        self._buffer_report = BufferReporter(
            buffers if isinstance(buffers, BufferStatusWriter) else None, metrics
        )
        self._config = config
        self._clock = clock
        self._metrics = metrics
        self.owner = owner
        self.settings = settings or ProvisionerSettings.from_config(config)
        self._lifecycle = Lifecycle(
            store=store,
            instances=instances,
            cluster=cluster,
            config=config,
            metrics=metrics,
            workflow=workflow,
        )
        self._events = PodEvents(cluster, clock, self.settings)
        self.static = StaticOutcome()  # what the last pass did for static pools
        # Static NodePools: exactly `replicas` nodes (services.static_pools).
        self._static = StaticPools(
            config, cluster, launcher, offerings, catalog, metrics, workflow, store=store
        )
        self._holding = False
        self._cloud_checked_at: float | None = None
        self.lease_taken_at: float | None = None  # when this run last took or renewed the lease
        self._pods = snapshot.PodCache()
        self._settled: tuple[object, ...] | None = None  # inputs of the last plan that launched nothing
        self._settled_at = 0.0

    # -- the lease ------------------------------------------------------------------------------------------

    def _take_lease(self) -> bool:
        """Take the lease, or renew it once `lease_renew_s` old. While younger it is held, unexpired, for at
        least `lease_ttl_s - lease_renew_s` more (no other owner can take it before its expiry: the `Lease`
        contract), so no write is needed: a run polling every second while nodes boot writes the lease every
        15 s, not every pass."""
        now = self._clock.now()
        taken = self.lease_taken_at
        if self._holding and taken is not None and 0 <= now - taken < self.settings.lease_renew_s:
            return True
        self._holding = self._lease.acquire(LEASE_NAME, self.owner, now, self.settings.lease_ttl_s)
        if self._holding:
            self.lease_taken_at = now
        return self._holding

    def take_over(self, previous: ProvisionerService) -> None:
        """Continue `previous`'s run (same owner) on this service's config: its lease, its last look at EC2 and
        its pod cache; the settled plan is not kept (the new config may answer differently)."""
        self._holding, self.lease_taken_at = previous._holding, previous.lease_taken_at
        self._cloud_checked_at, self._pods = previous._cloud_checked_at, previous._pods
        previous._holding = False  # released once, by whichever service ends the run

    def release(self) -> None:
        """Give the lease up (end of the invocation), so the next run need not wait for it to expire."""
        if self._holding:
            self._lease.release(LEASE_NAME, self.owner)
            self._holding = False

    # -- one pass -------------------------------------------------------------------------------------------

    def run_pass(self) -> PassResult:
        started = self._clock.now()
        if not self._take_lease():
            log.info("another provisioner run holds the lease; waiting", extra={"owner": self.owner})
            return PassResult("lease-held", started)
        lifecycle = self._reconcile_lifecycle()
        self.static = self._static.reconcile(lifecycle.claims, self._clock.now())
        unbound = self._cluster.list_pending_pods()
        first = [m for m in unbound if snapshot.provisionable_manifest(m)]
        now = self._clock.now()
        awaiting = sum(snapshot.awaiting_verdict(m, now, self.settings.verdict_wait_s) for m in unbound)
        buffers = buffer_pods.read_buffers(self._buffers, self._config)
        virtual = buffer_pods.virtual_pods(buffers.resolved)
        if not first and not virtual:
            self._settled = None
            self._emit_gauges(pending=(), claims=lifecycle.claims)
            self._buffer_report.report(buffers, None, now)
            return PassResult("idle", started, lifecycle=lifecycle, awaiting=awaiting)
        if self._is_settled(first, lifecycle):
            return PassResult("settled", started, pending=len(first), lifecycle=lifecycle, awaiting=awaiting)
        if not first:  # only buffers to keep: nothing to batch
            return self._plan_and_launch(started, lifecycle, 0.0, buffers)
        window = collect_batch(
            lambda: [snapshot.pod_uid(m) for m in self._provisionable()],
            self._clock,
            idle_s=self.settings.batch_idle_s,
            max_s=self.settings.batch_max_s,
            first=[snapshot.pod_uid(m) for m in first],
        )
        if window.waited_s > 0 and not self._take_lease():
            log.warning("lost the provisioner lease while batching", extra={"owner": self.owner})
            return PassResult("lease-lost", started, lifecycle=lifecycle)
        return self._plan_and_launch(started, lifecycle, window.waited_s, buffers)

    def _provisionable(self) -> list[Mapping[str, Any]]:
        return [m for m in self._cluster.list_pending_pods() if snapshot.provisionable_manifest(m)]

    def _is_settled(self, pending: Sequence[Mapping[str, Any]], lifecycle: LifecycleOutcome) -> bool:
        """The same pending pods, nodes, claims and unavailable offerings as a recent plan that launched
        nothing: the deterministic engine would answer the same, so neither batch nor plan again (Karpenter
        also waits for a change, or its 10 s requeue)."""
        now = self._clock.now()
        if self._settled is None or now - self._settled_at >= self.settings.replan_interval_s:
            return False
        current = _fingerprint(
            self._cluster.list_nodes(), pending, lifecycle.claims, self._offerings.unavailable(now)
        )
        return current == self._settled

    def _reconcile_lifecycle(self) -> LifecycleOutcome:
        claims = self._store.list()
        now = self._clock.now()
        last = self._cloud_checked_at
        check = last is None or now - last >= self.settings.cloud_check_interval_s or needs_cloud(claims, now)
        outcome = self._lifecycle.reconcile(self._cluster.list_nodes(), now, claims=claims, check_cloud=check)
        if check:
            self._cloud_checked_at = now
        return outcome

    def _plan_and_launch(
        self, started: float, lifecycle: LifecycleOutcome, batch_s: float, buffers: buffer_pods.BufferPass
    ) -> PassResult:
        clock_started = time.perf_counter()
        now = self._clock.now()
        nodes, pod_manifests = self._cluster.list_nodes_and_pods()  # never over-estimates free capacity
        claims = self._store.list()
        daemonset_manifests = self._cluster.list_daemonsets()
        unavailable = self._offerings.unavailable(now)
        warm = warm_snapshot.shared()  # the container's: costs what changed since its last pass
        seen = warm.update(nodes, pod_manifests, self._config, self._pods)
        pending, skipped, skipped_bound = seen.pending, seen.skipped_pending, seen.skipped_bound
        existing, skipped_nodes = seen.existing, seen.skipped_nodes
        waiting = seen.pending  # every provisionable pod, for the gauges
        # the claims, volumes and classes of this pass (`services.volume_topology`: not folded into cached pods)
        pending, refused = volume_topology.apply(waiting, self._cluster, validate=True)
        catalog = self._catalog()
        in_flight = snapshot.in_flight_nodes(
            claims, (snapshot.provider_id_of(n) for n in nodes), catalog, self._config
        )
        daemonsets, skipped_ds = snapshot.daemonset_pods(daemonset_manifests)
        plan = buffer_pods.plan_with_buffers(
            SchedulingInput(
                pods=pending,
                pools=tuple(p for p in self._config.node_pools if p.replicas is None),
                node_classes=self._config.node_classes,
                catalog=catalog,
                nodes=existing,
                in_flight=in_flight,
                daemonsets=daemonsets,
                unavailable=unavailable,
                settings=self._config.settings,
                reservations=reservations_by_class(self._reservations, self._config, now),
                placement_groups=groups_by_class(self._placement_groups, self._config),
                bases=warm.bases,
            ),
            buffer_pods.virtual_pods(buffers.resolved),
        )
        self._buffer_report.report(buffers, plan, now)
        decision_ms = (time.perf_counter() - clock_started) * 1000.0
        self._metrics.emit(telemetry.DECISION_LATENCY_MS, decision_ms, "Milliseconds")
        log.info(
            "found provisionable pod(s)",
            extra={
                "pods": len(pending),
                "batch_s": round(batch_s, 3),
                "new_claims": len(plan.new_claims),
                "existing_placements": sum(len(p.pods) for p in plan.existing),
                "unschedulable": len(plan.unschedulable),
                "cost_per_hour": plan.cost_per_hour,
                "decision_ms": round(decision_ms, 1),
            },
        )
        launches = tuple(self._launch(plan, catalog, now))
        if launches:
            self._settled = None
        else:
            provisionable = [m for m in pod_manifests if snapshot.provisionable_manifest(m)]
            self._settled = _fingerprint(nodes, provisionable, claims, unavailable)
            self._settled_at = self._clock.now()
        self._events.report_unschedulable(plan, pending)
        self._events.report_failures(launches, plan, pending)
        self._events.report_skipped((*skipped, *refused, *skipped_bound, *skipped_nodes, *skipped_ds))
        self._emit_gauges(pending=waiting, claims=(*claims, *(o.claim for o in launches if o.claim)))
        return PassResult(
            "planned",
            started,
            pending=len(pending),
            in_flight=len(in_flight),
            launches=launches,
            unschedulable=plan.unschedulable,
            lifecycle=lifecycle,
            decision_ms=decision_ms,
            batch_s=batch_s,
        )

    # -- launching ------------------------------------------------------------------------------------------

    def _launch(self, plan: Plan, catalog: Catalog, now: float) -> Iterable[LaunchOutcome]:
        for claim_plan in plan.new_claims:
            request = launch_request(claim_plan, catalog, self._config, now)
            log.info(
                "created nodeclaim",
                extra={
                    "claim": request.claim.id,
                    "nodepool": claim_plan.nodepool,
                    "pods": len(claim_plan.pods),
                    "instance_types": _first_types(claim_plan.instance_types),
                },
            )
            result = self._launcher.launch(request, self._clock.now())
            if result.status == "exists" and not (result.claim is not None and result.claim.in_flight):
                # Same pods as a claim that is no longer in flight (its node came and went): a new claim.
                request = launch_request(claim_plan, catalog, self._config, now, generation=repr(now))
                result = self._launcher.launch(request, self._clock.now())
            self._emit_launch_metrics(result)
            launched = result.claim
            reserved = (
                launched.reservation_id if launched is not None and result.status == "launched" else None
            )
            if reserved and self._reservations is not None:
                self._reservations.mark_launched(reserved)
            yield _outcome(result, claim_plan.nodepool)

    def _emit_launch_metrics(self, result: LaunchResult) -> None:
        for point in result.metrics:
            self._metrics.emit(point.name, point.value, "Count", dict(point.dimensions))

    # -- gauges ---------------------------------------------------------------------------------------------

    def _emit_gauges(self, *, pending: Iterable[Pod], claims: Iterable[NodeClaim]) -> None:
        pending_list = list(pending)
        now = self._clock.now()
        self._metrics.emit(telemetry.PENDING_PODS, float(len(pending_list)))
        too_long = sum(1 for p in pending_list if _age(p, now) >= PENDING_TOO_LONG_S)
        self._metrics.emit(telemetry.PODS_PENDING_OVER_10_MIN, float(too_long))
        for name, value, unit, dimensions in fleet_gauges(claims):  # cost, NodeClaims, Nodes per pool
            self._metrics.emit(name, value, unit, dimensions or None)


def _fingerprint(
    nodes: Iterable[Mapping[str, Any]],
    pending: Iterable[Mapping[str, Any]],
    claims: Iterable[NodeClaim],
    unavailable: frozenset[tuple[str, str, str]],
) -> tuple[object, ...]:
    """What a plan for pending pods depends on, by object version (bound pods only matter through the nodes
    and the pending pods: a pod that binds or leaves a node changes one of them)."""

    def versions(objects: Iterable[Mapping[str, Any]]) -> frozenset[tuple[str, str]]:
        return frozenset(
            (snapshot.pod_uid(o), str((o.get("metadata") or {}).get("resourceVersion") or ""))
            for o in objects
        )

    return (
        versions(nodes),
        versions(pending),
        frozenset((c.id, c.version, c.state) for c in claims),
        unavailable,
    )


def _age(pod: Pod, now: float) -> float:
    created = parse_timestamp(pod.created_at)
    return 0.0 if created is None else now - created


def _first_types(types: tuple[str, ...]) -> str:
    shown = ", ".join(types[:5])
    return f"{shown} and {len(types) - 5} other(s)" if len(types) > 5 else shown


def _outcome(result: LaunchResult, nodepool: str) -> LaunchOutcome:
    claim = result.claim
    return LaunchOutcome(
        claim_id=result.claim_id,
        status=result.status,
        nodepool=nodepool,
        instance_type=claim.instance_type if claim else None,
        capacity_type=claim.capacity_type if claim else None,
        price=claim.price if claim else None,
        reason=result.reason,
        claim=claim if result.ok else None,
    )
