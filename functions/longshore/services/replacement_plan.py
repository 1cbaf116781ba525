"""The plan of a surge replacement: which pods need a home, and the claims that give them one.

Theory of operation. `services.replacement.ClusterReplacementLauncher` (idempotency and launching) asks
`ReplacementPlanner` for a plan, and again with the offerings its launch found empty when a launch fails.
The planner reads the cluster once per launch (`snapshot`) and plans on what it read (`plan`), by rules 2
and 3 of `services.replacement`'s list:

2. *Which pods need a home.* The pods bound to the node that the drain will evict: not DaemonSet, mirror,
   terminal or terminating pods, nor pods that tolerate `karpenter.sh/disrupted` (the drain's own
   `core.drain.left_reason`). They are turned back into pending pods.
3. *Plan on fresh capacity.* The packing engine solves those pods against *sealed* existing nodes: every other
   node of the cluster with its pods (so zone spread, affinity and anti-affinity see where the workload
   runs) but no free room at all, so the plan cannot "place" the pods on a node that exists and the
   replacement really can take them. The node's own pool is solved alone first; what it cannot take (limits,
   no fitting type, capacity errors) is solved against the other pools in weight order, with the first
   pass's claims sealed in as well. When the own pool could not take every pod, the pods are also solved as
   one batch over all pools by weight (what the provisioner would do), and that plan wins if it leaves fewer
   pods without a home, or needs fewer nodes, or costs less (one bigger node rather than a split). Pool
   limits count every node and in-flight claim (the node being replaced is still there: a surge needs room
   for one more node). Static pools (`replicas`) are left out, as the provisioner does. With a
   `PlacementGroups` port the node classes' placement groups are looked up as the provisioner does
   (`services.placement_groups`), so a claim is offered its group's partitions; a pool whose node class's
   group cannot be looked up now offers no claim (a pod that asks for a partition is then refused a home,
   and the disruption rolls back, rather than planned with the key open onto a node outside the group).

Empty nodes (decision). A node with no pod to move needs a replacement only to keep the pool's node count, so
one is launched only for the reasons in `CAPACITY_PRESERVING_REASONS` (rotation, expiry, drift: the node is
swapped, not removed): a node of the same pool, of the cheapest type the pool allows that fits its DaemonSets.
For any other reason (a rebalance recommendation, emptiness, consolidation, manual) an empty node gets no
replacement: `ReplacementUnavailableError` says so and the disruption rolls back; such disruptions are meant
to be started with `replace: false` (an empty node has nothing to surge for).

Volumes (decision). The pods to move carry their volumes' zone (`services.volume_topology.apply_moving`). A pod
whose claim, volume or StorageClass cannot be found has no known zone: no replacement is planned for its node
(`ReplacementUnavailableError`, the disruption rolls back), as the disruption planner keeps such a node out of
disruption, rather than a surge in a zone where the volume may not attach.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from longshore.core import labels as wk
from longshore.core.catalog import Catalog
from longshore.core.claims import NodeClaim, instance_id_of
from longshore.core.commands import DisruptionReason
from longshore.core.drain import drain_pod_from_manifest, left_reason
from longshore.core.model import ClusterConfig, NodePool
from longshore.core.pods import Pod
from longshore.core.resources import EMPTY, Resources
from longshore.core.scheduling import ClaimPlan, ExistingNode, Plan, SchedulingInput, solve
from longshore.core.taints import Toleration
from longshore.ports.cloud import PlacementGroups
from longshore.ports.kube import Cluster, Manifest
from longshore.ports.store import ClaimStore
from longshore.ports.workflow import ReplacementUnavailableError
from longshore.services import snapshot, volume_topology
from longshore.services.placement_groups import GroupLookup, lookup

log = logging.getLogger(__name__)

#: Reasons for which an empty node is replaced too (the node is swapped, so the pool keeps its node count).
CAPACITY_PRESERVING_REASONS: Final = frozenset(
    {DisruptionReason.ROTATION, DisruptionReason.EXPIRED, DisruptionReason.DRIFTED}
)
#: The namespace of the stand-in pod that sizes an empty node's replacement (never created in the cluster).
PLACEHOLDER_NAMESPACE: Final = "longshore-system"

CatalogSource = Callable[[], Catalog]


@dataclass(frozen=True, slots=True)
class ReplacementSource:
    """The node being replaced, as far as the claim and the node object tell."""

    subject: str  # for messages: "node <name> (instance <id>)"
    key: str  # claim id, else node name, else instance id: what the replacement's id derives from
    pool: str | None
    node_name: str | None

    @staticmethod
    def of(claim: NodeClaim | None, node: Manifest | None) -> ReplacementSource:
        metadata = (node or {}).get("metadata") or {}
        node_name = str(metadata.get("name") or "") or (claim.node_name if claim else None) or None
        labels = metadata.get("labels") or {}
        pool = (claim.nodepool if claim else None) or labels.get(wk.NODEPOOL) or None
        instance = claim.instance_id if claim else None
        if instance is None and node is not None:
            instance = instance_id_of(snapshot.provider_id_of(node))
        key = (claim.id if claim else None) or node_name or instance
        if key is None:
            raise ReplacementUnavailableError(
                "cannot launch a replacement: neither a node claim nor a node was given to replace"
            )
        if node_name and instance:
            subject = f"node {node_name} (instance {instance})"
        elif node_name:
            subject = f"node {node_name}"
        else:
            subject = f"instance {instance}" if instance else f"node claim {key}"
        return ReplacementSource(subject, key, str(pool) if pool else None, node_name)


@dataclass(frozen=True, slots=True)
class ReplacementPlan:
    """What a replacement needs: the claims to launch (primary first) and the pods nothing can take."""

    claims: tuple[ClaimPlan, ...]
    moved: tuple[str, ...]  # keys of the pods that need a new home (none for an empty node)
    unschedulable: tuple[tuple[str, str], ...] = ()  # (pod key, why)

    @property
    def empty(self) -> bool:
        return not self.moved


@dataclass(frozen=True, slots=True)
class PlanningState:
    """The cluster as the replacement plan sees it, read once per call."""

    moved: tuple[Pod, ...]
    sealed: tuple[ExistingNode, ...]
    daemonsets: tuple[Pod, ...]
    usage: Mapping[str, Resources]
    catalog: Catalog
    room: tuple[ExistingNode, ...] = ()  # nodes pods can move onto now, with their free room (`homeless`)
    groups: GroupLookup = field(
        default_factory=GroupLookup
    )  # the node classes' placement groups (`services.placement_groups`)


def _sealed(node: ExistingNode) -> ExistingNode:
    """The node with its pods (for topology) but no room: nothing can be planned onto it."""
    return replace(node, allocatable=EMPTY, capacity=node.counted_capacity(), deleting=False, in_flight=False)


def _as_pending(pod: Pod) -> Pod:
    return replace(pod, node_name="", nominated_node_name="", phase="Pending", unschedulable=True)


def _planned_as_node(claim: ClaimPlan, pods: Mapping[str, Pod]) -> ExistingNode:
    """A first-pass claim, sealed, so the second pass sees where those pods will run."""
    labels = dict(claim.requirements.single_values())
    labels.update(dict(claim.labels))
    labels.update(
        {
            wk.NODEPOOL: claim.nodepool,
            wk.ZONE: claim.zone,
            wk.CAPACITY_TYPE: claim.capacity_type,
            wk.INSTANCE_TYPE: claim.instance_type,
            wk.HOSTNAME: claim.name,
        }
    )
    bound = tuple(replace(pods[key], node_name=claim.name) for key in claim.pods if key in pods)
    return ExistingNode(name=claim.name, labels=tuple(sorted(labels.items())), allocatable=EMPTY, pods=bound)


def _primary_first(claims: Iterable[ClaimPlan]) -> tuple[ClaimPlan, ...]:
    """The claim with the most pods first (it is the one the workflow waits for), then by price."""
    return tuple(sorted(claims, key=lambda c: (-len(c.pods), c.price_per_hour, c.name)))


def _by_reason(rows: Sequence[tuple[str, str]], shown: int = 3) -> str:
    """`pods a, b: why; pod c: why2`, pods grouped by reason (at most `shown` pod names per reason)."""
    grouped: dict[str, list[str]] = {}
    for key, why in rows:
        grouped.setdefault(why, []).append(key)
    parts = []
    for why, keys in grouped.items():
        names = ", ".join(keys[:shown]) + (f" and {len(keys) - shown} more" if len(keys) > shown else "")
        parts.append(f"{'pods' if len(keys) > 1 else 'pod'} {names}: {why}")
    return "; ".join(parts)


class ReplacementPlanner:
    """Plans a node's replacement on the packing engine (see the module doc); launches nothing."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        store: ClaimStore,
        config: ClusterConfig,
        catalog: CatalogSource,
        placement_groups: PlacementGroups | None = None,
    ) -> None:
        self._placement_groups = placement_groups
        self._cluster = cluster
        self._store = store
        self._config = config
        self._catalog = catalog

    def snapshot(
        self, source: ReplacementSource, now: float, exclude_claim: str | None = None
    ) -> PlanningState:
        catalog = self._catalog()
        nodes = self._cluster.list_nodes()  # nodes before pods, as the provisioner reads them
        manifests = self._cluster.list_pods()
        moved, refused = volume_topology.apply_moving(
            self._moved_pods(manifests, source.node_name, now), self._cluster
        )
        if refused:  # the zone its volume needs is unknown: a surge could land where the volume cannot attach
            pod, reason = refused[0]
            raise ReplacementUnavailableError(
                f"no replacement for {source.subject}: pod {pod.key} cannot be moved, {reason}"
            )
        bound, _ = snapshot.bound_pods(manifests)
        existing, _ = snapshot.existing_nodes(nodes, bound, self._config)
        claims = tuple(c for c in self._store.list() if c.id != exclude_claim)  # a retry's own claim
        in_flight = snapshot.in_flight_nodes(
            claims, (snapshot.provider_id_of(n) for n in nodes), catalog, self._config
        )
        counting = SchedulingInput(
            pods=(),
            pools=self._config.node_pools,
            node_classes=self._config.node_classes,
            catalog=catalog,
            nodes=existing,
            in_flight=in_flight,
        )
        usage = {pool.name: counting.usage_of(pool.name) for pool in self._config.node_pools}
        daemonsets, _ = snapshot.daemonset_pods(self._cluster.list_daemonsets())
        sealed = tuple(_sealed(n) for n in existing if n.name != source.node_name)
        leaving = {name for c in claims if c.state != "deleting" for name in c.replaces}
        room = tuple(
            n
            for n in existing
            if n.name != source.node_name
            and n.name not in leaving
            and n.initialized
            and not (n.deleting or n.in_flight)
        )
        groups = lookup(self._placement_groups, self._config)
        return PlanningState(moved, sealed, daemonsets, usage, catalog, room, groups)

    def homeless(self, state: PlanningState) -> tuple[Pod, ...]:
        """The pods the drain would evict now that no node takes as things are: only initialized nodes that
        are not being deleted nor replaced by a surge (a live claim's `replaces`), with their free room as
        the pods bound to them leave it, and no new claim (rule 6 of `services.replacement`)."""
        if not state.moved:
            return ()
        placed = solve(
            SchedulingInput(
                pods=state.moved,
                pools=(),
                node_classes=self._config.node_classes,
                catalog=state.catalog,
                nodes=state.room,
                daemonsets=state.daemonsets,
                settings=self._config.settings,
            )
        )
        left = {key for key, _ in placed.unschedulable}
        return tuple(p for p in state.moved if p.key in left)

    @staticmethod
    def _moved_pods(manifests: Sequence[Manifest], node_name: str | None, now: float) -> tuple[Pod, ...]:
        """The pods on `node_name` the drain will evict, as pending pods."""
        if not node_name:
            return ()
        moved: list[Pod] = []
        for manifest in manifests:
            if (manifest.get("spec") or {}).get("nodeName") != node_name:
                continue
            parsed = snapshot.parse_pod(manifest)
            if isinstance(parsed, snapshot.Skipped):
                log.warning(
                    "a pod of the node being replaced cannot be read; it is not planned for",
                    extra={"pod": f"{parsed.namespace}/{parsed.name}", "why": parsed.reason},
                )
                continue
            if parsed.deleting or parsed.is_terminal or parsed.is_daemonset or parsed.is_mirror:
                continue
            if left_reason(drain_pod_from_manifest(manifest), now) is not None:
                continue  # the drain leaves it (it tolerates karpenter.sh/disrupted)
            moved.append(_as_pending(parsed))
        return tuple(moved)

    def _dynamic_pool(self, name: str | None) -> NodePool | None:
        if name is None:
            return None
        try:
            pool = self._config.pool(name)
        except KeyError:
            return None
        return pool if pool.replicas is None else None

    def _solve(
        self,
        pods: tuple[Pod, ...],
        pools: tuple[NodePool, ...],
        state: PlanningState,
        unavailable: frozenset[tuple[str, str, str]],
        nodes: tuple[ExistingNode, ...],
    ) -> Plan:
        return solve(
            SchedulingInput(
                pods=pods,
                pools=tuple(p for p in pools if p.node_class not in state.groups.unresolved),
                node_classes=self._config.node_classes,
                catalog=state.catalog,
                nodes=nodes,
                daemonsets=state.daemonsets,
                unavailable=unavailable,
                pool_usage=state.usage,
                settings=self._config.settings,
                placement_groups=state.groups.found,
            )
        )

    def plan(
        self,
        source: ReplacementSource,
        reason: str,
        state: PlanningState,
        unavailable: frozenset[tuple[str, str, str]],
        failures: list[str] | None = None,
    ) -> ReplacementPlan:
        already = list(failures or ())
        own = self._dynamic_pool(source.pool)
        if not state.moved:
            return self._plan_empty(source, reason, own, state, unavailable, already)
        claims, unschedulable = self._own_pool_first(source, own, state, unavailable)
        if own is not None and (unschedulable or any(c.nodepool != own.name for c in claims)):
            # The own pool could not take every pod: a plan over all pools by weight, as the provisioner would
            # make it, may need fewer nodes than the own pool's share plus the rest elsewhere.
            batch = self._solve(state.moved, self._dynamic_pools(), state, unavailable, state.sealed)
            if (len(batch.unschedulable), len(batch.new_claims), batch.cost_per_hour) < (
                len(unschedulable),
                len(claims),
                sum(c.price_per_hour for c in claims),
            ):
                claims, unschedulable = list(batch.new_claims), dict(batch.unschedulable)
        rows = tuple((p.key, unschedulable[p.key]) for p in state.moved if p.key in unschedulable)
        if not claims:
            raise ReplacementUnavailableError(
                f"no replacement for {source.subject} ({reason}): "
                + "; ".join([*already, f"no node pool can take its pods: {_by_reason(rows)}"])
            )
        return ReplacementPlan(_primary_first(claims), tuple(p.key for p in state.moved), rows)

    def _dynamic_pools(self, but: NodePool | None = None) -> tuple[NodePool, ...]:
        return tuple(
            p for p in self._config.node_pools if p.replicas is None and (but is None or p.name != but.name)
        )

    def _own_pool_first(
        self,
        source: ReplacementSource,
        own: NodePool | None,
        state: PlanningState,
        unavailable: frozenset[tuple[str, str, str]],
    ) -> tuple[list[ClaimPlan], dict[str, str]]:
        """The node's own pool alone, then what it cannot take on the other pools (by weight)."""
        pods_by_key = {p.key: p for p in state.moved}
        claims: list[ClaimPlan] = []
        unschedulable: dict[str, str] = {}
        remaining = state.moved
        sealed = state.sealed
        if own is not None:
            first = self._solve(remaining, (own,), state, unavailable, sealed)
            claims.extend(first.new_claims)
            unschedulable = dict(first.unschedulable)
            remaining = tuple(p for p in remaining if p.key in unschedulable)
            sealed = (*sealed, *(_planned_as_node(c, pods_by_key) for c in first.new_claims))
        others = self._dynamic_pools(but=own)
        if remaining and others:
            second = self._solve(remaining, others, state, unavailable, sealed)
            claims.extend(second.new_claims)
            for key, why in second.unschedulable:
                unschedulable[key] = f"{unschedulable[key]}; {why}" if key in unschedulable else why
            placed = {key for c in second.new_claims for key in c.pods}
            unschedulable = {k: v for k, v in unschedulable.items() if k not in placed}
        elif remaining and own is None:
            why = (
                f"node pool {source.pool!r} is not in the cluster config"
                if source.pool
                else "it has no node pool"
            )
            unschedulable = {p.key: f"{why}, and no other node pool is configured" for p in remaining}
        return claims, unschedulable

    def _plan_empty(
        self,
        source: ReplacementSource,
        reason: str,
        own: NodePool | None,
        state: PlanningState,
        unavailable: frozenset[tuple[str, str, str]],
        already: list[str],
    ) -> ReplacementPlan:
        if reason not in CAPACITY_PRESERVING_REASONS:
            kept = ", ".join(sorted(CAPACITY_PRESERVING_REASONS))
            raise ReplacementUnavailableError(
                f"{source.subject} runs no pods that need a new node, and a {reason} disruption launches a "
                f"replacement only for nodes with pods (empty nodes are replaced only for: {kept}); "
                'start it with "replace": false'
            )
        if own is None:
            raise ReplacementUnavailableError(
                f"no replacement for empty {source.subject} ({reason}): its node pool "
                f"{source.pool!r} is not a provisioning pool of the cluster config"
            )
        placeholder = Pod(
            namespace=PLACEHOLDER_NAMESPACE,
            name=f"replacement-for-{source.key}",
            node_selector=((wk.NODEPOOL, own.name),),
            tolerations=(Toleration(operator="Exists"),),
            unschedulable=True,
        )
        planned = self._solve((placeholder,), (own,), state, unavailable, ())
        if not planned.new_claims:
            why = "; ".join(w for _, w in planned.unschedulable) or "no instance type is offered"
            raise ReplacementUnavailableError(
                f"no replacement for empty {source.subject} ({reason}): " + "; ".join([*already, why])
            )
        cheapest = min(planned.new_claims, key=lambda c: c.price_per_hour)
        return ReplacementPlan((cheapest,), ())
