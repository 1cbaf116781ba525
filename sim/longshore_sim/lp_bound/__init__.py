"""Lower bounds on the hourly cost of running a set of pods (`docs/reference/lp-bounds.md`), via HiGHS: the one
place the LP bounds live, for the simulation (`simulation`: pods on a config's pool templates) and for the
benchmark (`pools`: pods on one pool's requirements, with the zone-spread split and per-node group caps of
§1 and the cover bound for the Karpenter mix; `bench/lower_bound.py` only adapts a `Workload` to it). Both
solve the configuration LP with the same column generation (`colgen`).

Theory of operation: a bound answers "what is the least any placement could pay per hour for these pods on
these pools", so a simulation can report how far the provisioner's final cluster is from it. Pods are grouped
into classes (same requests, tolerations and node requirements). Bins are what a pool could launch: for every
pool template (`core.scheduling.templates`: allocatable per type with the pool's kubelet settings, minus the
DaemonSet pods that land there) and every instance type, the offerings (zone x capacity type) are grouped by
the set of classes they can serve and only the cheapest of each group is kept; a bin another one dominates
(a superset of the classes, at least the room, no dearer) is dropped, which changes neither LP's optimum.
Two LPs are built on them.

*The fluid LP* (`docs/reference/lp-bounds.md` §2):

    min  sum_b p_b y_b
    s.t. sum_b z_kb = 1                              every class is placed (fractionally)
         sum_k n_k d_kr z_kb <= C_br y_b             for cpu, memory and pods of every bin
         n_k z_kb <= y_b                             classes with hostname anti-affinity: one pod per node
         y, z >= 0

Every integer placement is a feasible point, so the optimum bounds every real cluster from below. Whole nodes
are not enforced, so a cluster whose pods cannot fill their nodes (30 pods of 500m on a node with 15,890m
allocatable) is above it by the unavoidable remainder. `linprog(method="highs")` solves it in milliseconds.

*The configuration LP* (Gilmore-Gomory, `docs/reference/lp-bounds.md` §3): a column `a` of bin b is a whole node's worth of pods,
an integer count a_k per class with sum_k a_k d_kr <= C_br, a_k <= n_k, a_k <= 1 for anti-affine classes and
a_k = 0 for classes the bin cannot serve. The LP `min sum p_b lambda_a s.t. sum_a a_k lambda_a >= n_k` is
relaxed only in how many of each node are bought, so it is at least the fluid bound and, every node of an
integer packing being such a column, at most the cost of any integer packing. Column generation solves it:
the restricted master over the columns found so far (HiGHS), with duals pi; then per bin the pricing problem
`max pi . a` over its columns, a bounded 3-D integer knapsack, solved exactly by enumerating its feasible
points when there are few, else by `scipy.optimize.milp` with a time limit. Columns with pi . a > p_b join the
master. Each round tries a greedy filling of every bin first and prices exactly only when greedy finds nothing,
most promising bins first, until a few improving columns are found (partial pricing). Whatever the state, pi (clipped at 0) scaled by theta = max(1, max_b U_b / p_b), where U_b is any
upper bound on bin b's pricing optimum, is a feasible dual of the full LP, so

    LB_CG = n . pi / theta                                                   (Farley's bound)

is valid at every iteration. U_b is the exact optimum when pricing was exact, HiGHS's MIP dual bound when a
knapsack stopped early, and a fractional (per-dimension) knapsack bound for bins not priced at all. When every
bin is priced exactly and none improves, theta = 1 and LB_CG is the LP optimum ("converged"). The best LB_CG
over the iterations is kept. The loop stops at convergence, after `max_iterations`, or at the wall-clock
budget (2 s by default, on top of the fluid LP's fraction of a second), so a simulation never waits long.
The reported bound is `max(fluid, configuration)`: the fluid one when column generation proved nothing better.
A run cut short by the clock depends on the machine's speed; a converged one does not.
"""

from longshore_sim.lp_bound.colgen import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_TIME_LIMIT,
    ENUMERATION_LIMIT,
    KNAPSACK_TIME_LIMIT,
    PRICING_BATCH,
    ConfigurationBound,
    GeneratedColumns,
    _price_bin,
    generate_columns,
)
from longshore_sim.lp_bound.simulation import (
    DIMENSIONS,
    BoundReport,
    LowerBound,
    fluid_lower_bound,
    lower_bounds,
)

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_TIME_LIMIT",
    "DIMENSIONS",
    "ENUMERATION_LIMIT",
    "KNAPSACK_TIME_LIMIT",
    "PRICING_BATCH",
    "BoundReport",
    "ConfigurationBound",
    "GeneratedColumns",
    "LowerBound",
    "_price_bin",
    "fluid_lower_bound",
    "generate_columns",
    "lower_bounds",
]
