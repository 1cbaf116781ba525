"""Static NodePools (`spec.replicas`): the pure plan (core/static_pools.py) and the planner leaving their
nodes out of emptiness and consolidation (kubernetes-sigs/karpenter designs/static-capacity.md)."""

from __future__ import annotations

from dataclasses import replace

from longshore.core.disruption.decisions import PassedOverKind
from longshore.core.resources import Limits
from longshore.core.static_pools import StaticMember, plan
from tests.builders import pool
from tests.disruption.test_planner import a_pool, managed, run


def member(name: str, **extra: object) -> StaticMember:
    return StaticMember(f"claim-{name}", name, **{"created_at": 0.0, **extra})  # type: ignore[arg-type]


def test_missing_nodes_are_launched_up_to_limits_nodes_counting_nodes_going() -> None:
    static = replace(pool("static"), replicas=4, limits=Limits.of({"nodes": 4}))
    result = plan(static, [member("a"), member("b", going=True)])
    assert (result.active, result.launch) == (
        1,
        2,
    )  # 2 claims exist, the limit allows 2 more of the 3 missing
    assert "limits.nodes 4 holds 1 launch(es) back" in result.held
    assert plan(replace(static, limits=Limits()), [member("a")]).launch == 3


def test_extras_go_unregistered_first_then_unprotected_empty_young_nodes() -> None:
    static = replace(pool("static"), replicas=2)
    members = [
        member("busy", pods=3, created_at=10.0),
        member("guarded", created_at=5.0, protected=True),
        member("empty-old", created_at=1.0),
        member("empty-young", created_at=9.0),
        StaticMember("claim-booting", None, 20.0),
    ]
    assert [m.claim_id for m in plan(static, members).remove] == [
        "claim-booting",
        "claim-empty-young",
        "claim-empty-old",
    ]


def test_exactly_replicas_does_nothing() -> None:
    result = plan(replace(pool("static"), replicas=2), [member("a"), member("b"), member("c", going=True)])
    assert (result.launch, result.remove, result.held) == (0, (), "")


def test_the_planner_never_consolidates_nor_empties_a_static_pools_nodes() -> None:
    static = replace(a_pool("static", policy="WhenEmptyOrUnderutilized", after=0), replicas=2)
    result = run(managed("a", pool_name="static"), managed("b", pool_name="static"), pools=(static,))
    assert result.decisions == ()
    assert {p.node: (p.kind, p.reason) for p in result.passed_over} == {
        n: (PassedOverKind.UNCONSOLIDATABLE, "pool static is static (replicas)") for n in ("a", "b")
    }
