"""The resource types the emulator serves, and what the API server knows about each of them.

Theory of operation: one `ResourceType` row per served resource holds everything the rest of the emulator
asks about it: where it lives (group, version, plural), whether it is namespaced, its kind, its
subresources, which fields a field selector may name, and whether a plain update must preserve `status`
(types with a status subresource ignore status on the main resource, and the status subresource ignores
everything but status). Plural names are unique across the table, so the Python API addresses a type by its
plural alone (`store.get("pods", ...)`). Discovery documents are generated from this table.
"""

from __future__ import annotations

from dataclasses import dataclass

_COMMON_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_METADATA_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource type."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()
    short_names: tuple[str, ...] = ()
    field_selectors: frozenset[str] = _METADATA_FIELDS
    singular: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def verbs(self) -> tuple[str, ...]:
        return _COMMON_VERBS

    @property
    def base_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


_POD_FIELDS = _METADATA_FIELDS | {
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
}
_EVENT_FIELDS = _METADATA_FIELDS | {
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
}

TYPES: tuple[ResourceType, ...] = (
    ResourceType(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        frozenset({"status", "eviction", "binding"}),
        ("po",),
        _POD_FIELDS,
        "pod",
    ),
    ResourceType(
        "",
        "v1",
        "nodes",
        "Node",
        False,
        frozenset({"status"}),
        ("no",),
        _METADATA_FIELDS | {"spec.unschedulable"},
        "node",
    ),
    ResourceType(
        "",
        "v1",
        "namespaces",
        "Namespace",
        False,
        frozenset({"status"}),
        ("ns",),
        _METADATA_FIELDS | {"status.phase"},
        "namespace",
    ),
    ResourceType("", "v1", "events", "Event", True, frozenset(), ("ev",), _EVENT_FIELDS, "event"),
    ResourceType(
        "", "v1", "configmaps", "ConfigMap", True, frozenset(), ("cm",), _METADATA_FIELDS, "configmap"
    ),
    ResourceType(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        True,
        frozenset({"status", "scale"}),
        ("deploy",),
        _METADATA_FIELDS,
        "deployment",
    ),
    ResourceType(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        True,
        frozenset({"status", "scale"}),
        ("rs",),
        _METADATA_FIELDS | {"status.replicas"},
        "replicaset",
    ),
    ResourceType(
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        True,
        frozenset({"status"}),
        ("ds",),
        _METADATA_FIELDS,
        "daemonset",
    ),
    ResourceType(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        frozenset({"status"}),
        ("pdb",),
        _METADATA_FIELDS,
        "poddisruptionbudget",
    ),
    # Storage objects: read for volume topology (`core.volume_topology`).
    ResourceType(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        True,
        frozenset({"status"}),
        ("pvc",),
        _METADATA_FIELDS | {"status.phase"},
        "persistentvolumeclaim",
    ),
    ResourceType(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        False,
        frozenset({"status"}),
        ("pv",),
        _METADATA_FIELDS | {"status.phase"},
        "persistentvolume",
    ),
    ResourceType(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        False,
        frozenset(),
        ("sc",),
        _METADATA_FIELDS,
        "storageclass",
    ),
    ResourceType(
        "coordination.k8s.io", "v1", "leases", "Lease", True, frozenset(), (), _METADATA_FIELDS, "lease"
    ),
    # Karpenter's custom resources (`deploy/crds/`), served as the API server serves installed CRDs.
    ResourceType(
        "karpenter.sh",
        "v1",
        "nodepools",
        "NodePool",
        False,
        frozenset({"status", "scale"}),
        (),
        _METADATA_FIELDS,
        "nodepool",
    ),
    ResourceType(
        "karpenter.sh",
        "v1",
        "nodeclaims",
        "NodeClaim",
        False,
        frozenset({"status"}),
        (),
        _METADATA_FIELDS,
        "nodeclaim",
    ),
    ResourceType(
        "karpenter.k8s.aws",
        "v1",
        "ec2nodeclasses",
        "EC2NodeClass",
        False,
        frozenset({"status"}),
        ("ec2nc", "ec2ncs"),
        _METADATA_FIELDS,
        "ec2nodeclass",
    ),
    ResourceType(
        "", "v1", "podtemplates", "PodTemplate", True, frozenset(), (), _METADATA_FIELDS, "podtemplate"
    ),
    ResourceType(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        True,
        frozenset({"status", "scale"}),
        ("sts",),
        _METADATA_FIELDS,
        "statefulset",
    ),
    # SIG Autoscaling's CapacityBuffer (`deploy/crds/capacitybuffers.autoscaling.x-k8s.io.yaml`).
    ResourceType(
        "autoscaling.x-k8s.io",
        "v1alpha1",
        "capacitybuffers",
        "CapacityBuffer",
        True,
        frozenset({"status"}),
        (),
        _METADATA_FIELDS,
        "capacitybuffer",
    ),
)

BY_PLURAL: dict[str, ResourceType] = {t.plural: t for t in TYPES}
BY_PATH: dict[tuple[str, str, str], ResourceType] = {(t.group, t.version, t.plural): t for t in TYPES}


def lookup(plural: str) -> ResourceType:
    """The type served under `plural`; KeyError names the known plurals."""
    try:
        return BY_PLURAL[plural]
    except KeyError:
        raise KeyError(f"unknown resource {plural!r}; the emulator serves {sorted(BY_PLURAL)}") from None


def groups() -> dict[str, list[str]]:
    """API group name -> served versions (the legacy core group is "")."""
    result: dict[str, list[str]] = {}
    for t in TYPES:
        versions = result.setdefault(t.group, [])
        if t.version not in versions:
            versions.append(t.version)
    return result
