"""Reading and changing Node manifests (plain dicts, as the `Cluster` port returns them).

Theory of operation: the disruption taint marks a node as ours to disrupt; the annotation
`longshore.io/disruption` names the execution that placed it, so a rollback removes only its own taint and a
retried Taint step recognises its own work. Everything here is a pure function of the manifest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from longshore.core.claims import instance_id_of
from longshore.core.drain import DISRUPTED_TAINT_KEY
from longshore.core.model import Taint, TaintEffect
from longshore.ports.kube import ObjectRef

DISRUPTED_TAINT: Final = Taint(key=DISRUPTED_TAINT_KEY, effect="NoSchedule")
DISRUPTION_ANNOTATION: Final = "longshore.io/disruption"
DISRUPTION_REASON_ANNOTATION: Final = "longshore.io/disruption-reason"
NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"
_EFFECTS: Final[Mapping[str, TaintEffect]] = {
    "NoSchedule": "NoSchedule",
    "PreferNoSchedule": "PreferNoSchedule",
    "NoExecute": "NoExecute",
}


def name_of(node: Mapping[str, Any]) -> str:
    return str((node.get("metadata") or {}).get("name") or "")


def labels_of(node: Mapping[str, Any]) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get("labels") or {})


def annotations_of(node: Mapping[str, Any]) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get("annotations") or {})


def taints_of(node: Mapping[str, Any]) -> tuple[Taint, ...]:
    taints = []
    for raw in (node.get("spec") or {}).get("taints") or ():
        effect = _EFFECTS.get(str(raw.get("effect") or ""))
        if effect is not None:
            taints.append(
                Taint(key=str(raw.get("key") or ""), effect=effect, value=str(raw.get("value") or ""))
            )
    return tuple(taints)


def instance_id_of_node(node: Mapping[str, Any]) -> str | None:
    provider_id = str((node.get("spec") or {}).get("providerID") or "")
    return instance_id_of(provider_id)


def ref_of(node: Mapping[str, Any]) -> ObjectRef:
    metadata = node.get("metadata") or {}
    return ObjectRef(kind="Node", name=str(metadata.get("name") or ""), uid=str(metadata.get("uid") or ""))


def has_disrupted_taint(node: Mapping[str, Any]) -> bool:
    return any(t.key == DISRUPTED_TAINT.key and t.effect == DISRUPTED_TAINT.effect for t in taints_of(node))


def disrupted_by(node: Mapping[str, Any]) -> str | None:
    """The execution that tainted this node, when Longshore did."""
    return annotations_of(node).get(DISRUPTION_ANNOTATION)


def with_taint(taints: Iterable[Taint], taint: Taint) -> tuple[Taint, ...]:
    """`taints` with `taint` added, replacing any taint with the same key and effect."""
    return (*(t for t in taints if (t.key, t.effect) != (taint.key, taint.effect)), taint)


def without_taint(taints: Iterable[Taint], taint: Taint) -> tuple[Taint, ...]:
    return tuple(t for t in taints if (t.key, t.effect) != (taint.key, taint.effect))


def find_node_for_instance(nodes: Iterable[Mapping[str, Any]], instance_id: str) -> Mapping[str, Any] | None:
    return next((n for n in nodes if instance_id_of_node(n) == instance_id), None)
