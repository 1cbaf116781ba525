"""NodeOverlays and dollar limits in provisioning: overlays change the chosen type and add extended
resources; a pool's or the cluster's $/h cap stops a launch with a clear reason. Every plan passes the checker."""

from __future__ import annotations

import dataclasses

import pytest

from longshore.core import labels as wk
from longshore.core.model import NodeOverlay, Origin, Settings
from longshore.core.resources import Resources
from longshore.core.scheduling import solve
from tests.builders import catalog, instance_type, node, pod, pool, replicas, req, scheduling_input
from tests.scheduling.checker import check

ORIGIN = Origin("karpenter.sh/v1alpha1", "NodeOverlay")


def types():
    return catalog(
        instance_type("c5.large", vcpus=2, memory_gib=4, price=0.085),
        instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096),
        instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.192),
    )


def solved(pods, pools, **fields):
    inp = scheduling_input(pods, pools, fields.pop("the_catalog", None) or types(), **fields)
    plan = solve(inp)
    assert check(inp, plan) == []
    return plan


def with_overlays(the_pool, *overlays):
    return dataclasses.replace(the_pool, overlays=tuple(overlays))


def test_a_price_adjustment_on_the_cheapest_family_makes_the_engine_pick_another():
    assert {c.instance_type for c in solved([pod("w", cpu="1")], [pool()]).new_claims} == {"c5.large"}
    dear = NodeOverlay("dear-c5", ORIGIN, (req(wk.INSTANCE_FAMILY, "In", "c5"),), price_adjustment="+100%")
    plan = solved([pod("w", cpu="1")], [with_overlays(pool(), dear)])
    (claim,) = plan.new_claims
    assert claim.instance_type == "m5.large"
    assert claim.price_per_hour == pytest.approx(0.096)


def test_an_overlay_price_is_the_claims_price():
    cheap = NodeOverlay("sp", ORIGIN, (req(wk.INSTANCE_TYPE, "In", "m5.xlarge"),), price=0.05)
    (claim,) = solved([pod("w", cpu="1")], [with_overlays(pool(), cheap)]).new_claims
    assert (claim.instance_type, claim.price_per_hour) == ("m5.xlarge", 0.05)


def test_overlay_capacity_lets_pods_request_hugepages():
    pods = [pod("db", cpu="1", memory="1Gi", extra_requests={"hugepages-2Mi": "512Mi"})]
    plan = solved(pods, [pool()])
    assert plan.unschedulable and not plan.new_claims
    huge = NodeOverlay(
        "huge",
        ORIGIN,
        (req(wk.INSTANCE_FAMILY, "In", "m5"),),
        capacity=Resources.parse({"hugepages-2Mi": "1Gi"}),
    )
    (claim,) = solved(pods, [with_overlays(pool(), huge)]).new_claims
    assert claim.instance_type == "m5.large"


def test_a_pool_cost_limit_stops_a_launch_with_its_reason():
    capped = dataclasses.replace(pool(), max_cost_per_hour=0.2)
    plan = solved(replicas("w", 3, cpu="1500m"), [capped])  # one pod per 2-cpu node: 3 x 0.085 > 0.2
    assert len(plan.new_claims) == 2
    (key,) = [k for k, _ in plan.unschedulable]
    assert "pool default: cost limit 0.20 $/h reached" in plan.reason_for(key)


def test_existing_nodes_count_at_their_overlay_price():
    dear = NodeOverlay("dear", ORIGIN, (), price_adjustment="+1")
    capped = with_overlays(dataclasses.replace(pool(), max_cost_per_hour=1.2), dear)
    live = node(
        "n1", instance_type_name="c5.large", allocatable={"cpu": "100m", "memory": "1Gi", "pods": "5"}
    )
    plan = solved([pod("w", cpu="1")], [capped], nodes=(live,))  # 1.085 spent; a new node costs 1.085 more
    assert not plan.new_claims
    assert "cost limit 1.20 $/h reached" in plan.reason_for("default/w")


def test_the_cluster_cost_limit_is_shared_by_the_pools():
    first = pool("first", weight=10, requirements=[req(wk.INSTANCE_TYPE, "In", "c5.large")])
    second = pool("second", requirements=[req(wk.INSTANCE_TYPE, "In", "m5.large")])
    plan = solved(replicas("w", 3, cpu="1500m"), [first, second], settings=Settings(max_cost_per_hour=0.2))
    assert len(plan.new_claims) == 2
    (key,) = [k for k, _ in plan.unschedulable]
    assert "cluster cost limit 0.20 $/h reached" in plan.reason_for(key)


def test_an_in_flight_claim_carries_the_overlay_capacity_so_no_second_node_launches():
    from longshore.core.claims import NodeClaim
    from longshore.core.model import ClusterConfig
    from longshore.services.snapshot import claim_as_node
    from tests.builders import node_class

    huge = NodeOverlay("huge", ORIGIN, (), capacity=Resources.parse({"hugepages-2Mi": "1Gi"}))
    the_pool = with_overlays(pool(), huge)
    config = ClusterConfig("demo", "us-east-1", "1.31", (the_pool,), (node_class(),))
    claim = NodeClaim(
        "c1", "default", "default", instance_type="m5.large", zone="us-east-1a", capacity_type="on-demand"
    )
    in_flight = claim_as_node(claim, types(), config)
    assert in_flight is not None and in_flight.allocatable.get("hugepages-2Mi") == 2**30
    pods = [pod("db", cpu="500m", memory="1Gi", extra_requests={"hugepages-2Mi": "512Mi"})]
    plan = solved(pods, [the_pool], in_flight=(in_flight,))
    assert not plan.new_claims and not plan.unschedulable
