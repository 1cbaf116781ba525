"""Pods as the scheduler sees them: requests, node constraints, pod (anti-)affinity, spread and ports.

Theory of operation: `pod_from_manifest` turns a Kubernetes Pod dict (as `kubectl get pod -o json` prints it,
or a pod template with metadata and spec) into a frozen `Pod` holding only what placement needs. It is pure
and strict: a malformed field raises `PodManifestError` carrying the field path (`spec.containers[0]
.resources.requests.cpu`) and the offending value, so the config edge can name file, document and line.

Requests follow the kube-scheduler's `PodRequests`: the sum of the app containers plus restartable
(sidecar) init containers, or the largest ordinary init container plus the sidecars started before it,
whichever is larger, plus the pod overhead. A container that sets a limit but no request requests its limit
(API-server defaulting). The scheduler adds the `pods: 1` slot itself; `Pod.requests` holds only what the
manifest asks for.

Node constraints keep Kubernetes' shape: `node_selector` is ANDed with *one* of the ORed
`required_node_terms`; preferences (`preferred_node_terms`, preferred pod (anti-)affinity, `ScheduleAnyway`
spreads) are kept apart so the scheduler can relax them one at a time, as Karpenter does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from longshore.core import quantity
from longshore.core.model import Pairs, Requirement, pairs
from longshore.core.resources import EMPTY, Resources
from longshore.core.taints import Toleration, TolerationError

WhenUnsatisfiable = Literal["DoNotSchedule", "ScheduleAnyway"]
InclusionPolicy = Literal["Honor", "Ignore"]

_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
#: Labels that differ between otherwise identical replicas; they never decide placement.
PER_POD_LABELS = frozenset(
    {
        "statefulset.kubernetes.io/pod-name",
        "apps.kubernetes.io/pod-index",
        "batch.kubernetes.io/job-completion-index",
    }
)


class PodManifestError(ValueError):
    """A pod manifest field that Kubernetes would reject; `path` is the field, `value` what was found."""

    def __init__(self, path: str, message: str, value: object = None) -> None:
        self.path = path
        self.message = message
        self.value = value
        super().__init__(f"{path}: {message}" if path else message)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A Kubernetes label selector: `match_labels` ANDed with `match_expressions` (In/NotIn/Exists/DoesNotExist).

    The empty selector matches every pod (as in topology spread and affinity terms)."""

    match_labels: Pairs = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for expr in self.match_expressions:
            present = expr.key in labels
            if expr.operator == "In" and not (present and labels[expr.key] in expr.values):
                return False
            if expr.operator == "NotIn" and present and labels[expr.key] in expr.values:
                return False
            if expr.operator == "Exists" and not present:
                return False
            if expr.operator == "DoesNotExist" and present:
                return False
        return True

    def with_labels(self, extra: Pairs) -> LabelSelector:
        """This selector narrowed by `extra` exact labels (used for `matchLabelKeys`)."""
        return LabelSelector(pairs({**dict(self.match_labels), **dict(extra)}), self.match_expressions)

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.match_labels]
        parts += [
            f"{e.key} {e.operator} [{','.join(e.values)}]".rstrip(" []") for e in self.match_expressions
        ]
        return ",".join(parts) or "(all pods)"


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A pod (anti-)affinity term: pods matching `selector` in `namespaces` define the `topology_key` domains.

    `weight` is set for preferred terms only. Empty `namespaces` and no `namespace_selector` means the pod's
    own namespace; a `namespace_selector` (even empty = all namespaces) widens it."""

    selector: LabelSelector
    topology_key: str
    namespaces: tuple[str, ...] = ()
    all_namespaces: bool = False
    weight: int = 0

    def covers_namespace(self, own_namespace: str, namespace: str) -> bool:
        if self.all_namespaces:
            return True
        return namespace in (self.namespaces or (own_namespace,))


@dataclass(frozen=True, slots=True)
class TopologySpread:
    """A topology spread constraint (the defaults are Kubernetes')."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: WhenUnsatisfiable
    selector: LabelSelector
    min_domains: int | None = None
    match_label_keys: tuple[str, ...] = ()
    node_affinity_policy: InclusionPolicy = "Honor"
    node_taints_policy: InclusionPolicy = "Ignore"


@dataclass(frozen=True, slots=True)
class HostPort:
    """A host port a container binds; two conflict on the same port and protocol when either IP is a wildcard
    or both IPs are equal."""

    port: int
    protocol: str = "TCP"
    ip: str = ""

    def conflicts(self, other: HostPort) -> bool:
        if self.port != other.port or self.protocol != other.protocol:
            return False
        wildcard = ("", "0.0.0.0", "::")
        return self.ip in wildcard or other.ip in wildcard or self.ip == other.ip


@dataclass(frozen=True, slots=True)
class PreferredNodeTerm:
    weight: int
    requirements: tuple[Requirement, ...]


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod, reduced to what scheduling, disruption and reporting need."""

    namespace: str
    name: str
    uid: str = ""
    labels: Pairs = ()
    annotations: Pairs = ()
    requests: Resources = EMPTY
    node_selector: Pairs = ()
    required_node_terms: tuple[tuple[Requirement, ...], ...] = ()  # ORed terms; empty = no requirement
    preferred_node_terms: tuple[PreferredNodeTerm, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_spread: tuple[TopologySpread, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    owner_kind: str = ""
    owner_name: str = ""
    priority: int = 0
    priority_class: str = ""
    node_name: str = ""
    nominated_node_name: str = ""
    phase: str = "Pending"
    unschedulable: bool = False  # condition PodScheduled=False, reason Unschedulable
    deleting: bool = False  # metadata.deletionTimestamp set
    created_at: str = ""  # metadata.creationTimestamp, RFC 3339 (orders the queue)
    scheduler_name: str = "default-scheduler"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    @property
    def is_daemonset(self) -> bool:
        return self.owner_kind == "DaemonSet"

    @property
    def is_mirror(self) -> bool:
        return self.owner_kind == "Node" or any(
            k == "kubernetes.io/config.mirror" for k, _ in self.annotations
        )

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def is_bound(self) -> bool:
        return bool(self.node_name)

    def counts_for_topology(self) -> bool:
        """Terminal and terminating pods never count for spread or affinity (Karpenter `IgnoredForTopology`)."""
        return not self.is_terminal and not self.deleting

    def is_provisionable(self) -> bool:
        """Karpenter's rule (kubernetes-sigs/karpenter `pkg/utils/pod/scheduling.go` `IsProvisionable`), minus the Unschedulable condition, which `plan` cannot know:
        unbound, not nominated, not a DaemonSet or mirror pod, not terminal or terminating."""
        return (
            not self.node_name
            and not self.nominated_node_name
            and not self.is_daemonset
            and not self.is_mirror
            and not self.is_terminal
            and not self.deleting
        )

    def placement_signature(self) -> Pod:
        """This pod with its identity removed: equal signatures schedule identically (the pod class key)."""
        return Pod(
            namespace=self.namespace,
            name="",
            labels=tuple(kv for kv in self.labels if kv[0] not in PER_POD_LABELS),
            requests=self.requests,
            node_selector=self.node_selector,
            required_node_terms=self.required_node_terms,
            preferred_node_terms=self.preferred_node_terms,
            pod_affinity=self.pod_affinity,
            pod_anti_affinity=self.pod_anti_affinity,
            preferred_pod_affinity=self.preferred_pod_affinity,
            preferred_pod_anti_affinity=self.preferred_pod_anti_affinity,
            tolerations=self.tolerations,
            topology_spread=self.topology_spread,
            host_ports=self.host_ports,
            owner_kind=self.owner_kind,
            owner_name=self.owner_name,
            priority=self.priority,
        )


# --- parsing ----------------------------------------------------------------------------------------------


def _mapping(value: object, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PodManifestError(path, f"expected a mapping, got {type(value).__name__}", value)
    return value


def _sequence(value: object, path: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise PodManifestError(path, f"expected a list, got {type(value).__name__}", value)
    return value


def _string_map(value: object, path: str) -> Pairs:
    mapping = _mapping(value, path)
    out: dict[str, str] = {}
    for key, item in mapping.items():
        if isinstance(item, bool) or item is None:
            raise PodManifestError(f"{path}.{key}", "expected a string value", item)
        out[str(key)] = str(item)
    return pairs(out)


def _resources(value: object, path: str) -> Resources:
    mapping = _mapping(value, path)
    parsed: dict[str, int] = {}
    for name, text in mapping.items():
        try:
            parsed[str(name)] = quantity.parse(str(name), text)
        except quantity.QuantityError as exc:
            raise PodManifestError(f"{path}.{name}", str(exc), text) from exc
        if parsed[str(name)] < 0:
            raise PodManifestError(f"{path}.{name}", "a request may not be negative", text)
    return Resources.of(parsed)


def _container_requests(container: Mapping[str, Any], path: str) -> Resources:
    resources = _mapping(container.get("resources"), f"{path}.resources")
    requests = _resources(resources.get("requests"), f"{path}.resources.requests")
    limits = _resources(resources.get("limits"), f"{path}.resources.limits")
    defaulted = {name: amount for name, amount in limits.items if name not in requests.names()}
    return requests + Resources.of(defaulted)


def _host_ports(container: Mapping[str, Any], path: str) -> list[HostPort]:
    found = []
    for index, port in enumerate(_sequence(container.get("ports"), f"{path}.ports")):
        entry = _mapping(port, f"{path}.ports[{index}]")
        host_port = entry.get("hostPort")
        if host_port in (None, 0):
            continue
        if not isinstance(host_port, int) or isinstance(host_port, bool) or not 0 < host_port < 65536:
            raise PodManifestError(
                f"{path}.ports[{index}].hostPort", "must be a port number 1-65535", host_port
            )
        found.append(HostPort(host_port, str(entry.get("protocol") or "TCP"), str(entry.get("hostIP") or "")))
    return found


def pod_requests(spec: Mapping[str, Any], path: str = "spec") -> Resources:
    """The kube-scheduler's effective requests of a pod spec (sidecars, init containers, overhead)."""
    total = EMPTY
    for index, container in enumerate(_sequence(spec.get("containers"), f"{path}.containers")):
        total = total + _container_requests(
            _mapping(container, f"{path}.containers[{index}]"), f"{path}.containers[{index}]"
        )
    sidecars = EMPTY
    init_peak = EMPTY
    for index, container in enumerate(_sequence(spec.get("initContainers"), f"{path}.initContainers")):
        where = f"{path}.initContainers[{index}]"
        entry = _mapping(container, where)
        requests = _container_requests(entry, where)
        if entry.get("restartPolicy") == "Always":
            total = total + requests
            sidecars = sidecars + requests
        else:
            init_peak = init_peak.maximum(requests + sidecars)
    return total.maximum(init_peak) + _resources(spec.get("overhead"), f"{path}.overhead")


def _requirement(expr: object, path: str, operators: tuple[str, ...]) -> Requirement:
    entry = _mapping(expr, path)
    key = entry.get("key")
    if not isinstance(key, str) or not key:
        raise PodManifestError(f"{path}.key", "must be a non-empty label key", key)
    operator = entry.get("operator")
    if operator not in operators:
        raise PodManifestError(f"{path}.operator", f"must be one of {', '.join(operators)}", operator)
    values = tuple(str(v) for v in _sequence(entry.get("values"), f"{path}.values"))
    if operator in ("In", "NotIn") and not values:
        raise PodManifestError(f"{path}.values", f"operator {operator} needs at least one value", [])
    if operator in ("Exists", "DoesNotExist") and values:
        raise PodManifestError(f"{path}.values", f"operator {operator} takes no values", list(values))
    if operator in ("Gt", "Lt", "Gte", "Lte") and (len(values) != 1 or not values[0].lstrip("-").isdigit()):
        raise PodManifestError(f"{path}.values", f"operator {operator} needs one integer value", list(values))
    return Requirement(key, operator, values)


def _label_selector(value: object, path: str) -> LabelSelector:
    entry = _mapping(value, path)
    expressions = tuple(
        _requirement(expr, f"{path}.matchExpressions[{i}]", _SELECTOR_OPERATORS)
        for i, expr in enumerate(_sequence(entry.get("matchExpressions"), f"{path}.matchExpressions"))
    )
    return LabelSelector(_string_map(entry.get("matchLabels"), f"{path}.matchLabels"), expressions)


def _node_term(term: object, path: str) -> tuple[Requirement, ...]:
    entry = _mapping(term, path)
    if entry.get("matchFields"):
        raise PodManifestError(
            f"{path}.matchFields", "matchFields is not supported by Karpenter", entry["matchFields"]
        )
    return tuple(
        _requirement(expr, f"{path}.matchExpressions[{i}]", _NODE_OPERATORS)
        for i, expr in enumerate(_sequence(entry.get("matchExpressions"), f"{path}.matchExpressions"))
    )


def _affinity_term(value: object, path: str, own_labels: Pairs, weight: int = 0) -> PodAffinityTerm:
    entry = _mapping(value, path)
    topology_key = entry.get("topologyKey")
    if not isinstance(topology_key, str) or not topology_key:
        raise PodManifestError(f"{path}.topologyKey", "must be a non-empty label key", topology_key)
    selector = _label_selector(entry.get("labelSelector"), f"{path}.labelSelector")
    if entry.get("labelSelector") is None:
        selector = LabelSelector(
            match_expressions=(Requirement("__none__", "Exists"),)
        )  # null matches nothing
    match_keys = [str(k) for k in _sequence(entry.get("matchLabelKeys"), f"{path}.matchLabelKeys")]
    labels = dict(own_labels)
    extra = tuple((k, labels[k]) for k in match_keys if k in labels)
    if extra:
        selector = selector.with_labels(extra)
    namespaces = tuple(str(n) for n in _sequence(entry.get("namespaces"), f"{path}.namespaces"))
    return PodAffinityTerm(
        selector=selector,
        topology_key=topology_key,
        namespaces=namespaces,
        all_namespaces=entry.get("namespaceSelector") is not None
        and not _mapping(entry.get("namespaceSelector"), f"{path}.namespaceSelector"),
        weight=weight,
    )


def _weighted(value: object, path: str, inner: str) -> tuple[int, Mapping[str, Any]]:
    entry = _mapping(value, path)
    weight = entry.get("weight", 1)
    if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
        raise PodManifestError(f"{path}.weight", "must be an integer from 1 to 100", weight)
    return weight, _mapping(entry.get(inner), f"{path}.{inner}")


def _affinities(
    section: Mapping[str, Any], path: str, own_labels: Pairs
) -> tuple[tuple[PodAffinityTerm, ...], tuple[PodAffinityTerm, ...]]:
    required = tuple(
        _affinity_term(term, f"{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", own_labels)
        for i, term in enumerate(
            _sequence(
                section.get("requiredDuringSchedulingIgnoredDuringExecution"),
                f"{path}.requiredDuringSchedulingIgnoredDuringExecution",
            )
        )
    )
    preferred = []
    key = "preferredDuringSchedulingIgnoredDuringExecution"
    for i, item in enumerate(_sequence(section.get(key), f"{path}.{key}")):
        weight, term = _weighted(item, f"{path}.{key}[{i}]", "podAffinityTerm")
        preferred.append(_affinity_term(term, f"{path}.{key}[{i}].podAffinityTerm", own_labels, weight))
    return required, tuple(sorted(preferred, key=lambda t: -t.weight))


def _spread(value: object, path: str, own_labels: Pairs) -> TopologySpread:
    entry = _mapping(value, path)
    max_skew = entry.get("maxSkew")
    if not isinstance(max_skew, int) or isinstance(max_skew, bool) or max_skew < 1:
        raise PodManifestError(f"{path}.maxSkew", "must be an integer of at least 1", max_skew)
    topology_key = entry.get("topologyKey")
    if not isinstance(topology_key, str) or not topology_key:
        raise PodManifestError(f"{path}.topologyKey", "must be a non-empty label key", topology_key)
    when = entry.get("whenUnsatisfiable")
    if when not in ("DoNotSchedule", "ScheduleAnyway"):
        raise PodManifestError(f"{path}.whenUnsatisfiable", "must be DoNotSchedule or ScheduleAnyway", when)
    min_domains = entry.get("minDomains")
    if min_domains is not None and (
        not isinstance(min_domains, int) or isinstance(min_domains, bool) or min_domains < 1
    ):
        raise PodManifestError(f"{path}.minDomains", "must be an integer of at least 1", min_domains)
    if min_domains is not None and when != "DoNotSchedule":
        raise PodManifestError(
            f"{path}.minDomains", "is only allowed with whenUnsatisfiable: DoNotSchedule", min_domains
        )
    match_keys = tuple(str(k) for k in _sequence(entry.get("matchLabelKeys"), f"{path}.matchLabelKeys"))
    selector = _label_selector(entry.get("labelSelector"), f"{path}.labelSelector")
    if (
        entry.get("labelSelector") is None
    ):  # null matches nothing (kube-scheduler PodTopologySpread): no spread
        selector = LabelSelector(match_expressions=(Requirement("__none__", "Exists"),))
    labels = dict(own_labels)
    extra = tuple((k, labels[k]) for k in match_keys if k in labels)
    if extra:
        selector = selector.with_labels(extra)
    policies: dict[str, InclusionPolicy] = {}
    for field_name, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore")):
        policy = entry.get(field_name) or default
        if policy == "Honor":
            policies[field_name] = "Honor"
        elif policy == "Ignore":
            policies[field_name] = "Ignore"
        else:
            raise PodManifestError(f"{path}.{field_name}", "must be Honor or Ignore", policy)
    return TopologySpread(
        max_skew=max_skew,
        topology_key=topology_key,
        when_unsatisfiable=when,
        selector=selector,
        min_domains=min_domains,
        match_label_keys=match_keys,
        node_affinity_policy=policies["nodeAffinityPolicy"],
        node_taints_policy=policies["nodeTaintsPolicy"],
    )


def pod_from_manifest(manifest: Mapping[str, Any]) -> Pod:
    """A `Pod` from a Kubernetes Pod dict (or a pod template with `metadata` and `spec`).

    Raises `PodManifestError` naming the field path and value of the first malformed field."""
    meta = _mapping(manifest.get("metadata"), "metadata")
    spec = _mapping(manifest.get("spec"), "spec")
    status = _mapping(manifest.get("status"), "status")
    labels = _string_map(meta.get("labels"), "metadata.labels")
    annotations = _string_map(meta.get("annotations"), "metadata.annotations")
    name = meta.get("name") or meta.get("generateName") or ""
    namespace = meta.get("namespace") or "default"
    if not isinstance(name, str) or not isinstance(namespace, str):
        raise PodManifestError("metadata.name", "must be a string", name)

    owner_kind = owner_name = ""
    for index, ref in enumerate(_sequence(meta.get("ownerReferences"), "metadata.ownerReferences")):
        entry = _mapping(ref, f"metadata.ownerReferences[{index}]")
        if entry.get("controller") or not owner_kind:
            owner_kind, owner_name = str(entry.get("kind") or ""), str(entry.get("name") or "")

    affinity = _mapping(spec.get("affinity"), "spec.affinity")
    node_affinity = _mapping(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
    required_section = _mapping(
        node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
    )
    term_path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    required_terms = tuple(
        _node_term(term, f"{term_path}[{i}]")
        for i, term in enumerate(_sequence(required_section.get("nodeSelectorTerms"), term_path))
    )
    if "nodeSelectorTerms" in required_section and not required_terms:
        raise PodManifestError(term_path, "must hold at least one term", [])
    preferred_path = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    preferred_terms = []
    for i, item in enumerate(
        _sequence(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"), preferred_path)
    ):
        weight, term = _weighted(item, f"{preferred_path}[{i}]", "preference")
        preferred_terms.append(
            PreferredNodeTerm(weight, _node_term(term, f"{preferred_path}[{i}].preference"))
        )
    pod_affinity, preferred_affinity = _affinities(
        _mapping(affinity.get("podAffinity"), "spec.affinity.podAffinity"),
        "spec.affinity.podAffinity",
        labels,
    )
    anti_affinity, preferred_anti = _affinities(
        _mapping(affinity.get("podAntiAffinity"), "spec.affinity.podAntiAffinity"),
        "spec.affinity.podAntiAffinity",
        labels,
    )

    tolerations = []
    for index, item in enumerate(_sequence(spec.get("tolerations"), "spec.tolerations")):
        try:
            tolerations.append(Toleration.from_dict(_mapping(item, f"spec.tolerations[{index}]")))
        except TolerationError as exc:
            raise PodManifestError(f"spec.tolerations[{index}]", str(exc), item) from exc

    spreads = tuple(
        _spread(item, f"spec.topologySpreadConstraints[{i}]", labels)
        for i, item in enumerate(
            _sequence(spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints")
        )
    )
    ports: list[HostPort] = []
    for group in ("containers", "initContainers"):
        for index, container in enumerate(_sequence(spec.get(group), f"spec.{group}")):
            ports += _host_ports(_mapping(container, f"spec.{group}[{index}]"), f"spec.{group}[{index}]")

    priority = spec.get("priority") or 0
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise PodManifestError("spec.priority", "must be an integer", priority)
    unschedulable = any(
        isinstance(c, Mapping) and c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
        for c in _sequence(status.get("conditions"), "status.conditions")
    )
    return Pod(
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or ""),
        labels=labels,
        annotations=annotations,
        requests=pod_requests(spec),
        node_selector=_string_map(spec.get("nodeSelector"), "spec.nodeSelector"),
        required_node_terms=required_terms,
        preferred_node_terms=tuple(sorted(preferred_terms, key=lambda t: -t.weight)),
        pod_affinity=pod_affinity,
        pod_anti_affinity=anti_affinity,
        preferred_pod_affinity=preferred_affinity,
        preferred_pod_anti_affinity=preferred_anti,
        tolerations=tuple(tolerations),
        topology_spread=spreads,
        host_ports=tuple(ports),
        owner_kind=owner_kind,
        owner_name=owner_name,
        priority=priority,
        priority_class=str(spec.get("priorityClassName") or ""),
        node_name=str(spec.get("nodeName") or ""),
        nominated_node_name=str(status.get("nominatedNodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        unschedulable=unschedulable,
        deleting=meta.get("deletionTimestamp") is not None,
        created_at=str(meta.get("creationTimestamp") or ""),
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
    )
