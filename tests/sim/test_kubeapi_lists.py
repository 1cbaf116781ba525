"""Lists through the real client: label selectors (every operator), field selectors, limit/continue pagination.

Matrix: =, ==, !=, in, notin, exists, !key, combined requirements, malformed selectors (400); field selectors
on spec.nodeName, status.phase, metadata.name, metadata.namespace with = and !=, unsupported fields (400);
pagination across pages with every object exactly once, and an invalid continue token (400).
"""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from longshore_sim.kubeapi import KubeApiEmulator
from tests.sim import manifests

LABELLED = {
    "web-1": {"app": "web", "tier": "front"},
    "web-2": {"app": "web"},
    "db-1": {"app": "db", "tier": "back"},
    "bare": {},
}


@pytest.fixture
def labelled(core: client.CoreV1Api) -> None:
    for name, labels in LABELLED.items():
        core.create_namespaced_pod("default", manifests.pod(name, labels=labels))


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", {"web-1", "web-2"}),
        ("app==web", {"web-1", "web-2"}),
        ("app!=web", {"db-1", "bare"}),
        ("app in (web,db)", {"web-1", "web-2", "db-1"}),
        ("app notin (web)", {"db-1", "bare"}),
        ("tier", {"web-1", "db-1"}),
        ("!tier", {"web-2", "bare"}),
        ("app=web,tier", {"web-1"}),
        ("app in (db), tier notin (front)", {"db-1"}),
        ("", set(LABELLED)),
    ],
)
@pytest.mark.usefixtures("labelled")
def test_label_selector_operators(core: client.CoreV1Api, selector: str, expected: set[str]) -> None:
    found = core.list_namespaced_pod("default", label_selector=selector).items
    assert {p.metadata.name for p in found} == expected


@pytest.mark.parametrize("selector", ["app=(web", "app in ()", "=web", "app in (a b)"])
def test_malformed_label_selector_is_400(core: client.CoreV1Api, selector: str) -> None:
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_pod("default", label_selector=selector)
    assert caught.value.status == 400


@pytest.fixture
def placed(emulator: KubeApiEmulator, core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "other"}})
    for name, node, phase, namespace in (
        ("a", "n1", "Running", "default"),
        ("b", "n2", "Running", "default"),
        ("c", None, "Pending", "default"),
        ("d", "n1", "Succeeded", "other"),
    ):
        emulator.store.create(
            "pods", manifests.pod(name, node_name=node, namespace=namespace), keep_status=True
        )
        emulator.store.modify("pods", name, namespace, lambda p, ph=phase: p["status"].update({"phase": ph}))


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=n1", {"a", "d"}),
        ("spec.nodeName=", {"c"}),
        ("spec.nodeName!=", {"a", "b", "d"}),
        ("status.phase=Running", {"a", "b"}),
        ("status.phase!=Running", {"c", "d"}),
        ("metadata.name=b", {"b"}),
        ("metadata.namespace=other", {"d"}),
        ("spec.nodeName=n1,status.phase=Running", {"a"}),
        ("spec.nodeName==n2", {"b"}),
    ],
)
@pytest.mark.usefixtures("placed")
def test_field_selectors_across_namespaces(core: client.CoreV1Api, selector: str, expected: set[str]) -> None:
    found = core.list_pod_for_all_namespaces(field_selector=selector).items
    assert {p.metadata.name for p in found} == expected


def test_unsupported_field_selector_is_400(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_pod("default", field_selector="spec.priority=5")
    assert caught.value.status == 400
    assert "field label not supported: spec.priority" in caught.value.body


def test_node_field_selector(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1"))
    core.create_node(manifests.node("n2"))
    core.patch_node("n2", {"spec": {"unschedulable": True}})
    assert [n.metadata.name for n in core.list_node(field_selector="spec.unschedulable=false").items] == [
        "n1"
    ]
    assert [n.metadata.name for n in core.list_node(field_selector="metadata.name!=n1").items] == ["n2"]


def test_limit_and_continue_page_through_everything_once(core: client.CoreV1Api) -> None:
    names = [f"p{i:02d}" for i in range(7)]
    for name in names:
        core.create_namespaced_pod("default", manifests.pod(name))
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        page = core.list_namespaced_pod("default", limit=3, _continue=token)
        pages += 1
        seen += [p.metadata.name for p in page.items]
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == len(names) - len(seen)
    assert (seen, pages) == (names, 3)


def test_pagination_respects_selectors(core: client.CoreV1Api) -> None:
    for i in range(6):
        core.create_namespaced_pod(
            "default", manifests.pod(f"p{i}", labels={"even": str(i % 2 == 0).lower()})
        )
    first = core.list_namespaced_pod("default", label_selector="even=true", limit=2)
    second = core.list_namespaced_pod(
        "default", label_selector="even=true", limit=2, _continue=first.metadata._continue
    )
    assert [p.metadata.name for p in first.items + second.items] == ["p0", "p2", "p4"]
    assert second.metadata._continue is None


def test_invalid_continue_token_is_400(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_pod("default", limit=1, _continue="not-a-token")
    assert caught.value.status == 400
