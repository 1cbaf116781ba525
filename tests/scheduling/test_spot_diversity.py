"""Spot diversity (`solver_diversity`): no spot (type, zone) pool holds more than a share of a batch's spot
capacity, within a cost budget; every plan re-checked by the independent checker."""

from __future__ import annotations

from collections import Counter

from longshore.core import labels as wk
from longshore.core.catalog import Offering, make_instance_type
from longshore.core.model import Settings, SpotDiversity
from longshore.core.scheduling import Plan, solve
from tests.builders import catalog, pool, replicas, req, scheduling_input, zone_spread
from tests.scheduling.checker import check

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def _type(name: str, spot: tuple[float, float, float], on_demand: float):
    offerings = [Offering(z, "spot", p) for z, p in zip(ZONES, spot, strict=True)]
    offerings += [Offering(z, "on-demand", on_demand) for z in ZONES]
    return make_instance_type(name, vcpus=4, memory_mib=16 * 1024, offerings=offerings)


CATALOG = catalog(
    _type("c5.xlarge", (0.0700, 0.0710, 0.0720), 0.17),
    _type("m5.xlarge", (0.0760, 0.0750, 0.0770), 0.192),
)


def _plan(pods, **rule) -> Plan:
    inp = scheduling_input(
        pods,
        [pool(requirements=[req(wk.CAPACITY_TYPE, "In", "spot")])],
        CATALOG,
        settings=Settings(spot_diversity=SpotDiversity(**rule)),
    )
    plan = solve(inp)
    assert check(inp, plan) == []
    assert not plan.unschedulable
    return plan


def _largest_share(plan: Plan) -> float:
    pools = Counter((c.instance_type, c.zone) for c in plan.new_claims)
    return max(pools.values()) / len(plan.new_claims)


def test_a_large_spot_batch_is_spread_over_pools_within_the_cost_budget() -> None:
    pods = replicas("batch", 24, cpu="3", memory="4Gi")  # one pod per node
    cheapest = _plan(pods, pool_share=1.0)
    assert _largest_share(cheapest) == 1.0  # every claim in c5.xlarge, us-east-1a
    diverse = _plan(pods)
    assert _largest_share(diverse) <= 0.5
    assert cheapest.cost_per_hour < diverse.cost_per_hour <= cheapest.cost_per_hour * 1.01
    for claim in diverse.new_claims:  # the priced offering leads the list the launch tries in order
        first = claim.offerings[0]
        assert (first.instance_type, first.zone, first.price) == (
            claim.instance_type,
            claim.zone,
            claim.price_per_hour,
        )


def test_the_cost_budget_stops_diversity() -> None:
    pods = replicas("batch", 24, cpu="3", memory="4Gi")
    cheapest = _plan(pods, pool_share=1.0)
    plan = _plan(pods, max_cost=0.002)
    assert plan.cost_per_hour <= cheapest.cost_per_hour * 1.002 + 1e-9
    assert 0.5 < _largest_share(plan) < 1.0


def test_small_batches_and_zone_constrained_batches_keep_their_zones() -> None:
    few = replicas("few", 6, cpu="3", memory="4Gi")
    assert _plan(few) == _plan(few, pool_share=1.0)
    spread = replicas("spread", 24, cpu="3", memory="4Gi", spread=[zone_spread("spread")])
    plan = _plan(spread)
    before = _plan(spread, pool_share=1.0)
    assert sorted(c.zone for c in plan.new_claims) == sorted(c.zone for c in before.new_claims)
