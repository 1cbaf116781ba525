"""The benchmark's exact optimum (bench/exact.py) must equal a brute force over every partition of the pods
into nodes, so the ours/OPT column of `make bench` cannot silently lie."""

from __future__ import annotations

import pytest
from bench.exact import ExactClass, ExactType, brute_force, exact_optimum

GIB = 2**30
ZONES = ("a", "b", "c")
ANY = frozenset((z, ct) for z in ZONES for ct in ("spot", "on-demand"))
ON_DEMAND = frozenset((z, "on-demand") for z in ZONES)


def _type(name: str, cpu: int, gib: int, on_demand: float, spot: tuple[float, float, float]) -> ExactType:
    offers = [(z, "on-demand", on_demand) for z in ZONES]
    offers += [(z, "spot", price) for z, price in zip(ZONES, spot, strict=True)]
    return ExactType(name, (cpu, gib * GIB, 20), tuple(offers))


TYPES = (
    _type("small", 2000, 4, 0.10, (0.04, 0.05, 0.035)),
    _type("medium", 4000, 8, 0.19, (0.09, 0.07, 0.08)),
    _type("memory", 2000, 16, 0.13, (0.06, 0.05, 0.07)),
)

CASES = {
    "hostname anti-affinity mixes types": (
        ExactClass("web", 1500, 2 * GIB, 3, ANY, one_per_node=True),
        ExactClass("cache", 500, 6 * GIB, 2, ON_DEMAND),
        ExactClass("job", 1000, 1 * GIB, 2, ANY),
    ),
    "zone anti-affinity follows the cheap spot zones": (
        ExactClass("db", 1000, 3 * GIB, 3, ANY, one_per_zone=True),
        ExactClass("api", 1500, 3 * GIB, 3, ANY),
    ),
    "on-demand only, both constraints": (
        ExactClass("quorum", 1000, 1 * GIB, 2, ON_DEMAND, one_per_zone=True),
        ExactClass("front", 2000, 1 * GIB, 2, ON_DEMAND, one_per_node=True),
        ExactClass("mem", 500, 10 * GIB, 2, ON_DEMAND),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.slow
def test_exact_mip_equals_brute_force(name: str) -> None:
    classes = CASES[name]
    exact = exact_optimum(classes, TYPES, time_limit=30)
    assert exact.optimal
    assert exact.cost == pytest.approx(brute_force(classes, TYPES), abs=1e-9)


def test_zone_anti_affinity_is_a_real_constraint() -> None:
    """Four pods that must sit in different zones cannot be placed in three: the MIP finds no plan."""
    classes = (ExactClass("db", 1000, GIB, 4, ANY, one_per_zone=True),)
    assert brute_force(classes, TYPES) == float("inf")
    with pytest.raises(RuntimeError):
        exact_optimum(classes, TYPES, time_limit=10)


@pytest.mark.slow
@pytest.mark.parametrize("index", [0, 1, 2, 3, 4, 5])
def test_shared_lp_bounds_never_exceed_the_exact_optimum(index: int) -> None:
    """The benchmark's bounds (the shared `longshore_sim.lp_bound.pools`, through `bench.lower_bound`'s
    Workload adapter) are at most the exact optimum of the small instances, and the configuration bound is at
    least the fluid one up to solver tolerance."""
    from bench.lower_bound import configuration, fluid_bound
    from bench.small import small_instances

    instance = small_instances(count=6)[index]
    exact = exact_optimum(instance.classes, instance.types, time_limit=30)
    assert exact.optimal
    fluid = fluid_bound(instance.workload)
    assert fluid.cost <= exact.cost * (1 + 1e-7)
    found = configuration(instance.workload, time_limit=5, round_limit=5)
    assert found.bound <= exact.cost * (1 + 1e-7)
    if found.converged:
        assert found.bound >= fluid.cost * (1 - 1e-6)
