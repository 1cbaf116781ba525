"""Column generation for the configuration LP (`longshore_sim.lp_bound.colgen`, `relaxation`): the pricing
bounds are upper bounds, the bound claimed at every iteration is at most the LP optimum (computed here by
listing every column), a small case converges to it, and the benchmark's bound never exceeds the exact
integer optimum (`bench/exact.py`)."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from scipy.optimize import linprog

from longshore_sim.lp_bound import generate_columns
from longshore_sim.lp_bound.colgen import _bin_arrays, _fractional_pricing_bounds
from longshore_sim.lp_bound.relaxation import KnapsackRelaxation
from tests.builders import catalog, instance_type, pool, replicas, zone_spread

GIB = 2**30
DEMANDS = [(1500, 2 * GIB, 1), (500, 3 * GIB, 1), (1000, GIB, 1), (250, GIB // 2, 1), (2000, 6 * GIB, 1)]
COUNTS = [7, 5, 9, 11, 3]
ONE_PER_NODE = [True, False, False, False, False]
BINS = [
    (0.17, (3900, 7 * GIB, 20), frozenset({0, 1, 2, 3})),
    (0.10, (1900, 3 * GIB, 10), frozenset({0, 2, 3})),
    (0.26, (3900, 15 * GIB, 30), frozenset({0, 1, 2, 3, 4})),
    (0.31, (7800, 14 * GIB, 30), frozenset({1, 2, 3, 4})),
]


def _columns_of(room: tuple[int, int, int], caps: np.ndarray) -> list[np.ndarray]:
    """Every filling of one bin (brute force)."""
    demand = np.array(DEMANDS, dtype=np.int64)
    found = []
    for counts in itertools.product(*(range(int(c) + 1) for c in caps)):
        column = np.array(counts, dtype=np.int64)
        if column.any() and (demand.T @ column <= np.array(room)).all():
            found.append(column)
    return found


def _lp_optimum() -> float:
    """The configuration LP over every column of every bin: what column generation must converge to."""
    need = np.array(COUNTS, dtype=float)
    price, room, caps = _bin_arrays(
        need, np.array(DEMANDS, dtype=np.int64), np.array(ONE_PER_NODE), list(BINS)
    )
    costs, matrix = [], []
    for b in range(len(price)):
        for column in _columns_of(tuple(int(r) for r in room[b]), caps[b]):
            costs.append(price[b])
            matrix.append(column)
    result = linprog(
        costs, A_ub=-np.array(matrix, dtype=float).T, b_ub=-need, bounds=(0, None), method="highs"
    )
    assert result.status == 0
    return float(result.fun)


def _run(**options: int) -> tuple[float, bool, int]:
    found, _ = generate_columns(
        COUNTS, DEMANDS, ONE_PER_NODE, BINS, deadline=time.perf_counter() + 60, **options
    )
    return found.cost_per_hour, found.converged, found.iterations


def test_a_small_case_converges_to_the_lp_over_every_column() -> None:
    optimum = _lp_optimum()
    bound, converged, iterations = _run()
    assert converged and iterations > 1
    assert bound == pytest.approx(optimum, rel=1e-5)
    assert bound <= optimum * (1 + 1e-9)


@pytest.mark.parametrize("stop_after", [1, 2, 3, 5, 8])
def test_the_bound_is_valid_at_every_iteration(stop_after: int) -> None:
    """Cut short after any number of masters, the Farley bound is still at most the LP optimum."""
    bound, _, _ = _run(max_iterations=stop_after)
    assert 0.0 <= bound <= _lp_optimum() * (1 + 1e-9)


def test_mip_pricing_gives_the_same_bound_as_enumeration() -> None:
    enumerated, _, _ = _run()
    by_mip, converged, _ = _run(enumeration_limit=0)
    assert converged and by_mip == pytest.approx(enumerated, rel=1e-5)


@pytest.mark.parametrize("seed", range(6))
def test_the_relaxation_bounds_every_bins_knapsack_and_is_its_lp(seed: int) -> None:
    """Per bin, the relaxation's bound is at least the best filling (brute force), equals the knapsack's LP
    relaxation (solved directly), and is at most the per-dimension fractional bound."""
    rng = np.random.default_rng(seed)
    duals = rng.uniform(0.0, 0.08, len(DEMANDS))
    duals[rng.integers(len(DEMANDS))] = 0.0
    demand = np.array(DEMANDS, dtype=np.int64)
    price, room, caps = _bin_arrays(np.array(COUNTS, dtype=float), demand, np.array(ONE_PER_NODE), BINS)
    bounds = KnapsackRelaxation(demand, caps, room).bounds(duals)
    fractional = _fractional_pricing_bounds(duals, demand, caps, room)
    for b in range(len(price)):
        best = max(
            (float(duals @ c) for c in _columns_of(tuple(int(r) for r in room[b]), caps[b])), default=0.0
        )
        lp = linprog(
            -duals,
            A_ub=demand.T.astype(float),
            b_ub=room[b].astype(float),
            bounds=list(zip([0] * len(duals), caps[b].astype(float), strict=True)),
            method="highs",
        )
        assert best <= bounds[b] * (1 + 1e-12)
        assert bounds[b] == pytest.approx(-lp.fun, rel=1e-6, abs=1e-12)
        assert bounds[b] <= fractional[b] * (1 + 1e-6) + 1e-12


def test_a_zone_spread_split_is_a_bound_when_zones_differ_in_price() -> None:
    """Two pods spread over three zones, one of them dear: the optimum (one cheap node in each cheap zone,
    0.2 $/h) leaves the dear zone empty, so the bounds must not charge 2/3 of a pod there, as an even
    fractional split would; the rounded plan still honours the spread."""
    from longshore.core import labels as wk
    from longshore.core.model import Requirement
    from longshore_sim.lp_bound.pools import class_instance, configuration_plan, fluid_bound

    types = catalog(
        instance_type("cheap", vcpus=2, memory_gib=4, price=0.1, zones=("us-east-1a", "us-east-1b")),
        instance_type("dear", vcpus=2, memory_gib=4, price=1.0, zones=("us-east-1c",)),
    )
    zones = Requirement(wk.ZONE, "In", ("us-east-1a", "us-east-1b", "us-east-1c"))
    chosen = pool(requirements=[zones])
    pods = replicas("web", 2, cpu="1500m", memory="1Gi", spread=[zone_spread("web")])
    instance = class_instance(pods, chosen, types)
    assert sorted(instance.counts.values()) == [0.0, 0.0, 0.0, 2.0]
    assert sum(instance.whole.values()) == 2
    assert fluid_bound(pods, chosen, types).cost <= 0.2 * (1 + 1e-9)
    plan = configuration_plan(pods, chosen, types, time_limit=10, round_limit=10)
    assert plan.converged and plan.bound <= 0.2 * (1 + 1e-9)
    assert plan.rounded >= 0.2 * (1 - 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(6, 12))
def test_the_configuration_bound_never_exceeds_the_exact_optimum(index: int) -> None:
    """More small instances than `test_exact_bench` (which checks the first six): bound <= OPT, a converged
    bound is at least the fluid one, and without zone anti-affinity the rounded plan is a plan (>= OPT)."""
    from bench.exact import exact_optimum
    from bench.lower_bound import configuration, fluid_bound
    from bench.small import small_instances

    instance = small_instances(count=12)[index]
    exact = exact_optimum(instance.classes, instance.types, time_limit=60)
    assert exact.optimal
    fluid = fluid_bound(instance.workload)
    found = configuration(instance.workload, time_limit=10, round_limit=5)
    assert fluid.cost <= exact.cost * (1 + 1e-7)
    assert found.bound <= exact.cost * (1 + 1e-7)
    if not any(c.one_per_zone for c in instance.classes):  # the bounds relax zone anti-affinity away, and
        assert found.rounded >= exact.cost * (1 - 1e-7)  # so does the rounded plan: it is a plan only without
    if found.converged:
        assert found.bound >= fluid.cost * (1 - 1e-6)
