"""PodDisruptionBudgets: the disruption controller's status arithmetic and the eviction subresource.

Theory of operation: Kubernetes splits this between the disruption controller (which writes each PDB's
status) and the eviction REST handler (which reads it). The emulator computes the status on demand from the
current pods, under the store lock, so an eviction always sees an up-to-date budget and two concurrent
evictions cannot both spend the last allowed disruption (the first one marks its pod terminating, which
removes it from `currentHealthy` before the second is checked). The rules, from
`pkg/controller/disruption/disruption.go` and `pkg/registry/core/pod/storage/eviction.go`:

- The PDB's pods are the pods in its namespace matched by `spec.selector` (policy/v1: `{}` matches all,
  a missing selector matches none).
- `maxUnavailable` (int or percent): expected = the sum of the pods' controllers' scale (a ReplicaSet owned by a
  Deployment counts the Deployment's replicas; each controller once); desiredHealthy = expected - maxUnavailable
  (percent of expected, rounded up), not below 0.
- `minAvailable` int: desiredHealthy = the int, expected = number of matching pods. `minAvailable` percent:
  expected from the controllers' scale, desiredHealthy = percent of it rounded up.
- Pods without a supported scalable controller (for example DaemonSet pods) make the percentage and
  `maxUnavailable` forms fail: the controller's fail-safe sets disruptionsAllowed to 0 (condition SyncFailed).
- currentHealthy = matching pods that are not being deleted and whose Ready condition is True;
  disruptionsAllowed = max(currentHealthy - desiredHealthy, 0).
- Eviction: pods that are Pending, Succeeded, Failed or already terminating ignore PDBs; more than one PDB for a
  pod is a 500; a pod that is not Ready may be evicted when `unhealthyPodEvictionPolicy: AlwaysAllow`, or under
  the default `IfHealthyBudget` when currentHealthy >= desiredHealthy > 0; otherwise disruptionsAllowed must be
  positive or the answer is 429 TooManyRequests with a `DisruptionBudget` cause. A permitted eviction deletes
  the pod with the eviction's `deleteOptions` (grace period, preconditions).
"""

from __future__ import annotations

import math
from typing import Any

from longshore_sim.kubeapi import errors
from longshore_sim.kubeapi.meta import (
    JSON,
    controller_of,
    is_pod_ready,
    labels_of,
    metadata,
    name_of,
    rfc3339,
)
from longshore_sim.kubeapi.selectors import selector_from_object
from longshore_sim.kubeapi.store import ObjectStore

DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"


class ScaleError(Exception):
    """The expected pod count cannot be computed (no controller, or one without a scale)."""


def scaled_value(value: Any, total: int, field: str) -> int:
    """`intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)`."""
    if isinstance(value, bool):
        raise ScaleError(f"{field}: invalid value {value!r}")
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        raise ScaleError(f"{field}: invalid type: string {text!r} is not a percentage")
    try:
        percent = int(text[:-1])
    except ValueError:
        raise ScaleError(f"{field}: invalid value for IntOrString: {text!r}") from None
    return math.ceil(total * percent / 100)


def _expected_scale(store: ObjectStore, namespace: str, pods: list[JSON]) -> int:
    seen: set[str] = set()
    expected = 0
    for pod in pods:
        ref = controller_of(pod)
        if ref is None:
            raise ScaleError(f"found no controller ref for pod {name_of(pod)!r}")
        kind, name = ref.get("kind"), str(ref.get("name"))
        if kind == "ReplicaSet":
            rs = store.try_get("replicasets", name, namespace)
            if rs is None or metadata(rs).get("uid") != ref.get("uid"):
                raise ScaleError(f"found no controllers for pod {name_of(pod)!r}")
            owner = controller_of(rs)
            if owner is not None and owner.get("kind") == "Deployment":
                deployment = store.try_get("deployments", str(owner.get("name")), namespace)
                if deployment is None:
                    raise ScaleError(f"found no controllers for pod {name_of(pod)!r}")
                key, replicas = str(metadata(deployment)["uid"]), deployment["spec"].get("replicas", 1)
            else:
                key, replicas = str(metadata(rs)["uid"]), rs["spec"].get("replicas", 1)
        elif kind == "Deployment":
            deployment = store.try_get("deployments", name, namespace)
            if deployment is None:
                raise ScaleError(f"found no controllers for pod {name_of(pod)!r}")
            key, replicas = str(metadata(deployment)["uid"]), deployment["spec"].get("replicas", 1)
        else:
            raise ScaleError(
                f"found no controllers for pod {name_of(pod)!r} (controller kind {kind!r} has no scale)"
            )
        if key not in seen:
            seen.add(key)
            expected += int(replicas)
    return expected


def pods_of(store: ObjectStore, pdb: JSON) -> list[JSON]:
    """The pods `pdb` selects, as stored (uncopied, unordered: `compute_status` only counts them)."""
    selector = selector_from_object((pdb.get("spec") or {}).get("selector"))
    namespace = metadata(pdb).get("namespace")
    return [
        p
        for p in store.view("pods")
        if (not namespace or metadata(p).get("namespace") == namespace) and selector.matches(labels_of(p))
    ]


def compute_status(store: ObjectStore, pdb: JSON) -> JSON:
    """The status the disruption controller would write for `pdb` now."""
    namespace = str(metadata(pdb).get("namespace"))
    spec = pdb.get("spec") or {}
    pods = pods_of(store, pdb)
    healthy = sum(1 for p in pods if not metadata(p).get("deletionTimestamp") and is_pod_ready(p))
    generation = metadata(pdb).get("generation", 1)
    try:
        if spec.get("maxUnavailable") is not None:
            expected = _expected_scale(store, namespace, pods)
            desired = max(expected - scaled_value(spec["maxUnavailable"], expected, "maxUnavailable"), 0)
        elif isinstance(spec.get("minAvailable"), int) and not isinstance(spec.get("minAvailable"), bool):
            expected, desired = len(pods), int(spec["minAvailable"])
        elif spec.get("minAvailable") is not None:
            expected = _expected_scale(store, namespace, pods)
            desired = scaled_value(spec["minAvailable"], expected, "minAvailable")
        else:
            expected, desired = len(pods), 0
    except ScaleError as exc:
        return {
            "observedGeneration": generation,
            "currentHealthy": healthy,
            "desiredHealthy": 0,
            "expectedPods": 0,
            "disruptionsAllowed": 0,
            "conditions": [
                {"type": "DisruptionAllowed", "status": "False", "reason": "SyncFailed", "message": str(exc)}
            ],
        }
    allowed = max(healthy - desired, 0)
    return {
        "observedGeneration": generation,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "disruptionsAllowed": allowed,
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": "True" if allowed > 0 else "False",
                "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
                "message": "",
            }
        ],
    }


def refresh(store: ObjectStore, namespace: str | None = None) -> None:
    """Write the current status of every PDB (in `namespace`, or all) whose status is out of date."""
    with store.locked():
        for pdb in store.list("poddisruptionbudgets", namespace):
            status = compute_status(store, pdb)
            old = pdb.get("status") or {}
            if {k: v for k, v in old.items() if k != "conditions"} != {
                k: v for k, v in status.items() if k != "conditions"
            } or [(c.get("type"), c.get("status"), c.get("reason")) for c in old.get("conditions") or []] != [
                (c["type"], c["status"], c["reason"]) for c in status["conditions"]
            ]:
                for condition in status["conditions"]:
                    condition["lastTransitionTime"] = rfc3339(store.clock.now())
                updated = dict(pdb)
                updated["status"] = status
                store.update(
                    "poddisruptionbudgets", updated, str(metadata(pdb)["namespace"]), subresource="status"
                )


def _ignores_pdb(pod: JSON) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Pending", "Succeeded", "Failed") or bool(metadata(pod).get("deletionTimestamp"))


def evict(store: ObjectStore, namespace: str, name: str, eviction: JSON) -> JSON:
    """Handle `POST pods/{name}/eviction`: delete the pod or raise the API server's refusal."""
    body_name = metadata(eviction).get("name")
    if body_name and body_name != name:
        raise errors.bad_request(
            f"name in URL does not match name in Eviction object: {name!r} != {body_name!r}"
        )
    options = eviction.get("deleteOptions") or {}
    with store.locked():
        pod = store.get("pods", name, namespace)
        if not _ignores_pdb(pod):
            pdbs = [p for p in store.list("poddisruptionbudgets", namespace) if _selects(p, pod)]
            if len(pdbs) > 1:
                raise errors.internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
                )
            if pdbs:
                _check_budget(store, pdbs[0], pod)
        store.delete(
            "pods",
            name,
            namespace,
            grace_period_seconds=options.get("gracePeriodSeconds"),
            preconditions=options.get("preconditions"),
        )
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _selects(pdb: JSON, pod: JSON) -> bool:
    return selector_from_object((pdb.get("spec") or {}).get("selector")).matches(labels_of(pod))


def _check_budget(store: ObjectStore, pdb: JSON, pod: JSON) -> None:
    status = compute_status(store, pdb)
    policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
    if not is_pod_ready(pod):
        if policy == "AlwaysAllow":
            return
        if status["currentHealthy"] >= status["desiredHealthy"] > 0:
            return
    allowed = status["disruptionsAllowed"]
    if allowed < 0:
        raise errors.forbidden(
            "poddisruptionbudgets", name_of(pdb), "pdb disruptions allowed is negative", "policy"
        )
    if allowed == 0:
        message = (
            f"The disruption budget {name_of(pdb)} needs {status['desiredHealthy']} healthy pods "
            f"and has {status['currentHealthy']} currently"
        )
        if status["conditions"][0]["reason"] == "SyncFailed":
            message = (
                f"The disruption budget {name_of(pdb)} is not ready: {status['conditions'][0]['message']}"
            )
        raise errors.too_many_requests(
            "Cannot evict pod as it would violate the pod's disruption budget.",
            [{"reason": DISRUPTION_BUDGET_CAUSE, "message": message}],
        )
