"""CapacityBuffer (`autoscaling.x-k8s.io/v1alpha1`): spare capacity held as virtual pods.

Theory of operation. A CapacityBuffer asks for N copies of a pod to be schedulable at any moment without a
node launch. The pods are *virtual*: they exist only in Longshore's simulations, never in the cluster.

- `parse_buffer` reads one object (from the cluster, or a document of the cluster config file, whose
  `origin` is then `file:line`) and rejects what it cannot use with a `BufferError` naming the object, the
  field and the value. Exactly one of `spec.podTemplateRef` and
  `spec.scalableRef`; `provisioningStrategy` absent or `buffer.x-k8s.io/active-capacity` (the only one
  Longshore acts on); `replicas` and `percentage` non-negative integers; `limits` resource quantities.
- `resolve` turns a buffer into its virtual pods. The pod is the PodTemplate's `template` (podTemplateRef;
  a PodTemplate document of the config file, `BufferTemplate`, wins over the cluster's of the same name)
  or the referenced Deployment / ReplicaSet / StatefulSet's `spec.template` (scalableRef). The count:
  `replicas` if set; with `percentage` (scalableRef only), ceil(percentage x workload replicas / 100); with
  both, the larger; with neither, 1 for a podTemplateRef, 0 for a scalableRef. `limits` then caps the count:
  no more pods than fit in every limited resource (floor(limit / the pod's request)).
- Virtual pods are named `capacitybuffer-<buffer>-<i>` in the buffer's namespace and carry the annotation
  `VIRTUAL_ANNOTATION`, so every consumer can tell them from real pods (`is_virtual`).

The rules for using them (the provisioner plans them only after real pods; the disruption planner places
them on nodes before judging emptiness) live with their consumers: `services.buffer_pods` and
`core.disruption.buffer_hold`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from longshore.core.pod_manifest import PodManifestError, pod_from_manifest
from longshore.core.pods import Pod
from longshore.core.quantity import QuantityError
from longshore.core.quantity import parse as parse_quantity

API_GROUP: Final = "autoscaling.x-k8s.io"
KIND: Final = "CapacityBuffer"
ACTIVE_CAPACITY: Final = "buffer.x-k8s.io/active-capacity"
VIRTUAL_ANNOTATION: Final = "longshore.dev/capacity-buffer"
SCALABLE_KINDS: Final = ("Deployment", "ReplicaSet", "StatefulSet")


class BufferError(ValueError):
    """A CapacityBuffer Longshore cannot use: `capacitybuffers.autoscaling.x-k8s.io/NS/NAME: field: why (value)`."""

    def __init__(self, buffer: str, field: str, message: str, value: object = None) -> None:
        shown = "" if value is None else f" (got {value!r})"
        super().__init__(f"capacitybuffers.{API_GROUP}/{buffer}: {field}: {message}{shown}")
        self.buffer = buffer
        self.field = field


@dataclass(frozen=True, slots=True)
class ScalableRef:
    kind: str
    name: str
    api_group: str = "apps"


@dataclass(frozen=True, slots=True)
class CapacityBuffer:
    namespace: str
    name: str
    pod_template: str | None = None  # podTemplateRef.name
    scalable: ScalableRef | None = None
    replicas: int | None = None
    percentage: int | None = None
    limits: tuple[tuple[str, int], ...] = ()  # resource -> amount in the resource's base unit
    origin: str = ""  # "file:line" of a config-file buffer; "" for an object in the cluster

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _int(value: object, key: str, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BufferError(key, field, "must be a non-negative integer", value)
    return value


def parse_buffer(manifest: Mapping[str, Any], origin: str = "") -> CapacityBuffer:
    """A `CapacityBuffer` from its manifest; `BufferError` for anything Longshore cannot act on."""
    meta = manifest.get("metadata") or {}
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "default")
    key = f"{namespace}/{name}"
    if not name:
        raise BufferError(key, "metadata.name", "is required")
    spec = manifest.get("spec")
    if not isinstance(spec, Mapping):
        raise BufferError(key, "spec", "must be a mapping", spec)
    strategy = spec.get("provisioningStrategy", ACTIVE_CAPACITY)
    if strategy != ACTIVE_CAPACITY:
        raise BufferError(key, "spec.provisioningStrategy", f"only {ACTIVE_CAPACITY} is supported", strategy)
    template_ref, scalable_ref = spec.get("podTemplateRef"), spec.get("scalableRef")
    if (template_ref is None) == (scalable_ref is None):
        raise BufferError(key, "spec", "set exactly one of podTemplateRef and scalableRef")
    template: str | None = None
    scalable: ScalableRef | None = None
    if template_ref is not None:
        if not isinstance(template_ref, Mapping) or not template_ref.get("name"):
            raise BufferError(key, "spec.podTemplateRef.name", "is required", template_ref)
        template = str(template_ref["name"])
    else:
        if not isinstance(scalable_ref, Mapping) or not scalable_ref.get("name"):
            raise BufferError(key, "spec.scalableRef.name", "is required", scalable_ref)
        kind = str(scalable_ref.get("kind") or "")
        if kind not in SCALABLE_KINDS:
            raise BufferError(
                key, "spec.scalableRef.kind", f"must be one of {', '.join(SCALABLE_KINDS)}", kind
            )
        scalable = ScalableRef(kind, str(scalable_ref["name"]), str(scalable_ref.get("apiGroup") or "apps"))
    replicas = _int(spec.get("replicas"), key, "spec.replicas")
    percentage = _int(spec.get("percentage"), key, "spec.percentage")
    if percentage is not None and scalable is None:
        raise BufferError(key, "spec.percentage", "needs spec.scalableRef", percentage)
    limits_raw = spec.get("limits") or {}
    if not isinstance(limits_raw, Mapping):
        raise BufferError(key, "spec.limits", "must be a mapping of resource to quantity", limits_raw)
    limits: list[tuple[str, int]] = []
    for resource, amount in sorted(limits_raw.items()):
        try:
            limits.append((str(resource), parse_quantity(str(resource), amount)))
        except (QuantityError, ValueError) as error:
            raise BufferError(key, f"spec.limits.{resource}", str(error), amount) from None
    return CapacityBuffer(namespace, name, template, scalable, replicas, percentage, tuple(limits), origin)


@dataclass(frozen=True, slots=True)
class BufferTemplate:
    """A PodTemplate document of the cluster config file: the pod a config-file buffer's podTemplateRef names."""

    namespace: str
    name: str
    pod: Pod


@dataclass(frozen=True, slots=True)
class Resolved:
    """A buffer's virtual pods, or why it has none (`reason`, for `status.conditions`)."""

    buffer: CapacityBuffer
    pods: tuple[Pod, ...] = ()
    reason: str = ""
    template_generation: int | None = None  # the PodTemplate's metadata.generation, when one was read

    @property
    def ready(self) -> bool:
        return not self.reason


def _workload_replicas(workload: Mapping[str, Any]) -> int:
    value = (workload.get("spec") or {}).get("replicas", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 1


def desired_count(buffer: CapacityBuffer, workload_replicas: int | None, pod: Pod) -> int:
    """The number of virtual pods (see the module docstring): replicas / percentage, capped by limits."""
    counts: list[int] = []
    if buffer.replicas is not None:
        counts.append(buffer.replicas)
    if buffer.percentage is not None and workload_replicas is not None:
        counts.append(math.ceil(buffer.percentage * workload_replicas / 100))
    if not counts:
        counts.append(1 if buffer.pod_template is not None else 0)
    count = max(counts)
    for resource, limit in buffer.limits:
        request = pod.requests.get(resource)
        if request > 0:
            count = min(count, limit // request)
    return count


def resolve(
    buffer: CapacityBuffer,
    pod_templates: Mapping[tuple[str, str], Mapping[str, Any]],
    workloads: Mapping[tuple[str, str, str], Mapping[str, Any]],
    config_templates: Mapping[tuple[str, str], Pod] | None = None,
) -> Resolved:
    """The buffer's virtual pods. `pod_templates` maps (namespace, name) to a PodTemplate object,
    `workloads` maps (kind, namespace, name) to a Deployment / ReplicaSet / StatefulSet object,
    `config_templates` (namespace, name) to the pod of a config-file PodTemplate (it wins)."""
    workload_replicas: int | None = None
    generation: int | None = None
    if buffer.pod_template is not None:
        configured = (config_templates or {}).get((buffer.namespace, buffer.pod_template))
        if configured is not None:
            count = desired_count(buffer, None, configured)
            return Resolved(buffer, virtual_pods(buffer, configured, count))
        source = pod_templates.get((buffer.namespace, buffer.pod_template))
        if source is None:
            return Resolved(buffer, reason=f"PodTemplate {buffer.namespace}/{buffer.pod_template} not found")
        template = source.get("template")
        raw = (source.get("metadata") or {}).get("generation")
        generation = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    else:
        assert buffer.scalable is not None
        ref = buffer.scalable
        source = workloads.get((ref.kind, buffer.namespace, ref.name))
        if source is None:
            return Resolved(buffer, reason=f"{ref.kind} {buffer.namespace}/{ref.name} not found")
        template = (source.get("spec") or {}).get("template")
        workload_replicas = _workload_replicas(source)
    if not isinstance(template, Mapping):
        return Resolved(buffer, reason="the referenced object has no pod template")
    try:
        base = pod_from_manifest({"metadata": template.get("metadata") or {}, "spec": template.get("spec")})
    except (PodManifestError, QuantityError, ValueError) as error:
        return Resolved(buffer, reason=f"unreadable pod template: {error}")
    count = desired_count(buffer, workload_replicas, base)
    return Resolved(buffer, virtual_pods(buffer, base, count), template_generation=generation)


def virtual_pods(buffer: CapacityBuffer, base: Pod, count: int) -> tuple[Pod, ...]:
    annotations = (*base.annotations, (VIRTUAL_ANNOTATION, buffer.key))
    return tuple(
        replace(
            base,
            namespace=buffer.namespace,
            name=f"capacitybuffer-{buffer.name}-{index}",
            uid=f"capacitybuffer/{buffer.key}/{index}",
            annotations=annotations,
            owner_kind=KIND,
            owner_name=buffer.name,
            unschedulable=True,
            phase="Pending",
            node_name="",
        )
        for index in range(count)
    )


def is_virtual(pod: Pod) -> bool:
    return any(key == VIRTUAL_ANNOTATION for key, _ in pod.annotations)


def resolve_all(
    manifests: Sequence[Mapping[str, Any]],
    pod_templates: Mapping[tuple[str, str], Mapping[str, Any]],
    workloads: Mapping[tuple[str, str, str], Mapping[str, Any]],
) -> tuple[tuple[Resolved, ...], tuple[str, ...]]:
    """Every buffer's resolution, and the error of each manifest that could not be parsed."""
    buffers, errors = parse_all(manifests)
    resolved = [resolve(b, pod_templates, workloads) for b in buffers]
    return tuple(sorted(resolved, key=lambda r: r.buffer.key)), tuple(str(e) for e in errors)


def parse_all(
    manifests: Sequence[Mapping[str, Any]],
) -> tuple[tuple[CapacityBuffer, ...], tuple[BufferError, ...]]:
    """Every manifest parsed, and the error of each that could not be (`BufferError.buffer` names it)."""
    buffers: list[CapacityBuffer] = []
    errors: list[BufferError] = []
    for manifest in manifests:
        try:
            buffers.append(parse_buffer(manifest))
        except BufferError as error:
            errors.append(error)
    return tuple(buffers), tuple(errors)
