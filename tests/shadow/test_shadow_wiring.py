"""Shadow mode through the production wiring: `LONGSHORE_MODE=shadow` builds functions that decide and measure
but write nothing to EC2 or Kubernetes, checked against moto and the API emulator.

The world is made by the active provisioner first (a node launched for pending pods); then the shadow
provisioner sees pods no node can hold and the shadow planner sees that node empty past `consolidateAfter`.
Both decide (ShadowWouldLaunch with its $/h, ShadowWouldDisrupt), and the instances, the Nodes, the pods'
bindings and the NodeClaims are exactly as before; the emulator served no write request and EC2 was asked
for no write call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.adapters.shadow import ShadowCluster, ShadowInstances, ShadowLauncher, ShadowWorkflow
from longshore.config.settings import RuntimeSettings, SettingsError
from longshore.core import telemetry
from longshore.wiring import planner as planner_wiring
from longshore.wiring.provisioner import build_runtime
from longshore.wiring.runtime import Runtime
from longshore_sim.world import SimulatedWorld
from tests.provisioning.conftest import (  # noqa: F401  (fixtures)
    CLUSTER,
    PARAMETER,
    botocore_retry_sleeps,
    make_world,
    publish_seed_config,
    running,
    unbound,
)

WRITES = ("POST", "PUT", "PATCH", "DELETE")
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")]


def _settings(world: SimulatedWorld, mode: str) -> RuntimeSettings:
    return RuntimeSettings.from_env(
        {
            "LONGSHORE_CLUSTER_NAME": CLUSTER,
            "AWS_REGION": "us-east-1",
            "LONGSHORE_CONFIG_PARAMETER": PARAMETER,
            "LONGSHORE_TABLE_NAME": world.seeded.table_name,
            "LONGSHORE_DISRUPTION_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:d",
            "LONGSHORE_MODE": mode,
        }
    )


def _snapshot(world: SimulatedWorld) -> dict[str, Any]:
    """What a write to EC2 or Kubernetes by Longshore would change."""
    store = world.cluster.store
    return {
        "instances": sorted(i["InstanceId"] for i in world.live_instances()),
        "nodes": {
            n["metadata"]["name"]: (
                bool(n["spec"].get("unschedulable")),
                tuple(sorted(t["key"] for t in n["spec"].get("taints") or ())),
                tuple(n["metadata"].get("finalizers") or ()),
                bool(n["metadata"].get("deletionTimestamp")),
            )
            for n in store.view("nodes")
        },
        "pods": sorted((p["metadata"]["name"], p["spec"].get("nodeName") or "") for p in store.view("pods")),
        "nodeclaims": sorted(c["metadata"]["name"] for c in store.view("nodeclaims")),
        "events": sorted(
            e["metadata"]["name"]
            for e in store.view("events")
            if str((e.get("source") or {}).get("component", "")).startswith("longshore")
            or str(e.get("reportingComponent", "")).startswith("longshore")
        ),
    }


@pytest.fixture
def world(make_world: Callable[..., SimulatedWorld]) -> Iterator[SimulatedWorld]:  # noqa: F811
    world = make_world()
    publish_seed_config(world)
    world.cluster.watch_ec2_client(world.session)
    yield world


class Ec2Writes:
    """Every EC2 call that is not a read, made by any client of the session created after it is attached."""

    def __init__(self, session: Any) -> None:
        self.calls: list[str] = []
        session.events.register("before-call.ec2", self._seen)

    def _seen(self, model: Any, **_: Any) -> None:
        if not model.name.startswith(("Describe", "Get", "List")):
            self.calls.append(model.name)


def test_shadow_functions_decide_and_measure_but_write_nothing(world: SimulatedWorld) -> None:
    world.cluster.scale("inflate", 2)
    world.sleep(0)
    world.invoke()  # the active provisioner launches a node for them
    assert len(running(world)) == 2
    world.cluster.scale("inflate", 40)  # more than the node holds: pods stay pending
    world.sleep(5)
    assert unbound(world)

    ec2_writes = Ec2Writes(world.session)
    sink = MemoryMetricsSink()
    shadow = _settings(world, "shadow")
    requests_before = len(world.cluster.emulator.requests)
    before = _snapshot(world)

    provisioner = build_runtime(
        shadow, session=world.session, kube_endpoint=world.cluster.emulator.url, clock=world.time, sink=sink
    )
    assert isinstance(provisioner.launcher, ShadowLauncher)
    assert isinstance(provisioner.cluster, ShadowCluster)
    assert isinstance(provisioner.instances, ShadowInstances)
    service = provisioner.service("shadow-provisioner")
    for _ in range(3):
        service.run_pass()
        provisioner.publish_objects()
        world.sleep(10)

    assert sink.total(telemetry.SHADOW_WOULD_LAUNCH) >= 1, "it decided to launch for the pending pods"
    assert all(p.value > 0 for p in sink.named(telemetry.SHADOW_WOULD_LAUNCH_COST)), "with the $/h"
    assert _snapshot(world) == before

    world.cluster.scale("inflate", 0)  # the node empties
    world.sleep(5)
    before = _snapshot(world)
    planner = planner_wiring.build_planner(
        Runtime(
            shadow,
            session=world.session,
            clock=world.time,
            kube_endpoint=world.cluster.emulator.url,
            metrics=sink,
        )
    )
    assert isinstance(planner.ports.workflow, ShadowWorkflow)
    deadline = world.clock.now() + 110  # consolidateAfter (ttlSecondsAfterEmpty) is 60 s
    planner_wiring.process(planner, lambda: deadline - world.clock.now(), world.sleep, owner="shadow")

    assert sink.total(telemetry.SHADOW_WOULD_DISRUPT, Reason="empty") >= 1, "it decided the empty node goes"
    assert sink.total(telemetry.SAVINGS_PER_HOUR, Reason="empty") > 0, "with the $/h it would save"
    assert _snapshot(world) == before, "no node was cordoned, tainted, drained or terminated"
    writes = [r for r in list(world.cluster.emulator.requests)[requests_before:] if r.method in WRITES]
    assert writes == [], "the shadow functions sent the API server no write"
    assert ec2_writes.calls == [], "and EC2 no write call"


def test_an_unknown_mode_is_refused_naming_the_variable(world: SimulatedWorld) -> None:
    with pytest.raises(SettingsError, match="LONGSHORE_MODE has value 'dry'"):
        _settings(world, "dry")
    assert not _settings(world, "active").shadow
