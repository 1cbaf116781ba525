"""What the simulation's judges read of a Pod or Node manifest, exactly as the emulator stores it.

The rule checker (`longshore_sim.checker`), the runner and its summary agree on these readings; the rules:

- A pod's key is `namespace/name`, a missing namespace read as `default`.
- A pod is *running* when its phase is Running and it has no `deletionTimestamp`: a terminating pod no longer
  counts as running, whatever its phase says.
- A DaemonSet pod is one with a `DaemonSet` owner reference; a pod's Deployment is read from its ReplicaSet
  owner's name (`<deployment>-<hash>`), never from labels.
- A pod is *unschedulable* only when it is unbound, not terminating, and the scheduler set `PodScheduled`
  False with reason `Unschedulable` (it tried every node and none fits); merely pending is not unschedulable.
- A pod is protected from voluntary disruption by `karpenter.sh/do-not-evict: "true"`, by
  `karpenter.sh/do-not-disrupt: "true"`, or by a do-not-disrupt Go duration not yet elapsed since the pod's
  creation; a value that is neither (or a duration with no creation time) protects nothing.
- A node is tainted for disruption when it carries the `karpenter.sh/disrupted` taint (any effect).

Every function is pure: it reads the manifest and never changes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from longshore.core.drain import parse_go_duration
from longshore_sim.kubeapi.meta import metadata

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
DO_NOT_EVICT = "karpenter.sh/do-not-evict"
DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = metadata(pod)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def is_running(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and not metadata(pod).get("deletionTimestamp")


def is_daemon_pod(pod: Mapping[str, Any]) -> bool:
    return any(r.get("kind") == "DaemonSet" for r in metadata(pod).get("ownerReferences") or [])


def node_of(pod: Mapping[str, Any]) -> str | None:
    name = (pod.get("spec") or {}).get("nodeName")
    return str(name) if name else None


def owner_deployment(pod: Mapping[str, Any]) -> str | None:
    """`namespace/deployment` for a pod of a Deployment's ReplicaSet (`<deployment>-<hash>`)."""
    for ref in metadata(pod).get("ownerReferences") or []:
        if ref.get("kind") == "ReplicaSet":
            name = str(ref.get("name") or "")
            deployment = name.rsplit("-", 1)[0] if "-" in name else name
            return f"{metadata(pod).get('namespace') or 'default'}/{deployment}"
    return None


def protection(annotations: Mapping[str, str], created_at: float | None, now: float) -> str | None:
    """The do-not-disrupt (or do-not-evict) annotation protecting a pod at `now`, or None."""
    if str(annotations.get(DO_NOT_EVICT, "")).strip().lower() == "true":
        return f"{DO_NOT_EVICT}=true"
    value = annotations.get(DO_NOT_DISRUPT)
    if value is None:
        return None
    if str(value).strip().lower() == "true":
        return f"{DO_NOT_DISRUPT}=true"
    duration = parse_go_duration(str(value))
    if duration is not None and created_at is not None and now < created_at + duration:
        return f"{DO_NOT_DISRUPT}={value}"
    return None


def unschedulable(pod: Mapping[str, Any]) -> bool:
    """Pending, unbound, and marked Unschedulable by the scheduler (it found no node with room)."""
    if node_of(pod) or metadata(pod).get("deletionTimestamp"):
        return False
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def is_tainted(node: Mapping[str, Any]) -> bool:
    return any(t.get("key") == DISRUPTED_TAINT_KEY for t in (node.get("spec") or {}).get("taints") or [])
