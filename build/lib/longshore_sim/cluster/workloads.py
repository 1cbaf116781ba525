"""Workload controllers: Deployments own ReplicaSets, ReplicaSets own pods, DaemonSets put a pod on each node.

Theory of operation: each controller is level-triggered: `reconcile()` reads the store and makes it right,
so running it again changes nothing. They act on the store directly (in-process, like controllers in
kube-controller-manager), which the HTTP clients then observe through lists and watches.
- Deployment: one ReplicaSet per pod-template hash (`<deployment>-<hash>`, label `pod-template-hash`), scaled
  to `spec.replicas`; ReplicaSets of older templates are scaled to 0 (a Recreate-style rollout: the simulation
  models capacity, not surge). Status: replicas, updated, ready and available replicas, observedGeneration.
- ReplicaSet: counts its active pods (owned, not terminating, not finished); creates the missing ones from the
  template (`generateName: <rs>-`, controller ownerReference) and deletes the surplus in Kubernetes' order
  (unscheduled first, then pending, then not ready, then the newest), gracefully.
- DaemonSet: a pod on every node the template's nodeSelector/required affinity admits and whose NoSchedule and
  NoExecute taints it tolerates, counting the tolerations the DaemonSet controller adds to every daemon pod
  (not-ready, unreachable, disk/memory/pid pressure, unschedulable, and network-unavailable for host-network
  pods). Each pod is pinned with node affinity `matchFields metadata.name In [node]`, as the real controller
  does, and goes through the scheduler (so it can be Unschedulable for lack of room). Pods for nodes that no
  longer qualify are deleted.
- Pod GC: pods bound to a node that no longer exists are force-deleted after a 40 s quarantine, as
  kube-controller-manager's pod garbage collector does, so their controllers replace them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from longshore.ports.clock import Clock
from longshore_sim.cluster import matching
from longshore_sim.kubeapi.errors import ApiError
from longshore_sim.kubeapi.meta import JSON, clone, controller_of, is_pod_ready, metadata, parse_rfc3339
from longshore_sim.kubeapi.selectors import selector_from_object
from longshore_sim.kubeapi.store import ObjectStore

TEMPLATE_HASH_LABEL = "pod-template-hash"
POD_GC_QUARANTINE_SECONDS = 40.0
DAEMON_TOLERATIONS: tuple[JSON, ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
NETWORK_UNAVAILABLE_TOLERATION = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def _owner_ref(owner: Mapping[str, Any]) -> JSON:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _owned_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == owner["metadata"]["uid"]


def _is_active(pod: Mapping[str, Any]) -> bool:
    return not metadata(pod).get("deletionTimestamp") and not matching.is_terminal(pod)


def template_hash(template: Mapping[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return str(int(digest[:12], 16) % 10**10)


def _set_status(store: ObjectStore, plural: str, obj: JSON, status: JSON) -> None:
    current = obj.get("status") or {}
    if all(current.get(k) == v for k, v in status.items()):
        return
    with contextlib.suppress(ApiError):
        store.modify(
            plural,
            obj["metadata"]["name"],
            obj["metadata"]["namespace"],
            lambda o: o.setdefault("status", {}).update(status),
        )


def _set_replicas(obj: JSON, replicas: int) -> None:
    obj["spec"]["replicas"] = replicas


class DeploymentController:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def reconcile(self) -> None:
        replicasets = self.store.view("replicasets")
        for deployment in self.store.view("deployments"):
            if metadata(deployment).get("deletionTimestamp"):
                continue
            self._sync(deployment, [rs for rs in replicasets if _owned_by(rs, deployment)])

    def _sync(self, deployment: JSON, owned: list[JSON]) -> None:
        spec = deployment.get("spec") or {}
        namespace, name = deployment["metadata"]["namespace"], deployment["metadata"]["name"]
        template = clone(spec.get("template") or {})
        digest = template_hash(template)
        current = next(
            (rs for rs in owned if (rs["metadata"].get("labels") or {}).get(TEMPLATE_HASH_LABEL) == digest),
            None,
        )
        replicas = int(spec.get("replicas", 1))
        if current is None:
            template.setdefault("metadata", {}).setdefault("labels", {})[TEMPLATE_HASH_LABEL] = digest
            selector = clone(spec.get("selector") or {})
            selector.setdefault("matchLabels", {})[TEMPLATE_HASH_LABEL] = digest
            body = {
                "metadata": {
                    "name": f"{name}-{digest}",
                    "namespace": namespace,
                    "labels": {**(template["metadata"].get("labels") or {})},
                    "ownerReferences": [_owner_ref(deployment)],
                },
                "spec": {"replicas": replicas, "selector": selector, "template": template},
            }
            try:
                current = self.store.create("replicasets", body)
            except ApiError:
                return
        for rs in [*owned, current]:
            want = replicas if rs["metadata"]["uid"] == current["metadata"]["uid"] else 0
            if int((rs.get("spec") or {}).get("replicas", 1)) != want and not metadata(rs).get(
                "deletionTimestamp"
            ):
                with contextlib.suppress(ApiError):
                    self.store.modify(
                        "replicasets",
                        rs["metadata"]["name"],
                        namespace,
                        functools.partial(_set_replicas, replicas=want),
                    )
        statuses = [rs.get("status") or {} for rs in owned]
        current_status = current.get("status") or {}
        status = {
            "observedGeneration": deployment["metadata"].get("generation", 1),
            "replicas": sum(int(s.get("replicas") or 0) for s in statuses),
            "updatedReplicas": int(current_status.get("replicas") or 0),
            "readyReplicas": sum(int(s.get("readyReplicas") or 0) for s in statuses),
            "availableReplicas": sum(int(s.get("availableReplicas") or 0) for s in statuses),
            "unavailableReplicas": max(
                replicas - sum(int(s.get("availableReplicas") or 0) for s in statuses), 0
            ),
        }
        _set_status(self.store, "deployments", deployment, status)


def _deletion_rank(pod: Mapping[str, Any]) -> tuple[int, int, int, float]:
    """Lower sorts first = deleted first: unscheduled, pending, not ready, newest (Kubernetes' ActivePods order)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(str(status.get("phase")), 1)
    created = metadata(pod).get("creationTimestamp")
    return (
        1 if spec.get("nodeName") else 0,
        phase_rank,
        1 if is_pod_ready(pod) else 0,
        -parse_rfc3339(created) if created else 0.0,
    )


class ReplicaSetController:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def reconcile(self) -> None:
        by_owner: dict[str, list[JSON]] = defaultdict(list)
        for pod in self.store.view("pods"):
            ref = controller_of(pod)
            if ref is not None and ref.get("kind") == "ReplicaSet":
                by_owner[str(ref.get("uid"))].append(pod)
        for rs in self.store.view("replicasets"):
            if metadata(rs).get("deletionTimestamp"):
                continue
            self._sync(rs, by_owner.get(rs["metadata"]["uid"], []))

    def _sync(self, rs: JSON, pods: list[JSON]) -> None:
        spec = rs.get("spec") or {}
        namespace = rs["metadata"]["namespace"]
        active = [p for p in pods if _is_active(p)]
        want = int(spec.get("replicas", 1))
        if len(active) < want:
            template = spec.get("template") or {}
            for _ in range(want - len(active)):
                body = {
                    "metadata": {
                        "generateName": f"{rs['metadata']['name']}-",
                        "namespace": namespace,
                        "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                        "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
                        "ownerReferences": [_owner_ref(rs)],
                    },
                    "spec": clone(template.get("spec") or {}),
                }
                try:
                    active.append(self.store.create("pods", body))
                except ApiError:
                    break
        elif len(active) > want:
            for pod in sorted(active, key=_deletion_rank)[: len(active) - want]:
                with contextlib.suppress(ApiError):
                    self.store.delete("pods", pod["metadata"]["name"], namespace)
                active.remove(pod)
        ready = sum(1 for p in active if is_pod_ready(p))
        selector = selector_from_object(spec.get("selector"))
        status = {
            "replicas": len(active),
            "fullyLabeledReplicas": sum(
                1 for p in active if selector.matches(metadata(p).get("labels") or {})
            ),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        _set_status(self.store, "replicasets", rs, status)


def daemon_pod_tolerations(template_spec: Mapping[str, Any]) -> list[JSON]:
    tolerations = [dict(t) for t in template_spec.get("tolerations") or []]
    extra = list(DAEMON_TOLERATIONS)
    if template_spec.get("hostNetwork"):
        extra.append(NETWORK_UNAVAILABLE_TOLERATION)
    for toleration in extra:
        if not any(
            t.get("key") == toleration["key"] and t.get("effect") == toleration["effect"] for t in tolerations
        ):
            tolerations.append(dict(toleration))
    return tolerations


def _pinned_node(pod: Mapping[str, Any]) -> str | None:
    terms = (
        (((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    for term in terms:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and field.get("values"):
                return str(field["values"][0])
    return (pod.get("spec") or {}).get("nodeName")


class DaemonSetController:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def reconcile(self) -> None:
        nodes = [n for n in self.store.view("nodes") if not metadata(n).get("deletionTimestamp")]
        by_owner: dict[str, list[JSON]] = defaultdict(list)
        for pod in self.store.view("pods"):
            ref = controller_of(pod)
            if ref is not None and ref.get("kind") == "DaemonSet":
                by_owner[str(ref.get("uid"))].append(pod)
        for ds in self.store.view("daemonsets"):
            if not metadata(ds).get("deletionTimestamp"):
                self._sync(ds, nodes, by_owner.get(ds["metadata"]["uid"], []))

    def _sync(self, ds: JSON, nodes: list[JSON], pods: list[JSON]) -> None:
        namespace = ds["metadata"]["namespace"]
        template = (ds.get("spec") or {}).get("template") or {}
        template_spec = template.get("spec") or {}
        probe = {"spec": {**template_spec, "tolerations": daemon_pod_tolerations(template_spec)}}
        wanted = {
            n["metadata"]["name"]
            for n in nodes
            if matching.node_affinity_matches(probe, n)
            and not matching.untolerated_taints(probe, (n.get("spec") or {}).get("taints") or [])
        }
        active = [p for p in pods if _is_active(p)]
        placed = {_pinned_node(p): p for p in active}
        for node_name in sorted(wanted - set(placed)):
            self._create(ds, template, template_spec, node_name)
        for node_name, pod in placed.items():
            if node_name not in wanted:
                with contextlib.suppress(ApiError):
                    self.store.delete("pods", pod["metadata"]["name"], namespace)
        scheduled = [p for n, p in placed.items() if n in wanted]
        status = {
            "desiredNumberScheduled": len(wanted),
            "currentNumberScheduled": sum(1 for p in scheduled if (p.get("spec") or {}).get("nodeName")),
            "numberReady": sum(1 for p in scheduled if is_pod_ready(p)),
            "numberAvailable": sum(1 for p in scheduled if is_pod_ready(p)),
            "numberMisscheduled": 0,
            "updatedNumberScheduled": len(scheduled),
            "observedGeneration": ds["metadata"].get("generation", 1),
        }
        _set_status(self.store, "daemonsets", ds, status)

    def _create(self, ds: JSON, template: JSON, template_spec: JSON, node_name: str) -> None:
        spec = clone(template_spec)
        spec["tolerations"] = daemon_pod_tolerations(template_spec)
        node_affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
        pin = {"key": "metadata.name", "operator": "In", "values": [node_name]}
        terms = required.get("nodeSelectorTerms") or [{}]
        required["nodeSelectorTerms"] = [{**term, "matchFields": [pin]} for term in terms]
        body = {
            "metadata": {
                "generateName": f"{ds['metadata']['name']}-",
                "namespace": ds["metadata"]["namespace"],
                "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                "ownerReferences": [_owner_ref(ds)],
            },
            "spec": spec,
        }
        with contextlib.suppress(ApiError):
            self.store.create("pods", body)


class PodGarbageCollector:
    """Force-deletes pods whose node is gone, after a quarantine (first seen orphaned + 40 s)."""

    def __init__(
        self, store: ObjectStore, clock: Clock, quarantine: float = POD_GC_QUARANTINE_SECONDS
    ) -> None:
        self.store = store
        self.clock = clock
        self.quarantine = quarantine
        self._orphaned_since: dict[str, float] = {}

    def reconcile(self) -> float | None:
        """Collect due orphans; returns when the next one falls due (for the caller's timer), if any."""
        nodes = {n["metadata"]["name"] for n in self.store.view("nodes")}
        now = self.clock.now()
        seen: set[str] = set()
        next_due: float | None = None
        for pod in self.store.view("pods"):
            host = (pod.get("spec") or {}).get("nodeName")
            if not host or host in nodes:
                continue
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            since = self._orphaned_since.setdefault(uid, now)
            if now - since >= self.quarantine:
                with contextlib.suppress(ApiError):
                    self.store.delete(
                        "pods", pod["metadata"]["name"], pod["metadata"]["namespace"], grace_period_seconds=0
                    )
            else:
                due = since + self.quarantine
                next_due = due if next_due is None else min(next_due, due)
        self._orphaned_since = {uid: t for uid, t in self._orphaned_since.items() if uid in seen}
        return next_due
