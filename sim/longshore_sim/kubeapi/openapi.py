"""OpenAPI v3 documents (`/openapi/v3`, `/openapi/v3/{api|apis/group}/{version}`) built from the resource table.

Rules:
- The index lists one document per served group-version, as the API server does since Kubernetes 1.27
  (`kubernetes/kubernetes` `staging/src/k8s.io/kube-openapi/pkg/handler3`).
- Each document has, for every served type, the collection and item paths with their operations, each tagged
  with `x-kubernetes-group-version-kind` and `x-kubernetes-action`, and with the `fieldValidation`,
  `fieldManager` and `dryRun` query parameters on writes. That is what kubectl reads to decide that the server
  validates fields itself (it then sends `fieldValidation=Strict` instead of validating on the client), so
  `kubectl apply` and `kubectl create` work without `--validate=false`.
- The schemas are deliberately open (`x-kubernetes-preserve-unknown-fields`): the emulator does not carry the
  whole Kubernetes schema, and it ignores `fieldValidation`. A misspelt field is therefore accepted here where
  a real API server would refuse it; `docs/emulator.md` says so.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from longshore_sim.kubeapi.resources import TYPES, ResourceType, groups

_WRITE_PARAMETERS = [
    {"name": name, "in": "query", "schema": {"type": "string"}}
    for name in ("dryRun", "fieldManager", "fieldValidation")
]


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _schema_name(t: ResourceType) -> str:
    group = t.group or "core"
    return f"io.k8s.api.{group}.{t.version}.{t.kind}"


def _operation(t: ResourceType, action: str, write: bool) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": f"{action}{t.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
        "responses": {
            "200": {
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{_schema_name(t)}"}}
                }
            }
        },
    }
    if write:
        operation["parameters"] = _WRITE_PARAMETERS
    return operation


def _paths(t: ResourceType) -> dict[str, Any]:
    base = "/" + _gv_path(t.group, t.version)
    collection = f"{base}/namespaces/{{namespace}}/{t.plural}" if t.namespaced else f"{base}/{t.plural}"
    item = f"{collection}/{{name}}"
    paths: dict[str, Any] = {
        collection: {"get": _operation(t, "list", False), "post": _operation(t, "post", True)},
        item: {
            "get": _operation(t, "get", False),
            "put": _operation(t, "put", True),
            "patch": _operation(t, "patch", True),
            "delete": _operation(t, "delete", False),
        },
    }
    for sub in sorted(t.subresources - {"eviction", "binding"}):
        paths[f"{item}/{sub}"] = {
            "get": _operation(t, "get", False),
            "put": _operation(t, "put", True),
            "patch": _operation(t, "patch", True),
        }
    return paths


def _schema(t: ResourceType) -> dict[str, Any]:
    return {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-group-version-kind": [{"group": t.group, "version": t.version, "kind": t.kind}],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }


def document(path: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group-version (`api/v1`, `apis/apps/v1`), or None if not served."""
    served = [t for t in TYPES if _gv_path(t.group, t.version) == path.strip("/")]
    if not served:
        return None
    paths: dict[str, Any] = {}
    for t in served:
        paths.update(_paths(t))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "components": {"schemas": {_schema_name(t): _schema(t) for t in served}},
    }


def index() -> dict[str, Any]:
    """`/openapi/v3`: where each group-version's document lives (with a content hash, as the server gives)."""
    entries: dict[str, Any] = {}
    for group, versions in groups().items():
        for version in versions:
            path = _gv_path(group, version)
            digest = hashlib.sha256(json.dumps(document(path), sort_keys=True).encode()).hexdigest()[:32]
            entries[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest.upper()}"}
    return {"paths": entries}
