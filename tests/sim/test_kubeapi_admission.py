"""The emulator's validating admission webhooks, driven through the real kubernetes client.

A webhook sees every CREATE and DELETE (object and oldObject as Kubernetes sends them), and the final removal
of an object that lingered in graceful deletion (the kubelet's own DELETE). With `failurePolicy: Ignore`, a
webhook that fails never fails the request.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import KubeApiEmulator
from tests.sim import manifests

Seen = list[tuple[str, str, str | None, str | None]]


def record(emulator: KubeApiEmulator) -> Seen:
    seen: Seen = []

    def webhook(operation: str, plural: str, obj: Any, old: Any) -> None:
        name = lambda o: None if o is None else f"{o['metadata']['name']}@{o['spec'].get('nodeName', '')}"  # noqa: E731
        seen.append((operation, plural, name(obj), name(old)))

    emulator.store.admission.append(webhook)
    return seen


def test_create_and_graceful_delete_are_seen_with_their_objects(
    emulator: KubeApiEmulator, core: client.CoreV1Api, clock: VirtualClock
) -> None:
    seen = record(emulator)
    core.create_namespaced_pod("default", manifests.pod("p"))
    emulator.store.bind("default", "p", "n1")

    core.delete_namespaced_pod("p", "default")  # lingers 30 s
    assert seen == [("CREATE", "pods", "p@", None), ("DELETE", "pods", None, "p@n1")]

    clock.advance(31)
    emulator.store.process_due()
    assert seen[-1] == ("DELETE", "pods", None, "p@n1"), "the final removal is a DELETE too"
    assert len(seen) == 3


def test_a_failing_webhook_does_not_fail_the_request(
    emulator: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    def broken(*_: Any) -> None:
        raise RuntimeError("the function URL timed out")

    emulator.store.admission.append(broken)

    core.create_namespaced_pod("default", manifests.pod("q"))

    assert core.read_namespaced_pod("q", "default").metadata.name == "q"
