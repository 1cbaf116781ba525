"""Server-side printing: `meta.k8s.io/v1` Table answers for `kubectl get`, with the columns kubectl users know.

Rules:
- A GET or LIST whose `Accept` header asks for `as=Table` gets a Table instead of the object or list (the API
  server's behaviour since 1.15), and so does each event of a watch that asks for it (`kubectl get -w`: one row
  per event); every other client, the kubernetes Python client included, gets JSON objects.
- The columns are the API server's own for built-in types (`kubernetes/kubernetes`
  `pkg/printers/internalversion/printers.go`) and the CRDs' `additionalPrinterColumns` for Karpenter's types
  (`kubernetes-sigs/karpenter` `pkg/apis/crds/karpenter.sh_nodepools.yaml`, `karpenter.sh_nodeclaims.yaml`;
  `aws/karpenter-provider-aws` `pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml`). A type without a
  definition here gets Name and Age, as the API server prints a CRD without printer columns.
- Columns with priority 1 are printed only by `kubectl get -o wide`.
- Ages are computed on the emulator's clock, formatted as kubectl formats durations (`5s`, `3m`, `2d4h`).
- Each row carries the object as `PartialObjectMetadata` (`includeObject=Metadata`, the default), the whole
  object with `includeObject=Object`, or nothing with `includeObject=None`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from longshore_sim.kubeapi.meta import JSON
from longshore_sim.kubeapi.resources import ResourceType

Cell = Callable[[JSON, float], Any]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    cell: Cell
    type: str = "string"
    priority: int = 0
    format: str = ""


def wants_table(accept: str) -> bool:
    """True when the client asked for server-side printing (kubectl's `as=Table` media type)."""
    return "as=Table" in accept


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def human_duration(seconds: float) -> str:
    """kubectl's short duration (`k8s.io/apimachinery/pkg/util/duration.HumanDuration`)."""
    s = max(int(seconds), 0)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    return f"{hours // (24 * 365)}y{(hours // 24) % 365}d"


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    current: Any = obj
    for key in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def _age(obj: JSON, now: float) -> str:
    created = _seconds(_get(obj, "metadata", "creationTimestamp"))
    return "<unknown>" if created is None else human_duration(now - created)


def _name(obj: JSON, now: float) -> str:
    return str(_get(obj, "metadata", "name") or "")


def _field(*path: str, default: Any = "") -> Cell:
    def cell(obj: JSON, now: float) -> Any:
        value = _get(obj, *path)
        return default if value is None else value

    return cell


def _label(key: str) -> Cell:
    return lambda obj, now: str((_get(obj, "metadata", "labels") or {}).get(key, ""))


def _condition(kind: str) -> Cell:
    def cell(obj: JSON, now: float) -> str:
        for condition in _get(obj, "status", "conditions") or ():
            if isinstance(condition, Mapping) and condition.get("type") == kind:
                return str(condition.get("status", "Unknown"))
        return "Unknown"

    return cell


NAME = Column("Name", _name, format="name")
AGE = Column("Age", _age)


def _pod_ready(obj: JSON, now: float) -> str:
    containers = _get(obj, "spec", "containers") or ()
    statuses = _get(obj, "status", "containerStatuses") or ()
    ready = sum(1 for s in statuses if isinstance(s, Mapping) and s.get("ready"))
    return f"{ready}/{len(containers)}"


def _pod_status(obj: JSON, now: float) -> str:
    if _get(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    reason = _get(obj, "status", "reason")
    if reason:
        return str(reason)
    for status in _get(obj, "status", "containerStatuses") or ():
        waiting = _get(status, "state", "waiting", "reason")
        if waiting:
            return str(waiting)
    return str(_get(obj, "status", "phase") or "Pending")


def _pod_restarts(obj: JSON, now: float) -> int:
    statuses = _get(obj, "status", "containerStatuses") or ()
    return sum(int(s.get("restartCount", 0)) for s in statuses if isinstance(s, Mapping))


def _node_status(obj: JSON, now: float) -> str:
    ready = _condition("Ready")(obj, now)
    status = {"True": "Ready", "False": "NotReady"}.get(ready, "Unknown")
    if _get(obj, "spec", "unschedulable"):
        status += ",SchedulingDisabled"
    return status


def _node_roles(obj: JSON, now: float) -> str:
    labels = _get(obj, "metadata", "labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    return ",".join(roles) or "<none>"


def _node_address(kind: str) -> Cell:
    def cell(obj: JSON, now: float) -> str:
        for address in _get(obj, "status", "addresses") or ():
            if isinstance(address, Mapping) and address.get("type") == kind:
                return str(address.get("address", ""))
        return "<none>"

    return cell


def _ratio(ready: Sequence[str], desired: Sequence[str]) -> Cell:
    def cell(obj: JSON, now: float) -> str:
        return f"{_get(obj, *ready) or 0}/{_get(obj, *desired) or 0}"

    return cell


def _pdb_field(key: str) -> Cell:
    return lambda obj, now: str(_get(obj, "spec", key) if _get(obj, "spec", key) is not None else "N/A")


def _event_object(obj: JSON, now: float) -> str:
    involved = obj.get("involvedObject") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_last_seen(obj: JSON, now: float) -> str:
    stamp = obj.get("lastTimestamp") or obj.get("eventTime") or _get(obj, "metadata", "creationTimestamp")
    seen = _seconds(stamp)
    return "<unknown>" if seen is None else human_duration(now - seen)


def _resource(key: str) -> Cell:
    return lambda obj, now: str((_get(obj, "status", "resources") or {}).get(key, ""))


COLUMNS: dict[str, tuple[Column, ...]] = {
    "pods": (
        NAME,
        Column("Ready", _pod_ready),
        Column("Status", _pod_status),
        Column("Restarts", _pod_restarts, type="integer"),
        AGE,
        Column("IP", _field("status", "podIP", default="<none>"), priority=1),
        Column("Node", _field("spec", "nodeName", default="<none>"), priority=1),
        Column("Nominated Node", _field("status", "nominatedNodeName", default="<none>"), priority=1),
        Column("Readiness Gates", lambda obj, now: "<none>", priority=1),
    ),
    "nodes": (
        NAME,
        Column("Status", _node_status),
        Column("Roles", _node_roles),
        AGE,
        Column("Version", _field("status", "nodeInfo", "kubeletVersion")),
        Column("Internal-IP", _node_address("InternalIP"), priority=1),
        Column("External-IP", _node_address("ExternalIP"), priority=1),
        Column("OS-Image", _field("status", "nodeInfo", "osImage", default="<unknown>"), priority=1),
        Column(
            "Kernel-Version", _field("status", "nodeInfo", "kernelVersion", default="<unknown>"), priority=1
        ),
        Column(
            "Container-Runtime",
            _field("status", "nodeInfo", "containerRuntimeVersion", default="<unknown>"),
            priority=1,
        ),
    ),
    "namespaces": (NAME, Column("Status", _field("status", "phase", default="Active")), AGE),
    "deployments": (
        NAME,
        Column("Ready", _ratio(("status", "readyReplicas"), ("spec", "replicas"))),
        Column("Up-to-date", _field("status", "updatedReplicas", default=0), type="integer"),
        Column("Available", _field("status", "availableReplicas", default=0), type="integer"),
        AGE,
    ),
    "replicasets": (
        NAME,
        Column("Desired", _field("spec", "replicas", default=0), type="integer"),
        Column("Current", _field("status", "replicas", default=0), type="integer"),
        Column("Ready", _field("status", "readyReplicas", default=0), type="integer"),
        AGE,
    ),
    "daemonsets": (
        NAME,
        Column("Desired", _field("status", "desiredNumberScheduled", default=0), type="integer"),
        Column("Current", _field("status", "currentNumberScheduled", default=0), type="integer"),
        Column("Ready", _field("status", "numberReady", default=0), type="integer"),
        Column("Up-to-date", _field("status", "updatedNumberScheduled", default=0), type="integer"),
        Column("Available", _field("status", "numberAvailable", default=0), type="integer"),
        AGE,
    ),
    "poddisruptionbudgets": (
        NAME,
        Column("Min Available", _pdb_field("minAvailable")),
        Column("Max Unavailable", _pdb_field("maxUnavailable")),
        Column("Allowed Disruptions", _field("status", "disruptionsAllowed", default=0), type="integer"),
        AGE,
    ),
    "events": (
        Column("Last Seen", _event_last_seen),
        Column("Type", _field("type")),
        Column("Reason", _field("reason")),
        Column("Object", _event_object),
        Column("Message", _field("message")),
    ),
    "leases": (NAME, Column("Holder", _field("spec", "holderIdentity")), AGE),
    "nodepools": (
        NAME,
        Column("NodeClass", _field("spec", "template", "spec", "nodeClassRef", "name")),
        Column("Nodes", _resource("nodes")),
        Column("Ready", _condition("Ready")),
        AGE,
        Column("Weight", _field("spec", "weight"), type="integer", priority=1),
        Column("CPU", _resource("cpu"), priority=1),
        Column("Memory", _resource("memory"), priority=1),
    ),
    "nodeclaims": (
        NAME,
        Column("Type", _label("node.kubernetes.io/instance-type")),
        Column("Capacity", _label("karpenter.sh/capacity-type")),
        Column("Zone", _label("topology.kubernetes.io/zone")),
        Column("Node", _field("status", "nodeName")),
        Column("Ready", _condition("Ready")),
        AGE,
        Column("ID", _field("status", "providerID"), priority=1),
        Column("NodePool", _label("karpenter.sh/nodepool"), priority=1),
        Column("NodeClass", _field("spec", "nodeClassRef", "name"), priority=1),
        Column("Drifted", _condition("Drifted"), priority=1),
    ),
    "ec2nodeclasses": (
        NAME,
        Column("Ready", _condition("Ready")),
        AGE,
        Column("Role", _field("spec", "role"), priority=1),
    ),
    "capacitybuffers": (
        NAME,
        Column("Strategy", _field("spec", "provisioningStrategy")),
        Column("Replicas", _field("status", "replicas"), type="integer"),
        Column("Ready", _condition("ReadyForProvisioning")),
        Column("Provisioning", _condition("Provisioning")),
        AGE,
    ),
}


def _row_object(rt: ResourceType, obj: JSON, include: str) -> JSON | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def as_table(rt: ResourceType, payload: JSON, now: float, include: str = "Metadata") -> JSON:
    """The Table for a GET (one object) or LIST (a `...List`) answer of type `rt`."""
    columns = COLUMNS.get(rt.plural, (NAME, AGE))
    objects = payload.get("items", []) if str(payload.get("kind", "")).endswith("List") else [payload]
    rows = []
    for obj in objects:
        row: JSON = {"cells": [column.cell(obj, now) for column in columns]}
        embedded = _row_object(rt, obj, include)
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    meta = payload.get("metadata", {}) if payload.get("items") is not None else {}
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {k: v for k, v in meta.items() if k in ("resourceVersion", "continue")},
        "columnDefinitions": [
            {
                "name": c.name,
                "type": c.type,
                "format": c.format,
                "description": c.name,
                "priority": c.priority,
            }
            for c in columns
        ],
        "rows": rows,
    }
