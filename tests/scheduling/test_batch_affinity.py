"""Required pod affinity to pods pending in the same batch (#13): the followers go where the targets go."""

from __future__ import annotations

from longshore.core import labels as wk
from longshore.core.scheduling import Plan
from tests.builders import pod, pod_affinity, pool, replicas, req
from tests.scheduling.test_constraints import ZONES, run

THREE = [pool(requirements=[req(wk.ZONE, "In", *ZONES)])]


def zones(plan: Plan, *names: str) -> set[str]:
    keys = {f"default/{name}" for name in names}
    return {c.zone for c in plan.new_claims for k in c.pods if k in keys}


def test_followers_join_a_pending_target_in_one_zone():
    # "follower" sorts before "target": the followers wait until the target has its zone
    followers = replicas("follower", 3, cpu="100m", affinity=pod_affinity("target"))
    _, plan = run([*followers, pod("target", cpu="100m", labels={"app": "target"})], THREE)
    assert not plan.unschedulable
    assert len(zones(plan, "target", "follower-0", "follower-1", "follower-2")) == 1


def test_followers_join_a_pending_target_held_to_one_zone_by_its_node_selector():
    followers = replicas("follower", 3, cpu="100m", affinity=pod_affinity("target"))
    target = pod("target", cpu="100m", labels={"app": "target"}, node_selector={wk.ZONE: ZONES[1]})
    _, plan = run([*followers, target], THREE)
    assert not plan.unschedulable
    assert zones(plan, "target", "follower-0", "follower-1", "follower-2") == {ZONES[1]}


def test_affinity_to_a_pod_nobody_runs_or_plans_stays_unschedulable():
    _, plan = run(list(replicas("follower", 2, cpu="100m", affinity=pod_affinity("nobody"))), THREE)
    assert {key for key, _ in plan.unschedulable} == {"default/follower-0", "default/follower-1"}
    assert all("no such pod is running" in reason for _, reason in plan.unschedulable)


def test_hostname_self_affinity_puts_the_whole_batch_on_one_node_or_none():
    def batch(count: int) -> list[object]:
        return list(replicas("web", count, cpu="1", affinity=pod_affinity("web", wk.HOSTNAME)))

    _, plan = run(batch(10))  # smaller types cost less per pod, but the ten must share one node
    assert not plan.unschedulable
    assert [len(c.pods) for c in plan.new_claims] == [10]
    _, plan = run(batch(40))  # more than the largest type holds: never spread over several nodes
    assert not plan.new_claims
    assert all("must share one node" in reason for _, reason in plan.unschedulable)
