"""Issue #17 on the simulated cluster: a CapacityBuffer keeps a warm node (`capacity-buffer`), and so does one
from the config file (`capacity-buffer-config`, no object in the cluster).

With no real pod, the buffer's two virtual pods launch a node that the planner never empties; real pods
arriving at 10m bind to it at once, and the buffer is refilled on a new node. Zero rule violations. The
in-cluster buffer ends with its `status` written back as SIG Autoscaling's API defines it.
"""

from __future__ import annotations

import pytest

from tests.scenarios.test_disruption_scenarios import assert_clean, run

pytestmark = pytest.mark.slow

ARRIVAL = "2026-01-01T00:10:00Z"  # the scenario's scale step (the simulation's epoch is 2026-01-01)


@pytest.mark.parametrize("scenario", ["capacity-buffer", "capacity-buffer-config"])
def test_a_buffer_keeps_a_warm_node_that_real_pods_use_at_once_and_is_refilled(scenario: str) -> None:
    runner, summary = run(scenario)
    assert_clean(summary)
    assert summary["disruptions_by_reason"] == {}  # the warm node is never empty for the planner
    nodes = sorted(runner.world.cluster.store.view("nodes"), key=lambda n: n["metadata"]["creationTimestamp"])
    assert len(nodes) == 2 and sum(summary["instances_launched_by_type"].values()) == 2
    warm, refill = nodes
    assert warm["metadata"]["creationTimestamp"] < ARRIVAL < refill["metadata"]["creationTimestamp"]
    pods = runner.world.cluster.store.view("pods")
    assert len(pods) == 2
    for pod in pods:
        assert pod["spec"]["nodeName"] == warm["metadata"]["name"]  # the warm node, no launch to wait for
        assert pod["status"]["startTime"] == pod["metadata"]["creationTimestamp"] == ARRIVAL
    buffers = runner.world.cluster.store.view("capacitybuffers")
    if scenario == "capacity-buffer-config":
        assert buffers == []  # the buffer lives in clusters/buffer.yaml only
        return
    (buffer,) = buffers
    status = buffer["status"]
    assert status["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"
    assert status["replicas"] == 2 and status["podTemplateRef"] == {"name": "warm"}
    by_type = {c["type"]: c for c in status["conditions"]}
    assert by_type["ReadyForProvisioning"]["status"] == "True"
    assert (
        by_type["Provisioning"]["status"] == "True"
        and by_type["Provisioning"]["reason"] == "FakePodsInjected"
    )
    assert "placed nowhere" in by_type["Provisioning"]["message"]
