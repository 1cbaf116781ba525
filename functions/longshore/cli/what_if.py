"""`longshore explain NODE --what-if-removed`: where a node's pods would go without it, what that costs or saves.

Theory of operation: the node's reschedulable pods are planned by the packing engine (`core.scheduling.solve`)
on every other node that is not being disrupted (unmanaged ones included), the in-flight claims and, for what
does not fit, new claims, as a consolidation plans the move (`core.disruption.passes`): pools whose node
class's placement group was not looked up this pass offer no new claim, the others offer their group's
partitions. The $/h difference is the node's price less the new claims'; what would block a graceful
removal is the planner's own check (the placement-group blocker, then `core.disruption.guards`), followed by
the pool's budgets. Nothing is decided or written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from longshore.cli.explain import Answer, _budget_lines
from longshore.core.model import ClusterConfig
from longshore.core.scheduling import SchedulingInput, solve


def what_if_removed(
    name: str, snapshot: Any, config: ClusterConfig, placement_failures: Mapping[str, str] | None = None
) -> Answer:
    """Where NODE's pods would go without it, the $/h difference, and what would block its removal (as a
    consolidation would ask: no new claim in a pool whose node class's placement group was not looked up)."""
    from dataclasses import replace

    from longshore.cli.placement_groups import unresolved_lines
    from longshore.core.disruption import guards

    inp = snapshot.input
    managed = snapshot.managed(name)
    if managed is None:
        return Answer("node", name, "not-managed", f"node {name} is not owned by cluster {config.name}")
    moved = tuple(replace(p, node_name="", nominated_node_name="") for p in managed.reschedulable_pods())
    others = [n.node for n in inp.nodes if n.name != name and not n.disrupting]
    plan = solve(
        SchedulingInput(
            pods=moved,
            pools=tuple(p for p in config.pools_by_weight() if p.node_class not in inp.placement_unresolved),
            node_classes=config.node_classes,
            catalog=inp.catalog,
            nodes=(*others, *inp.unmanaged),
            in_flight=inp.in_flight,
            daemonsets=inp.daemonsets,
            unavailable=inp.unavailable,
            settings=config.settings,
            placement_groups=inp.placement_groups,
        )
    )
    lines = [f"{key} -> {node}" for key, node in sorted(plan.placements().items())]
    for claim in plan.new_claims:
        lines.append(
            f"new node {claim.name}: {claim.instance_type} {claim.capacity_type} {claim.zone}, "
            f"${claim.price_per_hour:.4f}/h, for {len(claim.pods)} pod(s)"
        )
    lines += [f"{key} has nowhere to run: {reason}" for key, reason in plan.unschedulable]
    blocker = inp.placement_blocker(managed.nodepool) or guards.graceful_blocker(managed, inp.pdbs, inp.now)
    lines.append(f"blocked: {blocker}" if blocker else "nothing blocks a graceful removal (PDBs allow it)")
    lines += [*_budget_lines(config, managed.nodepool, inp), *unresolved_lines(inp, placement_failures or {})]
    delta = managed.price - plan.cost_per_hour
    if plan.unschedulable:
        verdict, reason = "blocked", f"{len(plan.unschedulable)} of its pods would have nowhere to run"
    elif delta >= 0:
        verdict = "would-save"
        reason = (
            f"removing it saves ${delta:.4f}/h (${managed.price:.4f}/h node, ${plan.cost_per_hour:.4f}/h new)"
        )
    else:
        verdict = "would-cost"
        reason = f"removing it costs ${-delta:.4f}/h more (${plan.cost_per_hour:.4f}/h of new nodes)"
    return Answer("node", name, verdict, reason, tuple(lines))
