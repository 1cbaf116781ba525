"""deploy/clusterrole.yaml allows exactly the Kubernetes calls the adapters make, bound to the access-entry group."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml
from infra.naming import KUBERNETES_GROUP

from tests.infra.conftest import REPO

KUBE_ADAPTERS = REPO / "functions" / "longshore" / "adapters" / "kube"
API_GROUPS = {
    "core": "",
    "apps": "apps",
    "policy": "policy",
    "coordination": "coordination.k8s.io",
    "events": "events.k8s.io",
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


def granted_permissions() -> tuple[set[Permission], dict[str, object]]:
    role, binding = yaml.safe_load_all((REPO / "deploy" / "clusterrole.yaml").read_text())
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    return granted, binding


def test_every_kubernetes_call_is_allowed_and_nothing_else() -> None:
    used = used_permissions()
    assert ("", "pods/eviction", "create") in used  # the scan sees the adapters
    granted, _ = granted_permissions()
    assert used - granted == set(), "calls the ClusterRole does not allow"
    assert granted - used == set(), "ClusterRole permissions no code uses"


def test_binding_targets_the_group_the_access_entry_maps_the_role_to() -> None:
    _, binding = granted_permissions()
    assert binding["kind"] == "ClusterRoleBinding"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "longshore-controller",
    }
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": KUBERNETES_GROUP}
    ]
