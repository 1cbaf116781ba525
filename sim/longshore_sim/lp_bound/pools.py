"""The benchmark's bounds (`docs/reference/lp-bounds.md` §1–4), for pods on one NodePool's requirements and a
catalog, via HiGHS. `bench/lower_bound.py` adapts a bench `Workload` to these functions; the simulation's
bounds (`simulation`) build their classes from pool templates instead, and both share the column generation
(`colgen`).

Theory of operation, written independently of the engine: pods are compressed into classes (same requests,
same allowed offerings, same per-node constraint). A zone spread with maxSkew 1 puts at least
floor(count / zones) pods in every eligible zone: that many become a class pinned to each zone, and the
remainder a class allowed in any of them (a relaxation: the remainder's pods may then share a zone). An even
fractional split would not be a bound when zones differ in price (two pods over three zones, one of them dear:
the optimum leaves the dear zone empty, the even split pays 2/3 of a pod there). Zone self-affinity is relaxed away (any zone). Hostname
anti-affinity within a group becomes "at most 1 pod of the group per node"; hostname spreads become "at most
maxSkew per node" per group, and the groups of one workload are merged (a relaxation, so still a bound).
Effective bins are one per (instance type, set of class signatures an offering serves) at its cheapest price.

    min sum_b p_b y_b   s.t.   sum_b z_kb = 1                              (every class placed)
                               sum_k n_k d_kr z_kb <= C_br y_b             (every resource of every bin)
                               sum_{k in g} n_k z_kb <= cap_g y_b          (per-node group caps)
                               y, z >= 0

Any integer packing is a feasible point, so the optimum is a lower bound.

The configuration-LP bound and a rounded integer plan (`configuration_plan`, §3–4), so each gap splits into
integrality and the engine: the classes and bins are the fluid bound's; column generation is `colgen`'s
(greedy then exact knapsack pricing, Farley's bound valid at every iteration, stopped after `time_limit`
seconds). The bound reported is the best Farley bound; `converged` says whether it is the LP optimum.
The rounded plan is the better of a MIP over the generated columns (HiGHS, `round_limit` seconds) and the
master LP over them with every count rounded up, both covering the integer split of every class
(`ClassInstance.whole`: a zone spread's remainder goes to the first zones): every column is one node whose
pods fit, with at most one anti-affine pod of a class, on an offering that serves its classes, so the MIP's
solution is a feasible placement. bound ≤ OPT ≤ round: round ÷ bound is at least the integrality gap of the
instance, and ours ÷ round is what the engine loses to a plan we know exists. Workloads with hostname spreads
(the Karpenter mix) are not run: their merged per-node cap is not a per-class one.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from longshore.core import labels as wk
from longshore.core.allocatable import allocatable
from longshore.core.catalog import InstanceType
from longshore.core.model import NodePool, Requirement, Settings
from longshore.core.pods import Pod
from longshore.core.requirements import Requirements
from longshore_sim.lp_bound.colgen import Bin, generate_columns

DIMS = ("cpu", "memory", "pods")
_SCALE = (1000.0, float(2**30), 1.0)

ClassKey = tuple[tuple[int, ...], frozenset[str], frozenset[str], str]  # demand, zones, capacity types, group
_TypeBin = tuple[int, frozenset[int], float]  # type index, signatures served, price


@dataclass(frozen=True)
class TimedBound:
    cost: float
    classes: int
    bins: int
    seconds: float


def _requirements(
    pod_selector: tuple[tuple[str, str], ...], terms: tuple[tuple[Requirement, ...], ...]
) -> Requirements:
    written = [Requirement(k, "In", (v,)) for k, v in pod_selector]
    if terms:
        written += list(terms[0])
    return Requirements.of(written)


def _undominated(bins: list[_TypeBin], rooms: list[tuple[int, ...]]) -> list[_TypeBin]:
    """Drop bins another bin beats (serves a superset, has at least the room, costs no more): the LP optimum
    is unchanged, and the LP gets much smaller on real catalogs full of older, pricier equivalents."""
    import numpy as np

    if not bins:
        return bins
    masks = np.array([sum(1 << i for i in serves) for _, serves, _ in bins], dtype=np.int64)
    room = np.array([rooms[t] for t, _, _ in bins], dtype=np.float64)
    price = np.array([p for _, _, p in bins])
    keep = []
    for b in range(len(bins)):
        covers = (masks & masks[b]) == masks[b]
        bigger = np.all(room >= room[b], axis=1)
        cheaper = price <= price[b]
        strictly = (
            (price < price[b])
            | np.any(room > room[b], axis=1)
            | (masks != masks[b])
            | (np.arange(len(bins)) < b)
        )
        rivals = covers & bigger & cheaper & strictly
        rivals[b] = False
        if not rivals.any():
            keep.append(bins[b])
    return keep


def cover_bound(pods: Sequence[Pod], pool: NodePool, catalog: Iterable[InstanceType]) -> TimedBound:
    """A cheap bound for workloads with many per-node caps (the Karpenter mix):

        min sum_t p_t y_t   s.t.   sum_t A_t y_t >= D   (cpu, memory, pods)
                                   sum_t y_t     >= N   (nodes),   y >= 0

    with p_t the type's cheapest offering the pool allows, A_t its allocatable, D the pods' total requests
    and N the largest group that needs one node per pod (mutual hostname anti-affinity, or a hostname spread
    with maxSkew 1, which Karpenter evaluates with an empty new node as the minimum domain).

    Why it is a lower bound: take any feasible plan and let y_t be its number of new nodes of type t. Every
    node holds its pods within its allocatable (no DaemonSets here), so summing over nodes gives
    sum_t A_t y_t >= D; the N pods of the group sit on N different nodes, so sum_t y_t >= N; and each node
    costs at least p_t. So the plan's integer y is feasible for the LP and costs at least the LP optimum.
    It relaxes the class LP (`fluid_bound`) by merging classes and ignoring zones; on this catalog (every
    offering of a type has the same price and every zone has on-demand) zones cost nothing, and at 100 pods
    both bounds agree to the cent (24.504 $/h), so it is not looser where the class LP is still solvable."""
    import numpy as np
    from scipy.optimize import linprog

    start = time.perf_counter()
    pool_reqs = Requirements.of(pool.requirements)
    types = [it for it in catalog if it.requirements().compatible(pool_reqs)]
    demand = [0.0, 0.0, 0.0]
    groups: dict[str, int] = defaultdict(int)
    for pod in pods:
        demand[0] += pod.requests.get("cpu")
        demand[1] += pod.requests.get("memory")
        demand[2] += 1
        labels = dict(pod.labels)
        for term in pod.pod_anti_affinity:
            if term.topology_key == wk.HOSTNAME and term.selector.matches(labels):
                groups["anti:" + term.selector.describe()] += 1
        for spread in pod.topology_spread:
            if spread.topology_key == wk.HOSTNAME and spread.selector.matches(labels):
                groups["hs:" + spread.selector.describe()] += 1  # maxSkew 1 in the benchmark
    nodes_needed = max(groups.values(), default=0)
    rows = []
    prices = []
    for it in types:
        offers = [o.price for o in it.offerings if o.available and o.allowed_by(pool_reqs)]
        if not offers:
            continue
        alloc = allocatable(it, None, None, Settings())
        rows.append([-alloc.get(d) / _SCALE[r] for r, d in enumerate(DIMS)] + [-1.0])
        prices.append(min(offers))
    a_ub = np.array(rows).T
    b_ub = np.array([-demand[r] / _SCALE[r] for r in range(3)] + [-float(nodes_needed)])
    result = linprog(np.array(prices), A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"LP failed: {result.message}")
    return TimedBound(float(result.fun), 1, len(prices), time.perf_counter() - start)


@dataclass(frozen=True)
class ClassInstance:
    """The classes and effective bins of a set of pods on one pool (docs/reference/lp-bounds.md §1), shared by
    the fluid LP and the configuration LP. A class key is (demand, zones, capacity types, group); `counts` is
    what the bounds cover (a zone spread's floor per zone plus its remainder over all its zones), `whole` is one integer split of the same pods (maxSkew 1: the
    first zones in name order take the remainder), which a plan can actually use; a class only the bound
    has (a zone spread's remainder over all its zones) has 0 there."""

    keys: list[ClassKey]
    counts: dict[ClassKey, float]
    whole: dict[ClassKey, int]
    groups: dict[str, int]
    bins: list[_TypeBin]
    rooms: list[tuple[int, ...]]
    sig_index: dict[tuple[frozenset[str], frozenset[str]], int]


def class_instance(pods: Sequence[Pod], pool: NodePool, catalog: Iterable[InstanceType]) -> ClassInstance:
    pool_reqs = Requirements.of(pool.requirements)
    if wk.CAPACITY_TYPE not in pool_reqs:
        pool_reqs = pool_reqs.add(Requirement(wk.CAPACITY_TYPE, "In", ("on-demand",)))
    types = [it for it in catalog if it.requirements().compatible(pool_reqs)]
    rooms = []
    offers = []  # (type index, zone, ct, price)
    for t, it in enumerate(types):
        alloc = allocatable(it, None, None, Settings())
        rooms.append(tuple(alloc.get(d) for d in DIMS))
        for o in it.offerings:
            if o.available and o.allowed_by(pool_reqs):
                offers.append((t, o.zone, o.capacity_type, o.price))
    zones = sorted({o[1] for o in offers})
    # classes: (demand, signature(zone set, ct set), group) -> count
    classes: dict[ClassKey, float] = defaultdict(float)
    groups: dict[str, int] = {}
    hostname_spreads: set[str] = set()
    zone_spread: dict[tuple[str, tuple[int, ...], frozenset[str], frozenset[str], str], int] = defaultdict(
        int
    )
    for pod in pods:
        labels = dict(pod.labels)
        reqs = pool_reqs.intersect(_requirements(pod.node_selector, pod.required_node_terms))
        demand = (pod.requests.get("cpu"), pod.requests.get("memory"), 1)
        zone_set = frozenset(z for z in zones if reqs.allows(wk.ZONE, z))
        ct_set = frozenset(c for c in ("spot", "on-demand") if reqs.allows(wk.CAPACITY_TYPE, c))
        group = ""
        for spread in pod.topology_spread:
            if spread.topology_key == wk.HOSTNAME and spread.selector.matches(labels):
                group = "hostname-spread"
                hostname_spreads.add(spread.selector.describe())
        for term in pod.pod_anti_affinity:
            if term.topology_key == wk.HOSTNAME and term.selector.matches(labels):
                group = "anti:" + term.selector.describe()
                groups[group] = 1
        zonal = next((sp for sp in pod.topology_spread if sp.topology_key == wk.ZONE), None)
        if zonal is not None:
            zone_spread[(zonal.selector.describe(), demand, zone_set, ct_set, group)] += 1
        else:
            classes[(demand, zone_set, ct_set, group)] += 1
    if hostname_spreads:
        groups["hostname-spread"] = len(hostname_spreads)  # one per selector per node; merged (a relaxation)
    whole: dict[ClassKey, int] = defaultdict(int)
    for key, count in classes.items():
        whole[key] += int(count)
    for (_, spread_demand, zone_set, ct_set, group), count in zone_spread.items():
        for i, zone in enumerate(sorted(zone_set)):
            # every zone holds at least the floor of an even share (a class of 0 pods keeps the plan's key)
            classes[(spread_demand, frozenset({zone}), ct_set, group)] += count // len(zone_set)
            extra = 1 if i < count % len(zone_set) else 0
            whole[(spread_demand, frozenset({zone}), ct_set, group)] += count // len(zone_set) + extra
        if count % len(zone_set):  # the remainder may go to any of the zones (relaxed: maybe the same one)
            classes[(spread_demand, zone_set, ct_set, group)] += count % len(zone_set)
            whole.setdefault((spread_demand, zone_set, ct_set, group), 0)
    keys = list(classes)
    signatures = sorted({(k[1], k[2]) for k in keys}, key=lambda s: (sorted(s[0]), sorted(s[1])))
    sig_index = {s: i for i, s in enumerate(signatures)}
    best: dict[tuple[int, frozenset[int]], float] = {}
    for t, zone, ct, price in offers:
        serves = frozenset(i for i, (zs, cs) in enumerate(signatures) if zone in zs and ct in cs)
        if serves:
            bin_key = (t, serves)
            if price < best.get(bin_key, float("inf")):
                best[bin_key] = price
    bins = _undominated([(t, serves, price) for (t, serves), price in best.items()], rooms)
    return ClassInstance(keys, dict(classes), dict(whole), groups, bins, rooms, sig_index)


def fluid_bound(pods: Sequence[Pod], pool: NodePool, catalog: Iterable[InstanceType]) -> TimedBound:
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    start = time.perf_counter()
    instance = class_instance(pods, pool, catalog)
    keys, classes, groups, bins, rooms = (
        instance.keys,
        instance.counts,
        instance.groups,
        instance.bins,
        instance.rooms,
    )
    sig_index = instance.sig_index
    nb, nk = len(bins), len(keys)
    var_z: dict[tuple[int, int], int] = {}
    for k, key in enumerate(keys):
        demand = key[0]
        sig = sig_index[(key[1], key[2])]
        for b, (t, serves, _) in enumerate(bins):
            if sig in serves and all(demand[r] <= rooms[t][r] for r in range(3)):
                var_z[(k, b)] = nb + len(var_z)
    nvar = nb + len(var_z)
    cost = np.zeros(nvar)
    cost[:nb] = [p for _, _, p in bins]
    eq_rows: list[int] = []
    eq_cols: list[int] = []
    eq_vals: list[float] = []
    for (k, _b), v in var_z.items():
        eq_rows.append(k)
        eq_cols.append(v)
        eq_vals.append(1.0)
    group_names = sorted(groups)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    per_bin = 3 + len(group_names)
    for b, (t, _, _) in enumerate(bins):
        for r in range(3):
            rows.append(b * per_bin + r)
            cols.append(b)
            vals.append(-rooms[t][r] / _SCALE[r])
        for g, name in enumerate(group_names):
            rows.append(b * per_bin + 3 + g)
            cols.append(b)
            vals.append(-float(groups[name]))
    for (k, b), v in var_z.items():
        key = keys[k]
        n = float(classes[key])
        for r in range(3):
            if key[0][r]:
                rows.append(b * per_bin + r)
                cols.append(v)
                vals.append(n * key[0][r] / _SCALE[r])
        if key[3]:
            rows.append(b * per_bin + 3 + group_names.index(key[3]))
            cols.append(v)
            vals.append(n)
    a_ub = coo_matrix((vals, (rows, cols)), shape=(nb * per_bin, nvar)).tocsr()
    a_eq = coo_matrix((eq_vals, (eq_rows, eq_cols)), shape=(nk, nvar)).tocsr()
    result = linprog(
        cost,
        A_ub=a_ub,
        b_ub=np.zeros(nb * per_bin),
        A_eq=a_eq,
        b_eq=np.ones(nk),
        bounds=(0, None),
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"LP failed: {result.message}")
    return TimedBound(float(result.fun), nk, nb, time.perf_counter() - start)


@dataclass(frozen=True)
class ConfigResult:
    bound: float  # the configuration-LP bound (Farley; the LP optimum when converged)
    converged: bool
    master: float  # the last restricted master's optimum: at least the LP optimum (not a bound on plans)
    iterations: int
    columns: int
    rounded: float  # the cost of the integer plan over the generated columns
    rounded_nodes: int
    seconds: float


def configuration_plan(
    pods: Sequence[Pod],
    pool: NodePool,
    catalog: Iterable[InstanceType],
    time_limit: float = 20.0,
    round_limit: float = 20.0,
) -> ConfigResult:
    """The configuration-LP bound and a rounded integer plan over its columns (module docstring)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    started = time.perf_counter()
    instance = class_instance(pods, pool, catalog)
    keys = instance.keys
    if any(key[3] == "hostname-spread" for key in keys):
        raise ValueError(
            "hostname spreads are merged across classes; the per-class columns would not bound them"
        )
    bins: list[Bin] = []
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
        master=bound.master_per_hour,
        iterations=bound.iterations,
        columns=bound.columns,
        rounded=float(prices @ chosen),
        rounded_nodes=int(chosen.sum()),
        seconds=time.perf_counter() - started,
    )


def _rounded_up(matrix: Any, prices: Any, need: Any) -> Any:
    """The master LP over the columns, every column count rounded up: a feasible plan (it covers `need`),
    the fallback when the MIP finds nothing better in its time."""
    import numpy as np
    from scipy.optimize import linprog

    result = linprog(prices, A_ub=-matrix, b_ub=-need, bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"no rounded plan: {result.message}")
    return np.ceil(np.asarray(result.x) - 1e-9)
