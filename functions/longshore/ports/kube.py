"""The Kubernetes operations Longshore's services and workflow steps need, as a port.

Theory of operation: services never see `kubernetes` client models. Objects cross this port as plain
dicts shaped exactly like `kubectl get -o json` prints them (camelCase keys, RFC 3339 timestamps), so
pure code such as `core.drain.drain_pod_from_manifest` or `core.pod_manifest.pod_from_manifest` can read them, and
an in-memory fake can hold them. Writes use small frozen values (`NodePatch`, `KubeEvent`). Eviction
returns an `EvictionResult` instead of raising, because "a PodDisruptionBudget said no" (HTTP 429) is a
normal answer in a drain, not an error. Transport errors (5xx, throttling, timeouts) are retried inside
the adapter and surface as `ClusterUnavailableError` only when retries are exhausted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from longshore.core.model import Taint

Manifest = dict[str, Any]
EvictionOutcome = Literal["evicted", "blocked", "not-found"]
EventType = Literal["Normal", "Warning"]


class ClusterUnavailableError(RuntimeError):
    """The API server kept failing (5xx, throttling, timeouts) after the adapter's retries.

    `out_of_time`: the retries stopped because the invocation's time for Kubernetes calls ran out (the adapter's
    call budget), not because every attempt was spent: a loop ends its invocation cleanly on it, reporting what
    it did not finish. The class is the same either way, so a workflow step's `errorType` stays retryable."""

    def __init__(self, message: str, *, out_of_time: bool = False) -> None:
        super().__init__(message)
        self.out_of_time = out_of_time


@dataclass(frozen=True, slots=True)
class EvictionResult:
    """`evicted`: the API accepted the eviction; `blocked`: a PDB refused it (429, or the pod is in more than
    one PDB); `not-found`: the pod is gone or was replaced (404 / UID precondition 409)."""

    outcome: EvictionOutcome
    message: str = ""


@dataclass(frozen=True, slots=True)
class NodePatch:
    """A change to a node. `labels`/`annotations`: value None removes the key. `taints`: None leaves the
    taints alone, a tuple replaces the whole list. `unschedulable`: None leaves it alone. `add_finalizers` /
    `remove_finalizers`: merged into / removed from `metadata.finalizers` as a set."""

    labels: tuple[tuple[str, str | None], ...] = ()
    annotations: tuple[tuple[str, str | None], ...] = ()
    taints: tuple[Taint, ...] | None = None
    unschedulable: bool | None = None
    add_finalizers: tuple[str, ...] = ()
    remove_finalizers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = "v1"


@dataclass(frozen=True, slots=True)
class KubeEvent:
    """A Kubernetes Event (core/v1) about `involved`, from the `longshore` component."""

    involved: ObjectRef
    reason: str
    message: str
    type: EventType = "Normal"


_DIGITS: Final = re.compile(r"\d+(?:\.\d+)?")


def event_name(event: KubeEvent) -> str:
    """The Event's name: its object plus a digest of (object uid, reason, message with its numbers blanked),
    so a repeat, even from another container, finds the Event already there and counts on it, as the event
    correlator of client-go aggregates "empty for 31 s" and "empty for 41 s" into one Event."""
    involved = event.involved
    key = "\0".join(
        (involved.kind, involved.uid or involved.name, event.reason, _DIGITS.sub("#", event.message))
    )
    return f"{involved.name}.{hashlib.sha256(key.encode()).hexdigest()[:16]}"


class VolumeSource(Protocol):
    """The storage objects volume topology reads (`core.volume_topology`): each a full list, every page,
    in all namespaces, as `kubectl get -o json` prints the items. A caller lists each kind at most once a
    pass, and only when a pod it places uses a PersistentVolumeClaim."""

    def list_persistent_volume_claims(self) -> list[Manifest]:
        """core/v1 PersistentVolumeClaims in all namespaces."""
        ...

    def list_persistent_volumes(self) -> list[Manifest]:
        """core/v1 PersistentVolumes (cluster-scoped)."""
        ...

    def list_storage_classes(self) -> list[Manifest]:
        """storage.k8s.io/v1 StorageClasses (cluster-scoped)."""
        ...


class Cluster(VolumeSource, Protocol):
    def list_pods(self, *, node_name: str | None = None, label_selector: str | None = None) -> list[Manifest]:
        """Pods in all namespaces, optionally only those bound to `node_name`."""
        ...

    def list_pending_pods(self) -> list[Manifest]:
        """Pods not bound to a node (`spec.nodeName=""`) that are not finished."""
        ...

    def list_nodes(self, *, label_selector: str | None = None) -> list[Manifest]: ...

    def list_nodes_and_pods(self) -> tuple[list[Manifest], list[Manifest]]:
        """`list_nodes()` then `list_pods()`: every pod as current as the nodes or more (a pod bound to a listed
        node is listed), so free room is never over-estimated. An adapter may read both at once."""
        ...

    def get_node(self, name: str) -> Manifest | None:
        """The node, or None when it does not exist."""
        ...

    def list_daemonsets(self) -> list[Manifest]: ...

    def list_pdbs(self) -> list[Manifest]:
        """policy/v1 PodDisruptionBudgets in all namespaces."""
        ...

    def patch_node(self, name: str, patch: NodePatch) -> Manifest | None:
        """Apply `patch`; the updated node, or None when the node does not exist."""
        ...

    def evict_pod(self, namespace: str, name: str, *, uid: str | None = None) -> EvictionResult:
        """POST an Eviction (policy/v1), with a UID precondition when `uid` is given."""
        ...

    def delete_pod(self, namespace: str, name: str, *, grace_period_seconds: int | None = None) -> bool:
        """Delete bypassing PDBs; False when the pod was already gone."""
        ...

    def delete_node(self, name: str) -> bool:
        """Delete the node and release Longshore's termination finalizer (`karpenter.sh/termination`), so the
        Node goes away. Callers delete a node only once its pods are drained and its instance is gone or
        going. False when the node was already gone."""
        ...

    def post_event(self, event: KubeEvent) -> None:
        """Post `event`; the same Event again (object, reason, message up to its numbers) counts on the one
        already there instead of adding another, whichever container posts it."""
        ...


class PodWatch(Protocol):
    def watch_pending_pods(self, *, timeout_seconds: int) -> Iterator[tuple[str, Manifest]]:
        """Yield (`ADDED`|`MODIFIED`|`DELETED`, pod) for unbound pods until `timeout_seconds` pass."""
        ...
