"""Discovery documents (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}/{version}`) built from the table.

Theory of operation: clients (kubectl, the dynamic client, kr8s) ask these endpoints what the server serves
before talking to it. Everything here is derived from `resources.TYPES`, so a type added to the table is
discoverable without further work. Subresources are listed as `pods/status`, `pods/eviction`... with the
verbs the emulator accepts on them.
"""

from __future__ import annotations

from typing import Any

from longshore_sim.kubeapi.resources import TYPES, ResourceType, groups

_SUBRESOURCE_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "eviction": ["create"],
    "binding": ["create"],
}
_SUBRESOURCE_KINDS = {
    "eviction": ("policy", "v1", "Eviction"),
    "binding": ("", "v1", "Binding"),
    "scale": ("autoscaling", "v1", "Scale"),
}


def version_info(kubernetes_version: str) -> dict[str, Any]:
    major, minor = [*kubernetes_version.split("."), "0"][:2]
    return {
        "major": major,
        "minor": minor,
        "gitVersion": f"v{major}.{minor}.0-longshore-emulator",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def core_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def group_list() -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(name, versions) for name, versions in groups().items() if name],
    }


def group(name: str) -> dict[str, Any] | None:
    versions = groups().get(name)
    if not name or versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def resource_list(group_name: str, version: str) -> dict[str, Any] | None:
    served = [t for t in TYPES if t.group == group_name and t.version == version]
    if not served:
        return None
    resources: list[dict[str, Any]] = []
    for t in served:
        resources.append(_resource(t))
        for sub in sorted(t.subresources):
            sub_group, sub_version, sub_kind = _SUBRESOURCE_KINDS.get(sub, (t.group, t.version, t.kind))
            entry: dict[str, Any] = {
                "name": f"{t.plural}/{sub}",
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": sub_kind,
                "verbs": _SUBRESOURCE_VERBS.get(sub, ["get"]),
            }
            if sub in _SUBRESOURCE_KINDS:
                entry["group"], entry["version"] = sub_group, sub_version
            resources.append(entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group_name}/{version}" if group_name else version,
        "resources": resources,
    }


def _resource(t: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": list(t.verbs),
    }
    if t.short_names:
        entry["shortNames"] = list(t.short_names)
    return entry
