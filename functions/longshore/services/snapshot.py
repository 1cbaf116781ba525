"""A snapshot of the cluster as the packing engine needs it: provisionable pods, nodes, in-flight claims, DaemonSets.

Theory of operation: the provisioner reads Kubernetes through `ports.kube.Cluster` (plain dicts, as `kubectl get
-o json` prints them) and its own claims through `ports.store.ClaimStore`, and this module turns both into the
engine's values without any I/O of its own:

- `provisionable(pod)` is Karpenter's rule (kubernetes-sigs/karpenter `pkg/utils/pod/scheduling.go`,
  `IsProvisionable`): unbound, `PodScheduled=False` with
  reason `Unschedulable` (the kube-scheduler tried and failed), not nominated, not owned by a DaemonSet, not a
  static/mirror pod, not terminal and not terminating. Pods the kube-scheduler has not looked at yet are not
  counted: it may still place them on a node that exists.
- `existing_nodes` turns Node dicts into `ExistingNode`s with their bound pods, so the engine sees how much room
  is really left (status.allocatable minus the requests of the pods bound there). A managed node that is not
  initialized yet keeps its startup taints out of the way, like Karpenter's in-flight view.
- `in_flight_nodes` turns claims that stand for capacity not yet visible as a Node (states `launching`,
  `launched`, `registered` with no Node carrying their providerID) into in-flight `ExistingNode`s of the type,
  zone and capacity type they were priced or launched as, so the next plan fills them instead of launching
  again. This is the in-flight accounting that makes a retried or crashed run not launch twice.
- `daemonset_pods` turns each DaemonSet into its pod template (what lands on every new node).

Malformed pod or node objects never break a pass: they come back as `Skipped` entries naming the object and the
field, and the provisioner reports them as Events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from longshore.bulk import gc_paused
from longshore.core import labels as wk
from longshore.core.allocatable import allocatable, node_capacity
from longshore.core.catalog import Catalog
from longshore.core.claims import NodeClaim
from longshore.core.disruption.state import NodeCondition
from longshore.core.drain import parse_timestamp
from longshore.core.model import ClusterConfig, Taint
from longshore.core.overlays import pool_view
from longshore.core.pod_manifest import PodManifestError, pod_from_manifest, pod_requests
from longshore.core.pods import Pod
from longshore.core.quantity import QuantityError
from longshore.core.requirements import Requirements
from longshore.core.resources import Resources
from longshore.core.scheduling import ExistingNode

Manifest = Mapping[str, Any]
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class Skipped:
    """An object left out of the snapshot, and why (becomes a Warning Event)."""

    kind: str
    namespace: str
    name: str
    reason: str


def _field(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _meta(obj: Manifest) -> Mapping[str, Any]:
    return _field(obj, "metadata")


def _name(obj: Manifest) -> tuple[str, str]:
    meta = _meta(obj)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def object_name(obj: Manifest) -> str:
    """`metadata.name` ("" when absent), as the snapshot reads it."""
    return _name(obj)[1]


def unschedulable_condition(pod: Manifest) -> bool:
    """`PodScheduled=False` with reason `Unschedulable`: the kube-scheduler tried every node and failed."""
    status = pod.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return any(
        isinstance(c, Mapping)
        and c.get("type") == "PodScheduled"
        and c.get("status") == "False"
        and c.get("reason") == "Unschedulable"
        for c in conditions or ()
    )


def provisionable_manifest(pod: Manifest) -> bool:
    """`provisionable`, decided on the raw object without parsing the pod (what batching looks at each second)."""
    return _may_need_a_node(pod) and unschedulable_condition(pod)


def awaiting_verdict(pod: Manifest, now: float, window_s: float) -> bool:
    """An unbound pod the scheduler has not judged yet (no `PodScheduled` condition), created in the last
    `window_s`: it may become provisionable in a moment, so the provisioner keeps looking before it stops.

    Pods of another scheduler, or held by scheduling gates, never get a verdict; the window keeps them from
    holding the provisioner's loop open forever.
    """
    if not _may_need_a_node(pod):
        return False
    conditions = _field(pod, "status").get("conditions") or ()
    if any(isinstance(c, Mapping) and c.get("type") == "PodScheduled" for c in conditions):
        return False
    created = parse_timestamp(_meta(pod).get("creationTimestamp"))
    return created is None or now - created <= window_s


def _may_need_a_node(pod: Manifest) -> bool:
    """Unbound, not nominated, not being deleted, not finished, and not a pod that belongs to one node (mirror
    or DaemonSet pods): a pod a new node could be for."""
    spec = _field(pod, "spec")
    status = _field(pod, "status")
    meta = _meta(pod)
    if spec.get("nodeName") or status.get("nominatedNodeName") or meta.get("deletionTimestamp"):
        return False
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
        return False
    owners = meta.get("ownerReferences") or ()
    return not any(isinstance(o, Mapping) and o.get("kind") in ("DaemonSet", "Node") for o in owners)


def pod_uid(pod: Manifest) -> str:
    meta = _meta(pod)
    return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")


_SHARED_LIMIT = 200_000
_SHARED_PARTS: dict[Any, Any] = {}
"""Equal parts of the pods a container keeps parsed (label pairs, requests, tolerations, spread...), once."""
_PARTS = ("annotations", "requests", "node_selector", "tolerations", "topology_spread", "required_node_terms")


def shared_parts(parsed: Pod | Skipped) -> Pod | Skipped:
    """`parsed` with its label pairs and its other often-equal parts replaced by equal ones seen before.

    The pods of one workload parse to equal requests, tolerations and spread constraints, and carry the same
    label pairs; a container keeping 150,000 parsed pods keeps each once (about 1.9 KB less a pod). The
    values are equal, so the Pod is equal to what was parsed; it is changed before anything else sees it."""
    if isinstance(parsed, Skipped):
        return parsed
    table = _SHARED_PARTS
    if len(table) >= _SHARED_LIMIT:
        table.clear()
    share = table.setdefault
    object.__setattr__(parsed, "labels", tuple([share(pair, pair) for pair in parsed.labels]))
    for name in _PARTS:
        value = getattr(parsed, name)
        if value:
            object.__setattr__(parsed, name, share(value, value))
    return parsed


_BY_OBJECT: dict[int, tuple[Manifest, Pod | Skipped, tuple[str, str]]] = {}
"""The warm container's parsed pods by object identity (each entry keeps its object alive, so ids never repeat),
with the (uid, resourceVersion) the object was parsed under."""


class PodCache:
    """Parsed pods, so a pod object that did not change is parsed once.

    Two memos, both exact: by object identity for the whole warm container (the watch cache of
    `adapters.kube.informer` hands back the same dict for a pod that did not change, so a warm provisioner or
    planner pass parses only what changed), and by (uid, resourceVersion) for this cache's run (lists that
    build new dicts each time). Neither is state: a miss just parses. `retain` keeps both the size of the
    cluster, at a cost proportional to what left it.
    """

    def __init__(self) -> None:
        self._pods: dict[tuple[str, str], Pod | Skipped] = {}

    def parse(self, manifest: Manifest) -> Pod | Skipped:
        entry = _BY_OBJECT.get(id(manifest))
        if entry is not None and entry[0] is manifest:
            return entry[1]
        version = str(_meta(manifest).get("resourceVersion") or "")
        if not version:
            return parse_pod(manifest)
        key = (pod_uid(manifest), version)
        found = self._pods.get(key)
        if found is None:
            found = self._pods[key] = shared_parts(parse_pod(manifest))
        _BY_OBJECT[id(manifest)] = (manifest, found, key)
        return found

    def forget(self, manifests: Iterable[Manifest]) -> None:
        """Forget these pods (they left the list): `retain` at the cost of what left (`warm_snapshot`)."""
        for manifest in manifests:
            entry = _BY_OBJECT.get(id(manifest))
            if entry is not None and entry[0] is manifest:
                del _BY_OBJECT[id(manifest)]
                self._pods.pop(entry[2], None)

    def retain(self, manifests: Iterable[Manifest]) -> None:
        """Forget pods that are no longer listed (keeps the memos as large as the cluster)."""
        listed = manifests if isinstance(manifests, list | tuple) else list(manifests)
        objects = {id(m) for m in listed}
        for stale in [k for k in _BY_OBJECT if k not in objects]:
            self._pods.pop(_BY_OBJECT.pop(stale)[2], None)  # a listed equal copy is just parsed again
        if len(self._pods) > len(listed):  # entries another cache's retain left: prune by key
            keep = {(pod_uid(m), str(_meta(m).get("resourceVersion") or "")) for m in listed}
            self._pods = {k: v for k, v in self._pods.items() if k in keep}


_REQUESTS: dict[tuple[int, ...], tuple[tuple[object, ...], Resources]] = {}
"""Effective requests by the identity of the spec parts they come from (kept alive in the entry, so an id is
never another object's). Compact pods share equal containers (`adapters.kube.decode.Shared`), so the pods of
one workload compute their requests once: about 40% of parsing a pod."""


def _requests(spec: Mapping[str, Any]) -> Resources:
    parts = (spec.get("containers"), spec.get("initContainers"), spec.get("overhead"), spec.get("resources"))
    key = tuple(id(part) for part in parts)
    found = _REQUESTS.get(key)
    if found is not None and all(a is b for a, b in zip(found[0], parts, strict=True)):
        return found[1]
    value = pod_requests(spec)  # a malformed spec raises here, as without the memo, and is not kept
    if len(_REQUESTS) >= 20_000:
        _REQUESTS.clear()
    _REQUESTS[key] = (parts, value)
    return value


def parse_pod(manifest: Manifest) -> Pod | Skipped:
    try:
        return pod_from_manifest(manifest, _requests)
    except (PodManifestError, QuantityError, ValueError, TypeError) as error:
        namespace, name = _name(manifest)
        return Skipped("Pod", namespace or "default", name, f"cannot read the pod: {error}")


def provisionable(pod: Pod) -> bool:
    """Karpenter's `IsProvisionable` (see the module docstring): the engine may launch capacity for this pod."""
    return pod.unschedulable and pod.is_provisionable()


def pending_pods(
    manifests: Iterable[Manifest], cache: PodCache | None = None
) -> tuple[tuple[Pod, ...], tuple[Skipped, ...]]:
    """The provisionable pods among `manifests`, and the unreadable ones."""
    pods: list[Pod] = []
    skipped: list[Skipped] = []
    parse = cache.parse if cache is not None else parse_pod
    with gc_paused():
        for manifest in manifests:
            spec = manifest.get("spec")
            if isinstance(spec, Mapping) and spec.get("nodeName"):
                continue  # bound: the cheap test first, for the cluster's running pods
            if not provisionable_manifest(manifest):
                continue
            parsed = parse(manifest)
            if isinstance(parsed, Skipped):
                skipped.append(parsed)
            elif provisionable(parsed):
                pods.append(parsed)
    return tuple(pods), tuple(skipped)


def _taints(node: Manifest) -> tuple[Taint, ...]:
    spec = node.get("spec")
    found: list[Taint] = []
    for taint in (spec.get("taints") if isinstance(spec, Mapping) else None) or ():
        if isinstance(taint, Mapping) and taint.get("key") and taint.get("effect") in _EFFECTS:
            found.append(Taint(str(taint["key"]), taint["effect"], str(taint.get("value") or "")))
    return tuple(found)


def node_taints(node: Manifest) -> tuple[Taint, ...]:
    """The node's well-formed taints."""
    return _taints(node)


def node_ready(node: Manifest) -> bool:
    status = node.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions or ()
    )


def node_conditions(node: Manifest) -> tuple[NodeCondition, ...]:
    """The node's well-formed status conditions, each with its last transition time (epoch seconds)."""
    status = node.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    found: list[NodeCondition] = []
    for c in conditions or ():
        if isinstance(c, Mapping) and c.get("type") and c.get("status"):
            since = parse_timestamp(c.get("lastTransitionTime"))
            if since is not None:
                found.append(NodeCondition(str(c["type"]), str(c["status"]), since))
    return tuple(found)


def provider_id_of(node: Manifest) -> str:
    spec = node.get("spec")
    return str(spec.get("providerID") or "") if isinstance(spec, Mapping) else ""


def _resources(value: object) -> Resources | None:
    """A node's resource list, parsed once per equal list: the compact nodes of one shape share the list
    (`adapters.kube.decode.Shared`), so a warm pass over 5,000 nodes parses a few, not 40,000 quantities. The
    entry keeps the mapping alive (its id is never another's) and a copy it must still equal (exact even if a
    caller changed the mapping in place)."""
    if not isinstance(value, Mapping):
        return None
    found = _NODE_RESOURCES.get(id(value))
    if found is not None and found[0] is value and found[1] == value:
        return found[2]
    parsed = Resources.parse({str(k): v for k, v in value.items()})
    if len(_NODE_RESOURCES) >= _SHARED_LIMIT:
        _NODE_RESOURCES.clear()
    _NODE_RESOURCES[id(value)] = (value, dict(value), parsed)
    return parsed


_NODE_RESOURCES: dict[int, tuple[Mapping[str, Any], dict[str, Any], Resources]] = {}


def existing_nodes(
    nodes: Iterable[Manifest], pods: Iterable[Pod], config: ClusterConfig
) -> tuple[tuple[ExistingNode, ...], tuple[Skipped, ...]]:
    """Nodes with the pods bound to them; nodes being deleted or cordoned take no new pods."""
    by_node: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.node_name and not pod.is_terminal:
            by_node.setdefault(pod.node_name, []).append(pod)
    result: list[ExistingNode] = []
    skipped: list[Skipped] = []
    for node in nodes:
        _, name = _name(node)
        status = _field(node, "status")
        try:
            room = _resources(status.get("allocatable")) or _resources(status.get("capacity"))
            capacity = _resources(status.get("capacity"))
        except (QuantityError, ValueError) as error:
            skipped.append(Skipped("Node", "", name, f"cannot read status.allocatable: {error}"))
            continue
        if room is None:
            skipped.append(Skipped("Node", "", name, "the node reports no status.allocatable yet"))
            continue
        labels = {str(k): str(v) for k, v in (_meta(node).get("labels") or {}).items()}
        labels.setdefault(wk.HOSTNAME, name)
        managed = wk.NODEPOOL in labels
        initialized = labels.get(wk.INITIALIZED) == "true" if managed else node_ready(node)
        startup: tuple[Taint, ...] = ()
        pool_name = labels.get(wk.NODEPOOL)
        if pool_name is not None:
            try:
                startup = config.pool(pool_name).startup_taints
            except KeyError:
                startup = ()
        spec = _field(node, "spec")
        result.append(
            ExistingNode(
                name=name,
                labels=tuple(sorted(labels.items())),
                allocatable=room,
                taints=_taints(node),
                pods=tuple(by_node.get(name, ())),
                capacity=capacity,
                initialized=initialized,
                startup_taints=startup,
                deleting=_meta(node).get("deletionTimestamp") is not None or bool(spec.get("unschedulable")),
            )
        )
    return tuple(result), tuple(skipped)


def in_flight_nodes(
    claims: Iterable[NodeClaim], node_provider_ids: Iterable[str], catalog: Catalog, config: ClusterConfig
) -> tuple[ExistingNode, ...]:
    """Claims whose capacity is coming but not yet visible as a Node, as in-flight nodes of their type."""
    visible = set(node_provider_ids)
    result: list[ExistingNode] = []
    for claim in claims:
        if not claim.in_flight or (claim.provider_id and claim.provider_id in visible):
            continue
        node = claim_as_node(claim, catalog, config)
        if node is not None:
            result.append(node)
    return tuple(result)


def claim_as_node(claim: NodeClaim, catalog: Catalog, config: ClusterConfig) -> ExistingNode | None:
    """The node a claim will become: its (planned or launched) type's allocatable, labels and taints."""
    type_name = claim.instance_type or next(iter(claim.instance_types), None)
    try:
        pool = config.pool(claim.nodepool)
        node_class = config.node_class_of(pool)
    except KeyError:
        return None
    view = pool_view(catalog, pool, node_class.ami_family)  # with the pool's NodeOverlays (e.g. hugepages)
    instance_type = view.get(type_name) if type_name else None
    if instance_type is None:
        return None
    kubelet = pool.effective_kubelet(node_class)
    labels: dict[str, str] = dict(Requirements.of(claim.requirements).single_values())
    labels.update(dict(pool.labels))
    labels.update(instance_type.node_labels())
    labels[wk.NODEPOOL] = pool.name
    labels[wk.NODECLASS] = node_class.name
    labels[wk.HOSTNAME] = claim.node_name or claim.id
    if claim.zone:
        labels[wk.ZONE] = claim.zone
    if claim.capacity_type:
        labels[wk.CAPACITY_TYPE] = claim.capacity_type
    return ExistingNode(
        name=claim.node_name or claim.id,
        labels=tuple(sorted(labels.items())),
        allocatable=allocatable(instance_type, kubelet, node_class, config.settings),
        taints=(*pool.taints, *pool.startup_taints),
        capacity=node_capacity(instance_type, kubelet, node_class, config.settings),
        initialized=False,
        in_flight=True,
        startup_taints=pool.startup_taints,
    )


def daemonset_pods(daemonsets: Iterable[Manifest]) -> tuple[tuple[Pod, ...], tuple[Skipped, ...]]:
    """One pod per DaemonSet, from its template (what every node it fits will run)."""
    pods: list[Pod] = []
    skipped: list[Skipped] = []
    for daemonset in daemonsets:
        namespace, name = _name(daemonset)
        template = _field(_field(daemonset, "spec"), "template")
        meta = dict(_field(template, "metadata"))
        meta.setdefault("namespace", namespace or "default")
        meta["name"] = name
        parsed = parse_pod({"metadata": meta, "spec": template.get("spec") or {}})
        if isinstance(parsed, Skipped):
            skipped.append(Skipped("DaemonSet", namespace, name, parsed.reason))
            continue
        pods.append(replace(parsed, owner_kind="DaemonSet", owner_name=name))
    return tuple(pods), tuple(skipped)


def bound_pods(
    manifests: Sequence[Manifest], cache: PodCache | None = None
) -> tuple[tuple[Pod, ...], tuple[Skipped, ...]]:
    """Pods bound to a node (what occupies existing capacity)."""
    pods: list[Pod] = []
    skipped: list[Skipped] = []
    parse = cache.parse if cache is not None else parse_pod
    with gc_paused():
        for manifest in manifests:
            if not (manifest.get("spec") or {}).get("nodeName"):
                continue
            parsed = parse(manifest)
            if isinstance(parsed, Skipped):
                skipped.append(parsed)
            else:
                pods.append(parsed)
    return tuple(pods), tuple(skipped)
