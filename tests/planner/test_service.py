"""The planner service end to end on virtual time: snapshots of a stateful fake cluster, the real planner,
and the real disruption workflow run by the ASL executor. Outcomes are read from the cluster, the claim
store, the executions, the Events and the metrics."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from longshore.adapters.memory import MemoryLease
from longshore.core import labels as wk
from longshore.core import telemetry
from longshore.core.disruption.drift import nodepool_hash
from longshore.core.model import Budget
from longshore.services.disruption_invocation import LEASE_NAME, LEASE_TTL_S, run_invocation
from tests.builders import req
from tests.planner.fakes import PlannerWorld, a_pool, cluster_config
from tests.workflow.fakes import START

DISRUPTED = ("karpenter.sh/disrupted", "NoSchedule")


@pytest.fixture(params=["warm", "cold"], autouse=True)
def planner_containers(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here runs twice: in one warm container, and with a cold start before every pass that does
    not hold a consolidation awaiting re-validation. Both must decide the same (issue #12): all state a
    decision needs lives outside the container."""
    PlannerWorld.containers = request.param
    try:
        yield request.param
    finally:
        PlannerWorld.containers = "warm"


def test_an_empty_node_is_removed_after_consolidate_after_and_its_neighbour_stays() -> None:
    w = PlannerWorld(cluster_config(a_pool(policy="WhenEmpty", after=60)))
    w.add_node("busy")
    w.add_node("idle")
    w.add_pod("web", "busy", cpu="1")
    w.add_pod("old", "idle", cpu="1")
    w.run(20)
    w.cluster.delete_pod("default", "old", grace_period_seconds=30)
    deleted_at = w.clock.now()

    w.run(300)

    assert "idle" not in w.cluster.nodes and w.world.instances.state("i-idle") == "terminated"
    (tainted_at,) = w.cluster.times("taint", "idle")
    assert (
        60 <= tainted_at - deleted_at <= 75
    )  # consolidateAfter 60 s from the pod's deletion, passes every 10 s
    assert "busy" in w.cluster.nodes and w.cluster.taints("busy") == []
    assert w.metrics.total(telemetry.DISRUPTION_DECISIONS, Reason="empty") == 1
    assert w.metrics.total(telemetry.NODES_DISRUPTED, Reason="empty") == 1
    assert [e.reason for e in w.events("idle") if e.reason == "Disrupting"] == ["Disrupting"]


@pytest.mark.parametrize("containers", ["warm", "cold"])
def test_the_consolidate_after_clock_survives_cold_starts(containers: str) -> None:
    # Issue #12: a cold container removed a node 20-30 s after its last pod left under consolidateAfter 600 s.
    # The clock lives on the claim, so every pass from a fresh container decides what a warm one would.
    w = PlannerWorld(cluster_config(a_pool(policy="WhenEmpty", after=600)))
    w.add_node("idle")
    w.add_pod("old", "idle", cpu="1")

    def passes(seconds: float) -> None:
        end = w.clock.now() + seconds
        while w.clock.now() < end:
            if containers == "cold":
                w.service = w.new_service()
            w.run_pass()
            w.clock.advance(10)

    passes(30)
    w.cluster.delete_pod("default", "old", grace_period_seconds=0)  # gone before any pass sees it going
    deleted_at = w.clock.now()
    passes(900)

    (tainted_at,) = w.cluster.times("taint", "idle")
    assert 600 <= tainted_at - deleted_at <= 615


def test_consolidation_waits_fifteen_seconds_and_revalidates_before_acting() -> None:
    w = PlannerWorld()
    w.add_node("a")
    w.add_node("b")
    w.add_pod("w1", "a", cpu="1")
    w.add_pod("w2", "b", cpu="1")

    first = w.run_pass()
    assert first.acted == () and first.pending is not None
    chosen = first.pending.node_names
    w.clock.advance(10)
    assert w.run_pass().acted == ()  # 10 s later: not yet
    w.clock.advance(10)
    acted = w.run_pass().acted

    assert [(a.decision.reason, a.decision.node_names, a.outcome) for a in acted] == [
        ("underutilized", chosen, "started")
    ]
    assert w.metrics.total(telemetry.SAVINGS_PER_HOUR, Reason="underutilized") == 0.192
    w.run(200)
    assert chosen[0] not in w.cluster.nodes


def test_a_consolidation_that_no_longer_holds_is_dropped_with_its_reason() -> None:
    w = PlannerWorld()
    w.add_node("a")
    w.add_node("b")
    w.add_pod("w1", "a", cpu="1")
    w.add_pod("w2", "b", cpu="1")
    pending = w.run_pass().pending
    assert pending is not None
    keeper = "a" if pending.node_names == ("b",) else "b"
    for index in range(3):  # the node that was to take the pods fills up
        w.add_pod(f"filler-{index}", keeper, cpu="900m")
    w.clock.advance(20)

    report = w.run_pass()

    assert report.acted == () and [d.node_names for d, _ in report.dropped] == [pending.node_names]
    assert w.simulator.executions() == ()
    (event,) = w.events(pending.node_names[0], "ConsolidationRejected")
    assert event.message.startswith(f"Consolidation rejected: delete [{pending.node_names[0]}], reason: ")
    assert event.message.endswith("(savings: $0.1920/h)")


def test_drift_launches_the_replacement_first_and_taints_only_when_it_is_up() -> None:
    current = a_pool(policy="WhenEmpty", after=None, requirements=())
    w = PlannerWorld(cluster_config(current))
    w.add_node("old", annotations={"karpenter.sh/nodepool-hash": "v1-stale"})
    w.add_node("fresh", annotations={"karpenter.sh/nodepool-hash": nodepool_hash(current)})
    w.add_pod("web", "old", cpu="3")
    w.add_pod("api", "fresh", cpu="3")

    w.run(400)

    (request,) = w.launcher.requests
    replacement = w.world.claims.get(request.claim.id)
    assert replacement is not None and replacement.initialized_at is not None
    assert replacement.nodepool_hash == nodepool_hash(current)  # so the replacement is not drifted itself
    (tainted_at,) = w.cluster.times("taint", "old")
    assert replacement.initialized_at <= tainted_at
    assert "old" not in w.cluster.nodes and "fresh" in w.cluster.nodes
    (execution,) = w.workflows.disruptions()
    assert execution.status == "SUCCEEDED" and execution.input["replace"] is True
    assert execution.output["replacement"]["claimId"] == request.claim.id
    assert w.metrics.total(telemetry.DISRUPTION_DECISIONS, Reason="drifted") == 1


def test_a_cold_planner_does_not_decide_a_surge_under_way_again_nor_drain_before_the_replacement() -> None:
    # Chaos seed 6: a cold pass re-decided the drifted node, counted the launching replacement as free room
    # and drained at once; its pods had nowhere to run until the replacement came up.
    current = a_pool(policy="WhenEmpty", after=None, requirements=())
    w = PlannerWorld(cluster_config(current))
    w.launcher.ready_after = 120
    w.add_node("old", annotations={"karpenter.sh/nodepool-hash": "v1-stale"})
    w.add_pod("web", "old", cpu="3")

    first = w.run_pass()
    assert [a.outcome for a in first.acted] == ["started"]
    for _ in range(40):  # every pass from a cold container
        w.clock.advance(10)
        w.service = w.new_service()
        w.run_pass()

    (request,) = w.launcher.requests
    assert request.claim.replaces == ("old",)
    (execution,) = w.workflows.disruptions()
    assert execution.status == "SUCCEEDED" and execution.input["replace"] is True
    replacement = w.world.claims.get(request.claim.id)
    assert replacement is not None and replacement.initialized_at is not None
    (tainted_at,) = w.cluster.times("taint", "old")
    assert replacement.initialized_at <= tainted_at


def test_a_surge_starts_the_termination_grace_period_at_the_taint_not_at_the_decision() -> None:
    current = a_pool(policy="WhenEmpty", after=None, requirements=(), grace=60)
    w = PlannerWorld(cluster_config(current))
    w.launcher.ready_after = 120  # the replacement takes longer than the pool's terminationGracePeriod
    w.add_node("old", annotations={"karpenter.sh/nodepool-hash": "v1-stale"})
    w.add_pod("web", "old", cpu="3")

    w.run(400)

    assert "old" not in w.cluster.nodes
    assert w.cluster.evicted == ["default/web"] and w.cluster.deleted == []  # evicted, not force-deleted
    (execution,) = w.workflows.disruptions()
    (tainted_at,) = w.cluster.times("taint", "old")
    assert execution.output["deadline"] == tainted_at + 60


def test_a_replacement_that_cannot_launch_abandons_the_decision_untouched() -> None:
    current = a_pool(policy="WhenEmpty", after=None)
    w = PlannerWorld(cluster_config(current))
    w.launcher.fail = True
    w.add_node("old", annotations={"karpenter.sh/nodepool-hash": "v1-stale"})
    w.add_pod("web", "old", cpu="3")

    report = w.run_pass()

    assert [(a.outcome, a.decision.reason) for a in report.acted] == [("abandoned", "drifted")]
    assert w.simulator.executions() == () and w.cluster.taints("old") == []
    (event,) = w.events("old", "DisruptionBlocked")
    assert "could not be launched: InsufficientInstanceCapacity" in event.message
    assert w.metrics.total(telemetry.DISRUPTION_DECISIONS) == 0


def test_several_replacements_are_all_initialized_before_any_node_is_tainted() -> None:
    only_xlarge = a_pool(
        policy="WhenEmpty", after=None, requirements=[req(wk.INSTANCE_TYPE, "In", "m5.xlarge")]
    )
    w = PlannerWorld(cluster_config(only_xlarge))
    w.add_node("big", type_name="m5.2xlarge")  # its labels no longer meet the pool: requirements drift
    w.add_pod("p1", "big", cpu="3")
    w.add_pod("p2", "big", cpu="3")
    w.launcher.ready_after = 90

    first = w.run_pass()
    assert [a.outcome for a in first.acted] == ["staged"] and len(first.acted[0].replacement_claims) == 2
    assert w.simulator.executions() == ()
    w.run(400)

    launched = [w.world.claims.get(r.claim.id) for r in w.launcher.requests]
    assert len(launched) == 2 and all(c is not None and c.initialized_at is not None for c in launched)
    (tainted_at,) = w.cluster.times("taint", "big")
    assert all(c is not None and (c.initialized_at or 0) <= tainted_at for c in launched)
    assert "big" not in w.cluster.nodes


def test_budgets_count_nodes_whose_disruption_started_but_is_not_visible_yet() -> None:
    stale = {"karpenter.sh/nodepool-hash": "v1-stale"}
    w = PlannerWorld(cluster_config(a_pool(policy="WhenEmpty", after=None, budgets=(Budget(nodes="1"),))))
    for name in ("n1", "n2", "n3"):
        w.add_node(name, annotations=stale)
        w.add_pod(f"web-{name}", name, cpu="3")
    w.launcher.ready_after = 120

    w.run(100)  # the first replacement is still launching: nothing tainted yet

    assert len(w.launcher.requests) == 1 and len(w.workflows.disruptions()) == 1
    blocked = w.events("n2", "DisruptionBlocked") + w.events("n3", "DisruptionBlocked")
    assert blocked and all("allows 0 more Drifted" in e.message for e in blocked)
    w.run(600)
    assert len(w.workflows.disruptions()) == 3  # one at a time, all three in the end
    assert w.cluster.max_tainted == 1


def test_blocked_reasons_are_posted_once_not_every_pass() -> None:
    w = PlannerWorld(cluster_config(a_pool(policy="WhenEmpty", after=0)))
    w.add_node("pinned", annotations={"karpenter.sh/do-not-disrupt": "true"})

    w.run(120)

    (event,) = w.events("pinned", "DisruptionBlocked")
    assert event.message == "node has karpenter.sh/do-not-disrupt=true"
    assert "pinned" in w.cluster.nodes and w.simulator.executions() == ()


def test_consolidate_after_never_posts_one_event_type_whatever_the_sentence() -> None:
    # The Event reason follows the planner's PassedOverKind, not the wording: an empty node ("never removes
    # empty nodes") and a busy one ("never consolidates") of a consolidateAfter: Never pool get the same.
    w = PlannerWorld(cluster_config(a_pool(after=None)))
    w.add_node("empty")
    w.add_node("busy")
    w.add_pod("web", "busy", cpu="1")

    w.run_pass()

    posted = {e.involved.name: (e.reason, e.type) for e in w.events()}
    assert posted == {"empty": ("Unconsolidatable", "Normal"), "busy": ("Unconsolidatable", "Normal")}
    messages = {e.involved.name: e.message for e in w.events()}
    assert "never removes empty nodes" in messages["empty"] and "never consolidates" in messages["busy"]


def test_termination_grace_period_becomes_the_command_deadline() -> None:
    w = PlannerWorld(cluster_config(a_pool(policy="WhenEmpty", after=0, grace=600)))
    w.add_node("idle")

    w.run_pass()

    (execution,) = w.workflows.disruptions()
    assert execution.input["deadlineEpoch"] == START + 600 and execution.input["reason"] == "empty"


def test_two_invocations_never_decide_at_once() -> None:
    # Issue #12: the planner takes a lease like the provisioner. An invocation that finds it held stops
    # without a pass; the holder releases it at its end, so the next invocation need not wait out the TTL.
    w = PlannerWorld(cluster_config(a_pool(policy="WhenEmpty", after=0)))
    lease = MemoryLease()
    w.service.ports = replace(w.service.ports, lease=lease)
    w.add_node("idle")
    assert lease.acquire(LEASE_NAME, "other-invocation", w.clock.now(), LEASE_TTL_S)

    held = run_invocation(w.service, remaining_s=lambda: 60.0, wait=w.clock.advance, owner="this-one")
    assert (held.passes, held.stopped) == (0, "lease-held")
    assert w.cluster.taints("idle") == []

    lease.release(LEASE_NAME, "other-invocation")
    ran = run_invocation(w.service, remaining_s=lambda: 60.0, wait=w.clock.advance, owner="this-one")
    assert ran.passes >= 1 and ran.totals.started
    assert lease.acquire(LEASE_NAME, "a-third", w.clock.now(), LEASE_TTL_S)  # released at the end
