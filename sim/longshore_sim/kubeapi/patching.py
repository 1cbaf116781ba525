"""The three PATCH flavours the API server accepts: JSON merge patch, JSON patch, and strategic merge patch.

Theory of operation: every function takes the current object (a JSON dict, not modified) and the patch and
returns the patched object. Merge patch is RFC 7386 (maps merge, `null` deletes, lists replace). JSON patch is
RFC 6902 via the `jsonpatch` library. Strategic merge patch follows `k8s.io/apimachinery/pkg/util/strategicpatch`:
maps merge as in merge patch, but a list merges item by item when the Go type declares a patch strategy for it,
keyed by its `patchMergeKey` (`containers` by `name`, `conditions` by `type`...), or as a set for primitive lists
(`metadata.finalizers`). Lists without a declared strategy are replaced. This matters for node taints:
`NodeSpec.Taints` is `+listType=atomic` with no patch strategy in Kubernetes, so a strategic patch carrying
`spec.taints` replaces the whole list (this is why `kubectl taint` sends the complete list).

The table of merge keys lives here (`_MERGE_KEYS`), per resource, as paths from the object root in which
list items are transparent (`spec.containers.env` is the env list of every container). Directives
supported: `$patch: replace|delete` on maps and list items, `$retainKeys`, `$deleteFromPrimitiveList/<field>`,
and `$setElementOrder/<field>` (accepted and ignored: the emulator keeps existing order).

Server-side apply (`application/apply-patch+yaml`, what `kubectl apply --server-side` sends) is served as a
strategic merge of the applied configuration, creating the object when it does not exist. The emulator keeps
no field ownership (`managedFields`): a field removed from the applied configuration is left in place and
conflicts between managers are never reported, where a real API server would remove the field or answer 409.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonpatch
import yaml

from longshore_sim.kubeapi.errors import ApiError, bad_request

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

Path = tuple[str, ...]
SET = "<set>"
"""Merge marker for primitive lists merged as sets (patchStrategy=merge without a merge key)."""

_CONTAINER: dict[Path, str] = {
    ("env",): "name",
    ("ports",): "containerPort",
    ("volumeMounts",): "mountPath",
    ("volumeDevices",): "devicePath",
    ("resizePolicy",): "resourceName",
}
_POD_SPEC: dict[Path, str] = {
    ("containers",): "name",
    ("initContainers",): "name",
    ("ephemeralContainers",): "name",
    ("volumes",): "name",
    ("imagePullSecrets",): "name",
    ("hostAliases",): "ip",
    ("topologySpreadConstraints",): "topologyKey",
    ("resourceClaims",): "name",
    ("schedulingGates",): "name",
    **{
        (containers, *sub): key
        for containers in ("containers", "initContainers", "ephemeralContainers")
        for sub, key in _CONTAINER.items()
    },
}
_METADATA: dict[Path, str] = {("metadata", "finalizers"): SET, ("metadata", "ownerReferences"): "uid"}
_CONDITIONS: dict[Path, str] = {("status", "conditions"): "type"}


def _prefixed(prefix: Path, table: Mapping[Path, str]) -> dict[Path, str]:
    return {(*prefix, *path): key for path, key in table.items()}


_TEMPLATED = {**_METADATA, **_CONDITIONS, **_prefixed(("spec", "template", "spec"), _POD_SPEC)}
_MERGE_KEYS: dict[str, dict[Path, str]] = {
    "pods": {
        **_METADATA,
        **_CONDITIONS,
        **_prefixed(("spec",), _POD_SPEC),
        ("status", "podIPs"): "ip",
        ("status", "hostIPs"): "ip",
    },
    "nodes": {
        **_METADATA,
        **_CONDITIONS,
        ("status", "addresses"): "type",
        ("spec", "podCIDRs"): SET,
    },
    "namespaces": {**_METADATA, **_CONDITIONS, ("spec", "finalizers"): SET},
    "deployments": _TEMPLATED,
    "replicasets": _TEMPLATED,
    "daemonsets": _TEMPLATED,
    "poddisruptionbudgets": {**_METADATA, **_CONDITIONS},
}


def merge_key(plural: str, path: Path) -> str | None:
    """The patch merge key for the list at `path` in a `plural` object (SET for primitive sets), or None."""
    return _MERGE_KEYS.get(plural, _METADATA).get(path)


def apply(content_type: str, original: Mapping[str, Any], patch: Any, plural: str) -> dict[str, Any]:
    """Apply a patch of the given media type (the request's Content-Type, parameters ignored)."""
    media = content_type.split(";")[0].strip().lower()
    if media == JSON_PATCH:
        return apply_json_patch(original, patch)
    if media == MERGE_PATCH:
        if not isinstance(patch, Mapping):
            raise bad_request("merge patch must be a JSON object")
        return dict(apply_merge_patch(original, patch))
    if media == STRATEGIC_MERGE_PATCH:
        return apply_strategic_merge_patch(original, patch, plural)
    if media == APPLY_PATCH:
        return apply_strategic_merge_patch(original, patch, plural)
    raise ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {JSON_PATCH}, "
        f"{MERGE_PATCH}, {STRATEGIC_MERGE_PATCH} (got {content_type!r})",
    )


def apply_merge_patch(original: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, Mapping):
        return _copy(patch)
    result = dict(original) if isinstance(original, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def apply_json_patch(original: Mapping[str, Any], patch: Any) -> dict[str, Any]:
    """RFC 6902 JSON patch; a failing `test` or a bad path answers 422, a malformed document 400."""
    if not isinstance(patch, list):
        raise bad_request("json patch must be a JSON array of operations")
    try:
        result = jsonpatch.apply_patch(_copy(original), patch)
    except jsonpatch.InvalidJsonPatch as exc:
        raise bad_request(f"invalid json patch: {exc}") from exc
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise ApiError(
            422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
        ) from exc
    if not isinstance(result, dict):
        raise ApiError(422, "Invalid", "json patch result is not an object")
    return result


def apply_strategic_merge_patch(original: Mapping[str, Any], patch: Any, plural: str) -> dict[str, Any]:
    """Strategic merge patch with Kubernetes' list merge keys for `plural` objects."""
    if not isinstance(patch, Mapping):
        raise bad_request("strategic merge patch must be a JSON object")
    merged = _merge_map(original, patch, (), plural)
    return merged if isinstance(merged, dict) else {}


_DELETE = object()


def _merge_map(original: Mapping[str, Any] | None, patch: Mapping[str, Any], path: Path, plural: str) -> Any:
    directive = patch.get("$patch")
    body = {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return _merge_map(None, body, path, plural)
    if directive is not None:
        raise bad_request(f"unknown patch directive {directive!r} at {'.'.join(path) or '<root>'}")
    result: dict[str, Any] = dict(original or {})
    retain = body.pop("$retainKeys", None)
    if retain is not None:
        if not isinstance(retain, list):
            raise bad_request(f"$retainKeys must be a list at {'.'.join(path) or '<root>'}")
        result = {k: v for k, v in result.items() if k in retain}
    removals: dict[str, list[Any]] = {}
    for key, value in body.items():
        if key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            removals[key.split("/", 1)[1]] = list(value or [])
            continue
        if value is None:
            result.pop(key, None)
            continue
        child = (*path, key)
        if isinstance(value, Mapping):
            merged = _merge_map(
                result.get(key) if isinstance(result.get(key), Mapping) else None, value, child, plural
            )
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            current = result.get(key)
            result[key] = _merge_list(current if isinstance(current, list) else None, value, child, plural)
        else:
            result[key] = value
    for key, values in removals.items():
        if isinstance(result.get(key), list):
            result[key] = [v for v in result[key] if v not in values]
    return result


def _merge_list(original: list[Any] | None, patch: list[Any], path: Path, plural: str) -> list[Any]:
    key = merge_key(plural, path)
    if any(isinstance(item, Mapping) and item.get("$patch") == "replace" for item in patch):
        return [
            _strip(item, path, plural)
            for item in patch
            if not (isinstance(item, Mapping) and "$patch" in item)
        ]
    if key is None:
        return [_strip(item, path, plural) for item in patch]
    if key == SET:
        result = list(original or [])
        for item in patch:
            if item not in result:
                result.append(item)
        return result
    merged = [dict(item) if isinstance(item, Mapping) else item for item in (original or [])]
    for item in patch:
        if not isinstance(item, Mapping):
            raise bad_request(f"{'.'.join(path)}: list items must be objects with the merge key {key!r}")
        if key not in item:
            raise bad_request(
                f"{'.'.join(path)}: map {dict(item)!r} does not contain declared merge key: {key}"
            )
        index = next(
            (i for i, old in enumerate(merged) if isinstance(old, Mapping) and old.get(key) == item[key]),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del merged[index]
            continue
        if index is None:
            merged.append(_merge_map(None, item, path, plural))
        else:
            merged[index] = _merge_map(merged[index], item, path, plural)
    return merged


def _strip(value: Any, path: Path, plural: str) -> Any:
    """A patch value with its directives resolved against nothing (new content)."""
    if isinstance(value, Mapping):
        return _merge_map(None, value, path, plural)
    if isinstance(value, list):
        return [_strip(item, path, plural) for item in value]
    return value


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def load_apply_yaml(raw: bytes) -> Any:
    """The body of a server-side apply request, which may be YAML rather than JSON."""
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as error:
        raise bad_request(f"the applied configuration is not valid YAML: {error}") from None
