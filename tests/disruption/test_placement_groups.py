"""The disruption planner offers the node classes' placement groups as the provisioner does
(`DisruptionInput.placement_groups`), and a node class whose group could not be looked up makes no graceful
disruption of its nodes' pods (`DisruptionInput.placement_unresolved`, `core.disruption.state`)."""

from __future__ import annotations

from dataclasses import replace

from longshore.core import labels as wk
from longshore.core.disruption import planner
from longshore.core.disruption.decisions import DisruptionPlan, PassedOverKind
from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.model import Expiry
from longshore.core.placement_groups import PlacementGroup, launch_partition
from longshore.core.pods import Pod
from tests.builders import pod
from tests.disruption.test_planner import NOW, TYPES, a_pool, config, managed

HDFS = PlacementGroup("pg-00000000000000001", "hdfs", "partition", 3)
GROUPS = (("default", HDFS),)


def in_partition(name: str, partition: str, pods: tuple[Pod, ...] = (), **extra: object) -> ManagedNode:
    """A managed node of pool `default` in HDFS's `partition`, labelled as registration labels it."""
    base = managed(name, pods=pods, **extra)
    labels = {
        **dict(base.node.labels),
        wk.PLACEMENT_GROUP_ID: HDFS.group_id,
        wk.PLACEMENT_GROUP_PARTITION: partition,
    }
    return replace(base, node=replace(base.node, labels=tuple(sorted(labels.items()))))


def pinned(name: str, partition: str, cpu: str = "1") -> Pod:
    return pod(name, cpu=cpu, node_selector={wk.PLACEMENT_GROUP_PARTITION: partition})


def run(*nodes: ManagedNode, after: int | None = None, **extra: object) -> DisruptionPlan:
    inp = DisruptionInput(
        now=NOW,
        config=config(a_pool(policy="WhenEmptyOrUnderutilized", after=after)),
        nodes=nodes,
        catalog=TYPES,
        **extra,
    )  # type: ignore[arg-type]
    return planner.plan(inp)


def test_a_drift_replacement_is_narrowed_to_the_partition_its_pod_selects() -> None:
    stale = in_partition("a", "2", pods=(pinned("db", "2"),), nodepool_hash="v1-stale")
    (decision,) = run(stale, placement_groups=GROUPS).decisions
    (claim,) = decision.replacements
    assert launch_partition(claim.requirements, HDFS) == 2
    assert dict(claim.labels)[wk.PLACEMENT_GROUP_ID] == HDFS.group_id


def test_a_pod_asking_for_a_partition_the_group_lacks_gets_no_replacement_with_the_group_known() -> None:
    stale = in_partition("a", "5", pods=(pinned("db", "5"),), nodepool_hash="v1-stale")
    open_key = run(stale)  # no group in the input: the key is open, so a replacement is planned
    assert [d.reason for d in open_key.decisions] == ["drifted"]
    known = run(stale, placement_groups=GROUPS)
    assert known.decisions == ()
    assert "would have nowhere to go" in (known.reason_for("a") or "")


def test_an_unresolved_group_keeps_drift_and_consolidation_off_its_nodes() -> None:
    stale = in_partition("a", "2", pods=(pinned("db", "2"),), nodepool_hash="v1-stale")
    oversized = in_partition(
        "b", "1", pods=(pinned("small", "1", cpu="100m"),), type_name="m5.2xlarge", price=0.384
    )
    result = run(stale, oversized, after=0, placement_unresolved=frozenset({"default"}))
    assert result.decisions == ()
    why = "the placement group of node class default could not be looked up"
    assert why in (result.reason_for("a") or "") and (result.reason_for("a") or "").startswith("drifted (")
    assert (result.reason_for("b") or "").startswith(why)
    assert {p.kind for p in result.passed_over} == {PassedOverKind.BLOCKED}


def test_an_unresolved_group_still_lets_an_empty_node_go_and_offers_no_replacement_in_its_pools() -> None:
    empty = in_partition("e", "1")
    assert [
        d.node_names for d in run(empty, after=0, placement_unresolved=frozenset({"default"})).decisions
    ] == [("e",)]
    old = in_partition("old", "1", pods=(pinned("db", "1"),), created=NOW - 800 * 3600.0)
    forceful = replace(a_pool(after=None), expiry=Expiry(720 * 3600, forceful=True))
    inp = DisruptionInput(
        now=NOW,
        config=config(forceful),
        nodes=(old,),
        catalog=TYPES,
        placement_unresolved=frozenset({"default"}),
    )
    (decision,) = planner.plan(inp).decisions  # forceful expiry goes ahead, as it does past every guard
    assert decision.reason == "expired" and decision.replacements == ()
