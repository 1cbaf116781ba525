"""CapacityBuffers in the provisioner: their virtual pods are planned after the real ones.

The rule. Each pass resolves every buffer to its virtual pods (`core.buffers`) and plans them with the real
pending pods, in the same call of the packing engine, so that a buffer that fits on free capacity (nodes or
launching claims) launches nothing and one that does not gets new claims. Real pods come first: the pass
also plans the real pods alone, and if the plan with the buffers leaves any real pod unplaced that the plan
without them placed, the buffers are dropped from this pass (they are planned again on the next). Virtual
pods nothing can hold get no Event (they are not in the cluster).

Refill needs no state: the scheduler binds a real pod onto a warm node, the next pass finds the virtual
pods no longer fit there, and launches for them.

`BufferSource` is where the objects come from (the cluster's CapacityBuffers, PodTemplates and workloads);
a provisioner built without one has no buffers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from longshore.core.buffers import Resolved, is_virtual, resolve_all
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


def source_of(cluster: object, pool_source: str) -> BufferSource | None:
    """CapacityBuffers are read from the cluster with its NodePools (`poolSource` cluster or both)."""
    if pool_source == "config" or not isinstance(cluster, BufferSource):
        return None
    return cluster


def resolve_buffers(source: BufferSource | None) -> tuple[Resolved, ...]:
    """Every buffer's resolution; invalid buffers are logged and skipped."""
    if source is None:
        return ()
    manifests = source.list_buffers()
    if not manifests:
        return ()
    resolved, errors = resolve_all(manifests, source.pod_templates(), source.workloads())
    for error in errors:
        log.warning("invalid CapacityBuffer ignored", extra={"error": error})
    for item in resolved:
        if not item.ready:
            log.warning("CapacityBuffer not ready", extra={"buffer": item.buffer.key, "reason": item.reason})
    return resolved


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
