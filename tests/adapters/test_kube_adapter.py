"""KubeCluster (the `Cluster` port on the real kubernetes 36 client) against the project's API emulator.

Matrix: reads return kubectl-shaped dicts (pods by node, pending pods, nodes, daemonsets, PDBs, paging);
node patches (taints replaced, annotations set and removed); eviction outcomes (evicted, blocked by a PDB,
pod gone, UID changed); deletes with grace periods on the virtual clock; events; retries on injected 5xx and
throttling 429, and a clear error when the server keeps failing; a watch of pending pods.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from longshore.adapters.aws.eks import TokenSource, api_client
from longshore.adapters.aws.userdata import ClusterInfo
from longshore.adapters.kube import cluster as cluster_module
from longshore.adapters.kube.cluster import KubeCluster
from longshore.adapters.kube.retry import RetryPolicy
from longshore.core.model import Taint
from longshore.ports.kube import ClusterUnavailableError, KubeEvent, NodePatch, ObjectRef
from longshore.workflow.nodes import taints_of
from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import Fault, KubeApiEmulator
from tests.workflow.fakes import make_node, make_pdb, make_pod


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def emulator(clock: VirtualClock) -> Iterator[KubeApiEmulator]:
    with KubeApiEmulator(clock=clock) as running:
        yield running


@pytest.fixture
def slept() -> list[float]:
    return []


@pytest.fixture
def kube(emulator: KubeApiEmulator, clock: VirtualClock, slept: list[float]) -> Iterator[KubeCluster]:
    api_client = emulator.api_client()
    yield KubeCluster(api_client, sleep=slept.append, now=clock.now, retry=RetryPolicy(attempts=3))
    api_client.close()


def seed_pod(emulator: KubeApiEmulator, pod: dict[str, Any]) -> None:
    node = pod["spec"].pop("nodeName", None)
    pod["metadata"].pop("uid", None)
    pod["metadata"].pop("creationTimestamp", None)
    emulator.store.create("pods", pod, pod["metadata"]["namespace"], keep_status=True)
    if node:
        emulator.store.bind(pod["metadata"]["namespace"], pod["metadata"]["name"], node)


def seed(emulator: KubeApiEmulator) -> None:
    for name, instance in (("n1", "i-1"), ("n2", "i-2")):
        node = make_node(name, instance)
        node["metadata"].pop("uid")
        emulator.store.create("nodes", node, keep_status=True)
    seed_pod(emulator, make_pod("web-1", "n1", labels={"app": "web"}))
    seed_pod(emulator, make_pod("web-2", "n2", labels={"app": "web"}))
    seed_pod(emulator, make_pod("db-0", "n1", labels={"app": "db"}))
    seed_pod(emulator, make_pod("pending", None))
    seed_pod(emulator, make_pod("finished", None, phase="Succeeded"))


def test_reads_return_kubectl_shaped_dicts(emulator: KubeApiEmulator, kube: KubeCluster) -> None:
    seed(emulator)
    on_n1 = kube.list_pods(node_name="n1")
    assert sorted(p["metadata"]["name"] for p in on_n1) == ["db-0", "web-1"]
    assert all(p["spec"]["nodeName"] == "n1" and p["metadata"]["uid"] for p in on_n1)
    assert sorted(p["metadata"]["name"] for p in kube.list_pods(label_selector="app=web")) == [
        "web-1",
        "web-2",
    ]
    assert [p["metadata"]["name"] for p in kube.list_pending_pods()] == ["pending"]
    assert sorted(n["metadata"]["name"] for n in kube.list_nodes()) == ["n1", "n2"]
    node = kube.get_node("n1")
    assert node is not None and node["spec"]["providerID"] == "aws:///us-east-1a/i-1"
    assert kube.get_node("ghost") is None


def test_lists_follow_continue_pages(
    emulator: KubeApiEmulator, kube: KubeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(emulator)
    monkeypatch.setattr(cluster_module, "PAGE_SIZE", 2)
    names = sorted(p["metadata"]["name"] for p in kube.list_pods())
    assert names == ["db-0", "finished", "pending", "web-1", "web-2"]
    assert sum(1 for r in emulator.requests if r.resource == "pods" and r.verb == "list") >= 3


def test_daemonsets_and_pdbs(emulator: KubeApiEmulator, kube: KubeCluster) -> None:
    emulator.store.create("poddisruptionbudgets", make_pdb("db", {"app": "db"}, min_available=1), "default")
    assert [p["metadata"]["name"] for p in kube.list_pdbs()] == ["db"]
    assert kube.list_daemonsets() == []


def test_patch_node_replaces_taints_and_sets_and_removes_annotations(
    emulator: KubeApiEmulator, kube: KubeCluster
) -> None:
    seed(emulator)
    existing = Taint("dedicated", "NoSchedule", "gpu")
    disrupted = Taint("karpenter.sh/disrupted", "NoSchedule")
    kube.patch_node("n1", NodePatch(taints=(existing,), annotations=(("keep", "yes"),)))
    patched = kube.patch_node(
        "n1", NodePatch(taints=(existing, disrupted), annotations=(("a", "1"),), unschedulable=True)
    )
    assert patched is not None and taints_of(patched) == (existing, disrupted)
    assert (
        patched["metadata"]["annotations"] == {"keep": "yes", "a": "1"}
        and patched["spec"]["unschedulable"] is True
    )
    back = kube.patch_node("n1", NodePatch(taints=(existing,), annotations=(("a", None),)))
    assert (
        back is not None
        and taints_of(back) == (existing,)
        and back["metadata"]["annotations"] == {"keep": "yes"}
    )
    assert kube.patch_node("ghost", NodePatch(unschedulable=True)) is None


def test_eviction_outcomes(emulator: KubeApiEmulator, kube: KubeCluster, clock: VirtualClock) -> None:
    seed(emulator)
    emulator.store.create("poddisruptionbudgets", make_pdb("db", {"app": "db"}, min_available=1), "default")
    web = next(p for p in kube.list_pods(node_name="n1") if p["metadata"]["name"] == "web-1")

    assert kube.evict_pod("default", "web-1", uid="not-its-uid").outcome == "not-found"
    assert kube.evict_pod("default", "web-1", uid=web["metadata"]["uid"]).outcome == "evicted"
    terminating = [p for p in kube.list_pods(node_name="n1") if p["metadata"]["name"] == "web-1"]
    assert terminating and terminating[0]["metadata"].get("deletionTimestamp")
    blocked = kube.evict_pod("default", "db-0")
    assert blocked.outcome == "blocked" and "disruption budget" in blocked.message
    assert kube.evict_pod("default", "ghost").outcome == "not-found"
    clock.advance(31)
    assert sorted(p["metadata"]["name"] for p in kube.list_pods(node_name="n1")) == ["db-0"]


def test_delete_pod_with_grace_and_delete_node(
    emulator: KubeApiEmulator, kube: KubeCluster, clock: VirtualClock
) -> None:
    seed(emulator)
    assert kube.delete_pod("default", "db-0", grace_period_seconds=5) is True
    clock.advance(5)
    assert [p["metadata"]["name"] for p in kube.list_pods(node_name="n1")] == ["web-1"]
    assert kube.delete_pod("default", "db-0") is False
    assert kube.delete_node("n2") is True and kube.delete_node("n2") is False
    assert kube.get_node("n2") is None


def test_post_event(emulator: KubeApiEmulator, kube: KubeCluster) -> None:
    seed(emulator)
    kube.post_event(
        KubeEvent(ObjectRef("Node", "n1", uid="u1"), "FailedDraining", "1 pod blocked", "Warning")
    )
    kube.post_event(
        KubeEvent(ObjectRef("Pod", "db-0", namespace="default"), "Disrupted", "deleted at the deadline")
    )
    events = emulator.store.list("events")
    found = {
        (e["involvedObject"]["kind"], e["involvedObject"]["name"], e["reason"], e["type"]) for e in events
    }
    assert found == {("Node", "n1", "FailedDraining", "Warning"), ("Pod", "db-0", "Disrupted", "Normal")}
    assert all(e["source"]["component"] == "longshore" and e["firstTimestamp"] for e in events)


def test_a_repeated_event_is_counted_on_the_one_there_whoever_posts_it(
    emulator: KubeApiEmulator, clock: VirtualClock
) -> None:
    # GIVEN two containers' adapters (a cold start posts what the warm one already posted)
    seed(emulator)
    apis = [emulator.api_client(), emulator.api_client()]
    warm, cold = (KubeCluster(api, sleep=lambda _: None, now=clock.now) for api in apis)
    blocked = ObjectRef("Node", "n1", uid="u1")
    # WHEN the same Event is posted three times, its numbers changing, and then a different one
    warm.post_event(KubeEvent(blocked, "DisruptionBlocked", "pdb web allows 0 of 3", "Warning"))
    clock.advance(40)
    cold.post_event(KubeEvent(blocked, "DisruptionBlocked", "pdb web allows 0 of 4", "Warning"))
    cold.post_event(KubeEvent(blocked, "DisruptionBlocked", "pdb web allows 0 of 4", "Warning"))
    cold.post_event(KubeEvent(blocked, "Unconsolidatable", "no cheaper option", "Normal"))
    # THEN there are two Events; the repeated one counts 3 and carries the latest message and time
    events = sorted(emulator.store.list("events"), key=lambda e: e["reason"])
    assert [(e["reason"], e["count"]) for e in events] == [("DisruptionBlocked", 3), ("Unconsolidatable", 1)]
    assert events[0]["message"] == "pdb web allows 0 of 4"
    assert events[0]["lastTimestamp"] != events[0]["firstTimestamp"]
    for api in apis:
        api.close()


def test_transient_failures_are_retried(
    emulator: KubeApiEmulator, kube: KubeCluster, slept: list[float]
) -> None:
    seed(emulator)
    fault = emulator.faults.add(Fault(resource="pods", verb="list", status=503, times=2))
    assert len(kube.list_pods(node_name="n1")) == 2
    assert fault.hits == 2 and slept == [0.2, 0.4]
    throttled = emulator.faults.add(Fault(resource="pods/eviction", verb="create", status=429, times=1))
    assert kube.evict_pod("default", "web-1").outcome == "evicted"  # throttling is not a PDB refusal
    assert throttled.hits == 1


def test_the_production_client_has_one_retry_layer_that_honours_retry_after(
    emulator: KubeApiEmulator, clock: VirtualClock, slept: list[float]
) -> None:
    # GIVEN the client the functions build (urllib3's own retries would sleep a Retry-After in real time)
    info = ClusterInfo("demo", emulator.url, "", "1.31")
    api = api_client(info, TokenSource(lambda: "k8s-aws-v1.token", clock.now), endpoint=emulator.url)
    kube = KubeCluster(api, sleep=slept.append, now=clock.now, retry=RetryPolicy(attempts=3, max_delay_s=5.0))
    seed(emulator)
    # WHEN the API server throttles one read and asks for 2 s, then another for longer than the policy allows
    first = emulator.faults.add(
        Fault(resource="nodes", verb="get", name="n1", status=429, retry_after=2, times=1)
    )
    second = emulator.faults.add(
        Fault(resource="nodes", verb="get", name="n2", status=429, retry_after=60, times=1)
    )
    # THEN our policy waits on the injected clock: the Retry-After, capped at the policy's longest delay
    assert kube.get_node("n1") is not None and kube.get_node("n2") is not None
    assert (first.hits, second.hits) == (1, 1)
    assert slept == [2.0, 5.0]
    api.close()


def test_a_server_that_keeps_failing_is_a_clear_error(emulator: KubeApiEmulator, kube: KubeCluster) -> None:
    seed(emulator)
    emulator.faults.add(Fault(resource="nodes", verb="get", status=500))
    with pytest.raises(
        ClusterUnavailableError, match=r"read node n1: the API server kept failing \(500\) after 3 attempts"
    ):
        kube.get_node("n1")


def test_watch_pending_pods(emulator: KubeApiEmulator, kube: KubeCluster, clock: VirtualClock) -> None:
    seed(emulator)
    seen: list[tuple[str, str]] = []

    def consume() -> None:
        for kind, pod in kube.watch_pending_pods(timeout_seconds=30):
            seen.append((kind, pod["metadata"]["name"]))

    def until(condition: Callable[[], bool]) -> None:
        for _ in range(2000):  # at most ~10 s of real time
            if condition():
                return
            time.sleep(0.005)
        pytest.fail(f"watch saw only {seen}")

    watcher = threading.Thread(target=consume, daemon=True)
    watcher.start()
    until(lambda: ("ADDED", "pending") in seen)  # the watch is established
    seed_pod(emulator, make_pod("late", None))
    until(lambda: ("ADDED", "late") in seen)
    clock.advance(31)  # past the watch's virtual timeout: the server ends the stream
    watcher.join(timeout=10)
    assert not watcher.is_alive()
    assert {name for _, name in seen} == {"pending", "late", "finished"}  # unbound pods only


def test_the_termination_finalizer_holds_a_deleted_node_until_delete_node_releases_it(
    emulator: KubeApiEmulator, kube: KubeCluster
) -> None:
    """`kubectl delete node` on a managed node only marks it (deletionTimestamp); Longshore's own delete_node,
    called once the instance is drained and terminated, releases the finalizer and the Node goes."""
    seed(emulator)
    kube.patch_node("n1", NodePatch(add_finalizers=("karpenter.sh/termination",)))
    kube.patch_node("n1", NodePatch(add_finalizers=("karpenter.sh/termination",)))  # idempotent (a set)
    assert kube.get_node("n1")["metadata"]["finalizers"] == ["karpenter.sh/termination"]  # type: ignore[index]

    emulator.store.delete("nodes", "n1")  # what `kubectl delete node n1` does
    held = kube.get_node("n1")
    assert held is not None and held["metadata"].get("deletionTimestamp"), "held by the finalizer"

    assert kube.delete_node("n1") is True
    assert kube.get_node("n1") is None


def test_storage_objects_are_listed_for_volume_topology(emulator: KubeApiEmulator, kube: KubeCluster) -> None:
    zone = {"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": ["us-east-1b"]}
    emulator.store.create(
        "persistentvolumes",
        {
            "metadata": {"name": "pv-1"},
            "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [zone]}]}}},
        },
    )
    for i in range(3):
        emulator.store.create(
            "persistentvolumeclaims",
            {"metadata": {"name": f"data-{i}"}, "spec": {"volumeName": "pv-1", "storageClassName": "gp3"}},
            "default",
        )
    emulator.store.create(
        "storageclasses", {"metadata": {"name": "gp3"}, "volumeBindingMode": "WaitForFirstConsumer"}
    )
    assert [c["metadata"]["name"] for c in kube.list_persistent_volume_claims()] == [
        "data-0",
        "data-1",
        "data-2",
    ]
    volumes = kube.list_persistent_volumes()
    assert volumes[0]["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"] == [
        zone
    ]
    assert [s["volumeBindingMode"] for s in kube.list_storage_classes()] == ["WaitForFirstConsumer"]
