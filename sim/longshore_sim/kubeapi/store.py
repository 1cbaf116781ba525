"""The emulator's state: every object, its resourceVersion bookkeeping, deletion lifecycle and change log.

Theory of operation: objects are JSON dicts kept per resource type keyed by (namespace, name). Every write
takes the single store lock, bumps the global resourceVersion, stamps it on the object and appends a
`Change` to the log that watches read. Reads return clones, so nothing outside can change stored state.

The same operations serve HTTP requests and the Python API (`store.create("pods", {...})`), so tests and the
simulated controllers see exactly the semantics the kubernetes client sees:
- create: defaults (`strategies.py`), uid, creationTimestamp, generateName, 409 AlreadyExists, 404 when the
  namespace does not exist, 403 when it is terminating.
- update and patch: 409 Conflict when the request carries a `metadata.resourceVersion` that is not the
  current one; status subresource rules; a write that changes nothing does not bump the version.
- delete: grace periods, finalizers, preconditions, garbage collection through `ownerReferences` and
  namespace deletion, in `kubeapi.deletion` (the store's base class).

Time comes from the injected `Clock`; a `VirtualClock` makes grace periods elapse in simulated time.
"""

from __future__ import annotations

import base64
import builtins
import json
import logging
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from longshore.ports.clock import Clock
from longshore_sim.kubeapi import errors, patching, strategies
from longshore_sim.kubeapi.deletion import DeletionLifecycle, Key
from longshore_sim.kubeapi.meta import (
    JSON,
    clone,
    generated_name,
    labels_of,
    metadata,
    name_of,
    namespace_of,
    random_uid,
    rfc3339,
)
from longshore_sim.kubeapi.resources import ResourceType, lookup
from longshore_sim.kubeapi.selectors import ALL_FIELDS, EVERYTHING, FieldSelector, LabelSelector
from longshore_sim.kubeapi.watchlog import Change, ChangeLog

_log = logging.getLogger(__name__)

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass(frozen=True, slots=True)
class ListPage:
    """One page of a list: the items, the list's resourceVersion, and the continue token (None when done)."""

    items: list[JSON]
    resource_version: int
    continue_token: str | None
    remaining: int


class ObjectStore(DeletionLifecycle):
    """Thread-safe object storage with Kubernetes API semantics."""

    def __init__(
        self,
        clock: Clock,
        *,
        seed: int = 0,
        history: int = 200_000,
        namespaces: tuple[str, ...] = DEFAULT_NAMESPACES,
        default_tolerations: bool = True,
    ) -> None:
        self.clock = clock
        self.lock = threading.RLock()
        self.log = ChangeLog(self.lock, history)
        self.default_tolerations = default_tolerations
        self._rng = random.Random(seed)
        self._objects: dict[str, dict[tuple[str, str], JSON]] = {}
        self._rv = 0
        self._deadlines: list[tuple[float, int, Key, str]] = []
        self._dependents: dict[str, set[Key]] = {}
        self._sequence = 0
        #: validating admission webhooks: called with (operation, plural, object, oldObject) for every CREATE
        #: and DELETE, and for the final removal of an object that lingered in graceful deletion (the
        #: kubelet's own DELETE in Kubernetes). `failurePolicy: Ignore`: a hook that raises is logged and
        #: the request goes on. They only observe; they cannot deny.
        self.admission: list[Callable[[str, str, JSON | None, JSON | None], None]] = []
        for namespace in namespaces:
            self.create("namespaces", {"metadata": {"name": namespace}})

    # ------------------------------------------------------------------ reads

    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    def get(self, plural: str, name: str, namespace: str | None = None) -> JSON:
        """The object, or a 404 `ApiError`."""
        rt = lookup(plural)
        with self.lock:
            return clone(self._require(rt, self._ns(rt, namespace), name))

    def try_get(self, plural: str, name: str, namespace: str | None = None) -> JSON | None:
        rt = lookup(plural)
        with self.lock:
            found = self._objects.get(plural, {}).get((self._ns(rt, namespace), name))
            return clone(found) if found is not None else None

    def list(
        self,
        plural: str,
        namespace: str | None = None,
        labels: LabelSelector = EVERYTHING,
        fields: FieldSelector = ALL_FIELDS,
    ) -> builtins.list[JSON]:
        """Every matching object, ordered by namespace then name."""
        return self.list_page(plural, namespace, labels, fields).items

    def list_page(
        self,
        plural: str,
        namespace: str | None = None,
        labels: LabelSelector = EVERYTHING,
        fields: FieldSelector = ALL_FIELDS,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> ListPage:
        """A page of matching objects; pass the returned token back as `continue_token` for the next one."""
        lookup(plural)
        start = _decode_continue(continue_token) if continue_token else None
        with self.lock:
            rv = self._rv
            keys = sorted(self._objects.get(plural, {}))
            table = self._objects.get(plural, {})
            matching = []
            for key in keys:
                if namespace and key[0] != namespace:
                    continue
                if start is not None and key <= start:
                    continue
                obj = table[key]
                if labels.matches(labels_of(obj)) and fields.matches(obj):
                    matching.append(obj)
            page = matching if not limit or limit <= 0 else matching[:limit]
            remaining = len(matching) - len(page)
            token = None
            if remaining > 0 and page:
                last = page[-1]
                token = _encode_continue(rv, (namespace_of(last), name_of(last)))
            return ListPage([clone(o) for o in page], rv, token, remaining)

    def view(self, plural: str) -> builtins.list[JSON]:
        """The stored objects themselves, uncopied and unordered, for trusted in-process readers.

        The store never changes a stored dict in place (every write stores a new one), so each returned object
        is a consistent snapshot; callers must not mutate them.
        """
        lookup(plural)
        with self.lock:
            return list(self._objects.get(plural, {}).values())

    def count(self, plural: str) -> int:
        with self.lock:
            return len(self._objects.get(plural, {}))

    # ------------------------------------------------------------------ writes

    def create(
        self, plural: str, obj: JSON, namespace: str | None = None, *, keep_status: bool = False
    ) -> JSON:
        """Create an object (POST). `keep_status=True` keeps a client-sent status (for seeding tests)."""
        rt = lookup(plural)
        new = clone(obj)
        meta = new.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        with self.lock:
            ns = self._resolve_create_namespace(rt, meta, namespace)
            table = self._objects.setdefault(plural, {})
            name = str(meta.get("name") or "")
            if not name and meta.get("generateName"):
                for _ in range(100):
                    name = generated_name(str(meta["generateName"]), self._rng)
                    if (ns, name) not in table:
                        break
            if not name:
                raise errors.invalid(
                    plural,
                    rt.kind,
                    "",
                    [("metadata.name", "Required value: name or generateName is required")],
                    rt.group,
                )
            if (ns, name) in table:
                raise errors.already_exists(plural, name, rt.group)
            meta["name"] = name
            if ns:
                meta["namespace"] = ns
            new["apiVersion"] = rt.api_version
            new["kind"] = rt.kind
            meta["uid"] = random_uid(self._rng)
            meta["creationTimestamp"] = rfc3339(self.clock.now())
            for transient in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
                meta.pop(transient, None)
            if strategies.tracks_generation(rt):
                meta["generation"] = 1
            strategies.prepare_create(
                rt, new, keep_status=keep_status, default_tolerations=self.default_tolerations
            )
            strategies.normalize(rt, new)
            self._admit("CREATE", plural, new, None)
            table[(ns, name)] = new
            self._index_owners(plural, ns, name, new, None)
            self._record("ADDED", plural, new, None)
            return clone(new)

    def update(
        self, plural: str, obj: JSON, namespace: str | None = None, *, subresource: str | None = None
    ) -> JSON:
        """Replace an object (PUT); 409 when `obj` carries a stale resourceVersion."""
        rt = lookup(plural)
        name = name_of(obj)
        with self.lock:
            ns = self._ns(rt, namespace if namespace is not None else namespace_of(obj))
            old = self._require(rt, ns, name)
            sent = str(metadata(obj).get("resourceVersion") or "")
            if sent and sent != old["metadata"]["resourceVersion"]:
                raise errors.conflict(plural, name, rt.group)
            return clone(self._write(rt, old, obj, subresource))

    def patch(
        self,
        plural: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        content_type: str = patching.STRATEGIC_MERGE_PATCH,
        subresource: str | None = None,
    ) -> JSON:
        """Patch an object (PATCH) with a merge, JSON or strategic merge patch."""
        rt = lookup(plural)
        with self.lock:
            ns = self._ns(rt, namespace)
            old = self._require(rt, ns, name)
            patched = patching.apply(content_type, old, patch, plural)
            sent = str(metadata(patched).get("resourceVersion") or "")
            if sent and sent != old["metadata"]["resourceVersion"]:
                raise errors.conflict(plural, name, rt.group)
            if name_of(patched) != name:
                raise errors.bad_request(
                    f"metadata.name: the name of the object ({name_of(patched)!r}) does not match the name on the URL ({name!r})"
                )
            return clone(self._write(rt, old, patched, subresource))

    def modify(self, plural: str, name: str, namespace: str | None, change: Callable[[JSON], None]) -> JSON:
        """Read-modify-write under the lock (for in-process controllers): `change` edits a copy in place."""
        rt = lookup(plural)
        with self.lock:
            old = self._require(rt, self._ns(rt, namespace), name)
            new = clone(old)
            change(new)
            self._protect_metadata(rt, old, new, spec_may_change=True)
            result = self._commit(rt, old, new)
            self._finish_if_possible((plural, namespace_of(old), name))
            return clone(result)

    def bind(self, namespace: str, name: str, node_name: str) -> JSON:
        """Assign a pod to a node (`pods/binding`): 409 when the pod is already bound or being deleted."""
        with self.lock:
            pod = self._require(lookup("pods"), namespace, name)
            bound = (pod.get("spec") or {}).get("nodeName")
            if bound:
                raise errors.conflict("pods", name, why=f'pod {name} is already assigned to node "{bound}"')
            if metadata(pod).get("deletionTimestamp"):
                raise errors.conflict(
                    "pods", name, why=f"pod {name} is being deleted, cannot be assigned to a host"
                )
            new = clone(pod)
            new["spec"]["nodeName"] = node_name
            conditions = [
                c
                for c in new.setdefault("status", {}).get("conditions") or []
                if c.get("type") != "PodScheduled"
            ]
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": rfc3339(self.clock.now()),
                }
            )
            new["status"]["conditions"] = conditions
            return clone(self._commit(lookup("pods"), pod, new))

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store lock across several calls (for consistent multi-object reads)."""
        with self.lock:
            yield

    def notify_watchers(self) -> None:
        """Wake waiting watches so they re-check their deadlines (the clock moved)."""
        self.log.wake()

    # ------------------------------------------------------------------ internals

    def _ns(self, rt: ResourceType, namespace: str | None) -> str:
        return (namespace or "default") if rt.namespaced else ""

    def _require(self, rt: ResourceType, namespace: str, name: str) -> JSON:
        found = self._objects.get(rt.plural, {}).get((namespace, name))
        if found is None:
            raise errors.not_found(rt.plural, name, rt.group)
        return found

    def _resolve_create_namespace(self, rt: ResourceType, meta: JSON, namespace: str | None) -> str:
        if not rt.namespaced:
            meta.pop("namespace", None)
            return ""
        body_ns = meta.get("namespace")
        if namespace and body_ns and body_ns != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        ns = str(namespace or body_ns or "default")
        namespace_obj = self._objects.get("namespaces", {}).get(("", ns))
        if namespace_obj is None:
            raise errors.not_found("namespaces", ns)
        if namespace_obj["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                rt.plural,
                str(meta.get("name") or meta.get("generateName") or ""),
                f"unable to create new content in namespace {ns} because it is being terminated",
                rt.group,
            )
        return ns

    def _check_preconditions(self, rt: ResourceType, obj: JSON, preconditions: JSON | None) -> None:
        if not preconditions:
            return
        meta = obj["metadata"]
        uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
        if uid and uid != meta["uid"]:
            raise errors.conflict(
                rt.plural,
                meta["name"],
                rt.group,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta['uid']}",
            )
        if rv and rv != meta["resourceVersion"]:
            raise errors.conflict(
                rt.plural,
                meta["name"],
                rt.group,
                f"Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {meta['resourceVersion']}",
            )

    def _write(self, rt: ResourceType, old: JSON, requested: JSON, subresource: str | None) -> JSON:
        if requested.get("kind") not in (None, rt.kind):
            raise errors.bad_request(
                f"the kind of the provided object ({requested.get('kind')}) does not match {rt.kind}"
            )
        new = strategies.prepare_update(rt, old, requested, subresource)
        self._protect_metadata(rt, old, new, spec_may_change=subresource != "status")
        meta, old_meta = new["metadata"], old["metadata"]
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise errors.forbidden(
                    rt.plural,
                    meta["name"],
                    "no new finalizers can be added if the object is being deleted",
                    rt.group,
                )
        result = self._commit(rt, old, new)
        self._finish_if_possible((rt.plural, namespace_of(result), name_of(result)))
        return self._objects.get(rt.plural, {}).get((namespace_of(result), name_of(result)), result)

    def _protect_metadata(self, rt: ResourceType, old: JSON, new: JSON, *, spec_may_change: bool) -> None:
        """Keep the server-owned metadata of `old` on `new`, and bump generation when the spec changed."""
        if not isinstance(new.get("metadata"), dict):
            new["metadata"] = {}
        meta, old_meta = new["metadata"], old["metadata"]
        for fixed in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "name",
            "namespace",
        ):
            if fixed in old_meta:
                meta[fixed] = old_meta[fixed]
            else:
                meta.pop(fixed, None)
        if "generation" in old_meta:
            bump = spec_may_change and strategies.tracks_generation(rt) and new.get("spec") != old.get("spec")
            meta["generation"] = int(old_meta["generation"]) + (1 if bump else 0)
        else:
            meta.pop("generation", None)
        new["apiVersion"], new["kind"] = rt.api_version, rt.kind

    def _commit(self, rt: ResourceType, old: JSON, new: JSON) -> JSON:
        """Store `new` in place of `old` as a MODIFIED change; an identical object is a no-op."""
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        strategies.normalize(rt, new)
        if new == old:
            return old
        ns, name = namespace_of(old), name_of(old)
        self._objects[rt.plural][(ns, name)] = new
        self._index_owners(rt.plural, ns, name, new, old)
        self._record("MODIFIED", rt.plural, new, old)
        return new

    def _record(self, change_type: str, plural: str, obj: JSON, old: JSON | None) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        self.log.append(Change(self._rv, change_type, plural, obj, old))

    def _admit(self, operation: str, plural: str, obj: JSON | None, old: JSON | None) -> None:
        for webhook in self.admission:
            try:
                webhook(operation, plural, obj, old)
            except Exception:
                _log.warning("admission webhook failed; ignored (failurePolicy: Ignore)", exc_info=True)


def _encode_continue(rv: int, start: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": list(start)}).encode()).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, name = decoded["start"]
        return (str(namespace), str(name))
    except (ValueError, KeyError, TypeError):
        raise errors.bad_request(f"continue key is not valid: {token!r}") from None
