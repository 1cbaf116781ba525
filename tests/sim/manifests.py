"""Builders for Kubernetes manifests used by the emulator and cluster tests (plain dicts, overrides last)."""

from __future__ import annotations

from typing import Any


def pod(
    name: str,
    *,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    node_name: str | None = None,
    owner: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    container: dict[str, Any] = {"name": "app", "image": "nginx"}
    if requests:
        container["resources"] = {"requests": requests}
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [container], **spec},
    }
    if node_name:
        body["spec"]["nodeName"] = node_name
    if owner:
        body["metadata"]["ownerReferences"] = [owner]
    return body


def owner_ref(obj: dict[str, Any]) -> dict[str, Any]:
    """A controller ownerReference pointing at `obj` (as returned by the store)."""
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def node(
    name: str, *, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or []},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True"},
            ],
        },
    }


def deployment(name: str, replicas: int, *, namespace: str = "default", cpu: str = "100m") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]
                },
            },
        },
    }


def replicaset(name: str, replicas: int, *, namespace: str = "default") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }


def daemonset(name: str, *, namespace: str = "kube-system", **pod_spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": "agent", "image": "agent", "resources": {"requests": {"cpu": "50m"}}}
                    ],
                    **pod_spec,
                },
            },
        },
    }


def pdb(
    name: str, selector: dict[str, str] | None, *, namespace: str = "default", **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": dict(spec),
    }
    if selector is not None:
        body["spec"]["selector"] = {"matchLabels": selector}
    return body


def ready_status(node_name: str = "n1") -> dict[str, Any]:
    return {
        "phase": "Running",
        "hostIP": "10.0.0.1",
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "True"},
        ],
    }
