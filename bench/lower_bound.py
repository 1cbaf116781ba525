"""The fluid LP lower bound on the hourly cost of any placement (docs/reference/lp-bounds.md §2), via HiGHS.

Theory of operation, written independently of the engine: pods are compressed into classes (same requests,
same allowed offerings, same per-node constraint). A zone spread with maxSkew 1 is pre-split evenly over the
eligible zones (exact when the count divides). Zone self-affinity is relaxed away (any zone). Hostname
anti-affinity within a group becomes "at most 1 pod of the group per node"; hostname spreads become "at most
maxSkew per node" per group, and the groups of one workload are merged (a relaxation, so still a bound).
Effective bins are one per (instance type, set of class signatures an offering serves) at its cheapest price.

    min sum_b p_b y_b   s.t.   sum_b z_kb = 1                              (every class placed)
                               sum_k n_k d_kr z_kb <= C_br y_b             (every resource of every bin)
                               sum_{k in g} n_k z_kb <= cap_g y_b          (per-node group caps)
                               y, z >= 0

Any integer packing is a feasible point, so the optimum is a lower bound.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from bench.workloads import Workload
from longshore.core import labels as wk
from longshore.core.allocatable import allocatable
from longshore.core.model import Requirement, Settings
from longshore.core.requirements import Requirements

DIMS = ("cpu", "memory", "pods")


@dataclass(frozen=True)
class LowerBound:
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


def _undominated(
    bins: list[tuple[int, frozenset[int], float]], rooms: list[tuple[int, ...]]
) -> list[tuple[int, frozenset[int], float]]:
    """Drop bins another bin beats (serves a superset, has at least the room, costs no more): the LP optimum
    is unchanged, and the LP gets much smaller on real catalogs full of older, pricier equivalents."""
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


def cover_bound(workload: Workload) -> LowerBound:
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
    import time

    start = time.perf_counter()
    pool_reqs = Requirements.of(workload.pools[0].requirements)
    types = [it for it in workload.catalog if it.requirements().compatible(pool_reqs)]
    demand = [0.0, 0.0, 0.0]
    groups: dict[str, int] = defaultdict(int)
    for pod in workload.pods:
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
    scale = (1000.0, float(2**30), 1.0)
    rows = []
    prices = []
    for it in types:
        offers = [o.price for o in it.offerings if o.available and o.allowed_by(pool_reqs)]
        if not offers:
            continue
        alloc = allocatable(it, None, None, Settings())
        rows.append([-alloc.get(d) / scale[r] for r, d in enumerate(DIMS)] + [-1.0])
        prices.append(min(offers))
    a_ub = np.array(rows).T
    b_ub = np.array([-demand[r] / scale[r] for r in range(3)] + [-float(nodes_needed)])
    result = linprog(np.array(prices), A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"LP failed: {result.message}")
    return LowerBound(float(result.fun), 1, len(prices), time.perf_counter() - start)


@dataclass(frozen=True)
class ClassInstance:
    """The classes and effective bins of a workload (docs/reference/lp-bounds.md §1), shared by the fluid LP
    and the configuration LP (`bench/config_lp.py`). A class key is (demand, zones, capacity types, group);
    `counts` may be fractional (a zone spread split evenly), `whole` is one integer split of the same pods
    (maxSkew 1: the first zones in name order take the remainder), which a plan can actually use."""

    keys: list[tuple[tuple[int, ...], frozenset[str], frozenset[str], str]]
    counts: dict[tuple[tuple[int, ...], frozenset[str], frozenset[str], str], float]
    whole: dict[tuple[tuple[int, ...], frozenset[str], frozenset[str], str], int]
    groups: dict[str, int]
    bins: list[tuple[int, frozenset[int], float]]
    rooms: list[tuple[int, ...]]
    sig_index: dict[tuple[frozenset[str], frozenset[str]], int]


def class_instance(workload: Workload) -> ClassInstance:
    pool = workload.pools[0]
    pool_reqs = Requirements.of(pool.requirements)
    if wk.CAPACITY_TYPE not in pool_reqs:
        pool_reqs = pool_reqs.add(Requirement(wk.CAPACITY_TYPE, "In", ("on-demand",)))
    types = [it for it in workload.catalog if it.requirements().compatible(pool_reqs)]
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
    classes: dict[tuple[tuple[int, ...], frozenset[str], frozenset[str], str], float] = defaultdict(float)
    groups: dict[str, int] = {}
    hostname_spreads: set[str] = set()
    zone_spread: dict[tuple[str, tuple[int, ...], frozenset[str], frozenset[str], str], int] = defaultdict(
        int
    )
    for pod in workload.pods:
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
    whole: dict[tuple[tuple[int, ...], frozenset[str], frozenset[str], str], int] = defaultdict(int)
    for key, count in classes.items():
        whole[key] += int(count)
    for (_, demand, zone_set, ct_set, group), count in zone_spread.items():
        for i, zone in enumerate(sorted(zone_set)):
            classes[(demand, frozenset({zone}), ct_set, group)] += count / len(zone_set)
            extra = 1 if i < count % len(zone_set) else 0
            whole[(demand, frozenset({zone}), ct_set, group)] += count // len(zone_set) + extra
    keys = list(classes)
    signatures = sorted({(k[1], k[2]) for k in keys}, key=lambda s: (sorted(s[0]), sorted(s[1])))
    sig_index = {s: i for i, s in enumerate(signatures)}
    best: dict[tuple[int, frozenset[int]], float] = {}
    for t, zone, ct, price in offers:
        serves = frozenset(i for i, (zs, cs) in enumerate(signatures) if zone in zs and ct in cs)
        if serves:
            key = (t, serves)
            if price < best.get(key, np.inf):
                best[key] = price
    bins = _undominated([(t, serves, price) for (t, serves), price in best.items()], rooms)
    return ClassInstance(keys, dict(classes), dict(whole), groups, bins, rooms, sig_index)


def fluid_bound(workload: Workload) -> LowerBound:
    import time

    start = time.perf_counter()
    instance = class_instance(workload)
    keys, classes, groups, bins, rooms = (
        instance.keys,
        instance.counts,
        instance.groups,
        instance.bins,
        instance.rooms,
    )
    sig_index = instance.sig_index
    nb, nk = len(bins), len(keys)
    var_z = {}
    for k, key in enumerate(keys):
        demand = key[0]
        sig = sig_index[(key[1], key[2])]
        for b, (t, serves, _) in enumerate(bins):
            if sig in serves and all(demand[r] <= rooms[t][r] for r in range(3)):
                var_z[(k, b)] = nb + len(var_z)
    nvar = nb + len(var_z)
    cost = np.zeros(nvar)
    cost[:nb] = [p for _, _, p in bins]
    eq_rows, eq_cols, eq_vals = [], [], []
    for (k, _b), v in var_z.items():
        eq_rows.append(k)
        eq_cols.append(v)
        eq_vals.append(1.0)
    group_names = sorted(groups)
    rows, cols, vals = [], [], []
    per_bin = 3 + len(group_names)
    scale = (1000.0, float(2**30), 1.0)
    for b, (t, _, _) in enumerate(bins):
        for r in range(3):
            rows.append(b * per_bin + r)
            cols.append(b)
            vals.append(-rooms[t][r] / scale[r])
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
                vals.append(n * key[0][r] / scale[r])
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
    return LowerBound(float(result.fun), nk, nb, time.perf_counter() - start)
