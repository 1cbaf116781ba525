"""Which free zones pods with self-selecting zone anti-affinity take (`solver_domains._choose`, the
zone-choice portfolio of `solver.solve`): the cheapest plan's zones, never a broken constraint."""

from __future__ import annotations

from dataclasses import replace

from longshore.core import labels as wk
from longshore.core.catalog import Offering, make_instance_type
from longshore.core.scheduling import solve
from longshore.core.scheduling.tuning import TUNING
from tests.builders import anti_affinity, catalog, node, pod, pool, replicas, req, scheduling_input
from tests.scheduling.checker import check

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
SPOT = {"us-east-1a": 0.04, "us-east-1b": 0.09, "us-east-1c": 0.05}  # zone b is the dear one


def _catalog():
    offerings = [Offering(z, "spot", price) for z, price in SPOT.items()]
    return catalog(make_instance_type("m5.large", vcpus=2, memory_mib=8192, offerings=offerings))


def _input(pods, nodes=()):
    spot = pool(requirements=[req(wk.CAPACITY_TYPE, "In", "spot"), req(wk.ZONE, "In", *ZONES)])
    return scheduling_input(pods, [spot], _catalog(), nodes=nodes)


def _zones(plan, prefix):
    return sorted(c.zone for c in plan.new_claims for key in c.pods if key.startswith(f"default/{prefix}-"))


def test_anti_affine_pods_take_the_cheap_zones_not_the_first_free_ones():
    inp = _input(replicas("db", 2, cpu="1", affinity=anti_affinity("db", wk.ZONE)))
    plan = solve(inp)
    assert check(inp, plan) == []
    assert _zones(plan, "db") == ["us-east-1a", "us-east-1c"]  # the first free pair (a, b) costs 0.13
    assert plan.cost_per_hour == 0.09
    assert solve(inp) == plan  # deterministic


def test_a_running_replica_leaves_the_cheaper_of_the_free_zones():
    running = pod(
        "db-0", cpu="1", labels={"app": "db"}, affinity=anti_affinity("db", wk.ZONE), node_name="n1"
    )
    existing = node("n1", zone="us-east-1a", pods=[running])
    pending = [
        p for p in replicas("db", 2, cpu="1", affinity=anti_affinity("db", wk.ZONE)) if p.name != "db-0"
    ]
    inp = _input(pending, nodes=(existing,))
    plan = solve(inp)
    assert check(inp, plan) == []
    assert _zones(plan, "db") == ["us-east-1c"]


def test_no_choice_when_every_free_zone_is_needed():
    inp = _input(replicas("db", 4, cpu="1", affinity=anti_affinity("db", wk.ZONE)))
    plan = solve(inp)
    assert check(inp, plan) == []
    assert _zones(plan, "db") == list(ZONES)
    assert [key for key, _ in plan.unschedulable] == ["default/db-3"]


def test_big_batches_keep_the_first_free_zones(monkeypatch):
    """Past `zone_choice_pods` the portfolio does not run (each member is a whole solve)."""
    import longshore.core.scheduling.solver as solver

    monkeypatch.setattr(solver, "TUNING", replace(TUNING, zone_choice_pods=1))
    inp = _input(replicas("db", 2, cpu="1", affinity=anti_affinity("db", wk.ZONE)))
    plan = solve(inp)
    assert check(inp, plan) == []
    assert _zones(plan, "db") == ["us-east-1a", "us-east-1b"]
