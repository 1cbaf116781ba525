"""CapacityBuffers in the provisioner: their virtual pods are planned after the real ones.

The rule. Each pass resolves every buffer to its virtual pods (`core.buffers`) and plans them with the real
pending pods, in the same call of the packing engine, so that a buffer that fits on free capacity (nodes or
launching claims) launches nothing and one that does not gets new claims. Real pods come first: the pass
also plans the real pods alone, and if the plan with the buffers leaves any real pod unplaced that the plan
without them placed, the buffers are dropped from this pass (they are planned again on the next). Virtual
pods nothing can hold get no Event (they are not in the cluster).

Refill needs no state: the scheduler binds a real pod onto a warm node, the next pass finds the virtual
pods no longer fit there, and launches for them.

Where buffers come from (`read_buffers`): the cluster's CapacityBuffer objects when `poolSource` is `cluster`
or `both`, and the CapacityBuffer documents of the config file (`ClusterConfig.buffers`) whatever it is; an
object in the cluster wins over a config-file buffer of the same namespace and name. PodTemplates: the config
file's first (`ClusterConfig.buffer_templates`), then the cluster's; workloads always from the cluster. The
cluster is asked for PodTemplates and workloads only when a buffer needs them. `BufferSource` is the cluster
side; a provisioner built without one uses the config-file buffers with config-file PodTemplates only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from longshore.core.buffers import BufferError, Resolved, is_virtual, parse_all, resolve
from longshore.core.model import ClusterConfig
from longshore.core.pods import Pod
from longshore.core.scheduling import Plan, SchedulingInput, solve

log = logging.getLogger(__name__)


@runtime_checkable
class BufferSource(Protocol):
    def list_buffers(self) -> list[Mapping[str, Any]]:
        """Every CapacityBuffer (`autoscaling.x-k8s.io/v1alpha1`)."""
        ...

    def pod_templates(self) -> Mapping[tuple[str, str], Mapping[str, Any]]:
        """PodTemplates by (namespace, name)."""
        ...

    def workloads(self) -> Mapping[tuple[str, str, str], Mapping[str, Any]]:
        """Deployments, ReplicaSets and StatefulSets by (kind, namespace, name)."""
        ...


@dataclass(frozen=True, slots=True)
class BufferPass:
    """One read of every buffer: the resolutions, the cluster objects that could not be parsed, and the
    cluster objects by `namespace/name` (their current `status`, for `services.buffer_status`)."""

    resolved: tuple[Resolved, ...] = ()
    invalid: tuple[BufferError, ...] = ()
    objects: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def source_of(cluster: object, config: ClusterConfig) -> BufferSource | None:
    """The cluster as a buffer source: when `poolSource` reads it (`cluster`, `both`) or the config file has
    buffers (whose PodTemplates and workloads may live there)."""
    if not isinstance(cluster, BufferSource):
        return None
    if config.pool_source == "config" and not config.buffers:
        return None
    return cluster


def _key(manifest: Mapping[str, Any]) -> str:
    meta = manifest.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def read_buffers(source: BufferSource | None, config: ClusterConfig) -> BufferPass:
    """Every buffer's resolution (see the module docstring); invalid and unready buffers are logged."""
    manifests = source.list_buffers() if source is not None and config.pool_source != "config" else []
    parsed, invalid = parse_all(manifests)
    chosen = {b.key: b for b in config.buffers}
    chosen.update({b.key: b for b in parsed})
    objects = {_key(m): m for m in manifests}
    for error in invalid:
        log.warning("invalid CapacityBuffer ignored", extra={"error": str(error)})
    if not chosen:
        return BufferPass((), invalid, objects)
    configured = {(t.namespace, t.name): t.pod for t in config.buffer_templates}
    buffers = sorted(chosen.values(), key=lambda b: b.key)
    templates: Mapping[tuple[str, str], Mapping[str, Any]] = {}
    workloads: Mapping[tuple[str, str, str], Mapping[str, Any]] = {}
    if source is not None:
        if any(b.pod_template and (b.namespace, b.pod_template) not in configured for b in buffers):
            templates = source.pod_templates()
        if any(b.scalable is not None for b in buffers):
            workloads = source.workloads()
    resolved = tuple(resolve(b, templates, workloads, configured) for b in buffers)
    for item in resolved:
        if not item.ready:
            log.warning("CapacityBuffer not ready", extra={"buffer": item.buffer.key, "reason": item.reason})
    return BufferPass(resolved, invalid, objects)


def resolve_buffers(source: BufferSource | None, config: ClusterConfig) -> tuple[Resolved, ...]:
    """Every buffer's resolution (`read_buffers`)."""
    return read_buffers(source, config).resolved


def virtual_pods(resolved: tuple[Resolved, ...]) -> tuple[Pod, ...]:
    return tuple(p for r in resolved for p in r.pods)


def plan_with_buffers(inp: SchedulingInput, virtual: tuple[Pod, ...]) -> Plan:
    """`solve(inp)` with the buffers' virtual pods filling what the real pods leave (module docstring)."""
    if not virtual:
        return solve(inp)
    combined = solve(replace(inp, pods=(*inp.pods, *virtual)))
    real = {p.key for p in inp.pods}
    blocked = {key for key, _ in combined.unschedulable if key in real}
    if blocked and inp.pods:
        alone = solve(inp)
        if blocked - {key for key, _ in alone.unschedulable}:
            log.info("CapacityBuffers left out of this pass: they would keep real pods pending")
            return alone
    virtual_keys = {p.key for p in virtual if is_virtual(p)}
    return replace(
        combined, unschedulable=tuple(u for u in combined.unschedulable if u[0] not in virtual_keys)
    )
