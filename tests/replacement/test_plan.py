"""What a replacement is planned as, on in-memory stores and a fake cluster (no launch).

Matrix: only the pods the drain evicts are planned for; the node's own pool comes first even when another
pool weighs more; a pool limit moves the pods to the other pools by weight; a node whose pool left the config
is replaced from the others; zone spread sees the rest of the workload, so the replacement lands in the
node's zone; an empty node is replaced by the pool's cheapest type for rotation, expiry and drift only;
pods nothing can hold are named in the error; the id generations after a replacement came and went.
"""

from __future__ import annotations

import pytest

from longshore.core.claims import NodeClaim
from longshore.core.model import ClusterConfig
from longshore.ports.workflow import ReplacementUnavailableError
from longshore.services.replacement import current_claim_id, replacement_claim_id
from longshore.services.replacement_plan import CAPACITY_PRESERVING_REASONS
from tests.builders import zone_spread
from tests.replacement.conftest import (
    NOW,
    ZONES,
    Planning,
    catalog,
    cluster_config,
    node_manifest,
    old_claim,
    pool,
    running_pod,
)


def planning(
    config: ClusterConfig | None = None, *, node_pool: str = "general"
) -> tuple[Planning, NodeClaim]:
    world = Planning(config or cluster_config())
    node = node_manifest("old", "i-0000000000000old1", pool_name=node_pool, config=world.config)
    world.cluster.add_node(node)
    claim = old_claim(node)
    world.store.put(claim)
    return world, claim


def test_only_the_pods_the_drain_evicts_are_planned_for() -> None:
    world, claim = planning()
    add = world.cluster.add_pod
    add(running_pod("web-0", "old", cpu="1"))
    add(running_pod("logs-x1", "old", cpu="6", owner=("DaemonSet", "logs")))
    add(running_pod("static-old", "old", cpu="6", owner=("Node", "old")))
    add(
        running_pod(
            "sidecar-0",
            "old",
            cpu="6",
            tolerations=[{"key": "karpenter.sh/disrupted", "operator": "Exists", "effect": "NoSchedule"}],
        )
    )
    finished = running_pod("job-0", "old", cpu="6")
    finished["status"]["phase"] = "Succeeded"
    add(finished)
    add(running_pod("elsewhere-0", "other", cpu="6"))

    plan = world.launcher().plan(claim, world.cluster.get_node("old"), "rotation", NOW)

    assert plan.moved == ("default/web-0",)
    [replacement] = plan.claims
    assert replacement.pods == ("default/web-0",)
    assert replacement.instance_type == "c5.large"  # 1 cpu: the smallest type, not one for 6 more cpu


def test_the_own_pool_comes_first_even_when_another_pool_weighs_more() -> None:
    world, claim = planning(cluster_config(pool("general"), pool("preferred", weight=100)))
    world.cluster.add_pod(running_pod("web-0", "old"))

    plan = world.launcher().plan(claim, world.cluster.get_node("old"), "drifted", NOW)

    assert [c.nodepool for c in plan.claims] == ["general"]


def test_a_pool_limit_moves_the_pods_to_the_other_pools_by_weight() -> None:
    # The node being replaced (m5.large, 2 cpu) still counts against the limit of 5 cpu: the own pool can add a
    # 2-cpu node for one pod, not a 4-cpu one for all three. One node of the heaviest other pool beats a split.
    config = cluster_config(
        pool("general", limits={"cpu": "5"}),
        pool("light", weight=5),
        pool("heavy", weight=50, types=("m5.xlarge", "m5.2xlarge")),
    )
    world, claim = planning(config)
    for index in range(3):
        world.cluster.add_pod(running_pod(f"web-{index}", "old", cpu="1"))

    plan = world.launcher().plan(claim, world.cluster.get_node("old"), "expired", NOW)

    assert [(c.nodepool, c.instance_type) for c in plan.claims] == [("heavy", "m5.xlarge")]
    assert plan.unschedulable == () and set(plan.claims[0].pods) == set(plan.moved)


def test_a_node_whose_pool_left_the_config_is_replaced_from_the_others() -> None:
    world, claim = planning(cluster_config(pool("b", weight=1), pool("a", weight=9)), node_pool="retired")
    world.cluster.add_pod(running_pod("web-0", "old"))

    plan = world.launcher().plan(claim, world.cluster.get_node("old"), "drifted", NOW)

    assert [c.nodepool for c in plan.claims] == ["a"]


def test_zone_spread_sees_the_rest_of_the_workload_so_the_replacement_takes_the_nodes_zone() -> None:
    world = Planning(cluster_config())
    spread = [zone_spread("web", max_skew=1)]
    names = {"us-east-1a": "node-a", "us-east-1b": "old", "us-east-1c": "node-c"}
    for index, zone in enumerate(ZONES):
        node = node_manifest(names[zone], f"i-00000000000000{index:03d}", zone=zone, instance_type="c5.large")
        world.cluster.add_node(node)
        world.cluster.add_pod(running_pod(f"web-{index}", names[zone], labels={"app": "web"}, spread=spread))
    claim = old_claim(world.cluster.get_node("old") or {})

    plan = world.launcher().plan(claim, world.cluster.get_node("old"), "rotation", NOW)

    [replacement] = plan.claims
    assert replacement.pods == ("default/web-1",)
    assert replacement.zone == "us-east-1b"  # a and c each run one web pod: b is the only zone within skew


@pytest.mark.parametrize("reason", sorted(CAPACITY_PRESERVING_REASONS))
def test_an_empty_node_is_replaced_by_the_pools_cheapest_type(reason: str) -> None:
    world, claim = planning(cluster_config(pool("general", types=("m5.large", "r5.large", "c5.large"))))
    world.cluster.add_pod(running_pod("logs-x1", "old", owner=("DaemonSet", "logs")))

    plan = world.launcher().plan(claim, world.cluster.get_node("old"), reason, NOW)

    cheapest = min(
        (o.price, it.name)
        for it in catalog().instance_types
        if it.name in ("m5.large", "r5.large", "c5.large")
        for o in it.offerings
        if o.capacity_type == "on-demand" and o.zone in ZONES
    )[1]
    assert plan.empty and [(c.nodepool, c.instance_type) for c in plan.claims] == [("general", cheapest)]


@pytest.mark.parametrize("reason", ["rebalance", "empty", "underutilized", "manual", "interruption"])
def test_an_empty_node_gets_no_replacement_for_other_reasons_and_the_error_says_why(reason: str) -> None:
    world, claim = planning()

    with pytest.raises(ReplacementUnavailableError) as raised:
        world.launcher().launch_replacement(claim, world.cluster.get_node("old"), reason, NOW)

    message = str(raised.value)
    assert "node old" in message and "runs no pods" in message and reason in message
    assert '"replace": false' in message
    assert [c.id for c in world.store.list()] == ["general-old"]


def test_pods_no_pool_can_hold_are_named_with_the_engines_reason() -> None:
    world, claim = planning()
    world.cluster.add_pod(running_pod("huge-0", "old", cpu="64"))
    world.cluster.add_pod(running_pod("huge-1", "old", cpu="64"))

    with pytest.raises(ReplacementUnavailableError) as raised:
        world.launcher().launch_replacement(claim, world.cluster.get_node("old"), "drifted", NOW)

    message = str(raised.value)
    assert "pods default/huge-0, default/huge-1" in message and "pool general" in message and "cpu" in message


def test_a_node_known_only_by_its_claim_is_planned_from_the_claims_node_name() -> None:
    world, claim = planning()
    world.cluster.add_pod(running_pod("web-0", "old"))

    plan = world.launcher().plan(claim, None, "rotation", NOW)

    assert plan.moved == ("default/web-0",) and [c.nodepool for c in plan.claims] == ["general"]


def test_the_claim_id_is_deterministic_and_generations_follow_deleted_replacements() -> None:
    base = replacement_claim_id("general-old", "rotation")
    assert (
        base
        == replacement_claim_id("general-old", "rotation")
        != replacement_claim_id("general-old", "expired")
    )
    assert base != replacement_claim_id("general-other", "rotation")
    gone = NodeClaim(id=base, nodepool="general", node_class="default", state="deleting")
    assert current_claim_id(base, {}) == base
    assert current_claim_id(base, {base: gone}) == f"{base}-g2"
    launching = NodeClaim(id=f"{base}-g2", nodepool="general", node_class="default", state="launching")
    assert current_claim_id(base, {base: gone, launching.id: launching}) == f"{base}-g2"
