"""`minValues`: a claim's instance-type list, cut to `max_instance_types`, keeps the distinct values it asks for."""

from __future__ import annotations

from longshore.core import labels as wk
from longshore.core.model import Settings
from longshore.core.scheduling import Plan, SchedulingInput, solve
from tests.builders import catalog, instance_type, pod, pool, req, scheduling_input
from tests.scheduling.checker import check

ZONES = ("us-east-1a",)


def families_catalog():
    # cheapest first: m5.large, c5.xlarge, m5.xlarge, m5.2xlarge, r5.xlarge, c6i.xlarge
    return catalog(
        instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096, zones=ZONES),
        instance_type("c5.xlarge", vcpus=4, memory_gib=8, price=0.17, zones=ZONES),
        instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.192, zones=ZONES),
        instance_type("m5.2xlarge", vcpus=8, memory_gib=32, price=0.2, zones=ZONES),
        instance_type("r5.xlarge", vcpus=4, memory_gib=32, price=0.252, zones=ZONES),
        instance_type("c6i.xlarge", vcpus=4, memory_gib=8, price=0.26, zones=ZONES),
    )


def family(name: str) -> str:
    return name.split(".")[0]


def run(pods, min_values: int | None, **fields) -> tuple[SchedulingInput, Plan]:
    requirements = [req(wk.INSTANCE_FAMILY, "Exists", min_values=min_values)] if min_values else []
    inp = scheduling_input(pods, [pool(requirements=requirements)], families_catalog(), **fields)
    plan = solve(inp)
    assert check(inp, plan) == []
    return inp, plan


def test_truncation_without_min_values_keeps_the_cheapest_types():
    _, plan = run([pod("web", cpu="500m", memory="1Gi")], None, max_instance_types=3)
    (claim,) = plan.new_claims
    assert claim.instance_types == ("m5.large", "c5.xlarge", "m5.xlarge")


def test_truncation_keeps_min_values_distinct_families_cheapest_first():
    _, plan = run([pod("web", cpu="500m", memory="1Gi")], 3, max_instance_types=3)
    (claim,) = plan.new_claims
    types = claim.instance_types
    assert len(types) == 3
    assert len({family(t) for t in types}) >= 3
    assert types[0] == "m5.large" == claim.instance_type  # the cheapest still priced and first
    prices = {o.instance_type: o.price for o in claim.offerings}
    assert [prices[t] for t in types] == sorted(prices[t] for t in types)
    assert {o.instance_type for o in claim.offerings} == set(types)


def test_min_values_larger_than_the_slots_keeps_every_new_family_first():
    _, plan = run([pod("web", cpu="500m", memory="1Gi")], 4, max_instance_types=4)
    (claim,) = plan.new_claims
    assert len({family(t) for t in claim.instance_types}) == 4


def test_strict_min_values_refuses_a_pod_only_one_family_can_hold():
    # 6 vCPU fits only m5.2xlarge: one family, fewer than minValues 2
    _, plan = run([pod("big", cpu="6", memory="4Gi")], 2)
    assert not plan.new_claims
    reason = plan.reason_for("default/big")
    assert reason is not None and "minValues" in reason and wk.INSTANCE_FAMILY in reason


def test_strict_min_values_keeps_claims_on_types_with_enough_bigger_siblings():
    # 3.5 vCPU fits the 4-vCPU types of three families and m5.2xlarge
    _, plan = run([pod("mid", cpu="3500m", memory="4Gi")], 3)
    (claim,) = plan.new_claims
    assert len({family(t) for t in claim.instance_types}) >= 3


def test_best_effort_launches_with_fewer_values_and_marks_the_claim_relaxed():
    # the pod of the Strict refusal above: only m5.2xlarge holds it, one family for minValues 2
    _, plan = run([pod("big", cpu="6", memory="4Gi")], 2, settings=Settings(min_values_policy="BestEffort"))
    (claim,) = plan.new_claims
    assert claim.instance_types == ("m5.2xlarge",) and claim.min_values_relaxed is True
    assert claim.requirements.get(wk.INSTANCE_FAMILY).min_values == 1  # lowered to what the claim offers
    assert plan.to_dict()["nodeclaims"][0]["min_values_relaxed"] is True


def test_claims_that_meet_min_values_are_not_relaxed_under_either_policy():
    for policy in ("Strict", "BestEffort"):
        _, plan = run([pod("mid", cpu="3500m", memory="4Gi")], 3, settings=Settings(min_values_policy=policy))
        (claim,) = plan.new_claims
        assert claim.min_values_relaxed is False
        assert claim.requirements.get(wk.INSTANCE_FAMILY).min_values == 3
    _, plan = run([pod("mid", cpu="1")], None)
    assert plan.new_claims[0].min_values_relaxed is None
