"""Which Longshore function a pod's admission should wake: the admission webhook's decision table.

Theory of operation: the cluster's API server sends every pod CREATE and DELETE to the trigger function
(a `ValidatingWebhookConfiguration`, `deploy/webhook.yaml`, with `failurePolicy: Ignore`: it never blocks a
pod). The scheduled functions stop as soon as a pass finds nothing to follow, so these triggers are what
makes a quiet cluster react within a second instead of at the next minute's schedule:

    CREATE of an unbound pod that is not a DaemonSet or mirror pod   -> the provisioner (it may go pending)
    DELETE of a pod bound to a node (the request, and the kubelet's   -> the planner (a node may be empty, or
      final delete when the pod is gone)                                 under-used, from now on)
    anything else (updates, bound or DaemonSet pods created, unbound  -> nothing
      pods deleted, other kinds)

A missed or duplicated trigger is harmless: every trigger only asks for a pass, which reads the cluster
itself, and the every-minute schedule catches whatever a lost trigger would have.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

PROVISIONER: Final = "provisioner"
PLANNER: Final = "planner"

_NODE_OWNERS: Final = ("DaemonSet", "Node")


def admission_targets(
    operation: str, kind: str, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> tuple[str, ...]:
    """The functions to trigger for one admission request (`kind` is the object's kind, e.g. "Pod")."""
    if kind != "Pod":
        return ()
    if operation == "CREATE" and obj is not None:
        return (PROVISIONER,) if _may_go_pending(obj) else ()
    if operation == "DELETE":
        pod = old if old is not None else obj
        if pod is not None and _field(pod, "spec").get("nodeName"):
            return (PLANNER,)
    return ()


def _may_go_pending(pod: Mapping[str, Any]) -> bool:
    if _field(pod, "spec").get("nodeName"):
        return False
    meta = _field(pod, "metadata")
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping) and "kubernetes.io/config.mirror" in annotations:
        return False
    owners = meta.get("ownerReferences")
    if isinstance(owners, list):
        return not any(isinstance(o, Mapping) and o.get("kind") in _NODE_OWNERS for o in owners)
    return True


def _field(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}
