"""The configuration LP by column generation (`docs/reference/lp-bounds.md` §3), for classes given as plain
numbers; the package docstring (`longshore_sim.lp_bound`) has the theory of operation. Shared by the
simulation's bound (`simulation.lower_bounds`) and the benchmark's (`pools.configuration_plan`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from longshore_sim.lp_bound.relaxation import KnapsackRelaxation

Bin = tuple[float, tuple[int, int, int], frozenset[int]]  # price, room, indices of the classes served
_Bin = Bin

DEFAULT_TIME_LIMIT = 2.0  # seconds of wall time for column generation, after the fluid LP
DEFAULT_MAX_ITERATIONS = 200
ENUMERATION_LIMIT = 50_000  # partial knapsack fillings enumerated before handing a bin to the MIP solver
KNAPSACK_TIME_LIMIT = 0.25  # seconds for one knapsack MIP, at first
KNAPSACK_TIME_LIMIT_MAX = 4.0  # seconds for one knapsack MIP that ran out of time before
PRICING_BATCH = 25  # improving columns found by exact pricing before the master is solved again
SMOOTHING = 0.5  # Wentges: pricing duals = SMOOTHING x the best bound's duals + the rest x the master's
_MIP_GAP = 5e-7  # relative: a knapsack MIP stops this close to its optimum (its dual bound is what counts)
_GAP = 2e-6  # relative: a bound this close to the restricted master's optimum is the LP optimum
_IMPROVES = (
    1e-6  # relative, above the master LP's tolerance: a column improves when pi . a > p_b (1 + _IMPROVES)
)


@dataclass(frozen=True, slots=True)
class ConfigurationBound:
    """The configuration-LP bound and how column generation got there."""

    cost_per_hour: float  # a valid lower bound: the best Farley bound seen (the LP optimum when converged)
    master_per_hour: float  # the last restricted master's optimum: the LP optimum or above it, NOT a bound
    converged: bool  # exact pricing found no improving column, so cost_per_hour is the LP optimum
    stopped: (
        str  # "converged", "time", "iterations", "stalled" (only columns already in the master), "no pods"
    )
    iterations: int
    columns: int
    bins: int  # bins left after dropping dominated ones
    seconds: float


@dataclass(frozen=True, slots=True)
class GeneratedColumns:
    """The columns column generation found: `bins[i]` indexes `prices` (the undominated bins, in order) and
    `counts[i]` is the pods per class of one node; a MIP over them gives an integer plan (`pools.configuration_plan`)."""

    prices: tuple[float, ...]
    bins: tuple[int, ...]
    counts: tuple[tuple[int, ...], ...]


def generate_columns(
    counts: Sequence[float],
    demands: Sequence[tuple[int, int, int]],
    one_per_node: Sequence[bool],
    bins: Sequence[_Bin],
    *,
    deadline: float,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    enumeration_limit: int = ENUMERATION_LIMIT,
) -> tuple[ConfigurationBound, GeneratedColumns]:
    """The configuration-LP bound by column generation (package docstring) and the columns it generated, for
    classes given as plain numbers: `counts[k]` pods of class k, each needing `demands[k]` (millicores, bytes,
    pod slots), at most one per node when `one_per_node[k]`; bins as (price, room, classes served). Every class
    must be served by some bin. Counts may be fractional or 0 (a class only a rounded plan needs): the per-node
    caps use their ceiling (at least 1). Stops at `deadline` (a `time.perf_counter()` instant) or after `max_iterations` master solves.
    The simulation keeps only the bound (`simulation.lower_bounds`); the benchmark also solves a MIP over the
    columns (`pools.configuration_plan`)."""
    import time

    import numpy as np

    started = time.perf_counter()
    if not counts:
        return ConfigurationBound(0.0, 0.0, True, "no pods", 0, 0, 0, 0.0), GeneratedColumns((), (), ())
    need = np.asarray(counts, dtype=float)
    demand = np.asarray(demands, dtype=np.int64).reshape(len(counts), 3)
    price, room, caps = _bin_arrays(need, demand, np.asarray(one_per_node, dtype=bool), _undominated(bins))
    if not (caps > 0).any(axis=0).all():
        raise ValueError("every class must be served by some bin")
    relaxation = KnapsackRelaxation(demand, caps, room)

    def pricing_bounds(weights: Any) -> Any:
        upper = _fractional_pricing_bounds(weights, demand, caps, room)
        open_bins = np.flatnonzero(upper > price)  # the others cannot raise theta above 1 nor improve
        if open_bins.size:
            upper[open_bins] = np.minimum(upper[open_bins], relaxation.bounds(weights, open_bins))
        return upper

    columns = _Columns(len(counts))
    for k in range(len(counts)):  # the cheapest homogeneous node of every class: the master is feasible
        per_pod = np.where(caps[:, k] > 0, price / np.maximum(caps[:, k], 1), np.inf)
        for b in np.argsort(per_pod, kind="stable")[:3]:
            if caps[b, k] > 0:
                column = np.zeros(len(counts), dtype=np.int64)
                column[k] = caps[b, k]
                columns.add(int(b), column)
    limits = np.full(len(price), KNAPSACK_TIME_LIMIT)  # per bin: grows when its knapsack runs out of time
    best = 0.0
    master = float("inf")
    center: Any = None  # the duals of the best Farley bound: the stability centre of the smoothing
    alpha = SMOOTHING
    stopped = "iterations"
    iterations = 0
    while iterations < max_iterations:
        if time.perf_counter() >= deadline:
            stopped = "time"
            break
        solved = _solve_master(columns, price, need, deadline - time.perf_counter())
        if solved is None:
            stopped = "time"
            break
        iterations += 1
        master, duals = solved
        if best >= master * (1 - _GAP):  # the bound meets the restricted master's optimum: the LP optimum
            stopped = "converged"
            break
        best, center = _keep_best(best, center, need, duals, pricing_bounds(duals), price)
        smoothed = duals if center is None or alpha <= 0 else alpha * center + (1 - alpha) * duals
        upper = pricing_bounds(smoothed)
        open_bins = np.flatnonzero(upper > price * (1 + _IMPROVES))
        progress = 0  # columns worth more than their price at the master's own duals
        for b in open_bins:
            for weights in (smoothed, duals) if smoothed is not duals else (duals,):
                column = _greedy_column(weights, demand, caps[b], room[b])
                if float(duals @ column) > price[b] * (1 + _IMPROVES) and columns.add(int(b), column):
                    progress += 1
        exact = True
        found = 0  # columns worth more than their price at the smoothed duals
        ranked = open_bins[np.argsort(-(upper[open_bins] / price[open_bins]), kind="stable")]
        worst = 1 + _IMPROVES  # the largest exact value / price so far
        for b in ranked if not progress else ():
            if upper[b] <= price[b] * worst:  # this bin and the rest can neither improve nor raise theta
                break
            remaining = deadline - time.perf_counter()
            if remaining <= 0.005:
                exact = False
                break
            value, column, bound = _price_bin(
                smoothed, demand, caps[b], room[b], min(limits[b], remaining), enumeration_limit
            )
            upper[b] = min(upper[b], bound)
            if bound > value * (1 + _IMPROVES) and bound > price[b] * (1 + _IMPROVES):
                exact = False  # the knapsack ran out of time: give this bin more next time
                limits[b] = min(4 * limits[b], KNAPSACK_TIME_LIMIT_MAX)
            worst = max(worst, upper[b] / price[b])
            if value > price[b] * (1 + _IMPROVES):
                found += 1
                if columns.add(int(b), column) and float(duals @ column) > price[b] * (1 + _IMPROVES):
                    progress += 1
                if found >= PRICING_BATCH:  # enough for the next master; the rest keep their cheap bound
                    break
        improved = _farley(need, smoothed, upper, price) > best
        best, center = _keep_best(best, center, need, smoothed, upper, price)
        if progress:
            alpha = SMOOTHING
            continue
        if smoothed is duals:  # no column improves at the master's duals: the LP optimum, or stuck
            if best >= master * (1 - _GAP) or bool((upper <= price * (1 + _IMPROVES)).all()):
                stopped = "converged"
                break
            if exact:  # every knapsack solved and only columns already in the master: numerically stuck
                stopped = "stalled"
                break
            continue
        alpha = alpha if improved else 0.0  # a mispricing: move towards the master's duals
    outcome = ConfigurationBound(
        cost_per_hour=best,
        master_per_hour=master if np.isfinite(master) else 0.0,
        converged=stopped == "converged",
        stopped=stopped,
        iterations=iterations,
        columns=len(columns.bins),
        bins=len(price),
        seconds=time.perf_counter() - started,
    )
    generated = GeneratedColumns(
        tuple(float(p) for p in price),
        tuple(columns.bins),
        tuple(tuple(int(n) for n in column) for column in columns.counts),
    )
    return outcome, generated


class _Columns:
    """The restricted master's columns: bin index and pods per class, without duplicates."""

    def __init__(self, classes: int) -> None:
        self.classes = classes
        self.bins: list[int] = []
        self.counts: list[Any] = []
        self._seen: set[tuple[int, bytes]] = set()

    def add(self, b: int, column: Any) -> bool:
        key = (b, column.tobytes())
        if key in self._seen or not column.any():
            return False
        self._seen.add(key)
        self.bins.append(b)
        self.counts.append(column.copy())
        return True


def _undominated(bins: Sequence[_Bin]) -> list[_Bin]:
    """The bins no other bin dominates (serves a superset of the classes with at least the room, for no more
    money; of identical bins, the first). Dropping the others changes neither LP's optimum: whatever a
    dominated bin holds, its dominator holds for no more."""
    import numpy as np

    if not bins:
        return []
    classes = max((max(served, default=-1) for _, _, served in bins), default=-1) + 1
    price = np.array([p for p, _, _ in bins], dtype=float)
    room = np.array([r for _, r, _ in bins], dtype=np.int64).reshape(len(bins), 3)
    served = np.zeros((len(bins), classes), dtype=bool)
    for b, (_, _, members) in enumerate(bins):
        served[b, list(members)] = True
    index = np.arange(len(bins))
    kept = []
    for b in range(len(bins)):
        covers = (served[b] <= served).all(axis=1) & (room[b] <= room).all(axis=1) & (price <= price[b])
        same = (served[b] == served).all(axis=1) & (room[b] == room).all(axis=1) & (price == price[b])
        if not (covers & ~same).any() and not (same & (index < b)).any():
            kept.append(bins[b])
    return kept


def _bin_arrays(need: Any, demand: Any, one_per_node: Any, bins: Sequence[_Bin]) -> tuple[Any, Any, Any]:
    """Prices, rooms and per-class caps: the most pods of a class one node of the bin can take (0 for
    classes it does not serve; 1 for one-per-node classes; never more than the class has, but at least 1 for a
    class of 0 pods, which a rounded plan may still need a column of)."""
    import numpy as np

    price = np.array([p for p, _, _ in bins], dtype=float)
    room = np.array([r for _, r, _ in bins], dtype=np.int64).reshape(len(bins), 3)
    served = np.zeros((len(bins), len(need)), dtype=bool)
    for b, (_, _, members) in enumerate(bins):
        served[b, list(members)] = True
    fits = np.where(
        demand[None, :, :] > 0,
        room[:, None, :] // np.maximum(demand[None, :, :], 1),
        np.iinfo(np.int64).max,
    ).min(axis=2)
    limit = np.where(one_per_node, 1, np.maximum(np.ceil(need - 1e-9), 1).astype(np.int64))
    return price, room, np.where(served, np.minimum(fits, limit[None, :]), 0)


def _solve_master(columns: _Columns, price: Any, need: Any, time_left: float) -> tuple[float, Any] | None:
    """The restricted master `min p . lambda s.t. A lambda >= n`: its optimum and duals (>= 0), or None."""
    import numpy as np
    from scipy.optimize import linprog

    if time_left <= 0:
        return None
    matrix = np.array(columns.counts, dtype=float).T
    result = linprog(
        price[np.array(columns.bins)],
        A_ub=-matrix,
        b_ub=-need,
        bounds=(0, None),
        method="highs",
        options={"time_limit": max(time_left, 0.01)},
    )
    if result.status != 0:
        return None
    return float(result.fun), np.maximum(-np.asarray(result.ineqlin.marginals, dtype=float), 0.0)


def _fractional_pricing_bounds(duals: Any, demand: Any, caps: Any, room: Any) -> Any:
    """Per bin, an upper bound on `max pi . a` over its columns: the least, over cpu, memory and pods, of the
    fractional knapsack on that dimension alone (items by value per unit, the last one cut)."""
    import numpy as np

    bound = (caps * duals[None, :]).sum(axis=1)
    for r in range(3):
        size = demand[:, r].astype(float)
        density = np.where(size > 0, duals / np.where(size > 0, size, 1.0), np.inf)
        order = np.argsort(-density, kind="stable")
        weight = caps[:, order] * size[order][None, :]
        value = caps[:, order] * duals[order][None, :]
        before = np.cumsum(weight, axis=1) - weight
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(weight > 0, (room[:, r][:, None] - before) / weight, 1.0)
        bound = np.minimum(bound, (np.clip(share, 0.0, 1.0) * value).sum(axis=1))
    return bound


def _keep_best(best: float, center: Any, need: Any, duals: Any, upper: Any, price: Any) -> tuple[float, Any]:
    """The better of the best Farley bound so far (with its duals) and the one of `duals`."""
    bound = _farley(need, duals, upper, price)
    return (bound, duals) if bound > best else (best, center)


def _farley(need: Any, duals: Any, upper: Any, price: Any) -> float:
    """Farley's bound: duals scaled down until no bin's columns (by their upper bounds) are worth more than
    the bin's price, which makes them a feasible dual of the full configuration LP."""
    theta = max(1.0, float((upper / price).max()))
    return float(need @ duals) / theta


def _greedy_column(duals: Any, demand: Any, cap: Any, room: Any) -> Any:
    """A good column for one bin, fast: classes by value per share of the bin's scarcest room, each as many
    as fit. A lower bound on the bin's pricing optimum."""
    import numpy as np

    column = np.zeros(len(duals), dtype=np.int64)
    share = (demand / np.maximum(room, 1)[None, :]).max(axis=1)
    left = room.copy()
    for k in np.argsort(-(duals / np.maximum(share, 1e-12)), kind="stable"):
        if cap[k] <= 0 or duals[k] <= 0:
            continue
        fit = min(int(cap[k]), *(int(left[r] // demand[k, r]) for r in range(3) if demand[k, r] > 0))
        if fit > 0:
            column[k] = fit
            left -= fit * demand[k]
    return column


def _price_bin(
    duals: Any, demand: Any, cap: Any, room: Any, time_limit: float, enumeration_limit: int
) -> tuple[float, Any, float]:
    """`max pi . a` over one bin's columns: (value of the best column found, that column, an upper bound on the
    optimum). Exact by enumeration when the feasible fillings are few, else a HiGHS MIP whose dual bound is
    the upper bound (equal to the value when it finished)."""
    import numpy as np

    worth = np.flatnonzero((cap > 0) & (duals > 0))
    column = np.zeros(len(duals), dtype=np.int64)
    if worth.size == 0:
        return 0.0, column, 0.0
    enumerated = _enumerate(duals[worth], demand[worth], cap[worth], room, enumeration_limit)
    if enumerated is not None:
        column[worth] = enumerated
        value = float(duals @ column)
        return value, column, value
    from scipy.optimize import Bounds, LinearConstraint, milp

    result = milp(
        -duals[worth],
        constraints=LinearConstraint(demand[worth].T.astype(float), -np.inf, room.astype(float)),
        integrality=np.ones(worth.size),
        bounds=Bounds(0, cap[worth].astype(float)),
        options={"time_limit": time_limit, "mip_rel_gap": _MIP_GAP},
    )
    if result.x is not None:
        found = np.round(result.x).astype(np.int64)
        if (found >= 0).all() and (found <= cap[worth]).all() and (demand[worth].T @ found <= room).all():
            column[worth] = found
    value = float(duals @ column)
    dual_bound = getattr(result, "mip_dual_bound", None)
    if dual_bound is None or not np.isfinite(dual_bound):
        return value, column, float("inf")
    return value, column, max(value, -float(dual_bound))


def _enumerate(values: Any, demand: Any, cap: Any, room: Any, limit: int) -> Any | None:
    """The best filling of a small bounded knapsack by listing every feasible one (None beyond `limit`)."""
    import numpy as np

    used = np.zeros((1, 3), dtype=np.int64)
    counts = np.zeros((1, 0), dtype=np.int64)
    for k in range(len(values)):
        takes = np.arange(int(cap[k]) + 1, dtype=np.int64)
        if len(used) * len(takes) > limit:
            return None
        grown = (used[:, None, :] + takes[None, :, None] * demand[k][None, None, :]).reshape(-1, 3)
        kept = (grown <= room[None, :]).all(axis=1)
        counts = np.concatenate(
            [np.repeat(counts, len(takes), axis=0), np.tile(takes, len(used))[:, None]], axis=1
        )[kept]
        used = grown[kept]
    return counts[int(np.argmax(counts @ values))]
