"""The parsed-pod memo (`services.snapshot.PodCache`) that lets a warm pass skip pods that did not change.

Matrix: the same object parses once across caches (the container-wide identity memo); an equal but new
object with the same (uid, resourceVersion) hits within one cache; a changed pod (new resourceVersion, new
object) is parsed again and its new fields are seen; `retain` forgets pods no longer listed; through the
watch cache, a second read hands back the same objects for unchanged pods and a new one for a changed pod.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest
from bench.scale_objects import node, pod

from longshore.adapters.kube.cluster import KubeCluster, new_cache
from longshore.services import snapshot
from longshore_sim.kubeapi import KubeApiEmulator


def _versioned(i: int, version: str) -> dict[str, object]:
    manifest = pod(i, "node-a")
    manifest["metadata"]["uid"] = f"uid-{i}"
    manifest["metadata"]["resourceVersion"] = version
    return manifest


def test_the_same_object_is_parsed_once_across_caches() -> None:
    manifest = _versioned(1, "10")
    first = snapshot.PodCache().parse(manifest)
    assert snapshot.PodCache().parse(manifest) is first


def test_an_equal_copy_hits_within_a_cache_and_a_change_is_seen() -> None:
    cache = snapshot.PodCache()
    manifest = _versioned(2, "10")
    first = cache.parse(manifest)
    assert cache.parse(copy.deepcopy(manifest)) is first
    changed = copy.deepcopy(manifest)
    changed["metadata"]["resourceVersion"] = "11"
    changed["metadata"]["labels"]["team"] = "other"
    parsed = cache.parse(changed)
    assert not isinstance(parsed, snapshot.Skipped) and dict(parsed.labels)["team"] == "other"


def test_retain_forgets_what_is_no_longer_listed() -> None:
    cache = snapshot.PodCache()
    kept, gone = _versioned(3, "10"), _versioned(4, "10")
    cache.parse(kept)
    first_gone = cache.parse(gone)
    cache.retain([kept])
    assert snapshot.PodCache().parse(gone) is not first_gone  # parsed again: the memo let it go
    assert snapshot.PodCache().parse(kept) is cache.parse(kept)


@pytest.fixture
def emulator() -> Iterator[KubeApiEmulator]:
    with KubeApiEmulator() as running:
        yield running


def test_a_warm_read_hands_back_unchanged_objects(emulator: KubeApiEmulator) -> None:
    emulator.store.create("nodes", node(0), None, keep_status=True)
    for i in range(5):
        emulator.store.create("pods", pod(i, node(0)["metadata"]["name"]), "default", keep_status=True)
    api_client = emulator.api_client()
    kube = KubeCluster(api_client, cache=new_cache(quiet_s=0.1))
    first = {p["metadata"]["name"]: p for p in kube.list_pods()}
    changed = pod(1, None)["metadata"]["name"]
    emulator.store.patch("pods", changed, {"metadata": {"labels": {"team": "b"}}}, "default")
    second = {p["metadata"]["name"]: p for p in kube.list_pods()}
    api_client.close()
    assert all(second[n] is first[n] for n in first if n != changed)
    assert second[changed] is not first[changed] and second[changed]["metadata"]["labels"]["team"] == "b"
    cache = snapshot.PodCache()
    parsed = cache.parse(second[changed])
    assert not isinstance(parsed, snapshot.Skipped) and dict(parsed.labels)["team"] == "b"
