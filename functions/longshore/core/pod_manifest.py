"""Reading a Kubernetes Pod manifest into the scheduler's frozen `core.pods.Pod`.

Theory of operation: `pod_from_manifest` turns a Kubernetes Pod dict (as `kubectl get pod -o json` prints it,
or a pod template with metadata and spec) into a `Pod`. It is pure and strict: a malformed field raises
`PodManifestError` carrying the field path (`spec.containers[0].resources.requests.cpu`) and the offending
value, so the config edge can name file, document and line.

Requests follow the kube-scheduler's `PodRequests` (`pod_requests`): the sum of the app containers plus
restartable (sidecar) init containers, or the largest ordinary init container plus the sidecars started
before it, whichever is larger, with pod-level `spec.resources` requests (cpu, memory, hugepages) replacing
that sum, plus the pod overhead. A container that sets a limit but no request requests
its limit (API-server defaulting). Selector operators are Kubernetes' (In/NotIn/Exists/DoesNotExist; node
selector terms also Gt/Lt and Karpenter's Gte/Lte); anything else is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from longshore.core import quantity
from longshore.core.model import Pairs, Requirement, pairs
from longshore.core.pods import (
    HostPort,
    InclusionPolicy,
    LabelSelector,
    Pod,
    PodAffinityTerm,
    PreferredNodeTerm,
    TopologySpread,
    VolumeClaim,
)
from longshore.core.resources import EMPTY, Resources
from longshore.core.taints import Toleration, TolerationError

_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")


class PodManifestError(ValueError):
    """A pod manifest field that Kubernetes would reject; `path` is the field, `value` what was found."""

    def __init__(self, path: str, message: str, value: object = None) -> None:
        self.path = path
        self.message = message
        self.value = value
        super().__init__(f"{path}: {message}" if path else message)


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
    containers = total.maximum(init_peak)
    return _pod_level(containers, spec, path) + _resources(spec.get("overhead"), f"{path}.overhead")


def _pod_level_resource(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _pod_level(containers: Resources, spec: Mapping[str, Any], path: str) -> Resources:
    """Pod-level `spec.resources` (PodLevelResources, Kubernetes 1.32+): its requests of cpu, memory and
    hugepages replace the containers' sum (component-helpers `PodRequests`); a pod-level limit with no
    pod-level request stands for the request where no container requests that resource (API defaulting)."""
    if "resources" not in spec:
        return containers
    resources = _mapping(spec.get("resources"), f"{path}.resources")
    requests = _resources(resources.get("requests"), f"{path}.resources.requests")
    limits = _resources(resources.get("limits"), f"{path}.resources.limits")
    merged = dict(containers.items)
    for name, amount in limits.items:
        if _pod_level_resource(name) and name not in requests.names() and not containers.get(name):
            merged[name] = amount
    for name, amount in requests.items:
        if _pod_level_resource(name):
            merged[name] = amount
    return Resources.of(merged)


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


def node_term(term: object, path: str) -> tuple[Requirement, ...]:
    """One node selector term's `matchExpressions` as requirements (`path` names the term in errors)."""
    return _node_term(term, path)


def _volume_claims(spec: Mapping[str, Any], pod_name: str) -> tuple[VolumeClaim, ...]:
    found: list[VolumeClaim] = []
    for i, item in enumerate(_sequence(spec.get("volumes"), "spec.volumes")):
        volume = _mapping(item, f"spec.volumes[{i}]")
        if volume.get("persistentVolumeClaim") is not None:
            path = f"spec.volumes[{i}].persistentVolumeClaim"
            claim = _mapping(volume["persistentVolumeClaim"], path).get("claimName")
            if not isinstance(claim, str) or not claim:
                raise PodManifestError(f"{path}.claimName", "must be a non-empty claim name", claim)
            found.append(VolumeClaim(claim))
        elif volume.get("ephemeral") is not None:
            name = volume.get("name")
            if not isinstance(name, str) or not name:
                raise PodManifestError(f"spec.volumes[{i}].name", "must be a non-empty volume name", name)
            found.append(VolumeClaim(f"{pod_name}-{name}", ephemeral=True))
    return tuple(found)


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


def pod_from_manifest(
    manifest: Mapping[str, Any], requests: Callable[[Mapping[str, Any]], Resources] | None = None
) -> Pod:
    """A `Pod` from a Kubernetes Pod dict (or a pod template with `metadata` and `spec`).

    `requests` computes the pod's effective requests from its spec (default `pod_requests`; a caller may pass
    a memo of it). Raises `PodManifestError` naming the field path and value of the first malformed field."""
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
        requests=(requests or pod_requests)(spec),
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
        volume_claims=_volume_claims(spec, name),
    )
