"""The disruption planner: emptiness, expiry, drift and consolidation decisions, guards and budgets.

Every test builds a small cluster snapshot, runs one pass and asserts what is decided and what each node
left alone is told. The packing engine is real, so moves are checked against actual placement.
"""

from __future__ import annotations

from dataclasses import replace

from longshore.core import labels as wk
from longshore.core.disruption import planner
from longshore.core.disruption.decisions import Decision, DisruptionPlan, PassedOverKind
from longshore.core.disruption.drift import nodepool_hash
from longshore.core.disruption.state import DisruptionInput, ManagedNode, PdbView
from longshore.core.model import Budget, ClusterConfig, Disruption, Expiry, NodePool, Origin
from longshore.core.pods import LabelSelector, Pod
from tests.builders import catalog, instance_type, node, node_class, pod, pool, req

NOW = 1_800_000_000.0
HOUR = 3600.0
TYPES = catalog(
    instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096),
    instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.192),
    instance_type("m5.2xlarge", vcpus=8, memory_gib=32, price=0.384),
)


def a_pool(
    name: str = "default",
    *,
    policy: str = "WhenEmptyOrUnderutilized",
    after: int | None = 0,
    budgets: tuple[Budget, ...] = (Budget(nodes="100%"),),
    expiry: Expiry | None = None,
) -> NodePool:
    base = pool(name)
    return replace(
        base,
        disruption=Disruption(policy, after, budgets),  # type: ignore[arg-type]
        expiry=expiry or Expiry(after_seconds=None),
    )


def config(*pools: NodePool) -> ClusterConfig:
    return ClusterConfig("demo", "us-east-1", "1.31", tuple(pools), (node_class(),))


def managed(
    name: str,
    *,
    pods: tuple[Pod, ...] = (),
    type_name: str = "m5.xlarge",
    price: float = 0.192,
    created: float = NOW - 2 * HOUR,
    idle_since: float | None = NOW - HOUR,
    pool_name: str = "default",
    capacity_type: str = "on-demand",
    allocatable: dict[str, str] | None = None,
    **extra: object,
) -> ManagedNode:
    bound = tuple(replace(p, node_name=name, phase="Running") for p in pods)
    alloc = (
        allocatable
        or {
            "m5.large": {"cpu": "1930m", "memory": "7Gi", "pods": "29"},
            "m5.xlarge": {"cpu": "3920m", "memory": "14Gi", "pods": "58"},
            "m5.2xlarge": {"cpu": "7910m", "memory": "29Gi", "pods": "58"},
        }[type_name]
    )
    existing = node(
        name,
        allocatable=alloc,
        instance_type_name=type_name,
        pool_name=pool_name,
        pods=bound,
        labels={wk.CAPACITY_TYPE: capacity_type},
    )
    fields: dict[str, object] = {"initialized_at": created + 60, "last_pod_event_at": idle_since, **extra}
    return ManagedNode(
        node=existing,
        instance_id=f"i-{name}",
        nodepool=pool_name,
        instance_type=type_name,
        zone="us-east-1a",
        capacity_type=capacity_type,
        price=price,
        created_at=created,
        **fields,
    )  # type: ignore[arg-type]


def run(*nodes: ManagedNode, pools: tuple[NodePool, ...] = (), **extra: object) -> DisruptionPlan:
    inp = DisruptionInput(
        now=NOW, config=config(*(pools or (a_pool(),))), nodes=nodes, catalog=TYPES, **extra
    )  # type: ignore[arg-type]
    return planner.plan(inp)


# --- emptiness -------------------------------------------------------------------------------------------


def test_empty_nodes_past_consolidate_after_are_removed_together() -> None:
    result = run(managed("a"), managed("b"), pools=(a_pool(policy="WhenEmpty", after=60),))
    assert [d.reason for d in result.decisions] == ["empty"]
    assert set(result.decisions[0].node_names) == {"a", "b"}
    assert result.decisions[0].savings_per_hour == 0.384


def test_recently_emptied_node_waits_and_says_how_long() -> None:
    result = run(managed("a", idle_since=NOW - 30), pools=(a_pool(policy="WhenEmpty", after=60),))
    assert result.decisions == ()
    assert result.reason_for("a") == "empty for 30s of the 60s pool default waits"


def test_consolidate_after_never_keeps_empty_nodes() -> None:
    result = run(managed("a"), pools=(a_pool(policy="WhenEmpty", after=None),))
    assert result.decisions == ()
    assert "never removes empty nodes" in (result.reason_for("a") or "")
    assert [p.kind for p in result.passed_over] == [PassedOverKind.UNCONSOLIDATABLE]


def test_passed_over_kinds() -> None:
    waiting = managed("waiting", idle_since=NOW - 30)
    pinned = managed("pinned", annotations=(("karpenter.sh/do-not-disrupt", "true"),))
    result = run(waiting, pinned, pools=(a_pool(after=60),))
    kinds = {p.node: p.kind for p in result.passed_over}
    assert kinds == {"waiting": PassedOverKind.TRANSIENT, "pinned": PassedOverKind.BLOCKED}
    alone = managed("alone", type_name="m5.large", price=0.096, pods=(pod("w", cpu="1500m", memory="6Gi"),))
    (passed,) = run(alone).passed_over
    assert passed.kind is PassedOverKind.UNCONSOLIDATABLE


def test_budget_limits_how_many_empty_nodes_go_at_once() -> None:
    nodes = [managed(f"n{i}") for i in range(10)]
    result = run(*nodes, pools=(a_pool(policy="WhenEmpty", after=60, budgets=(Budget(nodes="20%"),)),))
    assert len(result.decisions[0].nodes) == 2
    skipped = [p for p in result.passed_over if "budget nodes=20%" in p.reason]
    assert len(skipped) == 8


def test_node_do_not_disrupt_annotation_protects_empty_node() -> None:
    result = run(
        managed("a", annotations=(("karpenter.sh/do-not-disrupt", "true"),)),
        pools=(a_pool(policy="WhenEmpty", after=0),),
    )
    assert result.decisions == ()
    assert result.reason_for("a") == "node has karpenter.sh/do-not-disrupt=true"


def test_daemonset_pods_do_not_make_a_node_busy() -> None:
    ds = pod("agent", cpu="100m", owner=("DaemonSet", "agent"))
    result = run(managed("a", pods=(ds,)), pools=(a_pool(policy="WhenEmpty", after=0),))
    assert result.decisions[0].node_names == ("a",)


# --- expiry ----------------------------------------------------------------------------------------------


def test_v1_expiry_is_forceful_and_ignores_do_not_disrupt() -> None:
    protected = pod("db", cpu="500m", **{})
    protected = replace(protected, annotations=(("karpenter.sh/do-not-disrupt", "true"),))
    old = managed("old", pods=(protected,), created=NOW - 800 * HOUR)
    result = run(old, pools=(a_pool(expiry=Expiry(720 * 3600, forceful=True)),))
    decision = result.decisions[0]
    assert decision.reason == "expired" and decision.forceful
    assert decision.replacements, "its pod needs a replacement node"
    assert "forceful" in decision.explanation


def test_v1alpha5_expiry_is_graceful_and_waits_for_do_not_evict() -> None:
    protected = replace(pod("db", cpu="500m"), annotations=(("karpenter.sh/do-not-evict", "true"),))
    old = managed("old", pods=(protected,), created=NOW - 800 * HOUR)
    legacy = replace(
        a_pool(expiry=Expiry(720 * 3600, forceful=False)),
        origin=Origin("karpenter.sh/v1alpha5", "Provisioner"),
    )
    result = run(old, pools=(legacy,))
    assert result.decisions == ()
    assert (
        result.reason_for("old") == "expired but waiting: pod default/db has karpenter.sh/do-not-evict=true"
    )


# --- decisions of one pass account for each other (#12 path 4) --------------------------------------------


def test_expiry_and_emptiness_in_one_pass_never_remove_the_node_that_takes_the_pods() -> None:
    # 31-day scenario: the old node expires with no replacement because its pod fits on the empty node,
    # which emptiness would remove in the same pass; every pod was pending for about 30 s.
    old = managed("old", pods=(pod("web", cpu="1"),), created=NOW - 800 * HOUR)
    spare = managed("spare", created=NOW - HOUR, idle_since=NOW - HOUR)
    result = run(old, spare, pools=(a_pool(after=0, expiry=Expiry(720 * 3600, forceful=True)),))
    assert [d.node_names for d in result.decisions] == [("old",)]
    assert result.decisions[0].replacements == (), "the pod fits on the spare node"
    assert result.reason_for("spare") == ("empty, but it takes pods evicted from old in this pass; next pass")


def test_two_decisions_in_one_pass_do_not_count_on_the_same_free_capacity() -> None:
    # Both expired nodes' pods fit on the one spare m5.xlarge only one at a time.
    a = managed("a", pods=(pod("a", cpu="3"),), created=NOW - 800 * HOUR)
    b = managed("b", pods=(pod("b", cpu="3"),), created=NOW - 790 * HOUR)
    spare = managed("spare", pods=(pod("small", cpu="100m"),), created=NOW - HOUR)
    result = run(a, b, spare, pools=(a_pool(after=None, expiry=Expiry(720 * 3600, forceful=True)),))
    first, second = result.decisions
    assert first.node_names == ("a",) and first.replacements == ()
    assert second.node_names == ("b",) and len(second.replacements) == 1


def test_pods_are_never_moved_onto_a_node_that_is_not_initialized_yet() -> None:
    # Chaos seeds 52 and 81: a booting node (a re-adopted replacement) counted as room for a drifted node's
    # pods, which were evicted and waited, unschedulable, for it. Karpenter's simulation refuses the same.
    old = managed("old", pods=(pod("web", cpu="1"),), nodepool_hash="stale")
    booting = managed("booting", created=NOW - 60, idle_since=None, initialized_at=None)
    booting = replace(booting, node=replace(booting.node, initialized=False))
    result = run(old, booting, pools=(a_pool(after=None),))
    assert result.decisions == ()
    assert (result.reason_for("old") or "").endswith(
        "pod default/web would wait for node booting, not initialized yet"
    )
    # once it is initialized, the same move is decided (no replacement needed)
    ready = replace(booting, node=replace(booting.node, initialized=True), initialized_at=NOW - 1)
    [drift] = run(old, ready, pools=(a_pool(after=None),)).decisions
    assert drift.node_names == ("old",) and drift.replacements == ()


def test_a_drifted_receiver_waits_for_the_next_pass() -> None:
    old = managed("old", pods=(pod("web", cpu="1"),), created=NOW - 800 * HOUR)
    drifted = managed("drifted", pods=(pod("x", cpu="100m"),), created=NOW - HOUR, nodepool_hash="stale")
    result = run(old, drifted, pools=(a_pool(after=None, expiry=Expiry(720 * 3600, forceful=True)),))
    assert [d.node_names for d in result.decisions] == [("old",)]
    assert (result.reason_for("drifted") or "").endswith(
        "it takes pods evicted from old in this pass; next pass"
    )


# --- drift -----------------------------------------------------------------------------------------------


def test_changed_pool_drifts_nodes_and_plans_replacements_first() -> None:
    current = a_pool(policy="WhenEmpty", after=None)
    stale = managed("a", pods=(pod("web", cpu="1"),), nodepool_hash="v1-stale")
    fresh = managed("b", pods=(pod("api", cpu="3"),), nodepool_hash=nodepool_hash(current))
    result = run(stale, fresh, pools=(current,))
    assert [(d.reason, d.node_names) for d in result.decisions] == [("drifted", ("a",))]
    assert result.decisions[0].explanation == "pool default changed since launch"
    assert result.reason_for("b") == "no cheaper option"


def test_drift_respects_a_pdb_that_allows_nothing() -> None:
    current = a_pool(policy="WhenEmpty", after=None)
    web = pod("web", cpu="1", labels={"app": "web"})
    stale = managed("a", pods=(web,), nodepool_hash="v1-stale")
    pdb = PdbView("default", "web", LabelSelector(match_labels=(("app", "web"),)), disruptions_allowed=0)
    result = run(stale, pools=(current,), pdbs=(pdb,))
    assert result.decisions == ()
    assert result.reason_for("a") == (
        "drifted (pool default changed since launch) but PDB default/web allows no "
        "disruption now (it protects pod default/web)"
    )


def test_requirements_drift_when_labels_no_longer_admitted() -> None:
    only_large = replace(
        a_pool(policy="WhenEmpty", after=None), requirements=(req(wk.INSTANCE_TYPE, "In", "m5.large"),)
    )
    result = run(managed("a", pods=(pod("web", cpu="1"),)), pools=(only_large,))
    assert result.decisions[0].reason == "drifted"
    assert "labels no longer meet" in result.decisions[0].explanation


def test_drift_budget_freeze_window() -> None:
    freeze = Budget(nodes="0", schedule="* * * * *", duration_seconds=3600, reasons=("Drifted",))
    current = a_pool(policy="WhenEmpty", after=None, budgets=(Budget(nodes="100%"), freeze))
    result = run(managed("a", pods=(pod("web", cpu="1"),), nodepool_hash="v1-stale"), pools=(current,))
    assert result.decisions == ()
    assert "allows 0 more Drifted" in (result.reason_for("a") or "")


# --- consolidation ---------------------------------------------------------------------------------------


def test_underutilized_nodes_are_merged_when_pods_fit_elsewhere() -> None:
    a = managed("a", pods=(pod("w1", cpu="1"),))
    b = managed("b", pods=(pod("w2", cpu="1"),))
    result = run(a, b)
    decision = result.decisions[0]
    assert decision.reason == "underutilized"
    assert len(decision.nodes) == 1 and decision.replacements == ()
    assert decision.savings_per_hour == 0.192
    assert decision.validate_after == NOW + planner.VALIDATION_DELAY_S


def test_expensive_node_is_replaced_with_a_cheaper_type() -> None:
    big = managed("big", type_name="m5.2xlarge", price=0.384, pods=(pod("w1", cpu="1", memory="2Gi"),))
    result = run(big)
    decision = result.decisions[0]
    assert decision.reason == "underutilized"
    assert [c.instance_type for c in decision.replacements] == ["m5.large"]
    assert decision.savings_per_hour == round(0.384 - 0.096, 6)


def test_never_replaced_with_the_same_type() -> None:
    result = run(
        managed("only", type_name="m5.large", price=0.096, pods=(pod("w1", cpu="1500m", memory="6Gi"),))
    )
    assert result.decisions == ()
    assert result.reason_for("only") in {
        "the cheapest replacement is the same type (m5.large)",
        "no cheaper option: replacements cost $0.0960/h vs $0.0960/h now",
    }


def test_do_not_disrupt_pod_blocks_consolidation_with_its_name() -> None:
    guarded = replace(pod("batch", cpu="1"), annotations=(("karpenter.sh/do-not-disrupt", "true"),))
    a = managed("a", pods=(guarded,))
    b = managed("b", pods=(pod("w2", cpu="1"),))
    result = run(a, b)
    assert result.decisions[0].node_names == ("b",)
    assert result.reason_for("a") == "pod default/batch has karpenter.sh/do-not-disrupt=true"


def test_pods_recently_changed_delay_consolidation() -> None:
    result = run(managed("a", pods=(pod("w", cpu="1"),), idle_since=NOW - 10), pools=(a_pool(after=60),))
    assert result.decisions == ()
    assert result.reason_for("a") == "pods changed 10s ago; pool waits 60s"


def test_revalidation_rejects_a_move_when_the_cluster_changed() -> None:
    a = managed("a", pods=(pod("w1", cpu="1"),))
    b = managed("b", pods=(pod("w2", cpu="1"),))
    decision = run(a, b).decisions[0]
    kept = "a" if decision.node_names == ("b",) else "b"
    # Meanwhile the node that would receive the pods filled up.
    filler = tuple(pod(f"f{i}", cpu="900m") for i in range(3))
    busy = managed(kept, pods=(*filler, pod("w0", cpu="1")))
    fresh = DisruptionInput(
        now=NOW + 15, config=config(a_pool()), nodes=(busy, *decision.nodes), catalog=TYPES
    )
    verdict = planner.revalidate(decision, fresh)
    assert isinstance(verdict, str)
    still = DisruptionInput(now=NOW + 15, config=config(a_pool()), nodes=(a, b), catalog=TYPES)
    assert isinstance(planner.revalidate(decision, still), Decision)


def test_unmanaged_nodes_are_valid_destinations_but_never_candidates() -> None:
    other = node("managed-elsewhere", pool_name=None)
    result = run(managed("a", pods=(pod("w", cpu="1"),)), unmanaged=(other,))
    assert result.decisions[0].node_names == ("a",) and result.decisions[0].replacements == ()


def test_every_node_left_alone_gets_a_reason() -> None:
    nodes = (
        managed("a", pods=(pod("w1", cpu="3"),)),
        managed("b", pods=(pod("w2", cpu="3"),)),
        managed("c", disrupting=True),
        managed("d", initialized_at=None, last_pod_event_at=None),
    )
    result = run(*nodes)
    decided = {n for d in result.decisions for n in d.node_names}
    for name in "abcd":
        assert name in decided or result.reason_for(name), name


# --- CapacityBuffers ---------------------------------------------------------------------------------------


def _virtual(count: int, cpu: str = "1") -> tuple[Pod, ...]:
    from longshore.core.buffers import CapacityBuffer, virtual_pods

    return virtual_pods(CapacityBuffer("default", "warm", pod_template="t"), pod("tpl", cpu=cpu), count)


def test_a_node_holding_a_buffer_is_not_empty() -> None:
    result = run(managed("a"), pools=(a_pool(policy="WhenEmpty", after=60),), buffers=_virtual(2))
    assert result.decisions == ()
    assert result.reason_for("a") == "holds capacity for CapacityBuffer default/warm"


def test_the_empty_node_not_needed_for_the_buffer_goes() -> None:
    result = run(
        managed("a"), managed("b"), pools=(a_pool(policy="WhenEmpty", after=60),), buffers=_virtual(2)
    )
    assert [d.reason for d in result.decisions] == ["empty"]
    assert len(result.decisions[0].node_names) == 1


def test_consolidation_keeps_room_for_the_buffer() -> None:
    # Two xlarge nodes each with 1 CPU of real pods: without a buffer one would go (its pod moves);
    # with a 3-CPU buffer there is no room on the other node for both the pod and the buffer.
    nodes = (managed("a", pods=(pod("p1"),)), managed("b", pods=(pod("p2"),)))
    assert [d.reason.value for d in run(*nodes).decisions] == ["underutilized"]
    held = run(*nodes, buffers=_virtual(3))
    assert held.decisions == ()
