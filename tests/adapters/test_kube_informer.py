"""The list-then-watch cache behind `KubeCluster(cache=...)` (`adapters.kube.informer`), on the API emulator.

Matrix: the first read lists, later reads apply only what changed (added, modified, deleted pods and nodes)
in the API server's order and read far fewer bytes than a list; a version older than the server keeps gets
410 Gone and a relist; a version from another server (too large) relists; reads by node or selector never
come from the cache; the container-wide cache is one per endpoint; nodes and pods caught up together end with
the pods as current as the nodes, and an error of either read reaches the caller; random catch-ups keep every
object in (namespace, name) order.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest
from bench.scale_objects import node, pod
from kubernetes.client.exceptions import ApiException

from longshore.adapters.kube.cluster import KubeCluster, new_cache
from longshore.adapters.kube.informer import ClusterCache, WatchedList, read_together, shared_cache
from longshore_sim.kubeapi import KubeApiEmulator


@pytest.fixture
def emulator() -> Iterator[KubeApiEmulator]:
    with KubeApiEmulator(history=20) as running:
        yield running


@pytest.fixture
def cache() -> ClusterCache:
    return new_cache(quiet_s=0.1)


@pytest.fixture
def kube(emulator: KubeApiEmulator, cache: ClusterCache) -> Iterator[KubeCluster]:
    api_client = emulator.api_client()
    yield KubeCluster(api_client, cache=cache)
    api_client.close()


def _seed(emulator: KubeApiEmulator, first: int, count: int, node_name: str | None = None) -> None:
    for i in range(first, first + count):
        emulator.store.create("pods", pod(i, None), "default", keep_status=True)
        if node_name:
            emulator.store.bind("default", pod(i, None)["metadata"]["name"], node_name)


def _names(objects: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


def _server_names(emulator: KubeApiEmulator, plural: str) -> list[str]:
    return _names(emulator.store.list(plural))


@pytest.mark.slow
def test_later_reads_apply_only_what_changed(
    emulator: KubeApiEmulator, kube: KubeCluster, cache: ClusterCache
) -> None:
    emulator.store.create("nodes", node(0), None, keep_status=True)
    _seed(emulator, 0, 40, node(0)["metadata"]["name"])
    assert _names(kube.list_pods()) == _server_names(emulator, "pods")
    assert len(kube.list_nodes()) == 1

    _seed(emulator, 40, 2)
    gone = pod(3, None)["metadata"]["name"]
    emulator.store.delete("pods", gone, "default", grace_period_seconds=0)
    emulator.store.create("nodes", node(1), None, keep_status=True)
    emulator.store.patch("nodes", node(0)["metadata"]["name"], {"metadata": {"labels": {"team": "a"}}})
    before = emulator.bytes_sent

    pods = kube.list_pods()
    nodes = kube.list_nodes()
    assert _names(pods) == _server_names(emulator, "pods") and gone not in _names(pods)
    assert _names(nodes) == _server_names(emulator, "nodes")
    assert (
        next(n for n in nodes if n["metadata"]["name"] == node(0)["metadata"]["name"])["metadata"]["labels"][
            "team"
        ]
        == "a"
    )
    assert all("managedFields" not in p["metadata"] for p in pods)  # watched objects are compact too
    assert (cache.pods.relists, cache.nodes.relists) == (1, 1)
    whole = sum(len(json.dumps(o)) for plural in ("pods", "nodes") for o in emulator.store.list(plural))
    assert 0 < emulator.bytes_sent - before < whole / 4  # the watch's events, not a list


def test_a_version_the_server_no_longer_keeps_relists(
    emulator: KubeApiEmulator, kube: KubeCluster, cache: ClusterCache
) -> None:
    _seed(emulator, 0, 3)
    kube.list_pods()
    _seed(emulator, 3, 30)  # more changes than the emulator's history of 20
    assert _names(kube.list_pods()) == _server_names(emulator, "pods")
    assert cache.pods.relists == 2


def test_a_version_from_another_server_relists(
    emulator: KubeApiEmulator, kube: KubeCluster, cache: ClusterCache
) -> None:
    _seed(emulator, 0, 3)
    kube.list_pods()
    cache.pods.version = str(
        emulator.store.resource_version + 1000
    )  # as after the endpoint's store was replaced
    _seed(emulator, 3, 1)
    assert _names(kube.list_pods()) == _server_names(emulator, "pods")
    assert cache.pods.relists == 2


def test_reads_by_node_or_selector_go_to_the_server(
    emulator: KubeApiEmulator, kube: KubeCluster, cache: ClusterCache
) -> None:
    emulator.store.create("nodes", node(0), None, keep_status=True)
    name = node(0)["metadata"]["name"]
    _seed(emulator, 0, 4, name)
    kube.list_pods()
    kube.list_nodes()
    cache.pods.items.clear()  # a cache that went wrong must not reach what a drain acts on
    cache.nodes.items.clear()
    assert len(kube.list_pods(node_name=name)) == 4
    assert len(kube.list_pods(label_selector="tier=backend")) == 4
    assert len(kube.list_nodes(label_selector="karpenter.sh/nodepool")) == 1
    assert kube.get_node(name) is not None


def test_one_shared_cache_per_endpoint() -> None:
    first = shared_cache("https://a.example", new_cache)
    assert shared_cache("https://a.example", new_cache) is first
    assert shared_cache("https://b.example", new_cache) is not first


def test_nodes_and_pods_are_caught_up_together(
    emulator: KubeApiEmulator, kube: KubeCluster, cache: ClusterCache
) -> None:
    emulator.store.create("nodes", node(0), None, keep_status=True)
    _seed(emulator, 0, 4, node(0)["metadata"]["name"])
    nodes, pods = kube.list_nodes_and_pods()  # cold: both list
    assert len(nodes) == 1 and _names(pods) == _server_names(emulator, "pods")
    emulator.store.create("nodes", node(1), None, keep_status=True)
    _seed(emulator, 4, 3, node(1)["metadata"]["name"])
    nodes, pods = kube.list_nodes_and_pods()  # warm: both watch, at once
    assert _names(nodes) == _server_names(emulator, "nodes")
    assert _names(pods) == _server_names(emulator, "pods")
    assert cache.pods.read_at >= cache.nodes.read_at  # the pods as current as the nodes
    assert (cache.nodes.relists, cache.pods.relists) == (1, 1)


def _listed(names: list[str], log: list[str], tag: str, before: Any = None) -> tuple[Any, Any]:
    def lister() -> tuple[list[dict[str, Any]], str]:
        if before is not None:
            before()
        log.append(tag)
        return [{"metadata": {"name": n}} for n in names], "1"

    def gone(*_: Any) -> Any:  # a watch of these kinds always relists
        raise ApiException(status=410)

    return lister, gone


def test_read_together_reads_the_second_kind_again_when_it_ended_first() -> None:
    log: list[str] = []
    nodes_kind, pods_kind = WatchedList(dict), WatchedList(dict)

    def after_the_pods() -> None:  # the nodes' read ends only once the pods' read has ended
        for _ in range(500):
            if pods_kind.read_at:
                return
            time.sleep(0.01)

    nodes, pods = read_together(
        nodes_kind, _listed(["n"], log, "nodes", after_the_pods), pods_kind, _listed(["p"], log, "pods")
    )
    assert (_names(nodes), _names(pods)) == (["n"], ["p"])
    assert log == ["pods", "nodes", "pods"] and pods_kind.read_at >= nodes_kind.read_at


def test_read_together_raises_what_the_first_read_raised() -> None:
    def broken() -> None:
        raise RuntimeError("no nodes")

    log: list[str] = []
    with pytest.raises(RuntimeError, match="no nodes"):
        read_together(
            WatchedList(dict),
            _listed([], log, "nodes", broken),
            WatchedList(dict),
            _listed(["p"], log, "pods"),
        )


class _Replay(list[str]):
    """A watch response: the events' lines, then the end of the stream."""

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


def _obj(namespace: str, name: str, version: int) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name, "resourceVersion": str(version)}}


@pytest.mark.parametrize("seed", range(12))
def test_catch_ups_keep_every_object_in_key_order(seed: int) -> None:
    """Added, re-added, modified and deleted keys, in random order: after every catch-up the objects are
    those of a model dict, ordered by (namespace, name), as a relist would give them."""
    rng = random.Random(seed)
    names = [(ns, f"p-{i}") for ns in ("default", "default-x", "kube-system") for i in range(40)]
    model: dict[tuple[str, str], int] = {}
    version = 0
    listed = [_obj(ns, n, 0) for ns, n in rng.sample(names, 30)]
    model.update({(o["metadata"]["namespace"], o["metadata"]["name"]): 0 for o in listed})
    kind = WatchedList(dict)
    pending: list[str] = []

    def watcher(_version: str, _quiet: float, _max: float) -> _Replay:
        return _Replay(pending)

    kind.read(lambda: (list(listed), "0"), watcher)
    for _ in range(25):
        pending = []
        for _ in range(rng.randrange(0, 12)):
            version += 1
            key = rng.choice(names)
            if key in model and rng.random() < 0.4:
                del model[key]
                event = "DELETED"
            else:
                event = "MODIFIED" if key in model else "ADDED"
                model[key] = version
            pending.append(json.dumps({"type": event, "object": _obj(*key, version)}))
        found = kind.read(lambda: pytest.fail("relisted"), watcher)
        assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in found] == sorted(model)
        assert [int(o["metadata"]["resourceVersion"]) for o in found] == [model[k] for k in sorted(model)]
