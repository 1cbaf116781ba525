"""The scale benchmark's generated API server (`bench.scale_virtual`) keeps the list and watch semantics the
watch cache relies on.

Matrix: a paged, gzipped list sees every node and pod with distinct resourceVersions; a warm read after
`add` and `touch` sees the new pods and the changed label through the watch, with unchanged pods handed back
as the same objects; a watch from a version the server has not reached is a 504 that ends in a relist.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bench.scale_virtual import VirtualCluster, serve_in_background
from kubernetes import client as k8s

from longshore.adapters.kube.cluster import KubeCluster, new_cache

pytestmark = pytest.mark.slow


@pytest.fixture
def served() -> Iterator[tuple[VirtualCluster, k8s.ApiClient]]:
    cluster = VirtualCluster(1_200, 30)
    url, server = serve_in_background(cluster)
    configuration = k8s.Configuration()
    configuration.host = url
    api = k8s.ApiClient(configuration)
    try:
        yield cluster, api
    finally:
        api.close()
        server.shutdown()


def test_a_paged_list_sees_everything_once(served: tuple[VirtualCluster, k8s.ApiClient]) -> None:
    cluster, api = served
    kube = KubeCluster(api, cache=new_cache(quiet_s=0.1))
    pods, nodes = kube.list_pods(), kube.list_nodes()
    assert len(pods) == 1_200 and len(nodes) == 40
    versions = {p["metadata"]["resourceVersion"] for p in pods} | {
        n["metadata"]["resourceVersion"] for n in nodes
    }
    assert len(versions) == 1_240
    assert cluster.bytes_sent < 1_240 * 2_000  # gzipped: far below 10 KB an object


def test_a_warm_read_sees_added_and_changed_pods(served: tuple[VirtualCluster, k8s.ApiClient]) -> None:
    cluster, api = served
    kube = KubeCluster(api, cache=new_cache(quiet_s=0.1))
    first = {p["metadata"]["name"]: p for p in kube.list_pods()}
    cluster.add(3)
    cluster.touch(2, "1")
    second = {p["metadata"]["name"]: p for p in kube.list_pods()}
    assert len(second) == 1_203
    touched = [n for n, p in second.items() if p["metadata"]["labels"].get("touched") == "1"]
    assert len(touched) == 2
    assert sum(1 for n, p in second.items() if n in first and p is first[n]) == 1_198
    assert kube._cache is not None and kube._cache.pods.relists == 1


def test_a_version_from_the_future_relists(served: tuple[VirtualCluster, k8s.ApiClient]) -> None:
    _, api = served
    cache = new_cache(quiet_s=0.1)
    kube = KubeCluster(api, cache=cache)
    kube.list_nodes()
    cache.nodes.version = "999999"
    assert len(kube.list_nodes()) == 40 and cache.nodes.relists == 2


def test_pending_pods_are_served_by_field_selector_and_drop_deletes_them(
    served: tuple[VirtualCluster, k8s.ApiClient],
) -> None:
    cluster, api = served
    cache = new_cache(quiet_s=0.1)
    kube = KubeCluster(api, cache=cache)
    assert len(kube.list_pods()) == 1_200 and kube.list_pending_pods() == []
    cluster.add(5)
    assert len(kube.list_pending_pods()) == 5
    on_node = kube.list_pods(node_name=kube.list_nodes()[0]["metadata"]["name"])
    assert len(on_node) == 30
    assert cluster.drop() == 5
    assert kube.list_pending_pods() == [] and len(kube.list_pods()) == 1_200  # the watch applied DELETED
    assert cluster.refused == []


def test_the_fleet_bench_launches_every_pod_of_a_batch_in_the_full_cluster(
    served: tuple[VirtualCluster, k8s.ApiClient],
) -> None:
    """`bench.scale_fleet`: the product's provisioner pass over the warm cache; the nodes are full, so the 100
    new pods go on new claims, each pod's latency ends at its claim's CreateFleet call, after the batch window
    and the watch waits (what the figure adds besides CPU time)."""
    from bench.scale_fleet import FleetBench

    cluster, api = served
    cache = new_cache(quiet_s=0.1)
    kube = KubeCluster(api, cache=cache)
    kube.list_nodes(), kube.list_pods()
    bench = FleetBench(api, cache)
    for _ in range(2):
        cluster.drop()
        cluster.add(100)
        found = bench.batch()
        assert found["status"] == "planned" and found["pending"] == 100 and "failed" not in found
        assert len(found["latencies_s"]) == 100 and found["claims"] >= 1
        # the lifecycle's catch-up of nodes, then the plan's of nodes and pods at once (`read_together`),
        # which waits once more only when the pods had to be caught up again after the nodes
        assert found["batch_window_s"] == 1.0 and round(found["watch_waits_s"], 6) in (0.2, 0.3)
        fixed = found["batch_window_s"] + found["watch_waits_s"]
        assert all(fixed <= s <= found["pass_s"] for s in found["latencies_s"])
    assert cluster.refused == []
