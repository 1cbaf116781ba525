"""The disruption planner service: snapshot the cluster, plan with the pure core, start workflows, explain.

Theory of operation. `DisruptionService.run_pass()` is one loop of Karpenter's disruption controller, written
against ports only:

1. *Snapshot* (`take_snapshot`, also used by `longshore explain`). Nodes are joined with their NodeClaims by
   instance id (from `spec.providerID`); a node without a claim is not ours and is only a destination. Pods
   are read with `core.pods.pod_from_manifest` and bound to their nodes; PDBs become `PdbView`s with
   `status.disruptionsAllowed` (a PDB without status allows nothing, failing safe); DaemonSets their pod
   templates; claims still launching are in-flight capacity; the ICE cache and, with a resolver, the node
   classes' current AMIs complete the `DisruptionInput`. A node is `disrupting` when it carries the
   `karpenter.sh/disrupted` taint, its claim is `deleting`, it is being deleted, or this service started a
   workflow for it that has not visibly begun (surge: the taint comes only after the replacement is up).
   Replacement nodes this service launched count as nominated, so emptiness does not take them while the
   pods they are for are still on their way. A node with a pod that cannot be read is never a candidate.
   Drift hashes come from the claim (written at launch), else from Karpenter's node annotations.
   Pod events (the `consolidateAfter` clock) come from what the snapshots show: a pod's bind time, the start
   of its deletion (`deletionTimestamp - deletionGracePeriodSeconds`), or, for a pod that vanished between
   two passes without being seen terminating, the pass that noticed.
2. *Re-validate* the pending consolidation decision once its 15 s have passed, on this fresh snapshot
   (`planner.revalidate`: still candidates, budgets, still a saving); act on it or drop it with its reason.
3. *Plan* (`core.disruption.planner.plan`) and act: emptiness, expiry and drift at once; a consolidation
   decision is kept pending (one at a time) until it re-validates.
4. *Act*: one `DisruptionWorkflow` execution per node (`DisruptionCommand` with the reason, the pool's
   `terminationGracePeriod` as `deadline_epoch`). Replacements come first: the service launches the
   decision's planned replacement claims itself (`Launcher`, ids deterministic from the plan, so a retried
   pass launches nothing twice). With one replacement, every node's execution is started at once with
   `replace=true` and the replacement's claim in its input (`SurgeWorkflow.start_surge`), so the workflow
   waits until that claim is initialized before tainting. With several, the service waits until all of them
   are initialized and only then starts the executions. A replacement that cannot be launched abandons the
   decision before anything is touched.
5. *Explain*: every decision is logged with its reason and $/h saved, every node passed over with its
   reason (debug), and the same reasons are posted as Events on the nodes (`Disrupting`, `DisruptionBlocked`,
   `Unconsolidatable`), each identical (node, reason, message) at most once per `EVENT_REPEAT_S`; reasons
   that only say "wait N more seconds" are not posted.
6. *Measure*: `DisruptionDecisions{Reason}` per decision acted on, `ConsolidationSavingsPerHour{Reason}`.
   (Nodes disrupted, drain duration and PDB-blocked evictions are counted by the workflow steps, where they
   happen; the pools' cost per hour by the provisioner, which owns the claims.)

What the service remembers between passes (pending decision, started nodes, launched replacements, pod
events) lives in memory: the Lambda loops passes every 10 s for most of its timeout, so a pending decision
usually validates within one invocation. What a cold container must not forget is durable. The
`consolidateAfter` clock: each pass writes a node's last pod event time, and whether it had pods, to its claim
when they moved (compare-and-put), and a tracker that has not seen a node starts from there (pods the claim
says were there and are gone left "now"). Surges under way: a replacement claim records the nodes it
`replaces`, so for `STARTED_TTL_S` after its launch every pass treats those nodes as disrupting and the
claim's node as nominated, whichever container runs it (otherwise a cold pass would decide the same node
again, count the replacement as free room and drain before it is up). A staged
multi-replacement decision lost with its container is not restarted; its nodes are left alone until the
claims age out, and consolidation removes the unused replacements.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol, cast

from longshore.core import labels as wk
from longshore.core import telemetry
from longshore.core.catalog import Catalog
from longshore.core.claims import LaunchRequest, NodeClaim, instance_id_of
from longshore.core.commands import DisruptionCommand
from longshore.core.disruption import planner
from longshore.core.disruption.drift import claim_hashes
from longshore.core.disruption.state import DisruptionInput, ManagedNode, PdbView
from longshore.core.drain import DISRUPTED_TAINT_KEY, parse_timestamp
from longshore.core.model import ClusterConfig, NodeClass, Operator, Requirement
from longshore.core.pods import LabelSelector
from longshore.core.scheduling import ExistingNode
from longshore.ports.clock import Clock
from longshore.ports.cloud import Launcher
from longshore.ports.karpenter import ClaimConditions
from longshore.ports.kube import Cluster, KubeEvent, Manifest, ObjectRef
from longshore.ports.metrics import MetricsSink
from longshore.ports.store import ClaimStore, Lease, OfferingAvailability
from longshore.ports.workflow import DisruptionWorkflow, StartResult
from longshore.services import snapshot as snap
from longshore.services.launch_requests import launch_request

NODEPOOL_HASH_ANNOTATION: Final = "karpenter.sh/nodepool-hash"
NODECLASS_HASH_ANNOTATION: Final = "karpenter.k8s.aws/ec2nodeclass-hash"
PASS_INTERVAL_S: Final = 10.0
LEASE_NAME: Final = "planner"
# Renewed every pass; a holder that died blocks the next invocation this long at most.
LEASE_TTL_S: Final = 120.0
EVENT_REPEAT_S: Final = 30 * 60.0
REPLACEMENT_TIMEOUT_S: Final = 20 * 60.0  # the workflow's own bound on waiting for a replacement
STARTED_TTL_S: Final = REPLACEMENT_TIMEOUT_S + 5 * 60.0  # a start not visible as a taint by then has failed

# Passed-over reasons that only say "not yet": no Event (they change every pass).
_TRANSIENT_PREFIXES: Final = ("empty for ", "pods changed ", "nothing to do")
_UNCONSOLIDATABLE_MARKERS: Final = (
    "no cheaper option",
    "cheapest replacement is the same type",
    "spot-to-spot",
    "not worth the disruption",
    "would have nowhere to go",
    "only removes empty nodes",
    "never consolidates",
)


class Log(Protocol):
    """The logging calls the service makes (`logging.Logger` and Powertools' `Logger` both fit)."""

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
    def info(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


class ImageResolver(Protocol):
    def current_images(self, node_class: NodeClass) -> frozenset[str]:
        """The AMI ids a node of `node_class` would boot with now (empty when unknown)."""
        ...


class SurgeWorkflow(DisruptionWorkflow, Protocol):
    def start_surge(
        self, command: DisruptionCommand, replacement_claim_id: str, give_up_at: float | None
    ) -> StartResult:
        """Start `command` (replace=true) with its replacement already launched as `replacement_claim_id`:
        the execution waits until that claim is initialized (or `give_up_at`) before tainting."""
        ...


# -- snapshot -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One consistent view of the cluster for a planner pass (or for `longshore explain`)."""

    input: DisruptionInput
    node_manifests: Mapping[str, Manifest]
    claims: tuple[NodeClaim, ...]
    pod_manifests: tuple[Manifest, ...] = ()
    unreadable: Mapping[str, str] = field(default_factory=dict)  # node -> why it cannot be a candidate
    skipped: tuple[snap.Skipped, ...] = ()

    def managed(self, name: str) -> ManagedNode | None:
        return next((n for n in self.input.nodes if n.name == name), None)


_RECORDED = "\0recorded"  # stands for the pods a claim record says the node had


@dataclass
class PodEventTracker:
    """When pods last arrived on or left each node, as far as successive snapshots can tell."""

    last_event: dict[str, float] = field(default_factory=dict)
    _present: dict[str, frozenset[str]] = field(default_factory=dict)
    _terminating: dict[str, frozenset[str]] = field(default_factory=dict)

    def observe(
        self, node: str, pods: Sequence[Manifest], now: float, recorded: NodeClaim | None = None
    ) -> float | None:
        """Record this pass's pods of `node`; returns the node's last pod event time (None: none known).

        `recorded` is the node's claim: a tracker that has not seen the node yet (a cold container) starts
        from the claim's `last_pod_event_at`, and when the claim says the node had pods and none are left,
        they left since then (the moment is now).
        """
        moments: list[float] = []
        if node not in self._present and recorded is not None:
            if recorded.last_pod_event_at is not None:
                self.last_event[node] = recorded.last_pod_event_at
            if recorded.had_pods:
                self._present[node] = frozenset({_RECORDED})
        present: set[str] = set()
        terminating: set[str] = set()
        for manifest in pods:
            meta = manifest.get("metadata") or {}
            if _is_daemon_or_mirror(manifest) or (manifest.get("status") or {}).get("phase") in (
                "Succeeded",
                "Failed",
            ):
                continue
            uid = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
            present.add(uid)
            deleted_at = parse_timestamp(meta.get("deletionTimestamp"))
            if deleted_at is not None:
                terminating.add(uid)
                grace = meta.get("deletionGracePeriodSeconds")
                if not isinstance(grace, int | float):
                    grace = (manifest.get("spec") or {}).get("terminationGracePeriodSeconds")
                grace = float(grace) if isinstance(grace, int | float) else 30.0
                moments.append(min(deleted_at - grace, now))
            else:
                bound = _bound_at(manifest)
                if bound is not None:
                    moments.append(bound)
        vanished = self._present.get(node, frozenset()) - present
        if _RECORDED in vanished and present:
            vanished -= {_RECORDED}  # pods still there: nothing is known to have left
        if vanished - self._terminating.get(node, frozenset()):
            moments.append(now)  # left between two passes without being seen terminating
        self._present[node] = frozenset(present)
        self._terminating[node] = frozenset(terminating)
        if moments:
            self.last_event[node] = max(self.last_event.get(node, moments[0]), *moments)
        return self.last_event.get(node)

    def has_pods(self, node: str) -> bool:
        """Whether the last observation of `node` saw pods on it (DaemonSet and mirror pods aside)."""
        return bool(self._present.get(node, frozenset()) - {_RECORDED})

    def forget_except(self, nodes: Iterable[str]) -> None:
        keep = set(nodes)
        for table in (self.last_event, self._present, self._terminating):
            for name in [n for n in table if n not in keep]:
                del table[name]


def _name(obj: Manifest) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _is_daemon_or_mirror(manifest: Manifest) -> bool:
    meta = manifest.get("metadata") or {}
    if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
        return True
    return any(
        ref.get("kind") == "DaemonSet"
        for ref in meta.get("ownerReferences") or ()
        if isinstance(ref, Mapping)
    )


def _bound_at(manifest: Manifest) -> float | None:
    status = manifest.get("status") or {}
    for condition in status.get("conditions") or ():
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "True"
        ):
            moment = parse_timestamp(condition.get("lastTransitionTime"))
            if moment is not None:
                return moment
    return parse_timestamp(status.get("startTime")) or parse_timestamp(
        (manifest.get("metadata") or {}).get("creationTimestamp")
    )


def pdb_view(manifest: Manifest) -> PdbView | None:
    """A policy/v1 PodDisruptionBudget as the planner sees it (None: a PDB without selector selects nothing)."""
    meta = manifest.get("metadata") or {}
    spec = manifest.get("spec") or {}
    selector = spec.get("selector")
    if not isinstance(selector, Mapping):
        return None
    expressions = tuple(
        Requirement(
            str(e.get("key")), cast(Operator, e.get("operator")), tuple(str(v) for v in e.get("values") or ())
        )
        for e in selector.get("matchExpressions") or ()
        if isinstance(e, Mapping)
    )
    labels = tuple(sorted((str(k), str(v)) for k, v in (selector.get("matchLabels") or {}).items()))
    allowed = (manifest.get("status") or {}).get("disruptionsAllowed")
    return PdbView(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        selector=LabelSelector(labels, expressions),
        disruptions_allowed=int(allowed) if isinstance(allowed, int) and not isinstance(allowed, bool) else 0,
    )


def _price(claim: NodeClaim, labels: Mapping[str, str], catalog: Catalog) -> float:
    if claim.price is not None:
        return claim.price
    instance_type = catalog.get(claim.instance_type or labels.get(wk.INSTANCE_TYPE, ""))
    if instance_type is None:
        return 0.0
    zone = claim.zone or labels.get(wk.ZONE)
    capacity = claim.capacity_type or labels.get(wk.CAPACITY_TYPE)
    prices = [o.price for o in instance_type.offerings if o.zone == zone and o.capacity_type == capacity]
    return min(prices) if prices else 0.0


def take_snapshot(
    cluster: Cluster,
    claims: ClaimStore,
    offerings: OfferingAvailability,
    catalog: Catalog,
    config: ClusterConfig,
    now: float,
    *,
    images: ImageResolver | None = None,
    pod_events: PodEventTracker | None = None,
    started: Iterable[str] = (),
    replacements: Iterable[str] = (),
) -> Snapshot:
    """Read the cluster once and build the planner's input (see the module docstring).

    `started`: nodes this caller started a disruption for; `replacements`: claim ids it launched as
    replacements (their nodes count as nominated).
    """
    node_manifests = {
        _name(n)[1]: n for n in cluster.list_nodes()
    }  # nodes before pods: never over-count room
    pod_manifests = tuple(cluster.list_pods())
    pdbs = tuple(v for v in (pdb_view(p) for p in cluster.list_pdbs()) if v is not None)
    daemonsets, ds_skipped = snap.daemonset_pods(cluster.list_daemonsets())
    all_claims = claims.list()
    parsed = snap.PodCache()  # a warm container re-parses only the pods that changed (`snapshot.PodCache`)
    parsed.retain(pod_manifests)
    bound, bound_skipped = snap.bound_pods(pod_manifests, parsed)
    pending, pending_skipped = snap.pending_pods(pod_manifests, parsed)
    existing, node_skipped = snap.existing_nodes(node_manifests.values(), bound, config)
    by_instance = {c.instance_id: c for c in all_claims if c.instance_id}
    unreadable: dict[str, str] = {}
    for skipped in bound_skipped:
        bound_to = next(
            (
                str((m.get("spec") or {}).get("nodeName"))
                for m in pod_manifests
                if _name(m) == (skipped.namespace, skipped.name)
            ),
            "",
        )
        unreadable.setdefault(
            bound_to, f"pod {skipped.namespace}/{skipped.name} on it cannot be read: {skipped.reason}"
        )
    pods_by_node: dict[str, list[Manifest]] = {}
    for manifest in pod_manifests:
        node_name = (manifest.get("spec") or {}).get("nodeName")
        if node_name:
            pods_by_node.setdefault(str(node_name), []).append(manifest)
    nominated = {
        str((p.get("status") or {}).get("nominatedNodeName"))
        for p in pod_manifests
        if (p.get("status") or {}).get("nominatedNodeName")
    }
    started_set, replacement_ids = set(started), set(replacements)
    for surge in all_claims:  # what a cold container's memory lacks: surges under way, from their claims
        if surge.replaces and surge.state != "deleting" and now - surge.created_at <= STARTED_TTL_S:
            started_set.update(surge.replaces)
            replacement_ids.add(surge.id)
    tracker = pod_events if pod_events is not None else PodEventTracker()

    managed: list[ManagedNode] = []
    unmanaged: list[ExistingNode] = []
    for node in existing:
        manifest = node_manifests[node.name]
        claim = by_instance.get(instance_id_of(snap.provider_id_of(manifest)) or "")
        if claim is None or node.name in unreadable:
            if claim is None:
                unreadable.pop(node.name, None)  # not ours: nothing to explain
            unmanaged.append(node)
            continue
        meta = manifest.get("metadata") or {}
        annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
        labels = dict(node.labels)
        initialized_at = claim.initialized_at
        if initialized_at is None and claim.state == "initialized":
            initialized_at = claim.registered_at or claim.launched_at or claim.created_at
        disrupting = (
            any(t.key == DISRUPTED_TAINT_KEY for t in node.taints)
            or claim.state == "deleting"
            or meta.get("deletionTimestamp") is not None
            or node.name in started_set
        )
        last_event = tracker.observe(node.name, pods_by_node.get(node.name, ()), now, claim)
        managed.append(
            ManagedNode(
                node=node,
                instance_id=claim.instance_id or "",
                nodepool=claim.nodepool,
                instance_type=claim.instance_type or labels.get(wk.INSTANCE_TYPE, ""),
                zone=claim.zone or labels.get(wk.ZONE, ""),
                capacity_type=claim.capacity_type or labels.get(wk.CAPACITY_TYPE, ""),
                price=_price(claim, labels, catalog),
                created_at=claim.launched_at or claim.created_at,
                claim_id=claim.id,
                initialized_at=initialized_at,
                last_pod_event_at=last_event,
                annotations=tuple(sorted(annotations.items())),
                ready=snap.node_ready(manifest),
                disrupting=disrupting,
                nominated=node.name in nominated or claim.id in replacement_ids,
                nodepool_hash=claim.nodepool_hash or annotations.get(NODEPOOL_HASH_ANNOTATION),
                nodeclass_hash=claim.nodeclass_hash or annotations.get(NODECLASS_HASH_ANNOTATION),
                image_id=claim.image_id,
            )
        )
    tracker.forget_except(n.name for n in managed)
    current_images: dict[str, frozenset[str]] = {}
    if images is not None:
        for node_class in config.node_classes:
            current_images[node_class.name] = images.current_images(node_class)
    visible = [snap.provider_id_of(m) for m in node_manifests.values()]
    in_flight = snap.in_flight_nodes(all_claims, visible, catalog, config)
    inp = DisruptionInput(
        now=now,
        config=config,
        nodes=tuple(managed),
        catalog=catalog,
        pending=pending,
        pdbs=pdbs,
        daemonsets=daemonsets,
        unavailable=offerings.unavailable(now),
        unmanaged=tuple(unmanaged),
        in_flight=in_flight,
        current_images=current_images,
    )
    return Snapshot(
        inp,
        node_manifests,
        all_claims,
        pod_manifests,
        unreadable,
        (*ds_skipped, *bound_skipped, *pending_skipped, *node_skipped),
    )


# -- the service --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Started:
    """A disruption this service started (or staged), remembered until its node visibly disrupts or goes."""

    node: str
    execution_name: str
    reason: str
    at: float


@dataclass(frozen=True, slots=True)
class StagedSurge:
    """A decision with several replacements: its executions start once every replacement is initialized."""

    decision: planner.Decision
    claim_ids: tuple[str, ...]
    at: float


@dataclass(frozen=True, slots=True)
class Acted:
    """What became of one decision this pass."""

    decision: planner.Decision
    outcome: str  # "started" | "staged" | "abandoned"
    executions: tuple[StartResult, ...] = ()
    replacement_claims: tuple[str, ...] = ()
    detail: str = ""


@dataclass(frozen=True, slots=True)
class PassReport:
    now: float
    plan: planner.DisruptionPlan
    acted: tuple[Acted, ...]
    pending: planner.Decision | None
    dropped: tuple[tuple[planner.Decision, str], ...] = ()  # consolidation that failed re-validation, and why
    events: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "acted": [
                {
                    "reason": a.decision.reason,
                    "nodes": list(a.decision.node_names),
                    "outcome": a.outcome,
                    "executions": [r.execution_name for r in a.executions if r.started],
                    "replacements": list(a.replacement_claims),
                    "detail": a.detail,
                    "savingsPerHour": a.decision.savings_per_hour,
                }
                for a in self.acted
            ],
            "pending": list(self.pending.node_names) if self.pending else None,
            "dropped": [{"nodes": list(d.node_names), "why": why} for d, why in self.dropped],
            "passedOver": len(self.plan.passed_over),
            "events": self.events,
        }


@dataclass(frozen=True)
class PlannerPorts:
    cluster: Cluster
    claims: ClaimStore
    offerings: OfferingAvailability
    workflow: SurgeWorkflow
    launcher: Launcher
    clock: Clock
    metrics: MetricsSink
    images: ImageResolver | None = None
    lease: Lease | None = None  # with an owner in `run_invocation`: one invocation decides at a time
    conditions: ClaimConditions | None = (
        None  # NodeClaim conditions after each pass (services.claim_conditions)
    )


def event_reason_for(passed_over: str) -> str | None:
    """The Event reason for a passed-over reason: `Unconsolidatable`, `DisruptionBlocked`, or None (transient)."""
    if passed_over.startswith(_TRANSIENT_PREFIXES):
        return None
    if passed_over.startswith(("drifted (", "expired but")):
        return "DisruptionBlocked"
    if any(marker in passed_over for marker in _UNCONSOLIDATABLE_MARKERS):
        return "Unconsolidatable"
    return "DisruptionBlocked"


_NUMBERS = re.compile(r"\d+(?:\.\d+)?")


class DisruptionService:
    """Runs planner passes against the ports (see the module docstring)."""

    def __init__(
        self,
        config: ClusterConfig,
        catalog: Catalog | Callable[[], Catalog],
        ports: PlannerPorts,
        log: Log,
    ) -> None:
        self.config = config
        self._catalog = catalog
        self.ports = ports
        self.log = log
        self.pending: planner.Decision | None = None
        self.started: dict[str, Started] = {}
        self.staged: list[StagedSurge] = []
        self.replacement_claims: dict[str, float] = {}  # claim id -> launched at
        self.pod_events = PodEventTracker()
        self._posted: dict[tuple[str, str], tuple[str, float]] = {}

    # -- one pass -------------------------------------------------------------------------------------------
    def catalog(self) -> Catalog:
        return self._catalog if isinstance(self._catalog, Catalog) else self._catalog()

    def snapshot(self) -> Snapshot:
        now = self.ports.clock.now()
        current = take_snapshot(
            self.ports.cluster,
            self.ports.claims,
            self.ports.offerings,
            self.catalog(),
            self.config,
            now,
            images=self.ports.images,
            pod_events=self.pod_events,
            started=self.started,
            replacements=self.replacement_claims,
        )
        self._forget(current, now)
        return current

    def run_pass(self) -> PassReport:
        """Snapshot, re-validate, plan, act, explain (one disruption controller loop)."""
        current = self.snapshot()
        now = current.input.now
        self._record_pod_events(current)
        acted: list[Acted] = []
        dropped: list[tuple[planner.Decision, str]] = []
        acted.extend(self._progress_staged(current, now))
        if (
            self.pending is not None
            and self.pending.validate_after is not None
            and now >= self.pending.validate_after
        ):
            decision, self.pending = self.pending, None
            verdict = planner.revalidate(decision, current.input)
            if isinstance(verdict, planner.Decision):
                acted.append(self._act(verdict, current, now))
            else:
                dropped.append((decision, verdict))
                self.log.info(
                    "consolidation abandoned on re-validation",
                    extra={"nodes": list(decision.node_names), "why": verdict},
                )
        inp = self._with_started(current.input)
        plan = planner.plan(inp)
        for decision in plan.decisions:
            if decision.reason == planner.UNDERUTILIZED:
                if self.pending is None:
                    self.pending = decision
                    self.log.info(
                        "consolidation decision; acting after re-validation",
                        extra={
                            "nodes": list(decision.node_names),
                            "explanation": decision.explanation,
                            "savings_per_hour": decision.savings_per_hour,
                            "validate_after": decision.validate_after,
                        },
                    )
                continue
            acted.append(self._act(decision, current, now))
        if (
            self.ports.conditions is not None
        ):  # Drifted, Consolidatable, Disrupting (core.disruption.conditions)
            self.ports.conditions.publish(current.claims, inp, {n: s.reason for n, s in self.started.items()})
        events = self._explain(plan, dropped, current, now)
        return PassReport(now, plan, tuple(acted), self.pending, tuple(dropped), events)

    def _record_pod_events(self, current: Snapshot) -> None:
        """Write each node's consolidateAfter clock to its claim when it moved (see `PodEventTracker.observe`).

        A claim changed by someone else since the snapshot is left for the next pass (compare-and-put).
        """
        claims = {c.id: c for c in current.claims}
        for node in current.input.nodes:
            claim = claims.get(node.claim_id or "")
            if claim is None:
                continue
            had_pods = self.pod_events.has_pods(node.name)
            if (claim.last_pod_event_at, claim.had_pods) != (node.last_pod_event_at, had_pods):
                self.ports.claims.compare_and_put(
                    replace(claim, last_pod_event_at=node.last_pod_event_at, had_pods=had_pods)
                )

    # -- acting ---------------------------------------------------------------------------------------------
    def _with_started(self, inp: DisruptionInput) -> DisruptionInput:
        if not self.started:
            return inp
        nodes = tuple(
            replace(n, disrupting=True) if n.name in self.started and not n.disrupting else n
            for n in inp.nodes
        )
        return replace(inp, nodes=nodes)

    def _command(
        self, node: ManagedNode, reason: str, now: float, *, replace_first: bool
    ) -> DisruptionCommand:
        pool = next((p for p in self.config.node_pools if p.name == node.nodepool), None)
        grace = pool.termination_grace_period_seconds if pool is not None else None
        if replace_first:
            # A surge waits for its replacement before tainting: the Taint step starts the pool's
            # terminationGracePeriod then (as Karpenter does), so the wait does not eat into the drain.
            grace = None
        return DisruptionCommand(
            instance_id=node.instance_id,
            reason=reason,
            node_name=node.name,
            claim_id=node.claim_id,
            replace=replace_first,
            deadline_epoch=now + grace if grace is not None else None,
            requested_at=now,
        )

    def _act(self, decision: planner.Decision, current: Snapshot, now: float) -> Acted:
        self.log.info(
            "disruption decision",
            extra={
                "reason": decision.reason,
                "nodes": list(decision.node_names),
                "explanation": decision.explanation,
                "savings_per_hour": decision.savings_per_hour,
                "forceful": decision.forceful,
                "replacements": [
                    f"{c.instance_type}/{c.capacity_type}/{c.zone}" for c in decision.replacements
                ],
            },
        )
        dims = {telemetry.DIM_REASON: decision.reason}
        claim_ids: list[str] = []
        catalog = current.input.catalog
        generation = "replace-" + "-".join(sorted(decision.node_names))
        for claim_plan in decision.replacements:
            request = self._with_hashes(launch_request(claim_plan, catalog, self.config, now, generation))
            request = replace(request, claim=replace(request.claim, replaces=decision.node_names))
            result = self.ports.launcher.launch(request, now)
            if result.status == "failed":
                why = f"replacement {claim_plan.instance_type} could not be launched: {result.reason or 'no capacity'}"
                self.log.warning(
                    "disruption abandoned", extra={"nodes": list(decision.node_names), "why": why}
                )
                for node in decision.nodes:
                    self._post(
                        current,
                        node.name,
                        "DisruptionBlocked",
                        f"{decision.reason}: {why}",
                        now,
                        warning=True,
                    )
                return Acted(decision, "abandoned", replacement_claims=tuple(claim_ids), detail=why)
            claim_ids.append(result.claim_id)
            self.replacement_claims[result.claim_id] = now
        self.ports.metrics.emit(telemetry.DISRUPTION_DECISIONS, 1.0, "Count", dims)
        if decision.savings_per_hour > 0:
            self.ports.metrics.emit(telemetry.SAVINGS_PER_HOUR, decision.savings_per_hour, "None", dims)
        if len(claim_ids) > 1:
            self.staged.append(StagedSurge(decision, tuple(claim_ids), now))
            for node in decision.nodes:
                self.started[node.name] = Started(node.name, "", decision.reason, now)
            return Acted(
                decision,
                "staged",
                replacement_claims=tuple(claim_ids),
                detail="waiting for every replacement to be initialized",
            )
        results = self._start_all(decision, current, now, claim_ids[0] if claim_ids else None)
        return Acted(decision, "started", results, tuple(claim_ids))

    def _with_hashes(self, request: LaunchRequest) -> LaunchRequest:
        """The claim records the pool and node-class hashes it is built from (drift detection later)."""
        try:
            pool = self.config.pool(request.claim.nodepool)
            pool_hash, class_hash = claim_hashes(pool, self.config.node_class_of(pool))
        except KeyError:
            return request
        claim = replace(request.claim, nodepool_hash=pool_hash, nodeclass_hash=class_hash)
        return replace(request, claim=claim)

    def _start_all(
        self, decision: planner.Decision, current: Snapshot, now: float, replacement: str | None
    ) -> tuple[StartResult, ...]:
        results: list[StartResult] = []
        for node in decision.nodes:
            command = self._command(node, decision.reason, now, replace_first=replacement is not None)
            if replacement is None:
                result = self.ports.workflow.start(command)
            else:
                result = self.ports.workflow.start_surge(command, replacement, now + REPLACEMENT_TIMEOUT_S)
            results.append(result)
            self.started[node.name] = Started(node.name, result.execution_name, decision.reason, now)
            if result.started:
                self._post(
                    current,
                    node.name,
                    "Disrupting",
                    f"Disrupting node: {decision.reason}: {decision.explanation}",
                    now,
                )
        return tuple(results)

    def _progress_staged(self, current: Snapshot, now: float) -> list[Acted]:
        acted: list[Acted] = []
        waiting: list[StagedSurge] = []
        claims = {c.id: c for c in current.claims}
        for staged in self.staged:
            states = [claims[i].state if i in claims else None for i in staged.claim_ids]
            if any(s is None for s in states) or now - staged.at > REPLACEMENT_TIMEOUT_S:
                why = (
                    "a replacement was forgotten (its launch failed)"
                    if any(s is None for s in states)
                    else f"replacements not initialized after {REPLACEMENT_TIMEOUT_S:.0f} s"
                )
                for node in staged.decision.nodes:
                    self.started.pop(node.name, None)
                self.log.warning(
                    "disruption abandoned", extra={"nodes": list(staged.decision.node_names), "why": why}
                )
                acted.append(
                    Acted(staged.decision, "abandoned", replacement_claims=staged.claim_ids, detail=why)
                )
            elif all(s == "initialized" for s in states):
                fresh = tuple(
                    n for n in (current.managed(x.name) for x in staged.decision.nodes) if n is not None
                )
                decision = replace(staged.decision, nodes=fresh)
                results = self._start_all(decision, current, now, staged.claim_ids[0])
                acted.append(Acted(decision, "started", results, staged.claim_ids))
            else:
                waiting.append(staged)
        self.staged = waiting
        return acted

    def _forget(self, current: Snapshot, now: float) -> None:
        """Drop memories of nodes that are gone, or whose start never became visible."""
        for name, started in list(self.started.items()):
            node = current.managed(name)
            staged = any(name in s.decision.node_names for s in self.staged)
            if node is None or (not staged and now - started.at > STARTED_TTL_S and not _tainted(node)):
                del self.started[name]
        live = {c.id for c in current.claims}
        for claim_id, at in list(self.replacement_claims.items()):
            if claim_id not in live or now - at > STARTED_TTL_S + REPLACEMENT_TIMEOUT_S:
                del self.replacement_claims[claim_id]

    # -- explaining -----------------------------------------------------------------------------------------
    def _post(
        self, current: Snapshot, node: str, reason: str, message: str, now: float, *, warning: bool = False
    ) -> bool:
        key = (node, reason)
        normal = _NUMBERS.sub("#", message)
        previous = self._posted.get(key)
        if previous is not None and previous[0] == normal and now - previous[1] < EVENT_REPEAT_S:
            return False
        manifest = current.node_manifests.get(node) or {}
        uid = str((manifest.get("metadata") or {}).get("uid") or "")
        self.ports.cluster.post_event(
            KubeEvent(
                ObjectRef(kind="Node", name=node, uid=uid),
                reason,
                message,
                "Warning" if warning else "Normal",
            )
        )
        self._posted[key] = (normal, now)
        return True

    def _explain(
        self,
        plan: planner.DisruptionPlan,
        dropped: Sequence[tuple[planner.Decision, str]],
        current: Snapshot,
        now: float,
    ) -> int:
        posted = 0
        for skipped in plan.passed_over:
            self.log.debug("node passed over", extra={"node": skipped.node, "why": skipped.reason})
            reason = event_reason_for(skipped.reason)
            if reason is not None:
                posted += self._post(current, skipped.node, reason, skipped.reason, now)
        for decision, why in dropped:
            for node in decision.node_names:
                posted += self._post(current, node, "Unconsolidatable", f"re-validation failed: {why}", now)
        for node, why in sorted(current.unreadable.items()):
            posted += self._post(current, node, "DisruptionBlocked", why, now, warning=True)
        return posted


def _tainted(node: ManagedNode) -> bool:
    return any(t.key == DISRUPTED_TAINT_KEY for t in node.node.taints)


def describe_decision(decision: planner.Decision) -> str:
    """One line for people: reason, nodes, replacements and the saving."""
    parts = [f"{decision.reason}: {decision.explanation}"]
    if decision.replacements:
        parts.append(
            "replacements first: "
            + ", ".join(
                f"{c.instance_type} ({c.capacity_type}, {c.zone}, ${c.price_per_hour:.4f}/h)"
                for c in decision.replacements
            )
        )
    if decision.savings_per_hour and "saving $" not in decision.explanation:
        parts.append(f"saves ${decision.savings_per_hour:.4f}/h")
    return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class InvocationReport:
    """What one Lambda invocation did (the handler returns `to_dict()`)."""

    passes: int
    started: tuple[str, ...]
    pending: tuple[str, ...]
    stopped: str = "deadline"  # "quiet": nothing due soon; "lease-held": another invocation is deciding

    def to_dict(self) -> dict[str, Any]:
        return {
            "passes": self.passes,
            "started": list(self.started),
            "pending": list(self.pending),
            "stopped": self.stopped,
        }


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
) -> InvocationReport:
    """Pass, then pass again when `next_pass_at` asks and the wait ends `margin_s` before the deadline.

    The invocation stops as soon as a pass leaves nothing that time alone could change ("quiet"), so a quiet
    cluster costs one pass a minute, not a minute of Lambda time. A consolidation awaiting re-validation or
    an emptiness wait keeps the invocation (and the pending decision, in memory) alive. With a lease port
    and an `owner`, every pass first takes or renews the `planner` lease; while another invocation holds it
    this one stops ("lease-held") without deciding anything, and the lease is released at the end.
    """
    clock = service.ports.clock
    lease = service.ports.lease if owner else None
    passes, longest = 0, 0.0
    started: list[str] = []
    last: PassReport | None = None
    stopped = "deadline"
    try:
        while True:  # at least one pass, then as many as are due and fit
            if lease is not None and not lease.acquire(LEASE_NAME, owner, clock.now(), LEASE_TTL_S):
                stopped = "lease-held"
                break
            began = clock.now()
            last = service.run_pass()
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
    return InvocationReport(passes, tuple(started), pending, stopped)
