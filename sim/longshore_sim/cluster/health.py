"""Node health faults for scenarios: a kubelet that stops reporting, or an agent that reports a bad condition.

`set_condition` writes one Node condition as its reporter would, with `lastTransitionTime` now. A `Ready`
condition that is no longer `True` also gets the node lifecycle controller's NoSchedule taint
(`node.kubernetes.io/unreachable` for `Unknown`, `node.kubernetes.io/not-ready` for `False`), so the simulated
scheduler stops binding pods there as the real one does. The simulated kubelet never rewrites a condition once
registered, so the fault lasts until the node goes. (The controller's NoExecute eviction after 300 s is not
modelled: the pods stay bound, which is the harder case for the drain.)
"""

from __future__ import annotations

from typing import Final

from longshore_sim.kubeapi.meta import JSON, rfc3339
from longshore_sim.kubeapi.store import ObjectStore

LIFECYCLE_TAINTS: Final = {
    "Unknown": "node.kubernetes.io/unreachable",
    "False": "node.kubernetes.io/not-ready",
}


def set_condition(store: ObjectStore, node: str, condition: str, status: str, now: float) -> None:
    """Node `node` reports `condition=status` from `now` on (see the module docstring)."""

    def change(obj: JSON) -> None:
        conditions = [
            c for c in obj.setdefault("status", {}).get("conditions") or [] if c.get("type") != condition
        ]
        conditions.append(
            {
                "type": condition,
                "status": status,
                "reason": "NodeStatusUnknown" if status == "Unknown" else f"{condition}Fault",
                "message": "set by the scenario",
                "lastHeartbeatTime": rfc3339(now),
                "lastTransitionTime": rfc3339(now),
            }
        )
        obj["status"]["conditions"] = conditions
        taint_key = LIFECYCLE_TAINTS.get(status) if condition == "Ready" else None
        if taint_key is not None:
            taints = [t for t in obj.setdefault("spec", {}).get("taints") or [] if t.get("key") != taint_key]
            taints.append({"key": taint_key, "effect": "NoSchedule", "timeAdded": rfc3339(now)})
            obj["spec"]["taints"] = taints

    store.modify("nodes", node, None, change)
