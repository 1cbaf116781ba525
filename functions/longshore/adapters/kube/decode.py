"""Compact decoding of listed pods and nodes: keep the fields Longshore reads, drop the rest at the page.

Theory of operation: a pod as EKS returns it is about 10 KB of JSON (managedFields, env, probes, volume
mounts, container statuses) and a node about 12 KB (mostly `status.images`); parsed into Python dicts that is
about 50 KB of memory per pod. Longshore reads a small part of it: scheduling inputs (requests, affinity,
tolerations, spread, node selector, host ports, priority), ownership and disruption annotations, and the
conditions and phase. `compact_pod` and `compact_node` keep exactly that, so a listed page is trimmed as soon
as it is parsed and only the compact dicts are held (the port still promises plain dicts in the shape the API
server sends; fields that are absent are simply missing, as they may be from any API server).

Rules:
- Whitelists, not blacklists, where the content is open-ended (metadata, container fields, pod status);
  blacklists where the dropped part is known and the rest is small (pod spec, node status).
- Everything a scheduling or disruption decision reads must stay: `tests/adapters/test_kube_decode.py` parses
  realistic objects both ways and checks the parsed `Pod` and `ExistingNode` are equal.
- `metadata.annotations` keeps every key except `kubectl.kubernetes.io/last-applied-configuration` (a copy of
  the whole object, read by nothing here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

Manifest = dict[str, Any]

_META_KEYS: Final = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "labels",
        "annotations",
        "ownerReferences",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generateName",
        "finalizers",
    }
)
_LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
_POD_SPEC_DROPPED: Final = frozenset(
    {"volumes", "securityContext", "imagePullSecrets", "dnsConfig", "hostAliases", "readinessGates"}
)
_CONTAINER_KEYS: Final = frozenset({"name", "resources", "ports", "restartPolicy"})
_POD_STATUS_KEYS: Final = frozenset(
    {"phase", "conditions", "nominatedNodeName", "startTime", "hostIP", "reason", "message", "qosClass"}
)
_NODE_STATUS_DROPPED: Final = frozenset({"images", "volumesInUse", "volumesAttached", "daemonEndpoints"})


def _metadata(meta: object) -> Manifest:
    if not isinstance(meta, Mapping):
        return {}
    kept = {k: v for k, v in meta.items() if k in _META_KEYS}
    annotations = kept.get("annotations")
    if isinstance(annotations, Mapping) and _LAST_APPLIED in annotations:
        kept["annotations"] = {k: v for k, v in annotations.items() if k != _LAST_APPLIED}
    return kept


def _containers(value: object) -> object:
    if not isinstance(value, list):
        return value
    return [
        {k: v for k, v in c.items() if k in _CONTAINER_KEYS} if isinstance(c, Mapping) else c for c in value
    ]


def compact_pod(pod: Mapping[str, Any]) -> Manifest:
    """The pod with only the fields Longshore reads (see the module docstring)."""
    out: Manifest = {"metadata": _metadata(pod.get("metadata"))}
    spec = pod.get("spec")
    if isinstance(spec, Mapping):
        kept = {k: v for k, v in spec.items() if k not in _POD_SPEC_DROPPED}
        for key in ("containers", "initContainers"):
            if key in kept:
                kept[key] = _containers(kept[key])
        kept.pop("ephemeralContainers", None)
        out["spec"] = kept
    elif spec is not None:
        out["spec"] = spec  # malformed: left for the parser to report
    status = pod.get("status")
    if isinstance(status, Mapping):
        out["status"] = {k: v for k, v in status.items() if k in _POD_STATUS_KEYS}
    elif status is not None:
        out["status"] = status
    return out


def compact_node(node: Mapping[str, Any]) -> Manifest:
    """The node without managed fields, image lists and volume lists (see the module docstring)."""
    out: Manifest = {k: v for k, v in node.items() if k not in ("metadata", "status")}
    out["metadata"] = _metadata(node.get("metadata"))
    status = node.get("status")
    if isinstance(status, Mapping):
        out["status"] = {k: v for k, v in status.items() if k not in _NODE_STATUS_DROPPED}
    elif status is not None:
        out["status"] = status
    return out
