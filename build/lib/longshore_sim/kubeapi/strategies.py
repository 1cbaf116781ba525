"""Per-resource rules the API server applies on create, update and delete (its "registry strategies").

Theory of operation: the store is generic; what differs by kind lives here, each rule named after the
Kubernetes behaviour it copies:
- encoding: status fields that Go always serialises (DaemonSet counts, ReplicaSet replicas, PDB counts) are
  filled with 0, because the kubernetes client refuses objects without them.
- create defaults: pods get `status.phase=Pending` (client-sent status is dropped, as PodStrategy does),
  `terminationGracePeriodSeconds=30`, `schedulerName`, `restartPolicy`, `priority=0`, and the two NoExecute
  tolerations (`not-ready`, `unreachable`, 300 s) that the DefaultTolerationSeconds admission plugin adds to
  every pod; Deployments and ReplicaSets default `replicas` to 1; workload and PDB status starts empty;
  namespaces start `Active`.
- update: for kinds with a status subresource a main-resource update keeps the stored status and a status
  update keeps everything but status (the store bumps `metadata.generation` when `spec` changes). Pod specs are
  immutable except the fields Kubernetes allows (container images, activeDeadlineSeconds, added tolerations,
  terminationGracePeriodSeconds, removed scheduling gates); anything else is 422, and binding a pod is only
  possible through `pods/binding`.
- delete: only pods delete gracefully. Their grace period is the request's, else the pod's
  `terminationGracePeriodSeconds`; a pod that was never scheduled, or has finished, is deleted at once.
"""

from __future__ import annotations

from typing import Any

from longshore_sim.kubeapi import errors
from longshore_sim.kubeapi.meta import JSON, clone, name_of
from longshore_sim.kubeapi.resources import ResourceType

DEFAULT_POD_GRACE_SECONDS = 30
DEFAULT_TOLERATIONS: tuple[JSON, ...] = (
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
)
_POD_MUTABLE_MESSAGE = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
    "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
    "negative)"
)


_REQUIRED_STATUS_FIELDS: dict[str, tuple[str, ...]] = {
    # Go fields without `omitempty`: the API server always serialises them, and the client requires them.
    "daemonsets": ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"),
    "replicasets": ("replicas",),
    "poddisruptionbudgets": ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"),
}


def normalize(rt: ResourceType, obj: JSON) -> None:
    """Encode as Kubernetes does (in place): empty `omitempty` metadata collections vanish, required zeros appear."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for key in ("labels", "annotations", "finalizers", "ownerReferences"):
            if key in meta and not meta[key]:
                del meta[key]
    required = _REQUIRED_STATUS_FIELDS.get(rt.plural)
    if required:
        status = obj.get("status")
        if not isinstance(status, dict):
            status = obj["status"] = {}
        for key in required:
            if status.get(key) is None:
                status[key] = 0


def prepare_create(rt: ResourceType, obj: JSON, *, keep_status: bool, default_tolerations: bool) -> None:
    """Apply create-time defaults in place."""
    if rt.plural == "pods":
        spec = obj.setdefault("spec", {})
        spec.setdefault("terminationGracePeriodSeconds", DEFAULT_POD_GRACE_SECONDS)
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("priority", 0)
        spec.setdefault("containers", [])
        if default_tolerations:
            tolerations = spec.setdefault("tolerations", [])
            for toleration in DEFAULT_TOLERATIONS:
                if not any(
                    t.get("key") == toleration["key"] and t.get("effect") == "NoExecute" for t in tolerations
                ):
                    tolerations.append(clone(toleration))
        if not keep_status:
            obj["status"] = {"phase": "Pending"}
        else:
            obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif rt.plural in ("deployments", "replicasets"):
        obj.setdefault("spec", {}).setdefault("replicas", 1)
        if not keep_status:
            obj["status"] = {}
    elif rt.plural in ("daemonsets", "poddisruptionbudgets") and not keep_status:
        obj["status"] = {}
    elif rt.plural == "namespaces":
        obj["status"] = {"phase": "Active"}
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])


def tracks_generation(rt: ResourceType) -> bool:
    return rt.has_status and rt.plural not in ("namespaces",)


def prepare_update(rt: ResourceType, old: JSON, new: JSON, subresource: str | None) -> JSON:
    """The object to store for an update of `old` with `new` (a fresh dict; neither input is modified)."""
    if subresource == "status":
        result = clone(old)
        if "status" in new:
            result["status"] = clone(new["status"])
        else:
            result.pop("status", None)
        return result
    result = clone(new)
    if rt.has_status:
        if "status" in old:
            result["status"] = clone(old["status"])
        else:
            result.pop("status", None)
    if rt.plural == "pods":
        _check_pod_spec_update(old, result)
    return result


def _masked_pod_spec(spec: JSON) -> JSON:
    masked = clone(spec)
    for key in ("containers", "initContainers"):
        for container in masked.get(key) or []:
            container.pop("image", None)
    for key in ("activeDeadlineSeconds", "terminationGracePeriodSeconds", "tolerations", "schedulingGates"):
        masked.pop(key, None)
    return masked


def _check_pod_spec_update(old: JSON, new: JSON) -> None:
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if old_spec == new_spec:
        return
    name = name_of(old)
    if _masked_pod_spec(old_spec) != _masked_pod_spec(new_spec):
        raise errors.invalid("pods", "Pod", name, [("spec", _POD_MUTABLE_MESSAGE)])
    old_tolerations: list[Any] = old_spec.get("tolerations") or []
    new_tolerations: list[Any] = new_spec.get("tolerations") or []
    if any(t not in new_tolerations for t in old_tolerations):
        raise errors.invalid("pods", "Pod", name, [("spec.tolerations", _POD_MUTABLE_MESSAGE)])
    old_gates = [g.get("name") for g in old_spec.get("schedulingGates") or []]
    new_gates = [g.get("name") for g in new_spec.get("schedulingGates") or []]
    if any(g not in old_gates for g in new_gates):
        raise errors.invalid(
            "pods", "Pod", name, [("spec.schedulingGates", "Forbidden: only deletion is allowed")]
        )


def grace_period(rt: ResourceType, obj: JSON, requested: int | None) -> int:
    """Seconds between the delete request and the object's removal (before finalizers are considered)."""
    if rt.plural != "pods":
        return 0
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return max(int(requested), 0)
    return max(int(spec.get("terminationGracePeriodSeconds", DEFAULT_POD_GRACE_SECONDS)), 0)
