"""Lower bounds on the hourly cost of running a set of pods (`docs/reference/lp-bounds.md`), via HiGHS.

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

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from longshore.core.catalog import Catalog
from longshore.core.model import ClusterConfig, Taint
from longshore.core.pods import Pod
from longshore.core.requirements import RequirementError, Requirements
from longshore.core.scheduling.podreqs import node_requirement_terms
from longshore.core.scheduling.templates import build_templates
from longshore.core.taints import tolerates

DIMENSIONS = ("cpu", "memory", "pods")
_SCALE = (1000.0, float(2**30), 1.0)


@dataclass(frozen=True, slots=True)
class LowerBound:
    cost_per_hour: float
    classes: int
    bins: int
    unplaceable: tuple[str, ...] = ()  # pod keys no bin can hold (left out of the bound)


@dataclass(frozen=True, slots=True)
class _Class:
    example: Pod
    count: int
    demand: tuple[int, int, int]
    one_per_node: bool


def _self_anti_affine(pod: Pod) -> bool:
    labels = pod.label_map()
    return any(
        t.topology_key == "kubernetes.io/hostname"
        and t.covers_namespace(pod.namespace, pod.namespace)
        and t.selector.matches(labels)
        for t in pod.pod_anti_affinity
    )


def _classes(pods: Iterable[Pod]) -> list[_Class]:
    """Pods that are interchangeable for the bounds. A self-anti-affine class ("one per node") holds only
    pods with the same namespace, labels and terms, so each one's term repels all the others; anti-affinity
    between different classes, pod affinity and topology spread are left out (a relaxation: still a bound)."""
    groups: dict[tuple[object, ...], list[Pod]] = defaultdict(list)
    for pod in pods:
        apart = _self_anti_affine(pod)
        key = (
            pod.requests,
            pod.node_selector,
            pod.required_node_terms,
            pod.tolerations,
            (pod.namespace, pod.labels, pod.pod_anti_affinity) if apart else None,
        )
        groups[key].append(pod)
    result = []
    for members in groups.values():
        example = members[0]
        demand = (example.requests.get("cpu"), example.requests.get("memory"), 1)
        result.append(_Class(example, len(members), demand, _self_anti_affine(example)))
    return result


def _serves(cls: _Class, template_taints: tuple[Taint, ...], requirements: Requirements) -> bool:
    if not tolerates(cls.example.tolerations, template_taints, ignore_prefer_no_schedule=True):
        return False
    try:
        terms = node_requirement_terms(cls.example)
    except RequirementError:
        return False
    return any(requirements.compatible(term) for term in terms)


_Bin = tuple[float, tuple[int, int, int], frozenset[int]]  # price, room, indices of the classes served


@dataclass(frozen=True, slots=True)
class _Instance:
    classes: list[_Class]
    bins: list[_Bin]
    placeable: list[int]
    unplaceable: tuple[str, ...]


def _instance(
    pods: Sequence[Pod], config: ClusterConfig, catalog: Catalog, daemonsets: Sequence[Pod]
) -> _Instance:
    """The classes of `pods` and the bins of the config's (non-static) pools, shared by both bounds."""
    classes = _classes(p for p in pods if not p.is_daemonset and not p.is_mirror)
    if not classes:
        return _Instance([], [], [], ())
    templates = build_templates(
        tuple(p for p in config.node_pools if p.replicas is None),
        config.node_classes,
        catalog,
        tuple(daemonsets),
        config.settings,
    )
    bins: list[_Bin] = []
    for template in templates:
        for option in template.options:
            room = tuple(option.room.get(d) for d in DIMENSIONS)
            type_reqs = template.requirements.intersect(option.instance_type.requirements())
            cheapest: dict[frozenset[int], float] = {}
            for offering in option.offerings:
                offer_reqs = type_reqs.intersect(
                    Requirements.from_labels(
                        {
                            "topology.kubernetes.io/zone": offering.zone,
                            "karpenter.sh/capacity-type": offering.capacity_type,
                        }
                    )
                )
                served = frozenset(
                    k
                    for k, cls in enumerate(classes)
                    if all(cls.demand[r] <= room[r] for r in range(3))
                    and _serves(cls, template.taints, offer_reqs)
                )
                if served and offering.price < cheapest.get(served, float("inf")):
                    cheapest[served] = offering.price
            for served, price in cheapest.items():
                bins.append((price, (room[0], room[1], room[2]), served))
    bins = _undominated(bins)
    placeable = [k for k in range(len(classes)) if any(k in served for _, _, served in bins)]
    unplaceable = tuple(classes[k].example.key for k in range(len(classes)) if k not in placeable)
    return _Instance(classes, bins, placeable, unplaceable)


def fluid_lower_bound(
    pods: Sequence[Pod], config: ClusterConfig, catalog: Catalog, daemonsets: Sequence[Pod] = ()
) -> LowerBound:
    """The fluid LP bound for `pods` on the config's (non-static) pools; 0 for no pods."""
    return _fluid(_instance(pods, config, catalog, daemonsets))


def _fluid(instance: _Instance) -> LowerBound:
    if not instance.placeable:
        return LowerBound(0.0, len(instance.classes), len(instance.bins), instance.unplaceable)
    return _solve(instance.classes, instance.placeable, instance.bins, instance.unplaceable)


def _solve(
    classes: list[_Class],
    placeable: list[int],
    bins: list[_Bin],
    unplaceable: tuple[str, ...],
) -> LowerBound:
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    nb = len(bins)
    z_index: dict[tuple[int, int], int] = {}
    for k in placeable:
        for b, (_, _, served) in enumerate(bins):
            if k in served:
                z_index[(k, b)] = nb + len(z_index)
    nvar = nb + len(z_index)
    cost = np.zeros(nvar)
    cost[:nb] = [price for price, _, _ in bins]
    position = {k: i for i, k in enumerate(placeable)}
    eq_rows: list[int] = []
    eq_cols: list[int] = []
    for (k, _), v in z_index.items():
        eq_rows.append(position[k])
        eq_cols.append(v)
    a_eq = coo_matrix(([1.0] * len(eq_rows), (eq_rows, eq_cols)), shape=(len(placeable), nvar))
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    by_bin: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (k, b), v in z_index.items():
        by_bin[b].append((k, v))
    row = 0
    for b, (_, room, _) in enumerate(bins):
        for r in range(3):
            rows.append(row + r)
            cols.append(b)
            vals.append(-room[r] / _SCALE[r])
        for k, v in by_bin[b]:
            cls = classes[k]
            for r in range(3):
                if cls.demand[r]:
                    rows.append(row + r)
                    cols.append(v)
                    vals.append(cls.count * cls.demand[r] / _SCALE[r])
        row += 3
    for (k, b), v in z_index.items():
        if classes[k].one_per_node:
            rows.extend((row, row))
            cols.extend((v, b))
            vals.extend((float(classes[k].count), -1.0))
            row += 1
    a_ub = coo_matrix((vals, (rows, cols)), shape=(row, nvar))
    result = linprog(
        cost,
        A_ub=a_ub,
        b_ub=np.zeros(row),
        A_eq=a_eq,
        b_eq=np.ones(len(placeable)),
        bounds=(0, None),
        method="highs",
    )
    if not result.success:
        raise RuntimeError(f"the fluid LP did not solve: {result.message}")
    return LowerBound(float(result.fun), len(classes), nb, unplaceable)


# -- the configuration LP (column generation) ---------------------------------------------------------------------

DEFAULT_TIME_LIMIT = 2.0  # seconds of wall time for column generation, after the fluid LP
DEFAULT_MAX_ITERATIONS = 200
ENUMERATION_LIMIT = 50_000  # partial knapsack fillings enumerated before handing a bin to the MIP solver
KNAPSACK_TIME_LIMIT = 0.25  # seconds for one knapsack MIP
PRICING_BATCH = 8  # improving columns found by exact pricing before the master is solved again
_IMPROVES = 1e-9  # relative: a column improves when pi . a > p_b (1 + _IMPROVES)


@dataclass(frozen=True, slots=True)
class ConfigurationBound:
    """The configuration-LP bound and how column generation got there."""

    cost_per_hour: float  # a valid lower bound: the best Farley bound seen (the LP optimum when converged)
    master_per_hour: float  # the last restricted master's optimum: the LP optimum or above it, NOT a bound
    converged: bool  # exact pricing found no improving column, so cost_per_hour is the LP optimum
    stopped: (
        str  # "converged", "time", "iterations", "stalled" (pricing inexact or numerically stuck), "no pods"
    )
    iterations: int
    columns: int
    bins: int  # bins left after dropping dominated ones
    seconds: float


@dataclass(frozen=True, slots=True)
class BoundReport:
    """Both lower bounds of one set of pods; `best_per_hour` is the one to compare costs against."""

    fluid: LowerBound
    configuration: ConfigurationBound

    @property
    def best(self) -> str:
        """Which bound is tighter: "configuration" or "fluid" (ties go to the fluid one)."""
        return "configuration" if self.configuration.cost_per_hour > self.fluid.cost_per_hour else "fluid"

    @property
    def best_per_hour(self) -> float:
        return max(self.fluid.cost_per_hour, self.configuration.cost_per_hour)


def lower_bounds(
    pods: Sequence[Pod],
    config: ClusterConfig,
    catalog: Catalog,
    daemonsets: Sequence[Pod] = (),
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    enumeration_limit: int = ENUMERATION_LIMIT,
) -> BoundReport:
    """The fluid and configuration-LP bounds for `pods`; column generation stops after `time_limit` seconds."""
    import time

    instance = _instance(pods, config, catalog, daemonsets)
    fluid = _fluid(instance)
    started = time.perf_counter()
    classes = [instance.classes[k] for k in instance.placeable]
    local = {k: i for i, k in enumerate(instance.placeable)}
    bins = [
        (price, room, frozenset(local[k] for k in served if k in local))
        for price, room, served in instance.bins
    ]
    configuration = configuration_bound(
        [c.count for c in classes],
        [c.demand for c in classes],
        [c.one_per_node for c in classes],
        bins,
        deadline=started + time_limit,
        max_iterations=max_iterations,
        enumeration_limit=enumeration_limit,
    )
    return BoundReport(fluid, configuration)


def configuration_bound(
    counts: Sequence[int],
    demands: Sequence[tuple[int, int, int]],
    one_per_node: Sequence[bool],
    bins: Sequence[_Bin],
    *,
    deadline: float,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    enumeration_limit: int = ENUMERATION_LIMIT,
) -> ConfigurationBound:
    """The configuration-LP bound by column generation (module docstring) for classes given as plain numbers:
    `counts[k]` pods of class k, each needing `demands[k]` (millicores, bytes, pod slots), at most one per node
    when `one_per_node[k]`; bins as (price, room, classes served). Every class must be served by some bin.
    Stops at `deadline` (a `time.perf_counter()` instant) or after `max_iterations` master solves."""
    return generate_columns(
        counts,
        demands,
        one_per_node,
        bins,
        deadline=deadline,
        max_iterations=max_iterations,
        enumeration_limit=enumeration_limit,
    )[0]


@dataclass(frozen=True, slots=True)
class GeneratedColumns:
    """The columns column generation found: `bins[i]` indexes `prices` (the undominated bins, in order) and
    `counts[i]` is the pods per class of one node; a MIP over them gives an integer plan (bench/config_lp.py)."""

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
    """`configuration_bound`, also returning the columns it generated. Counts may be fractional (an even
    zone split): the per-node caps then use their ceiling."""
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
    columns = _Columns(len(counts))
    for k in range(len(counts)):  # the cheapest homogeneous node of every class: the master is feasible
        per_pod = np.where(caps[:, k] > 0, price / np.maximum(caps[:, k], 1), np.inf)
        for b in np.argsort(per_pod, kind="stable")[:3]:
            if caps[b, k] > 0:
                column = np.zeros(len(counts), dtype=np.int64)
                column[k] = caps[b, k]
                columns.add(int(b), column)
    best = 0.0
    master = 0.0
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
        upper = _fractional_pricing_bounds(duals, demand, caps, room)
        best = max(best, _farley(need, duals, upper, price))
        open_bins = np.flatnonzero(upper > price * (1 + _IMPROVES))
        if open_bins.size == 0:  # no bin can hold a column worth more than its price, even fractionally
            stopped = "converged"
            break
        added = 0
        for b in open_bins:
            column = _greedy_column(duals, demand, caps[b], room[b])
            if float(duals @ column) > price[b] * (1 + _IMPROVES) and columns.add(int(b), column):
                added += 1
        if added:
            continue
        exact = True
        for b in open_bins[np.argsort(-(upper[open_bins] / price[open_bins]), kind="stable")]:
            remaining = deadline - time.perf_counter()
            if remaining <= 0.005:
                exact = False
                break
            value, column, bound = _price_bin(
                duals, demand, caps[b], room[b], min(KNAPSACK_TIME_LIMIT, remaining), enumeration_limit
            )
            upper[b] = min(upper[b], bound)
            exact = exact and bound <= value * (1 + _IMPROVES)
            if value > price[b] * (1 + _IMPROVES) and columns.add(int(b), column):
                added += 1
                if added >= PRICING_BATCH:  # enough for the next master; the rest keep their cheap bound
                    break
        best = max(best, _farley(need, duals, upper, price))
        if not added:
            if bool((upper <= price * (1 + _IMPROVES)).all()):
                stopped = "converged"
            else:
                stopped = "time" if not exact and time.perf_counter() >= deadline - 0.005 else "stalled"
            break
    outcome = ConfigurationBound(
        cost_per_hour=best,
        master_per_hour=master,
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
    classes it does not serve; 1 for one-per-node classes; never more than the class has)."""
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
    limit = np.where(one_per_node, 1, np.ceil(need - 1e-9).astype(np.int64))
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
        options={"time_limit": time_limit, "mip_rel_gap": 1e-9},
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
