"""The planner writes the NodeClaim conditions it decides (Drifted with its reason, Consolidatable once
consolidateAfter has passed, Disrupting when a removal starts), through the real kubernetes client and the API
emulator; the provisioner, which does not know them, keeps what the objects show."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from longshore.adapters.kube.cluster import KubeCluster
from longshore.adapters.kube.karpenter import KubeKarpenterObjects
from longshore.core.disruption.conditions import node_flags
from longshore.core.karpenter_objects import rfc3339
from longshore.services.claim_conditions import NodeClaimConditions
from longshore.services.karpenter_sync import KarpenterObjectSync
from longshore_sim.kubeapi import KubeApiEmulator
from tests.planner.fakes import PlannerWorld, a_pool, cluster_config


@pytest.fixture
def world() -> Iterator[tuple[PlannerWorld, KubeApiEmulator, KarpenterObjectSync]]:
    w = PlannerWorld(
        cluster_config(a_pool(policy="WhenEmpty", after=60), a_pool("pinned", policy="WhenEmpty", after=None))
    )
    with KubeApiEmulator(clock=w.clock) as emulator:
        api = emulator.api_client()
        objects = KubeKarpenterObjects(api, sleep=w.clock.sleep)
        sync = KarpenterObjectSync(objects, KubeCluster(api, sleep=w.clock.sleep, now=w.clock.now), w.clock)
        w.service.ports = replace(w.service.ports, conditions=NodeClaimConditions(sync))
        yield w, emulator, sync
        api.close()


def conditions_of(emulator: KubeApiEmulator, claim: str) -> dict[str, dict[str, Any]]:
    obj = emulator.store.get("nodeclaims", claim)
    return {c["type"]: c for c in obj["status"]["conditions"]}


def test_the_planner_writes_drifted_consolidatable_and_disrupting(world) -> None:  # type: ignore[no-untyped-def]
    w, emulator, sync = world
    w.add_node("busy")
    w.add_pod("web", "busy", cpu="1")
    w.add_node("idle")  # empty for long past consolidateAfter: removed
    w.add_node("stale")
    w.add_pod("api", "stale", cpu="1")
    stale = w.world.claims.get("claim-stale")
    w.world.claims.put(replace(stale, nodepool_hash="v1-0000000000000000"))  # its pool changed since launch
    w.add_node("kept", pool_name="pinned")
    w.add_pod("db", "kept", cpu="1")

    report = w.run_pass()

    assert {d.reason for d in report.plan.decisions} >= {"empty"}
    busy = conditions_of(emulator, "claim-busy")
    assert busy["Consolidatable"]["status"] == "True", "consolidateAfter (60 s) passed since initialization"
    assert busy["Drifted"]["status"] == "False" and busy["Disrupting"]["status"] == "False"
    idle = conditions_of(emulator, "claim-idle")
    assert (idle["Disrupting"]["status"], idle["Disrupting"]["reason"]) == ("True", "Empty")
    assert idle["Consolidatable"]["status"] == "False", "a node being removed is no longer a candidate"
    drifted = conditions_of(emulator, "claim-stale")["Drifted"]
    assert drifted["status"] == "True" and drifted["message"] == "pool default changed since launch"
    kept = conditions_of(emulator, "claim-kept")
    assert kept["Consolidatable"]["status"] == "False", "consolidateAfter: Never"
    since = conditions_of(emulator, "claim-busy")["Consolidatable"]["lastTransitionTime"]

    # a later pass rewrites nothing that did not change; the provisioner (no flags) keeps what the planner wrote
    w.clock.advance(10)
    w.run_pass()
    assert conditions_of(emulator, "claim-busy")["Consolidatable"]["lastTransitionTime"] == since
    sync.publish_claims(w.world.claims.list())
    assert conditions_of(emulator, "claim-stale")["Drifted"]["status"] == "True"
    assert conditions_of(emulator, "claim-idle")["Disrupting"]["status"] == "True"


def test_consolidatable_becomes_true_when_consolidate_after_passes_since_the_last_pod_event() -> None:
    w = PlannerWorld(cluster_config(a_pool(policy="WhenEmpty", after=300)))
    w.add_node("busy")
    w.add_pod("web", "busy", cpu="1")
    current = w.service.snapshot()
    (node,) = current.input.nodes
    moved = replace(node, last_pod_event_at=current.input.now - 100)
    assert node_flags(moved, current.input, {}).consolidatable_since is None, "100 s of the 300 s"
    later = replace(current.input, now=current.input.now + 200)
    flags = node_flags(moved, later, {})
    assert flags.consolidatable_since == current.input.now + 200
    assert rfc3339(flags.consolidatable_since)
    assert node_flags(moved, later, {"busy": "underutilized"}).disrupting == "Underutilized"
