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
points when there are few, else by `scipy.optimize.milp` (its time limit grows for a bin that ran out
before). For any pi >= 0, pi scaled by theta = max(1, max_b U_b / p_b), where U_b is any upper bound on bin
b's pricing optimum, is a feasible dual of the full LP, so

    LB_CG = n . pi / theta                                                   (Farley's bound)

is valid at every iteration, whatever pi is. U_b is the least of: the exact optimum when pricing was exact,
HiGHS's MIP dual bound when a knapsack stopped early, and the knapsack's LP relaxation (`relaxation`: all
bins at once, through the dual of the relaxation, which any price per dimension bounds). The relaxation is
cheap and close, so only the few bins whose relaxation says they might hold a column worth more than their
price are priced exactly, most promising first, and pricing stops once the next bin's relaxation cannot
raise theta above the exact ratios already found (or enough improving columns are in hand). Each round
adds the greedy filling of every such bin at the master's and the smoothed duals first, and prices
exactly only when greedy found nothing. Against tailing off, pricing uses Wentges' smoothed duals
`alpha pi_best + (1 - alpha) pi_master` (pi_best: the duals of the best bound so far); a round whose
columns do not improve the master at its own duals (a mispricing) still yields a Farley bound at the
smoothed duals, and if that bound did not improve the next round prices at the master's duals. The loop
stops when the best bound reaches the restricted master's optimum (which is at least the LP optimum) within
2e-6, when no bin's bound exceeds its price at the master's duals ("converged": LB_CG is then, to 1e-6, the LP
optimum), after `max_iterations`, or at the wall-clock budget (2 s by default, on top of the fluid LP's
fraction of a second), so a simulation never waits long. The best LB_CG over the iterations is kept.
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
