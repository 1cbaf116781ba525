"""Capacity held for CapacityBuffers counts as in use in the disruption planner.

The rule. Before any method runs, the pass places the buffers' virtual pods (`core.buffers`) with the
packing engine on the capacity that exists now: managed nodes not being disrupted, then unmanaged nodes and
launching claims, with no new claims allowed. Each virtual pod placed on a managed node is then treated as
bound to it: the node is not empty (emptiness passes it over), and every simulation that removes it
(expiry, drift, consolidation) must find the virtual pod a new home like any other pod, on the remaining
nodes or a replacement. So no decision takes the cluster's free capacity below what the buffers ask for,
while a buffer held on a cheaper node still lets a dearer one go. Virtual pods that fit nowhere now are not
the planner's concern: the provisioner launches for them.

The executor never sees virtual pods: they are not in the cluster, and a drain lists the node's real pods.
"""

from __future__ import annotations

from dataclasses import replace

from longshore.core.buffers import VIRTUAL_ANNOTATION, is_virtual
from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.pods import Pod
from longshore.core.scheduling import SchedulingInput, solve


def hold(inp: DisruptionInput, virtual: tuple[Pod, ...]) -> DisruptionInput:
    """`inp` with each placed virtual pod bound (in the snapshot only) to the node that holds it."""
    if not virtual:
        return inp
    candidates = tuple(n for n in inp.nodes if not n.disrupting and n.ready)
    plan = solve(
        SchedulingInput(
            pods=virtual,
            pools=(),
            node_classes=inp.config.node_classes,
            catalog=inp.catalog,
            nodes=(*(n.node for n in candidates), *inp.unmanaged),
            in_flight=inp.in_flight,
            daemonsets=inp.daemonsets,
            unavailable=inp.unavailable,
            settings=inp.config.settings,
        )
    )
    by_key = {p.key: p for p in virtual}
    placed: dict[str, list[Pod]] = {}
    for placement in plan.existing:
        placed.setdefault(placement.node, []).extend(by_key[k] for k in placement.pods if k in by_key)
    if not placed:
        return inp
    nodes = tuple(_bind(n, placed.get(n.name, [])) for n in inp.nodes)
    return replace(inp, nodes=nodes)


def _bind(node: ManagedNode, pods: list[Pod]) -> ManagedNode:
    if not pods:
        return node
    bound = tuple(replace(p, node_name=node.name, phase="Running", unschedulable=False) for p in pods)
    return replace(node, node=replace(node.node, pods=(*node.node.pods, *bound)))


def held(node: ManagedNode) -> tuple[str, ...]:
    """The buffers (namespace/name) holding capacity on `node`."""
    return tuple(sorted({v for p in node.pods for k, v in p.annotations if k == VIRTUAL_ANNOTATION}))


def only_buffers(node: ManagedNode) -> bool:
    """Every pod that would have to move off `node` is a buffer's virtual pod (and there is one)."""
    pods = node.reschedulable_pods()
    return bool(pods) and all(is_virtual(p) for p in pods)
