"""Predicates on raw Kubernetes objects shared by the simulated scheduler and the DaemonSet controller.

Theory of operation: these work on pod and node dicts exactly as the API returns them and follow the
kube-scheduler's plugin semantics, written independently of the packing engine (`longshore.core.scheduling`
and the requirements algebra are deliberately not used, so a simulation can catch their mistakes):
- requests (limits stand in for missing requests, as API defaulting does): the sum over containers, raised to the largest init container, plus pod overhead, plus one "pods";
- tolerations: `Exists` matches any value, an empty key with `Exists` matches every taint, an empty effect
  matches every effect; only NoSchedule and NoExecute taints block scheduling;
- node affinity: `nodeSelector` (all pairs) AND required `nodeSelectorTerms` (any term; each term's
  `matchExpressions` and `matchFields` all hold; In, NotIn, Exists, DoesNotExist, Gt, Lt).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from longshore.core import quantity
from longshore.core.resources import Resources

JSON = dict[str, Any]


def _container_requests(container: Mapping[str, Any]) -> Resources:
    resources = container.get("resources") or {}
    requests = {
        **(resources.get("limits") or {}),
        **(resources.get("requests") or {}),
    }  # limits default requests
    return Resources.of({name: quantity.parse(name, value) for name, value in requests.items()})


def pod_requests(pod: Mapping[str, Any]) -> Resources:
    """What the pod needs from a node, including the one `pods` slot."""
    spec = pod.get("spec") or {}
    total = Resources()
    for container in spec.get("containers") or []:
        total = total + _container_requests(container)
    for container in spec.get("initContainers") or []:
        total = total.maximum(_container_requests(container))
    overhead = spec.get("overhead") or {}
    total = total + Resources.of({n: quantity.parse(n, v) for n, v in overhead.items()})
    return total + Resources.of({"pods": 1})


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or "Equal"
        if not key:
            if operator == "Exists":
                return True
            continue
        if key != taint.get("key"):
            continue
        if operator == "Exists" or (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def untolerated_taints(
    pod: Mapping[str, Any], taints: Iterable[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """Blocking (NoSchedule/NoExecute) taints the pod does not tolerate."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    return [
        t for t in taints if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, t)
    ]


def _expression_holds(expression: Mapping[str, Any], values_of: Mapping[str, str]) -> bool:
    key, operator = expression.get("key", ""), expression.get("operator")
    values = [str(v) for v in expression.get("values") or []]
    present = key in values_of
    if operator == "In":
        return present and values_of[key] in values
    if operator == "NotIn":
        return not present or values_of[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            actual, bound = int(values_of[key]), int(values[0])
        except ValueError:
            return False
        return actual > bound if operator == "Gt" else actual < bound
    return False


def _term_holds(term: Mapping[str, Any], labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
    expressions = term.get("matchExpressions") or []
    field_expressions = term.get("matchFields") or []
    if not expressions and not field_expressions:
        return False  # an empty term matches nothing
    return all(_expression_holds(e, labels) for e in expressions) and all(
        _expression_holds(e, fields) for e in field_expressions
    )


def node_affinity_matches(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """nodeSelector and required node affinity both admit the node."""
    spec = pod.get("spec") or {}
    labels: Mapping[str, str] = (node.get("metadata") or {}).get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if terms is None:
        return True
    fields = {"metadata.name": str((node.get("metadata") or {}).get("name", ""))}
    return any(_term_holds(term, labels, fields) for term in terms)


def node_selector_matches(terms: Iterable[Mapping[str, Any]], node: Mapping[str, Any]) -> bool:
    """A NodeSelector's ORed terms admit the node (as a PersistentVolume's `spec.nodeAffinity.required`)."""
    labels: Mapping[str, str] = (node.get("metadata") or {}).get("labels") or {}
    fields = {"metadata.name": str((node.get("metadata") or {}).get("name", ""))}
    return any(_term_holds(term, labels, fields) for term in terms)


def is_node_ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def node_allocatable(node: Mapping[str, Any]) -> Resources:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return Resources.of({name: quantity.parse(name, value) for name, value in allocatable.items()})


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
