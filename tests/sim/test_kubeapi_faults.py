"""Fault injection per route and bearer-token auth, observed through the real client.

Matrix: 5xx for a limited number of calls then recovery; 429 with Retry-After; a rule scoped to one
resource/verb leaves other routes alone; latency beyond the client's timeout; a watch dropped mid-stream
(events before the drop arrive, then the connection breaks); tokens: none, wrong, right, predicate.
"""

from __future__ import annotations

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import Fault, KubeApiEmulator
from tests.sim import manifests


def test_5xx_for_the_next_calls_then_recovery(emulator: KubeApiEmulator, core: client.CoreV1Api) -> None:
    rule = emulator.faults.add(Fault(resource="pods", verb="list", status=503, times=2))
    outcomes = []
    for _ in range(3):
        try:
            core.list_namespaced_pod("default")
            outcomes.append(200)
        except ApiException as exc:
            outcomes.append(exc.status)
    assert outcomes == [503, 503, 200]
    assert rule.hits == 2


def test_429_carries_retry_after(emulator: KubeApiEmulator, core: client.CoreV1Api) -> None:
    emulator.faults.add(resource="nodes", verb="patch", status=429, retry_after=7)
    core.create_node(manifests.node("n1"))
    with pytest.raises(ApiException) as caught:
        core.patch_node("n1", {"spec": {"unschedulable": True}})
    assert caught.value.status == 429
    assert caught.value.headers["Retry-After"] == "7"
    assert not core.read_node("n1").spec.unschedulable


def test_faults_are_scoped_to_their_route(emulator: KubeApiEmulator, core: client.CoreV1Api) -> None:
    emulator.faults.add(resource="pods/eviction", status=500)
    core.create_namespaced_pod("default", manifests.pod("p"))
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["p"]
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod_eviction(
            "p", "default", client.V1Eviction(metadata=client.V1ObjectMeta(name="p"))
        )
    assert caught.value.status == 500
    emulator.faults.clear()
    core.create_namespaced_pod_eviction(
        "p", "default", client.V1Eviction(metadata=client.V1ObjectMeta(name="p"))
    )
    assert core.list_namespaced_pod("default").items == []


@pytest.mark.slow
def test_latency_beyond_the_client_timeout(emulator: KubeApiEmulator, core: client.CoreV1Api) -> None:
    emulator.faults.add(resource="nodes", verb="list", latency=0.5)
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_node(_request_timeout=0.1)


@pytest.mark.slow
def test_dropped_watch_breaks_the_stream_after_some_events(
    emulator: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    for i in range(5):
        core.create_namespaced_pod("default", manifests.pod(f"p{i}"))
    emulator.faults.add(resource="pods", verb="watch", drop_after=2, times=1)
    received = []
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for event in watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=5):
            received.append(event["object"].metadata.name)
    assert received == ["p0", "p1"]
    # the rule fired once: the next watch is whole
    again = [
        e["object"].metadata.name
        for e in watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=1)
    ]
    assert again == [f"p{i}" for i in range(5)]


class TestAuth:
    def test_missing_or_wrong_token_is_401(self, clock: VirtualClock) -> None:
        with KubeApiEmulator(clock=clock, token="s3cret") as emulator:
            for token in ("", "wrong"):
                api = emulator.api_client(token=token)
                with pytest.raises(ApiException) as caught:
                    client.CoreV1Api(api).list_node()
                api.close()
                assert caught.value.status == 401

    def test_configured_token_is_accepted(self, clock: VirtualClock) -> None:
        with KubeApiEmulator(clock=clock, token="s3cret") as emulator:
            api = emulator.api_client()
            assert client.CoreV1Api(api).list_node().items == []
            api.close()

    def test_token_predicate(self, clock: VirtualClock) -> None:
        with KubeApiEmulator(clock=clock, token=lambda t: t.startswith("k8s-aws-v1.")) as emulator:
            good, bad = emulator.api_client(token="k8s-aws-v1.abc"), emulator.api_client(token="nope")
            assert client.CoreV1Api(good).list_node().items == []
            with pytest.raises(ApiException):
                client.CoreV1Api(bad).list_node()
            good.close()
            bad.close()
