"""Kubernetes REST paths parsed into requests: group, version, resource, namespace, name, subresource, verb.

Rules, as the API server routes them:
- `/api/v1/...` is the core group; `/apis/<group>/<version>/...` the others; `/version`, `/api`, `/apis`,
  `/apis/<group>`, `/openapi/v3...` and the health paths are discovery. Any other path is 404.
- `namespaces/<ns>/` scopes a namespaced resource (not the namespace's own `status` and `finalize`
  subresources); a cluster-scoped resource under a namespace, an unknown subresource, or more than
  resource/name/subresource is 404.
- The verb follows the method: GET is get, list or watch (`watch=true|1` or the legacy `/watch/` prefix), POST
  create, PUT update, PATCH patch, DELETE delete or deletecollection; anything else is 405. A watch on a named
  object is a watch on its collection with `metadata.name=<name>` added to the field selector.
- A query parameter that repeats takes its last value.
- A request body that must be an object (create, update, eviction, binding) and is not is 400.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from longshore_sim.kubeapi import errors
from longshore_sim.kubeapi.errors import ApiError
from longshore_sim.kubeapi.faults import Route
from longshore_sim.kubeapi.meta import JSON
from longshore_sim.kubeapi.resources import BY_PATH, ResourceType


@dataclass(frozen=True, slots=True)
class Request:
    """A parsed REST request."""

    method: str
    rt: ResourceType | None
    namespace: str
    name: str
    subresource: str
    verb: str
    query: dict[str, str]
    discovery_path: str = ""

    @property
    def route(self) -> Route:
        resource = self.rt.plural if self.rt else self.discovery_path
        if self.subresource:
            resource = f"{resource}/{self.subresource}"
        return Route(resource, self.verb, self.namespace, self.name)


def truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def parse_request(method: str, raw_path: str) -> Request:
    """Map a method and path to a `Request`; unknown paths raise 404."""
    split = urlsplit(raw_path)
    query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
    parts = [p for p in split.path.split("/") if p]
    if (
        parts in ([], ["version"], ["api"], ["apis"], ["healthz"], ["livez"], ["readyz"])
        or (parts[:1] == ["apis"] and len(parts) == 2)
        or parts[:2] == ["openapi", "v3"]
    ):
        return Request(method, None, "", "", "", "get", query, "/" + "/".join(parts))
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise errors.route_not_found()
    if not rest:
        return Request(method, None, "", "", "", "get", query, "/" + "/".join(parts))
    legacy_watch = rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    rt = BY_PATH.get((group, version, rest[0])) if rest else None
    if rt is None or len(rest) > 3:
        raise errors.route_not_found()
    if namespace and not rt.namespaced:
        raise errors.route_not_found()
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) == 3 else ""
    if subresource and subresource not in rt.subresources:
        raise errors.route_not_found()
    watch = legacy_watch or truthy(query.get("watch"))
    verb = _verb(method, bool(name), bool(subresource), watch)
    if watch and name:
        query["fieldSelector"] = ",".join(filter(None, [query.get("fieldSelector"), f"metadata.name={name}"]))
        name = ""
    return Request(method, rt, namespace, name, subresource, verb, query)


def _verb(method: str, has_name: bool, has_sub: bool, watch: bool) -> str:
    if method == "GET":
        return "watch" if watch else ("get" if has_name else "list")
    if method == "POST":
        return "create"
    if method == "PUT" and has_name:
        return "update"
    if method == "PATCH" and has_name:
        return "patch"
    if method == "DELETE":
        return "delete" if has_name and not has_sub else "deletecollection"
    raise ApiError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({method})"
    )


def request_object(body: Any) -> JSON:
    """The decoded request body, which must be a JSON object (400 otherwise)."""
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    return body
