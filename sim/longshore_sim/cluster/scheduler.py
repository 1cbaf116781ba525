"""A simple kube-scheduler: bind pending pods to nodes that fit, or mark them Unschedulable as it does.

Theory of operation: one `schedule()` pass takes every pending pod (no nodeName, not being deleted, default
scheduler, no scheduling gates) in priority order (higher first, then oldest) and runs the kube-scheduler's
filter plugins, in its order, against every node:
  NodeUnschedulable (cordoned), TaintToleration (NoSchedule/NoExecute; a node that is not Ready carries the
  `node.kubernetes.io/not-ready:NoSchedule` taint the node lifecycle controller would add), NodeAffinity
  (nodeSelector and required node affinity), NodeResourcesFit (requests and the pod count against allocatable
  minus the pods already bound, terminating ones included), PodTopologySpread (DoNotSchedule constraints), and
  InterPodAffinity (required pod affinity and anti-affinity for any topology key, both directions), and of
  VolumeBinding only its check of bound claims: a pod whose PersistentVolumeClaim is missing is
  unschedulable, and a claim bound to a PersistentVolume admits only nodes its `spec.nodeAffinity.required`
  admits ("volume node affinity conflict"); unbound claims are not provisioned (the sim has no CSI driver).
Among the nodes that pass, the LeastAllocated score (mean free fraction of cpu and memory after placing the
pod) picks one, ties broken by name; the pod is bound through the `pods/binding` semantics of the store.
A pod no node accepts gets `PodScheduled=False, reason=Unschedulable` with kube-scheduler's message, e.g.
"0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {karpenter.sh/unregistered: }.
preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling." (the provisioner counts
exactly these pods). The condition is only rewritten when it changes, so repeated passes cause no churn.

It does not import the packing engine or the requirements algebra: it is a second, independent opinion.
Within a pass, pods with identical scheduling inputs share what was learned about infeasible nodes (adding
pods only makes nodes less feasible), except pods with pod affinity or spread constraints, which adding pods
can help. Preemption, host ports, volume provisioning and preferred (soft) terms are not modelled.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from longshore.core.resources import Resources
from longshore.ports.clock import Clock
from longshore_sim.cluster import matching
from longshore_sim.kubeapi.errors import ApiError
from longshore_sim.kubeapi.meta import JSON, labels_of, rfc3339
from longshore_sim.kubeapi.selectors import selector_from_object
from longshore_sim.kubeapi.store import ObjectStore

NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
CORDONED = "node(s) were unschedulable"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
SPREAD = "node(s) didn't match pod topology spread constraints"
POD_AFFINITY = "node(s) didn't match pod affinity rules"
POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
VOLUME_CONFLICT = "node(s) had volume node affinity conflict"


@dataclass
class _Node:
    obj: JSON
    name: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    allocatable: Resources
    cordoned: bool
    used: Resources = field(default_factory=Resources)
    pods: list[JSON] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    """What one pass did: bound (pod key, node name) and unschedulable (pod key, message)."""

    bound: tuple[tuple[str, str], ...]
    unschedulable: tuple[tuple[str, str], ...]


def _key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def is_pending(pod: Mapping[str, Any]) -> bool:
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    return (
        not spec.get("nodeName")
        and not meta.get("deletionTimestamp")
        and not matching.is_terminal(pod)
        and spec.get("schedulerName", "default-scheduler") == "default-scheduler"
    )


class SimpleScheduler:
    """Binds pending pods in an `ObjectStore` (see the module docstring for the rules)."""

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._anti_terms: list[tuple[_Node, JSON, Mapping[str, Any]]] = []
        self._volumes: list[list[Mapping[str, Any]]] = []  # the pod being placed's volume terms

    def schedule(self) -> ScheduleResult:
        pods = self.store.view("pods")
        nodes = self._nodes(pods)
        pending = sorted(
            (p for p in pods if is_pending(p)),
            key=lambda p: (
                -int((p.get("spec") or {}).get("priority") or 0),
                p["metadata"].get("creationTimestamp", ""),
                _key(p),
            ),
        )
        bound: list[tuple[str, str]] = []
        failed: list[tuple[str, str]] = []
        infeasible: dict[str, dict[str, str]] = {}
        self._anti_terms = [
            (node, existing, term)
            for node in nodes
            for existing in node.pods
            for term in _required(existing, "podAntiAffinity")
        ]
        for pod in pending:
            spec = pod.get("spec") or {}
            if spec.get("schedulingGates"):
                self._set_condition(
                    pod, "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates"
                )
                continue
            signature = _signature(pod)
            known = infeasible.setdefault(signature, {}) if signature else {}
            choice, reasons = self._place(pod, nodes, known)
            if choice is None:
                message = _fit_error(len(nodes), reasons)
                self._set_condition(pod, "Unschedulable", message)
                failed.append((_key(pod), message))
                continue
            try:
                self.store.bind(pod["metadata"]["namespace"], pod["metadata"]["name"], choice.name)
            except ApiError:
                continue  # deleted or bound meanwhile: the next pass sees the new state
            choice.used = choice.used + matching.pod_requests(pod)
            choice.pods.append(pod)
            self._anti_terms += [(choice, pod, term) for term in _required(pod, "podAntiAffinity")]
            bound.append((_key(pod), choice.name))
        return ScheduleResult(tuple(bound), tuple(failed))

    # ------------------------------------------------------------------ state

    def _nodes(self, pods: list[JSON]) -> list[_Node]:
        nodes: dict[str, _Node] = {}
        for node in self.store.view("nodes"):
            taints = list((node.get("spec") or {}).get("taints") or [])
            if not matching.is_node_ready(node):
                taints.append(dict(NOT_READY_TAINT))
            name = node["metadata"]["name"]
            nodes[name] = _Node(
                node,
                name,
                dict(labels_of(node)),
                taints,
                matching.node_allocatable(node),
                bool((node.get("spec") or {}).get("unschedulable")),
            )
        for pod in pods:
            host = (pod.get("spec") or {}).get("nodeName")
            if host in nodes and not matching.is_terminal(pod):
                nodes[host].used = nodes[host].used + matching.pod_requests(pod)
                nodes[host].pods.append(pod)
        return [nodes[name] for name in sorted(nodes)]

    def _set_condition(self, pod: JSON, reason: str, message: str) -> None:
        conditions = (pod.get("status") or {}).get("conditions") or []
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if current and (current.get("status"), current.get("reason"), current.get("message")) == (
            "False",
            reason,
            message,
        ):
            return
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": rfc3339(self.clock.now()),
        }

        def change(obj: JSON) -> None:
            status = obj.setdefault("status", {})
            status["conditions"] = [
                c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"
            ] + [condition]

        with contextlib.suppress(ApiError):  # the pod went away meanwhile
            self.store.modify("pods", pod["metadata"]["name"], pod["metadata"]["namespace"], change)

    # ------------------------------------------------------------------ filters

    def _place(self, pod: JSON, nodes: list[_Node], known: dict[str, str]) -> tuple[_Node | None, list[str]]:
        requests = matching.pod_requests(pod)
        volumes = self._volume_terms(pod)
        if isinstance(volumes, str):
            return None, [volumes] * len(nodes)
        self._volumes = volumes
        spread = _spread_state(pod, nodes)
        reasons: list[str] = []
        best: tuple[float, str, _Node] | None = None
        for node in nodes:
            if node.name in known:
                reasons.append(known[node.name])
                continue
            failures = self._filter(pod, requests, node, nodes, spread)
            if failures:
                reasons.extend(failures)
                if known is not None and len(failures) == 1:
                    known[node.name] = failures[0]
                continue
            score = _least_allocated(node, requests)
            if best is None or (score, best[1]) > (best[0], node.name):
                best = (score, node.name, node)
        return (best[2] if best else None), reasons

    def _volume_terms(self, pod: JSON) -> list[list[Mapping[str, Any]]] | str:
        """The node selector terms of each PersistentVolume the pod's claims are bound to, or why it cannot be
        placed (a claim that does not exist)."""
        namespace = pod["metadata"].get("namespace") or "default"
        found: list[list[Mapping[str, Any]]] = []
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            if isinstance(volume.get("persistentVolumeClaim"), Mapping):
                claim_name = str(volume["persistentVolumeClaim"].get("claimName") or "")
            elif volume.get("ephemeral") is not None:
                claim_name = f"{pod['metadata']['name']}-{volume.get('name')}"
            else:
                continue
            claim = self.store.try_get("persistentvolumeclaims", claim_name, namespace)
            if claim is None:
                return f'persistentvolumeclaim "{claim_name}" not found'
            bound_to = (claim.get("spec") or {}).get("volumeName")
            volume_obj = self.store.try_get("persistentvolumes", str(bound_to)) if bound_to else None
            required = ((volume_obj or {}).get("spec") or {}).get("nodeAffinity") or {}
            terms = (required.get("required") or {}).get("nodeSelectorTerms")
            if terms:
                found.append(list(terms))
        return found

    def _filter(
        self, pod: JSON, requests: Resources, node: _Node, nodes: list[_Node], spread: list[_Spread]
    ) -> list[str]:
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        if node.cordoned and not matching.tolerates(tolerations, UNSCHEDULABLE_TAINT):
            return [CORDONED]
        blocking = matching.untolerated_taints(pod, node.taints)
        if blocking:
            taint = blocking[0]
            return [f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"]
        if not matching.node_affinity_matches(pod, node.obj):
            return [AFFINITY]
        if not all(matching.node_selector_matches(terms, node.obj) for terms in self._volumes):
            return [VOLUME_CONFLICT]
        room = node.allocatable - node.used
        short = requests.exceeding(room)
        if short:
            return ["Too many pods" if name == "pods" else f"Insufficient {name}" for name in short]
        if not all(s.allows(node) for s in spread):
            return [SPREAD]
        affinity_failure = _inter_pod_affinity(pod, node, nodes, self._anti_terms)
        return [affinity_failure] if affinity_failure else []


def _signature(pod: JSON) -> str:
    """Scheduling inputs of a pod; "" for pods whose feasibility can improve within a pass."""
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    if spec.get("topologySpreadConstraints") or affinity.get("podAffinity"):
        return ""
    relevant = {
        "ns": pod["metadata"].get("namespace"),
        "labels": labels_of(pod),
        "containers": [c.get("resources") for c in spec.get("containers") or []],
        "init": [c.get("resources") for c in spec.get("initContainers") or []],
        "overhead": spec.get("overhead"),
        "nodeSelector": spec.get("nodeSelector"),
        "affinity": affinity,
        "tolerations": spec.get("tolerations"),
        "volumes": spec.get("volumes"),
    }
    return json.dumps(relevant, sort_keys=True)


def _least_allocated(node: _Node, requests: Resources) -> float:
    scores = []
    for resource in ("cpu", "memory"):
        capacity = node.allocatable.get(resource)
        if capacity > 0:
            scores.append((capacity - node.used.get(resource) - requests.get(resource)) / capacity)
    return sum(scores) / len(scores) if scores else 0.0


def _fit_error(total: int, reasons: list[str]) -> str:
    if total == 0:
        return "no nodes available to schedule pods"
    histogram = sorted(f"{count} {reason}" for reason, count in Counter(reasons).items())
    return (
        f"0/{total} nodes are available: {', '.join(histogram)}. "
        f"preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
    )


@dataclass(frozen=True, slots=True)
class _Spread:
    """One DoNotSchedule spread constraint, with the matching-pod count per domain at the start of placement."""

    key: str
    counts: dict[str, int]
    minimum: int
    self_match: int
    max_skew: int

    def allows(self, node: _Node) -> bool:
        if self.key not in node.labels:
            return False
        return self.counts.get(node.labels[self.key], 0) + self.self_match - self.minimum <= self.max_skew


def _spread_state(pod: JSON, nodes: list[_Node]) -> list[_Spread]:
    constraints = [
        c
        for c in (pod.get("spec") or {}).get("topologySpreadConstraints") or []
        if c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
    ]
    namespace = pod["metadata"].get("namespace")
    result = []
    for constraint in constraints:
        key = constraint.get("topologyKey", "")
        selector = selector_from_object(constraint.get("labelSelector"))
        counts: dict[str, int] = defaultdict(int)
        for other in nodes:
            if key not in other.labels or not matching.node_affinity_matches(pod, other.obj):
                continue
            counts[other.labels[key]] += sum(
                1
                for p in other.pods
                if p["metadata"].get("namespace") == namespace
                and not p["metadata"].get("deletionTimestamp")
                and selector.matches(labels_of(p))
            )
        min_domains = int(constraint.get("minDomains") or 1)
        minimum = min(counts.values()) if counts and len(counts) >= min_domains else 0
        self_match = 1 if selector.matches(labels_of(pod)) else 0
        result.append(_Spread(key, dict(counts), minimum, self_match, int(constraint.get("maxSkew", 1))))
    return result


def _term_selects(term: Mapping[str, Any], owner_namespace: str, candidate: JSON) -> bool:
    namespaces = term.get("namespaces") or []
    if term.get("namespaceSelector") == {}:
        in_scope = True
    else:
        in_scope = candidate["metadata"].get("namespace") in (namespaces or [owner_namespace])
    return in_scope and selector_from_object(term.get("labelSelector")).matches(labels_of(candidate))


def _required(pod: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    return list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or [])


def _inter_pod_affinity(
    pod: JSON, node: _Node, nodes: list[_Node], anti_terms: list[tuple[_Node, JSON, Mapping[str, Any]]]
) -> str | None:
    namespace = str(pod["metadata"].get("namespace"))
    for term in _required(pod, "podAffinity"):
        key = term.get("topologyKey", "")
        if key not in node.labels:
            return POD_AFFINITY
        domain = [n for n in nodes if n.labels.get(key) == node.labels[key]]
        if any(_term_selects(term, namespace, p) for n in domain for p in n.pods):
            continue
        anywhere = any(_term_selects(term, namespace, p) for n in nodes for p in n.pods)
        if anywhere or not _term_selects(term, namespace, pod):
            return POD_AFFINITY
    for term in _required(pod, "podAntiAffinity"):
        key = term.get("topologyKey", "")
        if key not in node.labels:
            continue
        domain = [n for n in nodes if n.labels.get(key) == node.labels[key]]
        if any(_term_selects(term, namespace, p) for n in domain for p in n.pods):
            return POD_ANTI_AFFINITY
    for other, existing, term in anti_terms:
        key = term.get("topologyKey", "")
        same_domain = key in node.labels and other.labels.get(key) == node.labels[key]
        if same_domain and _term_selects(term, str(existing["metadata"].get("namespace")), pod):
            return EXISTING_ANTI_AFFINITY
    return None
