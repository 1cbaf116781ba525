"""The configuration-LP bound and a rounded integer plan for the larger workloads (docs/reference/lp-bounds.md
§3–4), so each gap splits into integrality and the engine.

The classes and effective bins are the fluid bound's (`bench/lower_bound.class_instance`: a zone spread
split evenly over its zones, hostname anti-affinity as one pod of the class per node). Column generation is
the simulation's (`longshore_sim.lp_bound.generate_columns`: greedy then exact knapsack pricing, Farley's
bound valid at every iteration, stopped after `time_limit` seconds). The bound reported is the best Farley
bound; `converged` says whether it is the LP optimum.

The rounded plan (`CG_ROUND`) is the better of a MIP over the generated columns (HiGHS, `round_limit` seconds)
and the master LP over them with every count rounded up, both covering
the integer split of every class (`ClassInstance.whole`: a zone spread's remainder goes to the first zones):
every column is one node whose pods fit, with at most one anti-affine pod of a class, on an offering that
serves its classes, so the MIP's solution is a feasible placement. bound ≤ OPT ≤ CG_ROUND: round ÷ bound is
at least the integrality gap of the instance, and ours ÷ round is what the engine loses to a plan we know
exists. Workloads with hostname spreads (the Karpenter mix) are not run: their merged per-node cap is not
a per-class one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from bench.lower_bound import class_instance
from bench.workloads import Workload
from longshore_sim.lp_bound import generate_columns


@dataclass(frozen=True)
class ConfigResult:
    bound: float  # the configuration-LP bound (Farley; the LP optimum when converged)
    converged: bool
    iterations: int
    columns: int
    rounded: float  # the cost of the integer plan over the generated columns
    rounded_nodes: int
    seconds: float


def configuration(workload: Workload, time_limit: float = 20.0, round_limit: float = 20.0) -> ConfigResult:
    from scipy.optimize import Bounds, LinearConstraint, milp

    started = time.perf_counter()
    instance = class_instance(workload)
    keys = instance.keys
    if any(key[3] == "hostname-spread" for key in keys):
        raise ValueError(
            "hostname spreads are merged across classes; the per-class columns would not bound them"
        )
    bins = []
    for t, serves, price in instance.bins:
        room = instance.rooms[t]
        served = frozenset(
            k
            for k, key in enumerate(keys)
            if instance.sig_index[(key[1], key[2])] in serves and all(key[0][r] <= room[r] for r in range(3))
        )
        if served:
            bins.append((price, (room[0], room[1], room[2]), served))
    bound, columns = generate_columns(
        [instance.counts[key] for key in keys],
        [(key[0][0], key[0][1], key[0][2]) for key in keys],
        [key[3].startswith("anti:") for key in keys],
        bins,
        deadline=time.perf_counter() + time_limit,
        max_iterations=100_000,
    )
    matrix = np.array(columns.counts, dtype=float).T
    prices = np.array([columns.prices[b] for b in columns.bins])
    need = np.array([float(instance.whole[key]) for key in keys])
    result = milp(
        prices,
        constraints=LinearConstraint(matrix, need, np.inf),
        integrality=np.ones(len(prices)),
        bounds=Bounds(0, float(need.max())),
        options={"time_limit": round_limit, "mip_rel_gap": 1e-4},
    )
    chosen = _rounded_up(matrix, prices, need)  # always feasible; the MIP may beat it in its time
    if result.x is not None and prices @ np.round(result.x) < prices @ chosen:
        chosen = np.round(result.x)
    return ConfigResult(
        bound=bound.cost_per_hour,
        converged=bound.converged,
        iterations=bound.iterations,
        columns=bound.columns,
        rounded=float(prices @ chosen),
        rounded_nodes=int(chosen.sum()),
        seconds=time.perf_counter() - started,
    )


def _rounded_up(matrix: np.ndarray, prices: np.ndarray, need: np.ndarray) -> np.ndarray:
    """The master LP over the columns, every column count rounded up: a feasible plan (it covers `need`),
    the fallback when the MIP finds nothing better in its time."""
    from scipy.optimize import linprog

    result = linprog(prices, A_ub=-matrix, b_ub=-need, bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"no rounded plan: {result.message}")
    return np.ceil(np.asarray(result.x) - 1e-9)
