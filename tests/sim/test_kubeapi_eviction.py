"""The `pods/eviction` subresource through the real client, with Kubernetes' PDB arithmetic.

Matrix (each row: pods and their readiness, the budget, and which evictions succeed):
minAvailable int; minAvailable percent of the controller's scale (rounded up); maxUnavailable int and percent
against the Deployment's replicas; unhealthy pods under IfHealthyBudget (healthy and unhealthy budget) and
AlwaysAllow; Pending pods ignore budgets; pods without a budget; two budgets (500); DaemonSet pods under a
percentage budget (fail-safe, 429); the 429 carries the DisruptionBudget cause; a permitted eviction honours
the grace period; the PDB status read through PolicyV1Api shows the same numbers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import KubeApiEmulator
from tests.sim import manifests


def _workload(
    emulator: KubeApiEmulator, replicas: int, *, ready: int | None = None, running: bool = True
) -> list[str]:
    """A Deployment -> ReplicaSet -> pods chain; the first `ready` pods are Ready (default: all)."""
    store = emulator.store
    deployment = store.create("deployments", manifests.deployment("web", replicas))
    rs_body = manifests.replicaset("web-abc", replicas)
    rs_body["spec"]["template"]["metadata"]["labels"] = {"app": "web"}
    rs_body["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    rs_body["metadata"]["ownerReferences"] = [manifests.owner_ref(deployment)]
    rs = store.create("replicasets", rs_body)
    names = []
    for i in range(replicas):
        name = f"web-{i}"
        store.create(
            "pods", manifests.pod(name, labels={"app": "web"}, node_name="n1", owner=manifests.owner_ref(rs))
        )
        is_ready = i < (replicas if ready is None else ready)
        status = {
            "phase": "Running" if running else "Pending",
            "conditions": [{"type": "Ready", "status": "True" if is_ready else "False"}],
        }
        store.modify("pods", name, "default", lambda p, s=status: p.__setitem__("status", s))
        names.append(name)
    return names


def _evict(core: client.CoreV1Api, name: str, grace: int | None = None) -> int:
    body = client.V1Eviction(
        metadata=client.V1ObjectMeta(name=name, namespace="default"),
        delete_options=client.V1DeleteOptions(grace_period_seconds=grace) if grace is not None else None,
    )
    try:
        core.create_namespaced_pod_eviction(name, "default", body)
    except ApiException as exc:
        return int(exc.status)
    return 201


def _evict_all(core: client.CoreV1Api, names: list[str]) -> list[int]:
    return [_evict(core, name, grace=0) for name in names]


@pytest.mark.parametrize(
    ("replicas", "ready", "budget", "expected"),
    [
        (3, 3, {"minAvailable": 2}, [201, 429, 429]),
        (4, 4, {"minAvailable": "50%"}, [201, 201, 429, 429]),
        (3, 3, {"minAvailable": "50%"}, [201, 429, 429]),  # ceil(1.5) = 2 must stay
        (3, 3, {"maxUnavailable": 1}, [201, 429, 429]),
        (3, 3, {"maxUnavailable": "34%"}, [201, 201, 429]),  # ceil(1.02) = 2 may go
        (3, 3, {"maxUnavailable": 0}, [429, 429, 429]),
        (3, 3, {"minAvailable": 0}, [201, 201, 201]),
    ],
)
def test_budget_arithmetic(
    emulator: KubeApiEmulator,
    core: client.CoreV1Api,
    replicas: int,
    ready: int,
    budget: dict[str, Any],
    expected: list[int],
) -> None:
    names = _workload(emulator, replicas, ready=ready)
    emulator.store.create("poddisruptionbudgets", manifests.pdb("budget", {"app": "web"}, **budget))
    assert _evict_all(core, names) == expected


def test_refusal_is_429_with_the_disruption_budget_cause(
    emulator: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    _workload(emulator, 2)
    emulator.store.create("poddisruptionbudgets", manifests.pdb("keep-two", {"app": "web"}, minAvailable=2))
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod_eviction(
            "web-0", "default", client.V1Eviction(metadata=client.V1ObjectMeta(name="web-0"))
        )
    status = json.loads(caught.value.body)
    assert (caught.value.status, status["reason"]) == (429, "TooManyRequests")
    assert status["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert status["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget keep-two needs 2 healthy pods and has 2 currently",
        }
    ]


def test_maxunavailable_counts_against_the_deployment_scale(
    emulator: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    # GIVEN 2 pods exist but the Deployment wants 4: expected is 4, so desiredHealthy = 4 - 1 = 3 > 2 healthy
    _workload(emulator, 2)
    emulator.store.modify("deployments", "web", "default", lambda d: d["spec"].update(replicas=4))
    emulator.store.create("poddisruptionbudgets", manifests.pdb("budget", {"app": "web"}, maxUnavailable=1))
    assert _evict(core, "web-0") == 429


def test_unhealthy_pod_with_a_healthy_budget_may_go(
    emulator: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    # 3 pods, 2 ready, minAvailable 2: the budget is met (2 >= 2), so the not-ready pod can be evicted
    _workload(emulator, 3, ready=2)
    emulator.store.create("poddisruptionbudgets", manifests.pdb("budget", {"app": "web"}, minAvailable=2))
    assert _evict(core, "web-2") == 201
    assert _evict(core, "web-0") == 429


def test_unhealthy_pod_with_an_unhealthy_budget_is_refused(
    emulator: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    _workload(emulator, 3, ready=1)
    emulator.store.create("poddisruptionbudgets", manifests.pdb("budget", {"app": "web"}, minAvailable=2))
    assert _evict(core, "web-2") == 429


def test_always_allow_evicts_unhealthy_pods(emulator: KubeApiEmulator, core: client.CoreV1Api) -> None:
    _workload(emulator, 3, ready=1)
    emulator.store.create(
        "poddisruptionbudgets",
        manifests.pdb("budget", {"app": "web"}, minAvailable=2, unhealthyPodEvictionPolicy="AlwaysAllow"),
    )
    assert [_evict(core, "web-2"), _evict(core, "web-0")] == [201, 429]


def test_pending_pods_ignore_budgets(emulator: KubeApiEmulator, core: client.CoreV1Api) -> None:
    _workload(emulator, 2, running=False)
    emulator.store.create("poddisruptionbudgets", manifests.pdb("budget", {"app": "web"}, maxUnavailable=0))
    assert _evict_all(core, ["web-0", "web-1"]) == [201, 201]


def test_pod_without_budget_is_evicted_with_its_grace_period(
    emulator: KubeApiEmulator, core: client.CoreV1Api, clock: VirtualClock
) -> None:
    _workload(emulator, 1)
    assert _evict(core, "web-0", grace=10) == 201
    assert core.read_namespaced_pod("web-0", "default").metadata.deletion_timestamp is not None
    clock.advance(10)
    assert core.list_namespaced_pod("default").items == []


def test_two_budgets_for_one_pod_is_500(emulator: KubeApiEmulator, core: client.CoreV1Api) -> None:
    _workload(emulator, 2)
    emulator.store.create("poddisruptionbudgets", manifests.pdb("one", {"app": "web"}, minAvailable=0))
    emulator.store.create("poddisruptionbudgets", manifests.pdb("two", {}, minAvailable=0))
    assert _evict(core, "web-0") == 500


def test_daemonset_pods_under_a_percentage_budget_fail_safe(
    emulator: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    ds = emulator.store.create("daemonsets", manifests.daemonset("agent", namespace="default"))
    emulator.store.create(
        "pods",
        manifests.pod("agent-1", labels={"app": "agent"}, node_name="n1", owner=manifests.owner_ref(ds)),
    )
    emulator.store.modify(
        "pods", "agent-1", "default", lambda p: p.__setitem__("status", manifests.ready_status())
    )
    emulator.store.create(
        "poddisruptionbudgets", manifests.pdb("agents", {"app": "agent"}, maxUnavailable="50%")
    )
    assert _evict(core, "agent-1") == 429


def test_pdb_status_through_the_client(emulator: KubeApiEmulator, policy: client.PolicyV1Api) -> None:
    _workload(emulator, 4, ready=3)
    emulator.store.create(
        "poddisruptionbudgets", manifests.pdb("budget", {"app": "web"}, maxUnavailable="25%")
    )
    status = policy.read_namespaced_pod_disruption_budget("budget", "default").status
    assert (
        status.expected_pods,
        status.desired_healthy,
        status.current_healthy,
        status.disruptions_allowed,
    ) == (4, 3, 3, 0)
    listed = policy.list_pod_disruption_budget_for_all_namespaces().items[0].status
    assert listed.disruptions_allowed == 0
