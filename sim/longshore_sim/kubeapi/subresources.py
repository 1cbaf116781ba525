"""The subresources the emulator serves: `pods/eviction`, `pods/binding` and `<scalable>/scale`.

Rules, as the API server applies them:

- Eviction and binding are create-only (POST); any other verb is 405. An eviction is judged by
  `kubeapi.disruption` (PDBs, 429 when a budget forbids it); a binding needs `target.name` (422 without) and
  answers 201 with a Success Status.
- A Scale is read, replaced (PUT) or patched (any patch type `kubeapi.patching` accepts) and nothing else
  (405). The read-modify-write happens under the store's lock, so no other write lands between the read and
  the update.
- A Scale sent with a `resourceVersion` must carry the object's current one (409 Conflict otherwise); without
  one it applies unconditionally.
- `spec.replicas` must be a non-negative integer (a boolean is not one): 422 otherwise. Only the owner's
  `spec.replicas` changes; the answer is the Scale of the updated object, whose `status.selector` is the
  owner's `spec.selector` in label-selector string form.
"""

from __future__ import annotations

from typing import Any

from longshore_sim.kubeapi import disruption, errors, patching
from longshore_sim.kubeapi.meta import JSON, metadata
from longshore_sim.kubeapi.resources import ResourceType
from longshore_sim.kubeapi.routing import Request, request_object
from longshore_sim.kubeapi.selectors import selector_from_object
from longshore_sim.kubeapi.store import ObjectStore


def answer(store: ObjectStore, request: Request, body: Any, content_type: str) -> tuple[int, Any]:
    """The status and body of a request to a subresource (`request.subresource` is set)."""
    assert request.rt is not None
    rt = request.rt
    if request.subresource == "eviction":
        if request.verb != "create":
            raise errors.method_not_allowed(request.verb, "pods/eviction")
        return 201, disruption.evict(store, request.namespace, request.name, request_object(body))
    if request.subresource == "binding":
        if request.verb != "create":
            raise errors.method_not_allowed(request.verb, "pods/binding")
        target = (request_object(body).get("target") or {}).get("name")
        if not target:
            raise errors.invalid("pods", "Binding", request.name, [("target.name", "Required value")])
        store.bind(request.namespace, request.name, str(target))
        return 201, success_status(rt, request.name, None)
    return _scale(store, request, body, content_type)


def _scale(store: ObjectStore, request: Request, body: Any, content_type: str) -> tuple[int, Any]:
    assert request.rt is not None
    rt = request.rt
    with store.locked():
        obj = store.get(rt.plural, request.name, request.namespace)
        scale = _scale_of(obj)
        if request.verb == "get":
            return 200, scale
        if request.verb == "update":
            requested = request_object(body)
        elif request.verb == "patch":
            requested = patching.apply(content_type, scale, body, "scale")
        else:
            raise errors.method_not_allowed(request.verb, f"{rt.plural}/scale")
        sent = str(metadata(requested).get("resourceVersion") or "")
        if sent and sent != metadata(obj)["resourceVersion"]:
            raise errors.conflict(rt.plural, request.name, rt.group)
        replicas = (requested.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.invalid(
                "scale",
                "Scale",
                request.name,
                [("spec.replicas", f"Invalid value: {replicas!r}: must be greater than or equal to 0")],
                "autoscaling",
            )
        obj["spec"]["replicas"] = replicas
        updated = store.update(rt.plural, obj, request.namespace)
        return 200, _scale_of(updated)


def success_status(rt: ResourceType, name: str, uid: Any) -> JSON:
    """The Success Status a delete or a binding answers."""
    details: JSON = {"name": name, "kind": rt.plural}
    if rt.group:
        details["group"] = rt.group
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def _scale_of(obj: JSON) -> JSON:
    meta = metadata(obj)
    selector = selector_from_object((obj.get("spec") or {}).get("selector") or {})
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
            "creationTimestamp": meta.get("creationTimestamp"),
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": selector.to_string(),
        },
    }
