"""deploy/clusterrole.yaml gives each function exactly the Kubernetes calls its code makes, bound to its own group.

A function's calls: the `KubeCluster` methods named anywhere in the code its handler can reach
(tests/infra/calls.py), and for each, the API calls in its body and in the methods it calls on itself.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml
from infra.naming import kubernetes_group
from infra.permissions import HANDLER_MODULES

from longshore.adapters.kube.karpenter import PERMISSIONS as KARPENTER_PERMISSIONS
from tests.infra.calls import reachable
from tests.infra.conftest import REPO

KUBE_ADAPTERS = REPO / "functions" / "longshore" / "adapters" / "kube"
API_GROUPS = {
    "core": "",
    "apps": "apps",
    "policy": "policy",
    "coordination": "coordination.k8s.io",
    "events": "events.k8s.io",
    "storage": "storage.k8s.io",
}
VERBS = {
    "list": "list",
    "read": "get",
    "patch": "patch",
    "replace": "update",
    "delete": "delete",
    "create": "create",
}
RESOURCES = {
    "pod": "pods",
    "node": "nodes",
    "event": "events",
    "namespace": "namespaces",
    "daemon_set": "daemonsets",
    "pod_disruption_budget": "poddisruptionbudgets",
    "pod_eviction": "pods/eviction",
    "node_status": "nodes/status",
    "lease": "leases",
    "pod_template": "podtemplates",
    "deployment": "deployments",
    "replica_set": "replicasets",
    "stateful_set": "statefulsets",
    "persistent_volume_claim": "persistentvolumeclaims",
    "persistent_volume": "persistentvolumes",
    "storage_class": "storageclasses",
}
CUSTOM_OBJECTS = {  # `self._custom` calls: the routes the adapter names
    "list_buffers": ("autoscaling.x-k8s.io", "capacitybuffers", "list"),
    "write_buffer_status": ("autoscaling.x-k8s.io", "capacitybuffers/status", "patch"),
}
METHOD = re.compile(
    r"^(list|read|patch|replace|delete|create)_(?:namespaced_)?(\w+?)(?:_for_all_namespaces)?$"
)

Permission = tuple[str, str, str]  # (api group, resource, verb)


def used_permissions(directory: Path = KUBE_ADAPTERS) -> set[Permission]:
    """Every `self._<api>.<method>` the kube adapters reference, as an RBAC permission.

    A list method handed to `Watch().stream(...)` also needs `watch`.
    """
    used: set[Permission] = set()
    for path in sorted(directory.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            permission = _permission(node, path)
            if permission is not None:
                used.add(permission)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "stream"
            ):
                listed = _permission(node.args[0], path) if node.args else None
                assert listed is not None and listed[2] == "list", f"{path.name}: cannot tell what is watched"
                used.add((listed[0], listed[1], "watch"))
    return used


def _permission(node: ast.AST, path: Path) -> Permission | None:
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)):
        return None
    api = node.value.attr.strip("_")
    match = METHOD.match(node.attr)
    if api not in API_GROUPS or match is None:
        return None
    verb, kind = match.groups()
    assert kind in RESOURCES, f"{path.name}: {node.attr}: add {kind!r} to RESOURCES in this test"
    return (API_GROUPS[api], RESOURCES[kind], VERBS[verb])


KUBE_FUNCTIONS = ("provisioner", "planner", "interruption", "steps")
ADAPTER_CLASS = "KubeCluster"


def _stream_watch(node: ast.AST, path: Path) -> Permission | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "stream":
        listed = _permission(node.args[0], path) if node.args else None
        assert listed is not None and listed[2] == "list", f"{path.name}: cannot tell what is watched"
        return (listed[0], listed[1], "watch")
    return None


def method_permissions() -> dict[str, set[Permission]]:
    """`KubeCluster` method -> the RBAC permissions it (and what it calls on `self`) needs."""
    path = KUBE_ADAPTERS / "cluster.py"
    (cls,) = [
        n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef) and n.name == ADAPTER_CLASS
    ]
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    direct: dict[str, set[Permission]] = {}
    calls: dict[str, set[str]] = {}
    for name, method in methods.items():
        direct[name] = {
            p for node in ast.walk(method) for p in (_permission(node, path), _stream_watch(node, path)) if p
        }
        if name in CUSTOM_OBJECTS:
            direct[name].add(CUSTOM_OBJECTS[name])
        calls[name] = {
            n.attr
            for n in ast.walk(method)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
        } & methods.keys()
    closed: dict[str, set[Permission]] = {}
    for name in methods:
        seen, todo = {name}, [name]
        while todo:
            for more in calls[todo.pop()] - seen:
                seen.add(more)
                todo.append(more)
        closed[name] = set().union(*(direct[m] for m in seen))
    return closed


def function_permissions(function: str) -> set[Permission]:
    """The permissions of the `KubeCluster` methods the function's reachable code names (outside the class)."""
    methods = method_permissions()
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.ClassDef) and node.name == ADAPTER_CLASS:
            return
        if isinstance(node, ast.Attribute) and node.attr in methods and not node.attr.startswith("_"):
            names.add(node.attr)
        for child in ast.iter_child_nodes(node):
            visit(child)

    karpenter: set[str] = set()

    def visit_karpenter(node: ast.AST) -> None:
        if isinstance(node, ast.ClassDef) and node.name == "KubeKarpenterObjects":
            return
        if isinstance(node, ast.Attribute) and node.attr in KARPENTER_PERMISSIONS:
            karpenter.add(node.attr)
        for child in ast.iter_child_nodes(node):
            visit_karpenter(child)

    for node in reachable(HANDLER_MODULES[function]):
        visit(node)
        visit_karpenter(node)
    return set().union(*(methods[name] for name in names), *(KARPENTER_PERMISSIONS[n] for n in karpenter))


def documents() -> list[dict[str, object]]:
    return list(yaml.safe_load_all((REPO / "deploy" / "clusterrole.yaml").read_text()))


def granted_permissions(role_name: str) -> set[Permission]:
    (role,) = [d for d in documents() if d["kind"] == "ClusterRole" and d["metadata"]["name"] == role_name]  # type: ignore[index]
    return {
        (group, resource, verb)
        for rule in role["rules"]  # type: ignore[attr-defined]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.mark.slow
def test_the_scan_sees_the_adapters_calls() -> None:
    assert ("", "pods/eviction", "create") in used_permissions()
    assert function_permissions("steps") >= {("", "pods/eviction", "create"), ("", "nodes", "patch")}


@pytest.mark.slow
@pytest.mark.parametrize("function", KUBE_FUNCTIONS)
def test_each_function_is_allowed_its_kubernetes_calls_and_nothing_else(function: str) -> None:
    used = function_permissions(function)
    granted = granted_permissions(kubernetes_group(function))
    assert used - granted == set(), f"calls the ClusterRole of {function} does not allow"
    assert granted - used == set(), f"permissions of {function} that its code never uses"


def test_one_clusterrole_and_one_binding_per_function_group_and_nothing_else() -> None:
    groups = [kubernetes_group(f) for f in KUBE_FUNCTIONS]
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in documents())  # type: ignore[index]
    assert kinds == sorted(
        [*(("ClusterRole", g) for g in groups), *(("ClusterRoleBinding", g) for g in groups)]
    )
    for binding in (d for d in documents() if d["kind"] == "ClusterRoleBinding"):
        name = binding["metadata"]["name"]  # type: ignore[index]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": name,
        }
        assert binding["subjects"] == [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}
        ]


def test_the_trigger_function_needs_no_kubernetes_access() -> None:
    assert function_permissions("trigger") == set()
