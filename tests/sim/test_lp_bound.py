"""The LP lower bounds of `sim.lp_bound`: hand-computed cases, the order fluid <= configuration <= any integer
packing, and what is claimed when column generation runs out of time."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longshore.core import labels as wk
from longshore.core.model import ClusterConfig, NodePool
from longshore.core.scheduling import solve
from longshore.core.scheduling.templates import build_templates
from longshore_sim.lp_bound import (
    ConfigurationBound,
    fluid_lower_bound,
    generate_columns,
    lower_bounds,
)
from longshore_sim.lp_bound import _price_bin as price_bin
from tests.builders import (
    anti_affinity,
    catalog,
    instance_type,
    node_class,
    pod,
    pool,
    replicas,
    req,
    scheduling_input,
)

GIB = 2**30
CPU = (1000, GIB, 1)  # one vCPU and 1 GiB per pod


def bound(
    counts: Sequence[int],
    demands: Sequence[tuple[int, int, int]],
    bins: Sequence[tuple[float, tuple[int, int, int], frozenset[int]]],
    one_per_node: Sequence[bool] | None = None,
    **options: int,
) -> ConfigurationBound:
    return generate_columns(
        counts,
        demands,
        one_per_node or [False] * len(counts),
        bins,
        deadline=time.perf_counter() + 30,
        **options,
    )[0]


def config_of(*pools: NodePool) -> ClusterConfig:
    return ClusterConfig("test", "us-east-1", "1.31", pools, (node_class(),))


# -- hand-computed --------------------------------------------------------------------------------------------


def test_identical_pods_on_one_type_cost_n_over_k_nodes() -> None:
    # A 3,500m node takes k = 3 one-vCPU pods: the configuration LP buys 10/3 nodes (no rounding up),
    # the fluid LP only 10 x 1000 / 3500 of one.
    result = bound([10], [CPU], [(0.3, (3500, 8 * GIB, 50), frozenset({0}))])
    assert result.converged
    assert result.cost_per_hour == pytest.approx(10 / 3 * 0.3)
    assert result.master_per_hour == pytest.approx(result.cost_per_hour)


def test_a_node_never_holds_more_pods_of_a_class_than_there_are() -> None:
    # Two pods on a node that could take three: at least one whole node, not two thirds of one.
    result = bound([2], [CPU], [(0.3, (3500, 8 * GIB, 50), frozenset({0}))])
    assert result.cost_per_hour == pytest.approx(0.3)


def test_the_pods_dimension_limits_a_column() -> None:
    result = bound([12], [(100, GIB // 8, 1)], [(0.2, (4000, 8 * GIB, 5), frozenset({0}))])
    assert result.cost_per_hour == pytest.approx(12 / 5 * 0.2)


def test_hostname_anti_affinity_allows_one_pod_of_the_class_per_node() -> None:
    # Three anti-affine 3,000m pods and three 1,500m pods on 4,000m nodes at $1: a node holds one big pod
    # (nothing else fits beside it) or two small ones. Fluid: max(3 nodes for the anti-affine pods,
    # 13,500m / 4,000m) = 3.375; configuration LP: 3 + 3/2 = 4.5; best integer packing: 5 nodes.
    demands = [(3000, GIB, 1), (1500, GIB, 1)]
    result = bound([3, 3], demands, [(1.0, (4000, 16 * GIB, 50), frozenset({0, 1}))], [True, False])
    assert result.converged
    assert result.cost_per_hour == pytest.approx(4.5)


def test_anti_affinity_is_read_from_the_pods() -> None:
    types = catalog(instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.2))
    config = config_of(pool())
    apart = replicas("web", 3, cpu="100m", memory="128Mi", affinity=anti_affinity("web"))
    together = replicas("web", 3, cpu="100m", memory="128Mi")
    assert lower_bounds(apart, config, types).best_per_hour == pytest.approx(3 * 0.2)
    assert lower_bounds(together, config, types).configuration.cost_per_hour == pytest.approx(0.2)


def test_two_bins_mix_at_the_best_price_per_pod() -> None:
    # Four one-vCPU pods; bin A takes 3 for $0.30 ($0.10 a pod), bin B one for $0.12. Fluid LP: B's
    # $0.08 per vCPU of room x 4 = $0.32; configuration LP: 4 x $0.10 = $0.40; best packing: A + B = $0.42.
    bins = [
        (0.3, (3500, 8 * GIB, 50), frozenset({0})),
        (0.12, (1500, 8 * GIB, 50), frozenset({0})),
    ]
    assert bound([4], [CPU], bins).cost_per_hour == pytest.approx(0.40)


def test_a_class_restricted_to_one_bin_pays_that_bin() -> None:
    # Class 1 (two pods) can only use the $0.50 bin, at most 2 of them a node: $0.50 for them, whatever else
    # shares that node. Two of the four class-0 pods ride along; the other two take a $0.10 node (2 a node).
    bins = [
        (0.1, (2000, 8 * GIB, 50), frozenset({0})),
        (0.5, (4000, 16 * GIB, 50), frozenset({0, 1})),
    ]
    result = bound([4, 2], [CPU, CPU], bins)
    assert result.cost_per_hour == pytest.approx(0.6)


def test_dominated_bins_are_dropped() -> None:
    bins = [
        (0.3, (4000, 16 * GIB, 50), frozenset({0, 1})),
        (0.4, (3500, 8 * GIB, 50), frozenset({0})),  # less room, fewer classes, dearer
        (0.3, (4000, 16 * GIB, 50), frozenset({0, 1})),  # a twin
    ]
    assert bound([3, 3], [CPU, CPU], bins).bins == 1


def test_identical_pods_end_to_end_on_the_pools_templates() -> None:
    types = catalog(
        instance_type("c5.large", vcpus=2, memory_gib=4, price=0.085),
        instance_type("c5.2xlarge", vcpus=8, memory_gib=16, price=0.34),
    )
    config = config_of(pool())
    pods = replicas("app", 40, cpu="700m", memory="1Gi")
    templates = build_templates(config.node_pools, config.node_classes, types, (), config.settings)
    per_pod = min(
        min(o.price for o in option.offerings)
        / min(40, option.room.get("cpu") // 700, option.room.get("memory") // GIB, option.room.get("pods"))
        for template in templates
        for option in template.options
    )
    report = lower_bounds(pods, config, types)
    assert report.configuration.converged
    assert report.configuration.cost_per_hour == pytest.approx(40 * per_pod)
    assert report.fluid.cost_per_hour == pytest.approx(fluid_lower_bound(pods, config, types).cost_per_hour)
    assert report.best == "configuration" and report.best_per_hour == report.configuration.cost_per_hour


# -- properties -----------------------------------------------------------------------------------------------


def cheapest_packing(
    counts: Sequence[int],
    demands: Sequence[tuple[int, int, int]],
    one_per_node: Sequence[bool],
    bins: Sequence[tuple[float, tuple[int, int, int], frozenset[int]]],
) -> float:
    """The exact integer optimum of a tiny instance: DP over the pods still to place, one node at a time."""
    nodes: list[tuple[float, tuple[int, ...]]] = []
    for price, room, served in bins:
        ranges = [
            range((1 if one_per_node[k] else counts[k]) + 1) if k in served else range(1)
            for k in range(len(counts))
        ]
        for column in itertools.product(*ranges):
            used = [sum(a * d[r] for a, d in zip(column, demands, strict=True)) for r in range(3)]
            if any(column) and all(used[r] <= room[r] for r in range(3)):
                nodes.append((price, column))
    best: dict[tuple[int, ...], float] = {tuple(0 for _ in counts): 0.0}
    for left in sorted(itertools.product(*(range(n + 1) for n in counts)), key=sum):
        if not any(left):
            continue
        best[left] = min(
            (
                price + best[tuple(max(0, n - a) for n, a in zip(left, column, strict=True))]
                for price, column in nodes
                if any(a and n for n, a in zip(left, column, strict=True))
            ),
            default=math.inf,
        )
    return best[tuple(counts)]


tiny_classes = st.lists(
    st.tuples(st.integers(1, 4), st.sampled_from([500, 1000, 1500, 3000]), st.integers(1, 6), st.booleans()),
    min_size=1,
    max_size=2,
)
tiny_bins = st.lists(
    st.tuples(
        st.sampled_from([0.1, 0.17, 0.25, 0.4]), st.sampled_from([2000, 3500, 4000]), st.integers(0, 3)
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=40, deadline=None)
@given(tiny_classes, tiny_bins, st.booleans())
@pytest.mark.slow
def test_the_bound_never_exceeds_the_cheapest_integer_packing(classes, bins_spec, use_mip) -> None:
    counts = [n for n, _, _, _ in classes]
    demands = [(cpu, gib * GIB // 2, 1) for _, cpu, gib, _ in classes]
    one = [anti for _, _, _, anti in classes]
    subsets = [frozenset({0}), frozenset({1}), frozenset({0, 1}), frozenset({0, 1})]
    bins = [
        (price, (cpu, 4 * GIB, 4), frozenset(k for k in subsets[which] if k < len(counts)))
        for price, cpu, which in bins_spec
    ]
    bins = [
        (price, room, frozenset(k for k in served if all(demands[k][r] <= room[r] for r in range(3))))
        for price, room, served in bins
    ]
    bins = [b for b in bins if b[2]]
    if not bins or any(not any(k in served for _, _, served in bins) for k in range(len(counts))):
        return
    optimum = cheapest_packing(counts, demands, one, bins)
    result = bound(counts, demands, bins, one, enumeration_limit=0 if use_mip else 50_000)
    assert result.converged
    assert result.cost_per_hour <= optimum * (1 + 1e-9)
    assert result.cost_per_hour >= 0.0


ZONES = ("us-east-1a", "us-east-1b")
TYPES = catalog(
    instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096, zones=ZONES, spot_price=0.04),
    instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.192, zones=ZONES, spot_price=0.07),
    instance_type("c5.2xlarge", vcpus=8, memory_gib=16, price=0.34, zones=ZONES[:1]),
    instance_type("r5.xlarge", vcpus=4, memory_gib=32, price=0.252, zones=ZONES[:1]),
)
pod_specs = st.lists(
    st.tuples(
        st.sampled_from(["250m", "500m", "1", "1500m", "3"]),
        st.sampled_from(["256Mi", "1Gi", "3Gi", "12Gi"]),
        st.sampled_from(["none", "anti", "zone-b", "on-demand"]),
        st.integers(1, 12),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=25, deadline=None)
@given(pod_specs)
@pytest.mark.slow
def test_fluid_at_most_configuration_at_most_the_provisioners_plan(specs) -> None:
    pods = []
    for index, (cpu, memory, kind, count) in enumerate(specs):
        app = f"app{index}"
        options: dict[str, object] = {"cpu": cpu, "memory": memory, "labels": {"app": app}}
        if kind == "anti":
            options["affinity"] = anti_affinity(app)
        elif kind == "zone-b":
            options["node_selector"] = {wk.ZONE: "us-east-1b"}
        elif kind == "on-demand":
            options["node_selector"] = {wk.CAPACITY_TYPE: "on-demand"}
        pods += [pod(f"{app}-{i}", **options) for i in range(count)]
    pools = (pool("general", requirements=[req(wk.CAPACITY_TYPE, "In", "spot", "on-demand")]),)
    plan = solve(scheduling_input(pods, pools, TYPES))
    report = lower_bounds(pods, config_of(*pools), TYPES, time_limit=30)
    assert report.configuration.converged
    assert report.fluid.cost_per_hour <= report.configuration.cost_per_hour * (1 + 1e-7)
    assert report.best_per_hour == max(report.fluid.cost_per_hour, report.configuration.cost_per_hour)
    if not plan.unschedulable:
        assert report.best_per_hour <= plan.cost_per_hour * (1 + 1e-7) + 1e-6


# -- out of time ----------------------------------------------------------------------------------------------

MIXED_COUNTS = [7, 5, 9, 4]
MIXED_DEMANDS = [(1500, 2 * GIB, 1), (700, 5 * GIB, 1), (300, GIB // 2, 1), (2300, 3 * GIB, 1)]
MIXED_BINS = [
    (0.3, (3900, 15 * GIB, 50), frozenset({0, 1, 2, 3})),
    (0.17, (1900, 7 * GIB, 20), frozenset({0, 1, 2})),
    (0.5, (7800, 30 * GIB, 50), frozenset({0, 2, 3})),
    (0.26, (3900, 7 * GIB, 30), frozenset({0, 2, 3})),
]


def test_stopping_early_claims_a_farley_bound_below_the_lp_optimum() -> None:
    one = [False, True, False, False]
    full = bound(MIXED_COUNTS, MIXED_DEMANDS, MIXED_BINS, one)
    assert full.converged and full.iterations > 1, "the case needs more than one master"
    early = bound(MIXED_COUNTS, MIXED_DEMANDS, MIXED_BINS, one, max_iterations=1)
    assert early.stopped == "iterations" and not early.converged
    assert 0.0 < early.cost_per_hour <= full.cost_per_hour * (1 + 1e-9)
    assert early.master_per_hour >= full.cost_per_hour * (1 - 1e-9)  # the restricted master is not a bound


def test_enumerated_and_mip_pricing_agree() -> None:
    one = [False, True, False, False]
    enumerated = bound(MIXED_COUNTS, MIXED_DEMANDS, MIXED_BINS, one)
    by_mip = bound(MIXED_COUNTS, MIXED_DEMANDS, MIXED_BINS, one, enumeration_limit=0)
    assert by_mip.converged
    assert by_mip.cost_per_hour == pytest.approx(enumerated.cost_per_hour, rel=1e-6)


def test_a_knapsack_stopped_early_reports_an_upper_bound_on_its_optimum() -> None:
    rng = np.random.default_rng(7)
    classes = 25
    duals = rng.uniform(0.01, 0.2, classes)
    demand = np.stack(
        [rng.integers(100, 4000, classes), rng.integers(2**27, 2**33, classes), np.ones(classes, np.int64)],
        axis=1,
    ).astype(np.int64)
    cap = rng.integers(1, 20, classes).astype(np.int64)
    room = np.array([63000, 250 * GIB, 234], dtype=np.int64)
    value, column, upper = price_bin(duals, demand, cap, room, 30.0, 0)
    assert upper == pytest.approx(value, rel=1e-6), "given time, the MIP closes its gap"
    assert (demand.T @ column <= room).all() and (column <= cap).all()
    for time_limit in (1e-6, 1e-3):
        early_value, early_column, early_upper = price_bin(duals, demand, cap, room, time_limit, 0)
        assert early_value <= value * (1 + 1e-9) <= early_upper * (1 + 1e-9)
        assert (demand.T @ early_column <= room).all()


def test_out_of_time_the_report_falls_back_to_the_fluid_bound() -> None:
    types = catalog(
        instance_type("c5.large", vcpus=2, memory_gib=4, price=0.085),
        instance_type("c5.xlarge", vcpus=4, memory_gib=8, price=0.17),
    )
    pods = replicas("app", 9, cpu="700m", memory="1Gi")
    report = lower_bounds(pods, config_of(pool()), types, time_limit=0.0)
    assert report.configuration.stopped == "time" and report.configuration.cost_per_hour == 0.0
    assert report.best == "fluid" and report.best_per_hour == report.fluid.cost_per_hour > 0


def test_no_pods_no_bound() -> None:
    report = lower_bounds([], config_of(pool()), catalog(instance_type("c5.large")))
    assert report.best_per_hour == 0.0 and report.configuration.stopped == "no pods"


# -- the benchmark's bounds in the same module (longshore_sim.lp_bound.pools) ----------------------------------


def test_pools_fluid_bound_by_hand() -> None:
    """Five 1-vCPU pods on one pool: the fluid bound buys exactly the cpu they need of the cheaper type per
    allocatable millicore, and the cover bound (merged classes, no zones) is the same here."""
    from longshore.core.allocatable import allocatable
    from longshore.core.model import Settings
    from longshore_sim.lp_bound.pools import class_instance, cover_bound, fluid_bound

    types = (
        instance_type("small", vcpus=2, memory_gib=8, price=0.1),
        instance_type("large", vcpus=8, memory_gib=32, price=0.5),
    )
    pods = replicas("web", 5, cpu="1", memory="1Gi")
    chosen = pool()
    fluid = fluid_bound(pods, chosen, catalog(*types))
    per_milli = min(
        it.offerings[0].price / allocatable(it, None, None, Settings()).get("cpu") for it in types
    )
    assert fluid.cost == pytest.approx(5000 * per_milli, rel=1e-9)
    assert cover_bound(pods, chosen, catalog(*types)).cost == pytest.approx(fluid.cost, rel=1e-9)
    instance = class_instance(pods, chosen, catalog(*types))
    assert list(instance.counts.values()) == [5.0]
    assert list(instance.whole.values()) == [5]


def test_pools_anti_affinity_caps_one_pod_per_node() -> None:
    """Three mutually anti-affine pods need three nodes in the fluid bound and the cover bound alike."""
    from longshore_sim.lp_bound.pools import cover_bound, fluid_bound

    small = instance_type("small", vcpus=2, memory_gib=8, price=0.1)
    pods = replicas("db", 3, cpu="100m", memory="128Mi", affinity=anti_affinity("db"))
    assert fluid_bound(pods, pool(), catalog(small)).cost == pytest.approx(0.3, rel=1e-9)
    assert cover_bound(pods, pool(), catalog(small)).cost == pytest.approx(0.3, rel=1e-9)


def test_bench_adapter_is_the_shared_module() -> None:
    """`bench.lower_bound` only adapts a Workload: its values are the shared module's, and the Karpenter
    mix's cover bound at 100 pods is README's benchmark table figure (24.504 $/h)."""
    from bench.lower_bound import cover_bound
    from bench.workloads import karpenter_mix

    from longshore_sim.lp_bound import pools

    workload = karpenter_mix(100)
    cover = cover_bound(workload)
    assert round(cover.cost, 3) == 24.504
    assert cover.cost == pools.cover_bound(workload.pods, workload.pools[0], workload.catalog).cost
