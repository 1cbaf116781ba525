"""PATCH through the real client: strategic merge (the client's default for dict bodies), JSON patch (list
bodies) and merge patch (`_content_type`), with Kubernetes' list semantics.

Matrix: node `spec.taints` is atomic (replaced, as in Kubernetes); node `status.conditions` merge by `type`;
pod `spec.containers` merge by `name`; `metadata.finalizers` merge as a set; `$patch: delete` on a keyed list
item; `$patch: replace` on a list; `$retainKeys`; `$deleteFromPrimitiveList`; `null` deletes a key; merge patch
replaces lists; JSON patch add/remove/test and a failing test (422).
"""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.sim import manifests

MERGE = "application/merge-patch+json"


def _taints(node: client.V1Node) -> list[tuple[str, str | None, str]]:
    return [(t.key, t.value, t.effect) for t in node.spec.taints or []]


def test_strategic_patch_replaces_node_taints_atomically(core: client.CoreV1Api) -> None:
    # Kubernetes declares NodeSpec.Taints `+listType=atomic` without a patch strategy: the list is replaced.
    core.create_node(
        manifests.node(
            "n1", taints=[{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}]
        )
    )
    patched = core.patch_node(
        "n1", {"spec": {"taints": [{"key": "c", "value": "1", "effect": "NoSchedule"}]}}
    )
    assert _taints(patched) == [("c", "1", "NoSchedule")]


def test_strategic_patch_merges_node_conditions_by_type(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1"))
    patched = core.patch_node_status(
        "n1", {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]}}
    )
    conditions = {c.type: (c.status, c.reason) for c in patched.status.conditions}
    assert conditions == {"MemoryPressure": ("False", None), "Ready": ("False", "KubeletDown")}


def test_strategic_patch_merges_pod_containers_by_name(core: client.CoreV1Api) -> None:
    body = manifests.pod("p")
    body["spec"]["containers"] = [{"name": "a", "image": "one"}, {"name": "b", "image": "two"}]
    core.create_namespaced_pod("default", body)
    patched = core.patch_namespaced_pod(
        "p", "default", {"spec": {"containers": [{"name": "b", "image": "three"}]}}
    )
    assert [(c.name, c.image) for c in patched.spec.containers] == [("a", "one"), ("b", "three")]


def test_finalizers_merge_as_a_set_and_delete_from_primitive_list(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1"))
    core.patch_node("n1", {"metadata": {"finalizers": ["karpenter.sh/termination"]}})
    merged = core.patch_node("n1", {"metadata": {"finalizers": ["example.com/other"]}})
    assert merged.metadata.finalizers == ["karpenter.sh/termination", "example.com/other"]
    removed = core.patch_node(
        "n1", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["karpenter.sh/termination"]}}
    )
    assert removed.metadata.finalizers == ["example.com/other"]


def test_merge_patch_replaces_lists(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1"))
    core.patch_node("n1", {"metadata": {"finalizers": ["a", "b"]}})
    patched = core.patch_node("n1", {"metadata": {"finalizers": ["c"]}}, _content_type=MERGE)
    assert patched.metadata.finalizers == ["c"]


def test_null_deletes_a_key(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1", labels={"keep": "1", "drop": "2"}))
    assert core.patch_node("n1", {"metadata": {"labels": {"drop": None}}}).metadata.labels == {"keep": "1"}
    assert (
        core.patch_node("n1", {"metadata": {"labels": {"keep": None}}}, _content_type=MERGE).metadata.labels
        is None
    )


def test_patch_delete_directive_removes_a_keyed_list_item(apps: client.AppsV1Api) -> None:
    body = manifests.deployment("web", 1)
    body["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "envoy"})
    apps.create_namespaced_deployment("default", body)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}}
    patched = apps.patch_namespaced_deployment("web", "default", patch)
    assert [c.name for c in patched.spec.template.spec.containers] == ["app"]


def test_patch_replace_directive_on_a_list(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1"))
    patch = {"status": {"conditions": [{"$patch": "replace"}, {"type": "Ready", "status": "True"}]}}
    patched = core.patch_node_status("n1", patch)
    assert [c.type for c in patched.status.conditions] == ["Ready"]


def test_retain_keys_clears_unlisted_fields(apps: client.AppsV1Api) -> None:
    body = manifests.deployment("web", 1)
    body["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}
    apps.create_namespaced_deployment("default", body)
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    patched = apps.patch_namespaced_deployment("web", "default", patch)
    assert (patched.spec.strategy.type, patched.spec.strategy.rolling_update) == ("Recreate", None)


def test_json_patch_operations(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1", labels={"a": "1"}))
    patched = core.patch_node(
        "n1",
        [
            {"op": "test", "path": "/metadata/labels/a", "value": "1"},
            {"op": "add", "path": "/metadata/labels/b", "value": "2"},
            {"op": "remove", "path": "/metadata/labels/a"},
            {"op": "add", "path": "/spec/taints/-", "value": {"key": "k", "effect": "NoSchedule"}},
        ],
    )
    assert patched.metadata.labels == {"b": "2"}
    assert _taints(patched) == [("k", None, "NoSchedule")]


def test_failing_json_patch_test_is_422_and_changes_nothing(core: client.CoreV1Api) -> None:
    created = core.create_node(manifests.node("n1", labels={"a": "1"}))
    with pytest.raises(ApiException) as caught:
        core.patch_node(
            "n1",
            [
                {"op": "test", "path": "/metadata/labels/a", "value": "other"},
                {"op": "replace", "path": "/metadata/labels/a", "value": "2"},
            ],
        )
    assert caught.value.status == 422
    assert core.read_node("n1").metadata.resource_version == created.metadata.resource_version


def test_strategic_patch_item_without_merge_key_is_400(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1"))
    with pytest.raises(ApiException) as caught:
        core.patch_node_status("n1", {"status": {"conditions": [{"status": "True"}]}})
    assert caught.value.status == 400
