"""Compact decoding of listed pods and nodes: keep the fields Longshore reads, drop the rest at the page.

Theory of operation: a pod as EKS returns it is about 10 KB of JSON (managedFields, env, probes, volume
mounts, container statuses) and a node about 12 KB (mostly `status.images`); parsed into Python dicts that is
about 50 KB of memory per pod. Longshore reads a small part of it: scheduling inputs (requests, affinity,
tolerations, spread, node selector, host ports, priority, the volumes backed by claims), ownership and disruption annotations, and the
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
- Equal values are kept once per container (`Shared`): the pods of one workload carry the same containers,
  tolerations, spread constraints, conditions, label keys and values, so a compact pod holds its own
  dicts and unique strings (name, uid, resourceVersion) and points at shared values for the rest (about
  3 KB of memory a pod instead of about 11.5 KB). A listed object, and everything in it, is read-only: the
  watch cache already hands the same objects to every pass, and nothing may change them.
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
    {"securityContext", "imagePullSecrets", "dnsConfig", "hostAliases", "readinessGates"}
)
_CONTAINER_KEYS: Final = frozenset({"name", "resources", "ports", "restartPolicy"})
_POD_STATUS_KEYS: Final = frozenset(
    {"phase", "conditions", "nominatedNodeName", "startTime", "hostIP", "reason", "message", "qosClass"}
)
_NODE_STATUS_DROPPED: Final = frozenset({"images", "volumesInUse", "volumesAttached", "daemonEndpoints"})


_UNIQUE_META: Final = frozenset({"name", "uid", "resourceVersion", "deletionTimestamp"})
"""Metadata values that differ on every object: kept as they are, never looked up in the shared table."""
_SHARED_STRING_MAX: Final = 256
"""Longer strings (annotation payloads) are never shared: they rarely repeat and would fill the table."""


class Shared:
    """One copy of each equal value among the objects a container decodes (see the module docstring).

    Strings are shared by value; lists and dicts by their `repr` (values decoded from JSON with the same
    `repr` are equal: `True` and `1`, `1` and `1.0` print apart). `trim` empties a table that has reached
    `limit` entries, which bounds what the tables keep alive: sharing then starts again, and values already
    handed out stay correct.
    """

    __slots__ = ("_strings", "_trees", "limit")

    def __init__(self, limit: int = 200_000) -> None:
        self._strings: dict[str, str] = {}
        self._trees: dict[str, Any] = {}
        self.limit = limit

    def trim(self) -> None:
        if len(self._strings) >= self.limit:
            self._strings.clear()
        if len(self._trees) >= self.limit:
            self._trees.clear()

    def string(self, value: str) -> str:
        return value if len(value) > _SHARED_STRING_MAX else self._strings.setdefault(value, value)

    def value(self, value: Any) -> Any:
        """`value`, or an equal one seen before (lists and dicts by `repr`, strings by value)."""
        if isinstance(value, str):
            return value if len(value) > _SHARED_STRING_MAX else self._strings.setdefault(value, value)
        if isinstance(value, list | dict) and value:
            return self._trees.setdefault(repr(value), value)
        return value

    def strings(self, value: object) -> object:
        """A string-to-string map with each key and value shared (the map itself is the object's own)."""
        if not isinstance(value, Mapping):
            return value
        string = self.string
        return {
            (string(k) if isinstance(k, str) else k): (string(v) if isinstance(v, str) else v)
            for k, v in value.items()
        }


SHARED: Final = Shared()
"""The container's table: shared by every list and watch of this process."""


def _metadata(meta: object, shared: Shared = SHARED) -> Manifest:
    if not isinstance(meta, Mapping):
        return {}
    kept: Manifest = {}
    for k, v in meta.items():
        if k not in _META_KEYS:
            continue
        if k in _UNIQUE_META:
            kept[k] = v
        elif k == "labels":
            kept[k] = shared.strings(v)
        elif k == "annotations":
            if isinstance(v, Mapping) and _LAST_APPLIED in v:
                v = {ak: av for ak, av in v.items() if ak != _LAST_APPLIED}
            kept[k] = shared.strings(v)
        else:
            kept[k] = shared.value(v)
    return kept


def _containers(value: object) -> object:
    if not isinstance(value, list):
        return value
    return [
        {k: v for k, v in c.items() if k in _CONTAINER_KEYS} if isinstance(c, Mapping) else c for c in value
    ]


def _claim_volumes(value: object) -> object:
    """`spec.volumes` reduced to what volume topology reads: the volumes backed by a PersistentVolumeClaim
    (`persistentVolumeClaim.claimName`) or an ephemeral claim (its name; the claim is `<pod>-<volume>`)."""
    if not isinstance(value, list):
        return value  # malformed: left for the parser to report
    kept: list[object] = []
    for volume in value:
        if not isinstance(volume, Mapping):
            kept.append(volume)
        elif isinstance(volume.get("persistentVolumeClaim"), Mapping):
            claim = volume["persistentVolumeClaim"]
            kept.append(
                {"name": volume.get("name"), "persistentVolumeClaim": {"claimName": claim.get("claimName")}}
            )
        elif volume.get("ephemeral") is not None:
            kept.append({"name": volume.get("name"), "ephemeral": {}})
    return kept


def compact_pod(pod: Mapping[str, Any]) -> Manifest:
    """The pod with only the fields Longshore reads (see the module docstring)."""
    shared = SHARED
    shared.trim()
    out: Manifest = {"metadata": _metadata(pod.get("metadata"), shared)}
    spec = pod.get("spec")
    if isinstance(spec, Mapping):
        kept: Manifest = {}
        for k, v in spec.items():
            if k in _POD_SPEC_DROPPED or k == "ephemeralContainers":
                continue
            if k == "volumes":
                claims = _claim_volumes(v)
                if claims:
                    kept[k] = claims
                continue
            kept[k] = shared.value(_containers(v) if k in ("containers", "initContainers") else v)
        out["spec"] = kept
    elif spec is not None:
        out["spec"] = spec  # malformed: left for the parser to report
    status = pod.get("status")
    if isinstance(status, Mapping):
        out["status"] = {k: shared.value(v) for k, v in status.items() if k in _POD_STATUS_KEYS}
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
