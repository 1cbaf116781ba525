"""CRUD through the real kubernetes client for every served type, plus discovery, errors and versions.

Matrix: create/read/list (namespaced and all-namespaces)/replace/delete for pods, nodes, namespaces, events,
daemonsets, deployments, replicasets and poddisruptionbudgets; 404 and 409 Status objects; stale updates (PUT
and PATCH) answer 409; the status subresource; the deployment scale subresource; pod binding; discovery.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import KubeApiEmulator
from tests.sim import manifests


def _status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


NAMESPACED = [
    # (api attr, kind suffix used by the client's method names, builder)
    ("core", "pod", lambda n: manifests.pod(n)),
    (
        "core",
        "event",
        lambda n: {"metadata": {"name": n}, "involvedObject": {"kind": "Pod", "name": "x"}, "reason": "Test"},
    ),
    ("apps", "daemon_set", lambda n: manifests.daemonset(n, namespace="default")),
    ("apps", "deployment", lambda n: manifests.deployment(n, 2)),
    ("apps", "replica_set", lambda n: manifests.replicaset(n, 2)),
    ("policy", "pod_disruption_budget", lambda n: manifests.pdb(n, {"app": n}, minAvailable=1)),
]


@pytest.mark.parametrize(("api_name", "kind", "build"), NAMESPACED, ids=[k for _, k, _ in NAMESPACED])
def test_namespaced_crud_round_trip(
    api_name: str, kind: str, build: Callable[[str], dict[str, Any]], core: Any, apps: Any, policy: Any
) -> None:
    api = {"core": core, "apps": apps, "policy": policy}[api_name]
    core.create_namespace({"metadata": {"name": "team-a"}})
    # GIVEN one object in "default" and one in "team-a"
    created = getattr(api, f"create_namespaced_{kind}")("default", build("one"))
    other = build("two")
    other["metadata"]["namespace"] = "team-a"
    getattr(api, f"create_namespaced_{kind}")("team-a", other)
    # THEN read, namespaced list and all-namespaces list see them
    assert getattr(api, f"read_namespaced_{kind}")("one", "default").metadata.uid == created.metadata.uid
    assert [o.metadata.name for o in getattr(api, f"list_namespaced_{kind}")("default").items] == ["one"]
    everywhere = getattr(api, f"list_{kind}_for_all_namespaces")().items
    assert sorted((o.metadata.namespace, o.metadata.name) for o in everywhere) == [
        ("default", "one"),
        ("team-a", "two"),
    ]
    # WHEN it is replaced with a new label
    current = getattr(api, f"read_namespaced_{kind}")("one", "default")
    current.metadata.labels = {"changed": "yes"}
    replaced = getattr(api, f"replace_namespaced_{kind}")("one", "default", current)
    assert replaced.metadata.labels == {"changed": "yes"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    # WHEN deleted, it is gone
    getattr(api, f"delete_namespaced_{kind}")("one", "default")
    with pytest.raises(ApiException) as missing:
        getattr(api, f"read_namespaced_{kind}")("one", "default")
    assert missing.value.status == 404


def test_nodes_are_cluster_scoped(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1", labels={"zone": "a"}))
    core.create_node(manifests.node("n2"))
    assert [n.metadata.name for n in core.list_node(label_selector="zone=a").items] == ["n1"]
    assert core.read_node("n1").metadata.namespace is None
    core.delete_node("n2")
    assert [n.metadata.name for n in core.list_node().items] == ["n1"]


def test_missing_object_is_a_404_status(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod("ghost", "default")
    status = _status_of(caught.value)
    assert (caught.value.status, status["kind"], status["reason"]) == (404, "Status", "NotFound")
    assert status["message"] == 'pods "ghost" not found'
    assert status["details"] == {"name": "ghost", "kind": "pods"}


def test_create_twice_is_409_already_exists(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_deployment("default", manifests.deployment("web", 1))
    with pytest.raises(ApiException) as caught:
        apps.create_namespaced_deployment("default", manifests.deployment("web", 1))
    status = _status_of(caught.value)
    assert (caught.value.status, status["reason"]) == (409, "AlreadyExists")
    assert status["message"] == 'deployments.apps "web" already exists'


def test_create_in_unknown_namespace_is_404(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod("nowhere", manifests.pod("p", namespace="nowhere"))
    assert caught.value.status == 404
    assert _status_of(caught.value)["message"] == 'namespaces "nowhere" not found'


def test_generate_name_creates_unique_names(core: client.CoreV1Api) -> None:
    body = manifests.pod("")
    body["metadata"] = {"generateName": "web-"}
    names = {core.create_namespaced_pod("default", body).metadata.name for _ in range(5)}
    assert len(names) == 5
    assert all(n.startswith("web-") and len(n) == len("web-") + 5 for n in names)


def test_stale_replace_is_409_conflict(core: client.CoreV1Api) -> None:
    # GIVEN two readers of the same node
    core.create_node(manifests.node("n1"))
    first, second = core.read_node("n1"), core.read_node("n1")
    first.metadata.labels = {"writer": "first"}
    core.replace_node("n1", first)
    # WHEN the second writes with its now stale resourceVersion
    second.metadata.labels = {"writer": "second"}
    with pytest.raises(ApiException) as caught:
        core.replace_node("n1", second)
    # THEN it is refused and the first write stands
    assert caught.value.status == 409
    assert _status_of(caught.value)["reason"] == "Conflict"
    assert core.read_node("n1").metadata.labels == {"writer": "first"}


def test_patch_carrying_a_stale_resource_version_is_409(core: client.CoreV1Api) -> None:
    created = core.create_node(manifests.node("n1"))
    core.patch_node("n1", {"metadata": {"labels": {"a": "1"}}})
    with pytest.raises(ApiException) as caught:
        core.patch_node(
            "n1", {"metadata": {"resourceVersion": created.metadata.resource_version, "labels": {"b": "2"}}}
        )
    assert caught.value.status == 409
    current = core.read_node("n1")
    patched = core.patch_node(
        "n1", {"metadata": {"resourceVersion": current.metadata.resource_version, "labels": {"b": "2"}}}
    )
    assert patched.metadata.labels == {"a": "1", "b": "2"}


def test_unchanged_write_keeps_the_resource_version(core: client.CoreV1Api) -> None:
    created = core.create_node(manifests.node("n1"))
    again = core.patch_node("n1", {"metadata": {"labels": {}}})
    assert again.metadata.resource_version == created.metadata.resource_version


def test_pod_status_is_only_written_through_the_status_subresource(core: client.CoreV1Api) -> None:
    # GIVEN a pod created with a client-sent status (the API server drops it)
    body = manifests.pod("p")
    body["status"] = {"phase": "Running"}
    assert core.create_namespaced_pod("default", body).status.phase == "Pending"
    # WHEN the main resource is patched with a status, nothing changes; the status subresource does change it
    core.patch_namespaced_pod("p", "default", {"status": {"phase": "Failed"}})
    assert core.read_namespaced_pod("p", "default").status.phase == "Pending"
    core.patch_namespaced_pod_status("p", "default", {"status": {"phase": "Running"}})
    assert core.read_namespaced_pod_status("p", "default").status.phase == "Running"


def test_node_status_update_does_not_touch_spec(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1"))
    current = core.read_node_status("n1")
    current.spec.unschedulable = True
    current.status.allocatable = {"cpu": "3", "memory": "12Gi", "pods": "110"}
    updated = core.replace_node_status("n1", current)
    assert updated.status.allocatable["cpu"] == "3"
    assert not updated.spec.unschedulable


def test_pod_spec_is_immutable_except_allowed_fields(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", manifests.pod("p", cpu="100m"))
    patched = core.patch_namespaced_pod(
        "p", "default", {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}
    )
    assert patched.spec.containers[0].image == "nginx:2"
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_pod("p", "default", {"spec": {"nodeName": "n1"}})
    assert caught.value.status == 422


def test_binding_assigns_a_pod_once(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", manifests.pod("p"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "n1"},
    }
    core.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)
    pod = core.read_namespaced_pod("p", "default")
    assert pod.spec.node_name == "n1"
    assert [(c.type, c.status) for c in pod.status.conditions] == [("PodScheduled", "True")]
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)
    assert caught.value.status == 409


def test_deployment_scale_subresource(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_deployment("default", manifests.deployment("web", 1))
    scale = apps.read_namespaced_deployment_scale("web", "default")
    assert (scale.spec.replicas, scale.status.selector) == (1, "app=web")
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 5}})
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 5
    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": -1}})
    assert caught.value.status == 422


def test_generation_counts_spec_changes_only(apps: client.AppsV1Api) -> None:
    created = apps.create_namespaced_deployment("default", manifests.deployment("web", 1))
    assert created.metadata.generation == 1
    apps.patch_namespaced_deployment("web", "default", {"metadata": {"labels": {"x": "y"}}})
    apps.patch_namespaced_deployment_status("web", "default", {"status": {"replicas": 1}})
    assert apps.read_namespaced_deployment("web", "default").metadata.generation == 1
    apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 2}})
    assert apps.read_namespaced_deployment("web", "default").metadata.generation == 2


def test_events_list_by_involved_object(core: client.CoreV1Api) -> None:
    for name, target in (("e1", "a"), ("e2", "b")):
        core.create_namespaced_event(
            "default",
            {
                "metadata": {"name": name},
                "involvedObject": {"kind": "Pod", "name": target},
                "reason": "Nominated",
            },
        )
    found = core.list_namespaced_event("default", field_selector="involvedObject.name=b")
    assert [e.metadata.name for e in found.items] == ["e2"]


def test_timestamps_come_from_the_injected_clock(core: client.CoreV1Api, clock: VirtualClock) -> None:
    clock.advance(3600)
    pod = core.create_namespaced_pod("default", manifests.pod("p"))
    assert pod.metadata.creation_timestamp.isoformat() == "2026-01-01T01:00:00+00:00"


def test_python_api_and_http_share_state(emulator: KubeApiEmulator, core: client.CoreV1Api) -> None:
    emulator.store.create("pods", manifests.pod("seeded", node_name="n1"), keep_status=True)
    emulator.store.modify("pods", "seeded", "default", lambda p: p["status"].update(manifests.ready_status()))
    assert core.read_namespaced_pod("seeded", "default").status.phase == "Running"
    core.create_namespaced_pod("default", manifests.pod("over-http"))
    assert {p["metadata"]["name"] for p in emulator.store.list("pods")} == {"seeded", "over-http"}


class TestDiscovery:
    def test_version(self, api: Any) -> None:
        info = client.VersionApi(api).get_code()
        assert (info.major, info.minor) == ("1", "31")

    def test_core_and_groups(self, api: Any) -> None:
        assert client.CoreApi(api).get_api_versions().versions == ["v1"]
        groups = {
            g.name: g.preferred_version.group_version for g in client.ApisApi(api).get_api_versions().groups
        }
        assert groups["apps"] == "apps/v1"
        assert groups["policy"] == "policy/v1"

    def test_resource_lists_name_subresources(
        self, core: client.CoreV1Api, apps: client.AppsV1Api, policy: client.PolicyV1Api
    ) -> None:
        core_names = {r.name for r in core.get_api_resources().resources}
        assert {
            "pods",
            "pods/status",
            "pods/eviction",
            "pods/binding",
            "nodes",
            "nodes/status",
            "namespaces",
            "events",
        } <= core_names
        assert {"deployments", "deployments/scale", "replicasets", "daemonsets"} <= {
            r.name for r in apps.get_api_resources().resources
        }
        assert "poddisruptionbudgets" in {r.name for r in policy.get_api_resources().resources}

    def test_unknown_path_is_404(self, api: Any) -> None:
        with pytest.raises(ApiException) as caught:
            api.call_api("/apis/nope/v1/things", "GET", auth_settings=["BearerToken"], _preload_content=False)
        assert caught.value.status == 404
