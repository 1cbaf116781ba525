"""The fleet gauges the provisioner emits every pass, from its claim records (pure).

Rules: a claim counts once it has an instance id and until it is being deleted (state `deleting`):
- `NodePoolCostPerHour` (per NodePool) and `ClusterCostPerHour`: the sum of those claims' prices in $/h;
  Karpenter's `karpenter_nodepools_cost_total` is the same gauge (docs/metrics.md).
- `NodeClaims` (per NodePool): how many, launching ones included; Karpenter's
  `karpenter_nodepools_usage{resource_type="nodes"}` counts a pool's NodeClaims the same way.
- `Nodes` (per NodePool and CapacityType): those whose node has registered; Karpenter's
  `karpenter_cluster_state_node_count` is their sum.
Each gauge is emitted only for pools that have such claims; `ClusterCostPerHour` always (0 with none).
"""

from __future__ import annotations

from collections.abc import Iterable

from longshore.core import telemetry
from longshore.core.claims import NodeClaim

Gauge = tuple[str, float, str, dict[str, str]]  # (metric, value, unit, dimensions)
REGISTERED = frozenset({"registered", "initialized"})


def fleet_gauges(claims: Iterable[NodeClaim]) -> list[Gauge]:
    cost: dict[str, float] = {}
    counts: dict[str, int] = {}
    nodes: dict[tuple[str, str], int] = {}
    for claim in claims:
        if not claim.instance_id or claim.state == "deleting":
            continue
        cost[claim.nodepool] = cost.get(claim.nodepool, 0.0) + (claim.price or 0.0)
        counts[claim.nodepool] = counts.get(claim.nodepool, 0) + 1
        if claim.state in REGISTERED:
            key = (claim.nodepool, claim.capacity_type or "on-demand")
            nodes[key] = nodes.get(key, 0) + 1
    gauges: list[Gauge] = [(telemetry.CLUSTER_COST_PER_HOUR, round(sum(cost.values()), 6), "None", {})]
    for pool, value in sorted(cost.items()):
        gauges.append(
            (telemetry.NODEPOOL_COST_PER_HOUR, round(value, 6), "None", {telemetry.DIM_NODEPOOL: pool})
        )
    for pool, count in sorted(counts.items()):
        gauges.append((telemetry.NODECLAIMS, float(count), "Count", {telemetry.DIM_NODEPOOL: pool}))
    for (pool, capacity_type), count in sorted(nodes.items()):
        dims = {telemetry.DIM_NODEPOOL: pool, telemetry.DIM_CAPACITY_TYPE: capacity_type}
        gauges.append((telemetry.NODES, float(count), "Count", dims))
    return gauges
