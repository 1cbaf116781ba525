"""Workload manifests -> pods, DaemonSets and existing nodes, for `longshore plan` and tests.

Theory of operation: files are read with `yaml_documents.parse_documents` (so every field keeps its line), and
each document becomes pods the way the Kubernetes controllers would create them: a `Pod` as is; a
`Deployment` or `ReplicaSet` as `replicas` pods named `<name>-<i>` owned by a ReplicaSet; a `StatefulSet` as
`<name>-<i>` with the `statefulset.kubernetes.io/pod-name` label; a `Job` as `parallelism` pods; a `List` by
its items. A `DaemonSet` yields its pod template (the scheduler adds it to every node it would land on).
`Node` documents become `ExistingNode`s (allocatable from `status.allocatable`, else `status.capacity`), and
pods with `spec.nodeName` are bound to them. Every mistake is collected as a `ConfigError` naming file, line,
document, field and value, and all of them are raised together as `ConfigErrors`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longshore.config.errors import ConfigError, ConfigErrors, ErrorSink
from longshore.config.yaml_documents import Document, PathKey, parse_documents
from longshore.core import labels as wk
from longshore.core.model import Taint
from longshore.core.pod_manifest import PodManifestError, pod_from_manifest
from longshore.core.pods import Pod
from longshore.core.quantity import QuantityError
from longshore.core.resources import Resources
from longshore.core.scheduling.inputs import ExistingNode

CONTROLLERS = {
    "Deployment": "ReplicaSet",
    "ReplicaSet": "ReplicaSet",
    "StatefulSet": "StatefulSet",
    "Job": "Job",
}
_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class Workloads:
    pods: tuple[Pod, ...] = ()  # pending pods (no nodeName)
    bound: tuple[Pod, ...] = ()  # pods with a nodeName
    daemonsets: tuple[Pod, ...] = ()  # one pod template per DaemonSet
    nodes: tuple[ExistingNode, ...] = ()  # Node documents, with the bound pods attached


def _path_key(text: str) -> PathKey:
    return tuple(int(index) if index else name for name, index in _PATH_PART.findall(text))


def _pod(document: Document, prefix: PathKey, manifest: Mapping[str, Any], sink: ErrorSink) -> Pod | None:
    try:
        return pod_from_manifest(manifest)
    except PodManifestError as exc:
        sink.add(document.error((*prefix, *_path_key(exc.path)), exc.message, exc.value))
        return None


def _count(document: Document, field: str, default: int, sink: ErrorSink) -> int:
    spec = document.data.get("spec") or {}
    value = spec.get(field, default) if isinstance(spec, Mapping) else default
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        sink.add(document.error(("spec", field), f"must be a non-negative integer, got {value!r}", value))
        return 0
    return value


def _template(document: Document, sink: ErrorSink) -> dict[str, Any] | None:
    spec = document.data.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    if not isinstance(template, Mapping):
        sink.add(
            document.error(("spec", "template"), "a pod template (metadata and spec) is required", template)
        )
        return None
    meta = dict(template.get("metadata") or {})
    meta.setdefault("namespace", (document.data.get("metadata") or {}).get("namespace") or "default")
    return {"metadata": meta, "spec": template.get("spec") or {}}


def _controller_pods(document: Document, count: int, sink: ErrorSink) -> list[Pod]:
    template = _template(document, sink)
    if template is None:
        return []
    owner_kind = CONTROLLERS[document.kind]
    owner = document.name if document.kind != "Deployment" else f"{document.name}-rs"
    example = _pod(document, ("spec", "template"), template, sink)
    if example is None:
        return []
    pods = []
    for index in range(count):
        name = f"{document.name}-{index}"
        labels = dict(example.labels)
        if document.kind == "StatefulSet":
            labels["statefulset.kubernetes.io/pod-name"] = name
        pods.append(
            replace(
                example,
                name=name,
                uid=f"{example.namespace}/{name}",
                labels=tuple(sorted(labels.items())),
                owner_kind=owner_kind,
                owner_name=owner,
            )
        )
    return pods


def _resources(document: Document, path: PathKey, value: object, sink: ErrorSink) -> Resources | None:
    if not isinstance(value, Mapping):
        return None
    try:
        return Resources.parse({str(k): v for k, v in value.items()})
    except QuantityError as exc:
        sink.add(document.error(path, str(exc), value))
        return None


def _node(document: Document, sink: ErrorSink) -> ExistingNode | None:
    meta = document.data.get("metadata") or {}
    spec = document.data.get("spec") or {}
    status = document.data.get("status") or {}
    allocatable = _resources(document, ("status", "allocatable"), status.get("allocatable"), sink)
    capacity = _resources(document, ("status", "capacity"), status.get("capacity"), sink)
    if allocatable is None:
        allocatable = capacity
    if allocatable is None:
        sink.add(
            document.error(
                ("status", "allocatable"),
                "a Node needs status.allocatable (or status.capacity) so the scheduler knows its room",
                None,
            )
        )
        return None
    taints = []
    for index, taint in enumerate(spec.get("taints") or []):
        effect = taint.get("effect") if isinstance(taint, Mapping) else None
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute") or not taint.get("key"):
            sink.add(
                document.error(
                    ("spec", "taints", index),
                    "a taint needs a key and an effect of NoSchedule, PreferNoSchedule or NoExecute",
                    taint,
                )
            )
            continue
        taints.append(Taint(str(taint["key"]), effect, str(taint.get("value") or "")))
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    labels.setdefault(wk.HOSTNAME, document.name)
    return ExistingNode(
        name=document.name,
        labels=tuple(sorted(labels.items())),
        allocatable=allocatable,
        taints=tuple(taints),
        capacity=capacity,
        initialized=labels.get(wk.INITIALIZED, "true") == "true",
    )


def _documents(document: Document) -> list[Document]:
    if document.kind != "List":
        return [document]
    items = document.data.get("items") or []
    return [
        Document(
            document.source,
            document.index,
            item,
            document.line_of(("items", index)),
            {key[2:]: line for key, line in document.lines.items() if key[:2] == ("items", index)},
        )
        for index, item in enumerate(items)
        if isinstance(item, dict)
    ]


def load_workloads(paths: Sequence[Path | str], *, replicas: Mapping[str, int] | None = None) -> Workloads:
    """Pods, DaemonSets and nodes from manifest files; `replicas` overrides controller replica counts by name."""
    sink = ErrorSink()
    documents: list[Document] = []
    files: list[str] = []
    for path in paths:
        name = str(path)
        files.append(name)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            sink.add(ConfigError(file=name, message=f"cannot read the file: {exc.strerror or exc}"))
            continue
        found, errors = parse_documents(text, name)
        sink.extend(errors)
        for document in found:
            documents.extend(_documents(document))
    pods: list[Pod] = []
    daemonsets: list[Pod] = []
    nodes: list[ExistingNode] = []
    overrides = dict(replicas or {})
    for document in documents:
        kind = document.kind
        if kind == "Pod":
            pod = _pod(document, (), document.data, sink)
            if pod is not None:
                pods.append(pod)
        elif kind in ("Deployment", "ReplicaSet", "StatefulSet"):
            count = overrides.get(document.name, _count(document, "replicas", 1, sink))
            pods.extend(_controller_pods(document, count, sink))
        elif kind == "Job":
            count = overrides.get(document.name, _count(document, "parallelism", 1, sink))
            pods.extend(_controller_pods(document, count, sink))
        elif kind == "DaemonSet":
            template = _template(document, sink)
            if template is not None:
                daemon = _pod(document, ("spec", "template"), template, sink)
                if daemon is not None:
                    daemonsets.append(
                        replace(daemon, name=document.name, owner_kind="DaemonSet", owner_name=document.name)
                    )
        elif kind == "Node":
            node = _node(document, sink)
            if node is not None:
                nodes.append(node)
        elif kind in ("Namespace", "Service", "ConfigMap", "PodDisruptionBudget", "PriorityClass"):
            continue
        else:
            sink.add(
                document.error(
                    ("kind",),
                    f"unsupported kind {kind!r}: expected Pod, Deployment, ReplicaSet, "
                    "StatefulSet, Job, DaemonSet or Node",
                    kind or None,
                )
            )
    sink.raise_if_any(files)
    by_node: dict[str, list[Pod]] = {}
    pending = []
    for pod in pods:
        if pod.node_name:
            by_node.setdefault(pod.node_name, []).append(pod)
        else:
            pending.append(pod)
    known = {node.name for node in nodes}
    unknown = sorted(set(by_node) - known)
    if unknown and nodes:
        raise ConfigErrors(
            [
                ConfigError(
                    file=files[0] if files else "",
                    path="spec.nodeName",
                    value=name,
                    message=f"pod bound to node {name!r}, which no Node document defines",
                )
                for name in unknown
            ]
        )
    nodes = [replace(node, pods=tuple(by_node.get(node.name, ()))) for node in nodes]
    bound = tuple(pod for pod in pods if pod.node_name)
    return Workloads(tuple(pending), bound, tuple(daemonsets), tuple(nodes))
