"""Watches through the real client: `watch=True` (client 36) and `watch=true` (client 37), from a
resourceVersion, selector-filtered with ADDED/MODIFIED/DELETED, 410 Gone, bookmarks, and both timeouts.

Matrix: initial ADDED events without a resourceVersion; replay of ADDED, MODIFIED, DELETED after a list's
resourceVersion; an object leaving a label selector is DELETED for that watcher and ADDED when it returns;
`timeoutSeconds` ends the stream in wall time and in virtual time (the clock advanced by another thread);
a too-old resourceVersion yields an ERROR event with code 410; BOOKMARK on request; the legacy query spelling.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import KubeApiEmulator
from tests.sim import manifests


def _events(stream: Any, count: int | None = None) -> list[tuple[str, str]]:
    """(type, name) of the stream's events; stop after `count` events instead of waiting for the timeout."""
    events: list[tuple[str, str]] = []
    for event in stream:
        events.append((event["type"], event["object"].metadata.name))
        if count is not None and len(events) >= count:
            break
    return events


@pytest.mark.slow
def test_watch_starts_with_the_current_state(core: client.CoreV1Api, emulator: KubeApiEmulator) -> None:
    core.create_namespaced_pod("default", manifests.pod("a"))
    core.create_namespaced_pod("default", manifests.pod("b"))
    events = _events(watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=1))
    assert events == [("ADDED", "a"), ("ADDED", "b")]
    assert any("watch=True" in r.path for r in emulator.requests), "client 36 spells the flag watch=True"


def test_watch_replays_changes_after_a_resource_version(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", manifests.pod("old"))
    start = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", manifests.pod("new"))
    core.patch_namespaced_pod("new", "default", {"metadata": {"labels": {"x": "1"}}})
    core.delete_namespaced_pod("new", "default")
    stream = watch.Watch().stream(
        core.list_namespaced_pod, "default", resource_version=start, timeout_seconds=5
    )
    events = [
        (e["type"], e["object"].metadata.name, e["object"].metadata.labels)
        for e in itertools.islice(stream, 3)
    ]
    assert events == [("ADDED", "new", None), ("MODIFIED", "new", {"x": "1"}), ("DELETED", "new", {"x": "1"})]


@pytest.mark.slow
def test_lowercase_watch_true_is_accepted(core: client.CoreV1Api, emulator: KubeApiEmulator) -> None:
    # kubernetes 37 sends watch=true; passing the string through client 36 sends exactly that
    core.create_namespaced_pod("default", manifests.pod("a"))
    response = core.list_namespaced_pod("default", watch="true", timeout_seconds=1, _preload_content=False)
    lines = [json.loads(line) for line in response.read().splitlines() if line]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "a")]
    assert any("watch=true" in r.path for r in emulator.requests)


@pytest.mark.slow
def test_selector_filtered_watch_sees_objects_leave_and_return(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", manifests.pod("p", labels={"app": "web"}))
    start = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", manifests.pod("other", labels={"app": "db"}))
    core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"app": "db"}}})
    core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"app": "web"}}})
    stream = watch.Watch().stream(
        core.list_namespaced_pod,
        "default",
        label_selector="app=web",
        resource_version=start,
        timeout_seconds=1,
    )
    assert _events(stream) == [("DELETED", "p"), ("ADDED", "p")]


@pytest.mark.slow
def test_field_selector_watch_on_node_name(core: client.CoreV1Api, emulator: KubeApiEmulator) -> None:
    start = core.list_pod_for_all_namespaces().metadata.resource_version
    core.create_namespaced_pod("default", manifests.pod("a"))
    core.create_namespaced_pod("default", manifests.pod("b"))
    emulator.store.bind("default", "b", "n1")
    stream = watch.Watch().stream(
        core.list_pod_for_all_namespaces,
        field_selector="spec.nodeName=n1",
        resource_version=start,
        timeout_seconds=1,
    )
    assert _events(stream) == [("ADDED", "b")]


def test_watch_streams_changes_made_while_it_runs(core: client.CoreV1Api, emulator: KubeApiEmulator) -> None:
    watcher = watch.Watch()
    received: list[tuple[str, str]] = []
    start = core.list_node().metadata.resource_version

    def consume() -> None:
        for event in watcher.stream(core.list_node, resource_version=start, timeout_seconds=10):
            received.append((event["type"], event["object"].metadata.name))
            if len(received) == 3:
                watcher.stop()

    thread = threading.Thread(target=consume)
    thread.start()
    emulator.store.create("nodes", manifests.node("n1"))
    emulator.store.modify("nodes", "n1", None, lambda n: n["metadata"].update(labels={"x": "y"}))
    emulator.store.delete("nodes", "n1")
    thread.join(timeout=10)
    assert received == [("ADDED", "n1"), ("MODIFIED", "n1"), ("DELETED", "n1")]


def test_watch_timeout_follows_virtual_time(
    core: client.CoreV1Api, clock: VirtualClock, emulator: KubeApiEmulator
) -> None:
    # GIVEN a watch asking for a one-hour timeout, being served
    finished = threading.Event()

    def consume() -> None:
        list(watch.Watch().stream(core.list_node, timeout_seconds=3600))
        finished.set()

    thread = threading.Thread(target=consume)
    thread.start()
    for _ in range(200):
        if any(r.verb == "watch" for r in emulator.requests):
            break
        time.sleep(0.05)
    assert not finished.is_set()
    # WHEN an hour passes on the virtual clock, THEN the stream ends without an hour of wall time
    clock.advance(3601)
    thread.join(timeout=10)
    assert finished.is_set()


def test_too_old_resource_version_is_410(clock: VirtualClock) -> None:
    with KubeApiEmulator(clock=clock, history=4) as emulator:
        api = emulator.api_client()
        core = client.CoreV1Api(api)
        for i in range(10):
            core.create_namespaced_pod("default", manifests.pod(f"p{i}"))
        with pytest.raises(ApiException) as caught:
            list(
                watch.Watch().stream(
                    core.list_namespaced_pod, "default", resource_version="2", timeout_seconds=1
                )
            )
        api.close()
    assert caught.value.status == 410


@pytest.mark.slow
def test_bookmark_when_asked(core: client.CoreV1Api) -> None:
    response = core.list_namespaced_pod(
        "default", watch=True, allow_watch_bookmarks=True, timeout_seconds=1, _preload_content=False
    )
    lines = [json.loads(line) for line in response.read().splitlines() if line]
    assert lines[-1]["type"] == "BOOKMARK"
    assert lines[-1]["object"]["metadata"]["resourceVersion"].isdigit()


@pytest.mark.slow
def test_watch_of_a_single_object_by_name(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1"))
    core.create_node(manifests.node("n2"))
    stream = watch.Watch().stream(core.list_node, field_selector="metadata.name=n2", timeout_seconds=1)
    assert _events(stream) == [("ADDED", "n2")]
