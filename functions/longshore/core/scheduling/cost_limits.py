"""Dollar limits (a Longshore extension): a pool's `longshore.io/max-cost-per-hour` and the cluster's
`settings.maxCostPerHour`, enforced by the packer like `limits.cpu`.

Theory of operation: each cap is one more limit dimension of the pool's pack, in micro-dollars per hour. Its
room is the cap less what the nodes and in-flight claims that are not being deleted already cost: the pool's
own for the pool cap, those of every pool for the cluster cap, each priced in its pool's overlay-adjusted
catalog (`core.overlays.price_of`). A new node of a type counts at the dearest offering the pool allows it,
because its claim may launch at any of them (the same caution as the fallbacks Karpenter keeps within
`limits`). The cluster cap is shared by the pools in weight order: what one pool's pack leaves is the next
pool's room. A pod the caps keep out is left pending with `pool NAME: cost limit 12.00 $/h reached` (or
`cluster cost limit`), as a cpu limit would say.
"""

from __future__ import annotations

import math

from longshore.core.catalog import Catalog
from longshore.core.overlays import overlaid, price_of, tenancy_priced
from longshore.core.scheduling.solver_state import SolverState
from longshore.core.scheduling.templates import NodeTemplate, TypeOption

POOL_COST = "longshore.io/cost-per-hour"
CLUSTER_COST = "longshore.io/cluster-cost-per-hour"
COST_LIMITS = frozenset({POOL_COST, CLUSTER_COST})
MICRO = 1_000_000


def _micro(dollars: float) -> int:
    return math.ceil(round(dollars * MICRO, 3))


def _view(solver: SolverState, template: NodeTemplate) -> Catalog:
    catalog = solver.inp.catalog.for_family(template.node_class.ami_family)
    return tenancy_priced(overlaid(catalog, template.pool.overlays, template.labels), template.requirements)


def _spent(solver: SolverState, pool: str | None) -> int:
    """What the live nodes cost, in µ$/h: the pool's, or every pool's when `pool` is None."""
    views = {t.name: _view(solver, t) for t in solver.templates if pool is None or t.name == pool}
    total = 0
    for node in (*solver.inp.nodes, *solver.inp.in_flight):
        owner = node.nodepool
        if owner is None or node.deleting or (pool is not None and owner != pool):
            continue
        total += _micro(price_of(views.get(owner, solver.inp.catalog), dict(node.labels)))
    return total


def cost_limits(solver: SolverState, template: NodeTemplate) -> tuple[list[str], list[int]]:
    """The dollar limits on this pool's pack: their names and the room left under each, in µ$/h."""
    names: list[str] = []
    room: list[int] = []
    cap = template.pool.max_cost_per_hour
    if cap is not None:
        names.append(POOL_COST)
        room.append(_micro(cap) - _spent(solver, template.name))
    cluster = solver.inp.settings.max_cost_per_hour
    if cluster is not None:
        if solver.cluster_cost_left is None:
            solver.cluster_cost_left = _micro(cluster) - _spent(solver, None)
        names.append(CLUSTER_COST)
        room.append(solver.cluster_cost_left)
    return names, room


def type_cost(option: TypeOption) -> int:
    """What one node of this type counts against a dollar limit: its dearest offering the pool allows."""
    return _micro(max((o.price for o in option.offerings), default=0.0))


def spend(solver: SolverState, names: list[str], room_left: tuple[int, ...] | None) -> None:
    """Carry what the pool's pack left of the cluster cap over to the next pool."""
    if room_left is not None and CLUSTER_COST in names:
        solver.cluster_cost_left = room_left[names.index(CLUSTER_COST)]


def reason(solver: SolverState, template: NodeTemplate, name: str) -> str:
    if name == POOL_COST:
        return f"pool {template.name}: cost limit {template.pool.max_cost_per_hour:.2f} $/h reached"
    return f"pool {template.name}: cluster cost limit {solver.inp.settings.max_cost_per_hour:.2f} $/h reached"
