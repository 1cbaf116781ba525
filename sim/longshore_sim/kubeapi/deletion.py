"""Deletion in the emulator's store: grace periods, finalizers, and garbage collection through ownerReferences.

Rules, as the API server applies them:
- `delete` on an object without finalizers and with no grace removes it at once; otherwise it sets
  `deletionTimestamp` (now + grace) and `deletionGracePeriodSeconds`, and the object lingers until the clock
  passes it (`process_due`) and its finalizers are gone. A second delete may only shorten the grace.
- Propagation: Background (the default here for every kind) deletes dependents after the owner; Foreground
  adds the `foregroundDeletion` finalizer and removes the owner when its last dependent is gone; Orphan strips
  the owner's reference from its dependents.
- A namespace being deleted is `Terminating`: everything in it is deleted, then the namespace.
- A lingering object's final removal is admitted as a DELETE (the kubelet's own DELETE in Kubernetes).

`DeletionLifecycle` is `kubeapi.store.ObjectStore`'s base: it holds no state of its own and runs under the
store's lock.
"""

from __future__ import annotations

import heapq
import threading
from typing import TYPE_CHECKING

from longshore.ports.clock import Clock
from longshore_sim.kubeapi import errors, strategies
from longshore_sim.kubeapi.meta import JSON, clone, namespace_of, rfc3339
from longshore_sim.kubeapi.resources import ResourceType, lookup

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
Key = tuple[str, str, str]  # plural, namespace, name


class DeletionLifecycle:
    """The store's deletion and garbage collection (module docstring)."""

    clock: Clock
    lock: threading.RLock
    _objects: dict[str, dict[tuple[str, str], JSON]]
    _deadlines: list[tuple[float, int, Key, str]]
    _dependents: dict[str, set[Key]]
    _sequence: int

    if TYPE_CHECKING:  # provided by ObjectStore

        def _ns(self, rt: ResourceType, namespace: str | None) -> str: ...
        def _require(self, rt: ResourceType, namespace: str, name: str) -> JSON: ...
        def _check_preconditions(self, rt: ResourceType, obj: JSON, preconditions: JSON | None) -> None: ...
        def _admit(self, operation: str, plural: str, obj: JSON | None, old: JSON | None) -> None: ...
        def _commit(self, rt: ResourceType, old: JSON, new: JSON) -> JSON: ...
        def _record(self, change_type: str, plural: str, obj: JSON, old: JSON | None) -> None: ...

    def delete(
        self,
        plural: str,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        preconditions: JSON | None = None,
    ) -> JSON:
        """Delete (DELETE): graceful for scheduled pods, held by finalizers, dependents garbage-collected.

        Returns the object as it is after the request (with `deletionTimestamp` when it lingers).
        """
        rt = lookup(plural)
        with self.lock:
            ns = self._ns(rt, namespace)
            current = self._require(rt, ns, name)
            self._check_preconditions(rt, current, preconditions)
            self._admit("DELETE", plural, None, current)
            policy = propagation_policy or "Background"
            if policy not in ("Background", "Foreground", "Orphan"):
                raise errors.bad_request(f"propagationPolicy: Unsupported value: {policy!r}")
            key = (plural, ns, name)
            grace = strategies.grace_period(rt, current, grace_period_seconds)
            meta = current["metadata"]
            now = self.clock.now()
            if meta.get("deletionTimestamp"):
                remaining = int(meta.get("deletionGracePeriodSeconds") or 0)
                if grace < remaining:
                    new = clone(current)
                    new["metadata"]["deletionTimestamp"] = rfc3339(now + grace)
                    new["metadata"]["deletionGracePeriodSeconds"] = grace
                    current = self._commit(rt, current, new)
                    self._schedule_removal(key, now + grace, meta["uid"])
                    self._finish_if_possible(key)
                return clone(self._objects.get(plural, {}).get((ns, name), current))
            if policy == "Orphan":
                self._orphan_dependents(meta["uid"])
            finalizers = list(meta.get("finalizers") or [])
            if policy == "Foreground" and self._dependents.get(meta["uid"]):
                finalizers.append(FOREGROUND)
            if grace == 0 and not finalizers and rt.plural != "namespaces":
                self._remove(key, cascade=policy != "Orphan")
                return clone(current)
            new = clone(current)
            if rt.plural == "namespaces":
                new.setdefault("status", {})["phase"] = "Terminating"
            new["metadata"]["deletionTimestamp"] = rfc3339(now + grace)
            new["metadata"]["deletionGracePeriodSeconds"] = grace
            new["metadata"]["finalizers"] = finalizers
            if not finalizers:
                new["metadata"].pop("finalizers")
            current = self._commit(rt, current, new)
            if policy == "Foreground":
                for dependent in sorted(self._dependents.get(meta["uid"], set())):
                    self._delete_dependent(dependent)
            if rt.plural == "namespaces":
                self._delete_namespace_contents(name)
            if grace > 0:
                self._schedule_removal(key, now + grace, meta["uid"])
            self._finish_if_possible(key)
            return clone(self._objects.get(plural, {}).get((ns, name), current))

    def process_due(self) -> int:
        """Finish graceful deletions whose time has come on the clock; returns how many objects were removed."""
        removed = 0
        with self.lock:
            now = self.clock.now()
            while self._deadlines and self._deadlines[0][0] <= now:
                _, _, key, uid = heapq.heappop(self._deadlines)
                obj = self._objects.get(key[0], {}).get((key[1], key[2]))
                if (
                    obj is None
                    or obj["metadata"].get("uid") != uid
                    or not obj["metadata"].get("deletionTimestamp")
                ):
                    continue
                if obj["metadata"].get("finalizers"):
                    if obj["metadata"].get("deletionGracePeriodSeconds"):
                        new = clone(obj)
                        new["metadata"]["deletionGracePeriodSeconds"] = 0
                        self._commit(lookup(key[0]), obj, new)
                    continue
                self._remove(key, cascade=True)
                removed += 1
        return removed

    def next_deadline(self) -> float | None:
        """When the next graceful deletion falls due (virtual epoch seconds), if any."""
        with self.lock:
            return self._deadlines[0][0] if self._deadlines else None

    def _schedule_removal(self, key: Key, when: float, uid: str) -> None:
        self._sequence += 1
        heapq.heappush(self._deadlines, (when, self._sequence, key, uid))

    def _finish_if_possible(self, key: Key) -> None:
        """Remove an object being deleted once its finalizers are gone and its grace period is over."""
        obj = self._objects.get(key[0], {}).get((key[1], key[2]))
        if obj is None or key[0] == "namespaces":
            return
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp") or meta.get("finalizers"):
            return
        if int(meta.get("deletionGracePeriodSeconds") or 0) > 0:
            return
        self._remove(key, cascade=True)

    def _remove(self, key: Key, *, cascade: bool) -> None:
        plural, ns, name = key
        obj = self._objects.get(plural, {}).pop((ns, name), None)
        if obj is None:
            return
        removed = clone(obj)
        if obj["metadata"].get("deletionTimestamp"):
            self._admit("DELETE", plural, None, obj)
        self._index_owners(plural, ns, name, None, obj)
        self._record("DELETED", plural, removed, obj)
        uid = obj["metadata"]["uid"]
        dependents = sorted(self._dependents.pop(uid, set()))
        if cascade:
            for dependent in dependents:
                self._delete_dependent(dependent)
        self._release_foreground_owners(obj)
        if ns and plural != "namespaces":
            namespace_obj = self._objects.get("namespaces", {}).get(("", ns))
            if namespace_obj is not None and namespace_obj["metadata"].get("deletionTimestamp"):
                self._finish_namespace(ns)

    def _delete_dependent(self, key: Key) -> None:
        plural, ns, name = key
        if (ns, name) in self._objects.get(plural, {}):
            obj = self._objects[plural][(ns, name)]
            if not obj["metadata"].get("deletionTimestamp"):
                self.delete(plural, name, ns or None)

    def _orphan_dependents(self, owner_uid: str) -> None:
        for plural, ns, name in sorted(self._dependents.pop(owner_uid, set())):
            obj = self._objects.get(plural, {}).get((ns, name))
            if obj is None:
                continue
            new = clone(obj)
            refs = [r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
            if refs:
                new["metadata"]["ownerReferences"] = refs
            else:
                new["metadata"].pop("ownerReferences", None)
            self._commit(lookup(plural), obj, new)

    def _release_foreground_owners(self, removed: JSON) -> None:
        for ref in removed["metadata"].get("ownerReferences") or []:
            owner_uid = ref.get("uid")
            if self._dependents.get(owner_uid):
                continue
            owner_key = self._find_by_uid(owner_uid, ref.get("kind"), namespace_of(removed))
            if owner_key is None:
                continue
            owner = self._objects[owner_key[0]][(owner_key[1], owner_key[2])]
            if FOREGROUND in (owner["metadata"].get("finalizers") or []):
                new = clone(owner)
                new["metadata"]["finalizers"] = [f for f in new["metadata"]["finalizers"] if f != FOREGROUND]
                if not new["metadata"]["finalizers"]:
                    del new["metadata"]["finalizers"]
                self._commit(lookup(owner_key[0]), owner, new)
                self._finish_if_possible(owner_key)

    def _find_by_uid(self, uid: str | None, kind: str | None, namespace: str) -> Key | None:
        for plural, table in self._objects.items():
            if kind and lookup(plural).kind != kind:
                continue
            for (ns, name), obj in table.items():
                if obj["metadata"].get("uid") == uid and (not ns or ns == namespace):
                    return (plural, ns, name)
        return None

    def _index_owners(self, plural: str, ns: str, name: str, new: JSON | None, old: JSON | None) -> None:
        key = (plural, ns, name)
        old_uids = {r.get("uid") for r in (old or {}).get("metadata", {}).get("ownerReferences") or []}
        new_uids = {r.get("uid") for r in (new or {}).get("metadata", {}).get("ownerReferences") or []}
        for uid in old_uids - new_uids:
            if uid in self._dependents:
                self._dependents[uid].discard(key)
                if not self._dependents[uid]:
                    del self._dependents[uid]
        for uid in new_uids - old_uids:
            if uid:
                self._dependents.setdefault(str(uid), set()).add(key)

    def _delete_namespace_contents(self, namespace: str) -> None:
        for plural, table in list(self._objects.items()):
            if plural == "namespaces":
                continue
            for ns, name in sorted(k for k in table if k[0] == namespace):
                self._delete_dependent((plural, ns, name))
        self._finish_namespace(namespace)

    def _finish_namespace(self, namespace: str) -> None:
        if any(
            ns == namespace
            for plural, table in self._objects.items()
            if plural != "namespaces"
            for ns, _ in table
        ):
            return
        key = ("namespaces", "", namespace)
        obj = self._objects.get("namespaces", {}).get(("", namespace))
        if obj is not None and not obj["metadata"].get("finalizers"):
            self._remove(key, cascade=False)
