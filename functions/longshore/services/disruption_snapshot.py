"""The disruption planner's snapshot: one consistent read of the cluster, as `core.disruption` needs it.

Theory of operation (`take_snapshot`, used by every planner pass and by `longshore explain`/`status`/`rotate`):

- Nodes are read before pods, so room is never over-counted. Nodes are joined with their NodeClaims by
  instance id (from `spec.providerID`); a node without a claim is not ours and is only a destination
  (`unmanaged`).
- Pods are read with `core.pod_manifest.pod_from_manifest` (through `snapshot.PodCache`) and bound to their nodes.
  A node with a pod that cannot be read is never a candidate: it is unmanaged for this pass and its reason is
  in `Snapshot.unreadable`.
- PDBs become `PdbView`s with `status.disruptionsAllowed` (a PDB without status allows nothing: fail safe);
  DaemonSets their pod templates; claims still launching are in-flight capacity; the ICE cache and, with a
  resolver, the node classes' current AMIs complete the `DisruptionInput`; with a `PlacementGroups` port, the
  node classes' placement groups too (`services.placement_groups`: found, or unresolved this pass).
- A node is `disrupting` when it carries the `karpenter.sh/disrupted` taint, its claim is `deleting`, it is
  being deleted, or the caller started a workflow for it that has not visibly begun (`started`: a surge
  taints only after its replacement is up). A replacement claim records the nodes it `replaces`; for
  `STARTED_TTL_S` after its launch those nodes count as disrupting and the claim's node as nominated, so a
  cold container does not decide the same node again.
- Replacement nodes the caller launched count as nominated, so emptiness does not take them while the pods
  they are for are still on their way.
- Drift hashes come from the claim (written at launch), else from Karpenter's node annotations.
- Each managed node's last pod event comes from `pod_events.PodEventTracker` (the `consolidateAfter` clock).

The function does no writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol, cast

from longshore.core import labels as wk
from longshore.core.catalog import Catalog
from longshore.core.claims import NodeClaim, instance_id_of
from longshore.core.disruption.state import DisruptionInput, ManagedNode, PdbView
from longshore.core.drain import DISRUPTED_TAINT_KEY
from longshore.core.model import ClusterConfig, NodeClass, Operator, Requirement
from longshore.core.overlays import pool_view, price_of
from longshore.core.pods import LabelSelector
from longshore.core.reservations import drain_deadline
from longshore.core.scheduling import ExistingNode
from longshore.ports.cloud import InstanceStatuses, PlacementGroups
from longshore.ports.kube import Cluster, Manifest
from longshore.ports.store import ClaimStore, OfferingAvailability
from longshore.services import buffer_pods, volume_topology
from longshore.services import placement_groups as placement
from longshore.services import snapshot as snap
from longshore.services.pod_events import PodEventTracker

NODEPOOL_HASH_ANNOTATION: Final = "karpenter.sh/nodepool-hash"
NODECLASS_HASH_ANNOTATION: Final = "karpenter.k8s.aws/ec2nodeclass-hash"
REPLACEMENT_TIMEOUT_S: Final = 20 * 60.0
"""The disruption workflow's own bound on waiting for a replacement to be initialized."""
STARTED_TTL_S: Final = REPLACEMENT_TIMEOUT_S + 5 * 60.0
"""A started disruption not visible as a taint by then has failed (and a surge's claim stops marking its nodes)."""


class ImageResolver(Protocol):
    def current_images(self, node_class: NodeClass) -> frozenset[str]:
        """The AMI ids a node of `node_class` would boot with now (empty when unknown)."""
        ...


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


def _name(obj: Manifest) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


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


def _price(claim: NodeClaim, labels: Mapping[str, str], catalog: Catalog, config: ClusterConfig) -> float:
    if claim.reservation_id and claim.price is not None:  # reserved: what it was launched at, nearly free
        return claim.price
    pool = next((p for p in config.node_pools if p.name == claim.nodepool), None)
    if (
        pool is not None and pool.overlays
    ):  # what the overlays say it costs now, as the replacements are priced
        node_class = next((c for c in config.node_classes if c.name == pool.node_class), None)
        view = pool_view(catalog, pool, node_class.ami_family if node_class else "AL2023")
        found = {
            wk.INSTANCE_TYPE: claim.instance_type or labels.get(wk.INSTANCE_TYPE, ""),
            wk.ZONE: claim.zone or labels.get(wk.ZONE, ""),
            wk.CAPACITY_TYPE: claim.capacity_type or labels.get(wk.CAPACITY_TYPE, ""),
        }
        if found[wk.INSTANCE_TYPE] in view:
            return price_of(view, found)
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
    instance_statuses: InstanceStatuses | None = None,
    placement_groups: PlacementGroups | None = None,
) -> Snapshot:
    """Read the cluster once and build the planner's input (see the module docstring).

    `started`: nodes this caller started a disruption for; `replacements`: claim ids it launched as
    replacements (their nodes count as nominated); `instance_statuses`: EC2's status checks, for node
    auto-repair (without it, repair reads the Node conditions only); `placement_groups`: the node classes'
    groups, looked up as the provisioner does (`services.placement_groups`; without it the key stays open).
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
    bound, volume_refused = volume_topology.apply_moving(bound, cluster)  # what a move must keep (its zone)
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
    for pod, reason in volume_refused:  # cannot be moved: its node is not a candidate
        unreadable.setdefault(pod.node_name, f"pod {pod.key} on it cannot move: volume topology: {reason}")
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
    statuses = (
        instance_statuses.statuses(sorted(i for i in by_instance if i))
        if instance_statuses is not None
        else {}
    )

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
                price=_price(claim, labels, catalog, config),
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
                conditions=snap.node_conditions(manifest),
                instance_status=statuses.get(claim.instance_id or ""),
                reservation_drain_at=drain_deadline(claim.reservation_type, claim.reservation_end),
            )
        )
    tracker.forget_except(n.name for n in managed)
    current_images: dict[str, frozenset[str]] = {}
    if images is not None:
        for node_class in config.node_classes:
            current_images[node_class.name] = images.current_images(node_class)
    visible = [snap.provider_id_of(m) for m in node_manifests.values()]
    in_flight = snap.in_flight_nodes(all_claims, visible, catalog, config)
    groups = placement.lookup(placement_groups, config)
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
        buffers=buffer_pods.virtual_pods(
            buffer_pods.resolve_buffers(buffer_pods.source_of(cluster, config), config)
        ),
        placement_groups=groups.found,
        placement_unresolved=groups.unresolved,
    )
    return Snapshot(
        inp,
        node_manifests,
        all_claims,
        pod_manifests,
        unreadable,
        (*ds_skipped, *bound_skipped, *pending_skipped, *node_skipped),
    )
