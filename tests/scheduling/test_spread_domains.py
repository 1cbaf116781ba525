"""Topology spread domains: which domains count, which the pods can reach, and what is relaxed (#13)."""

from __future__ import annotations

from collections import Counter

from longshore.core import labels as wk
from longshore.core.model import Taint
from longshore.core.scheduling import Plan
from tests.builders import expr, node, node_affinity, pod, pool, replicas, req, zone_spread
from tests.scheduling.test_constraints import ZONES, run

Z1, Z2, Z3 = ZONES
LABEL = "capacity-spread"


def full_node(name: str, zone: str) -> object:
    """A node in `zone` running one `app=web` pod and with no room for another."""
    web = pod(f"{name}-web", cpu="1", labels={"app": "web"}, node_name=name)
    return node(name, zone=zone, allocatable={"cpu": "1100m", "memory": "8Gi", "pods": "110"}, pods=[web])


def zones_of(plan: Plan) -> Counter[str]:
    return Counter(c.zone for c in plan.new_claims for _ in c.pods)


def label_pools(*values: str, tainted: str = "") -> list[object]:
    taints = [Taint("dedicated", "NoSchedule", "x")]
    return [pool(v, labels={LABEL: v}, taints=taints if v == tainted else ()) for v in values]


def labelled(plan: Plan) -> Counter[str]:
    return Counter(dict(c.labels)[LABEL] for c in plan.new_claims for _ in c.pods)


def test_schedule_anyway_spread_is_relaxed_when_it_cannot_be_met():
    spread = zone_spread("web", hard=False)
    _, plan = run(
        replicas("web", 4, cpu="1", spread=[spread]),
        [pool(requirements=[req(wk.ZONE, "In", Z3)])],
        nodes=(full_node("n1", Z1),),
    )
    assert not plan.unschedulable
    assert zones_of(plan) == {Z3: 4}


def test_max_skew_lets_the_only_reachable_domain_run_ahead_of_full_ones():
    _, plan = run(
        replicas("web", 8, cpu="1", spread=[zone_spread("web", max_skew=3)]),
        [pool(requirements=[req(wk.ZONE, "In", Z3)])],
        nodes=(full_node("n1", Z1), full_node("n2", Z2)),
    )
    assert zones_of(plan) == {Z3: 4}  # 4 - 1 = maxSkew; the other 4 would break it
    assert len(plan.unschedulable) == 4


def test_node_taints_policy_decides_whether_untolerated_pools_count_as_domains():
    def spreading(policy: str | None) -> list[object]:
        spread = {**zone_spread("web", key=LABEL)}
        if policy:
            spread["nodeTaintsPolicy"] = policy
        return list(replicas("web", 4, cpu="1", spread=[spread]))

    _, ignored = run(spreading(None), label_pools("a", "b", "t", tainted="t"))  # Ignore is the default
    assert labelled(ignored) == {"a": 1, "b": 1}  # the tainted domain counts and stays empty
    _, honoured = run(spreading("Honor"), label_pools("a", "b", "t", tainted="t"))
    assert labelled(honoured) == {"a": 2, "b": 2}


def test_node_affinity_policy_ignore_counts_domains_the_pods_cannot_reach():
    spread = {**zone_spread("web", key=LABEL), "nodeAffinityPolicy": "Ignore"}
    only_ab = node_affinity([expr(LABEL, "In", "a", "b")])
    _, plan = run(replicas("web", 4, cpu="1", spread=[spread], affinity=only_ab), label_pools("a", "b", "c"))
    assert labelled(plan) == {"a": 1, "b": 1}
    assert len(plan.unschedulable) == 2


def test_preferred_node_affinity_does_not_narrow_the_spread_domains():
    prefer = node_affinity(preferred=[(10, [expr(wk.ZONE, "In", Z1, Z2)])])
    _, plan = run(
        replicas("web", 6, cpu="1", spread=[zone_spread("web")], affinity=prefer),
        [pool(requirements=[req(wk.ZONE, "In", *ZONES)])],
    )
    assert not plan.unschedulable
    assert zones_of(plan) == {Z1: 2, Z2: 2, Z3: 2}
