"""A list-then-watch cache of pods and nodes, kept for the passes of one warm container.

Theory of operation: the first unfiltered read of a kind lists it (paged, gzipped, compact, see
`cluster.KubeCluster`) and keeps the list's resourceVersion. Every later read watches from that version and
applies what changed since (ADDED, MODIFIED, DELETED, BOOKMARK), so a pass costs what changed, not the size of
the cluster. This is client-go's reflector (kubernetes/client-go `tools/cache/reflector.go`: ListAndWatch,
relist on "too old resource version") run at the start of each read instead of in a goroutine, because a
Lambda container is frozen between invocations.

Rules:
- A catch-up ends when the server has been quiet for `quiet_s` (it sends the replay of what changed at once)
  or after `max_s`; what it applied is a prefix of the change log, so the cache is always a state the
  cluster was in, at most `quiet_s` behind. Karpenter decides from informer caches with the same guarantee.
- 410 Gone (as the HTTP status or as an ERROR event in the stream) means the version is no longer retained:
  relist, as does a version from another server (504 "Too large resource version") or a watch that cannot
  open. A failed relist raises (after the adapter's retries), and the next read lists again.
- Only unfiltered `list_pods()` and `list_nodes()` read the cache. Reads by node, by selector, `get_node`,
  and everything the drain acts on go to the API server, so no eviction or node deletion rests on the cache
  (the drain re-reads the node and the pods on it before it acts, and evictions go through the API server's
  PodDisruptionBudget check).
- `read_together` catches two kinds up at once (one quiet wait for both, as client-go's informers run side
  by side) and keeps the order a pass relies on: the second kind's catch-up ends after the first's, as if
  read after it; when it ended first it catches up again.
- Objects are handed out in the order the API server lists them: by (namespace, name). A catch-up puts the
  keys that came or went in their places; it does not sort every key again.
- The cache is an optimisation of the warm container, never state: a cold container starts with a list, and
  no decision needs anything the cache alone remembers.
"""

from __future__ import annotations

import bisect
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError, ProtocolError, ReadTimeoutError

Manifest = dict[str, Any]
Key = tuple[str, str]
Lister = Callable[[], tuple[list[Manifest], str]]
"""Lists every object (compact) and returns them with the list's resourceVersion."""
Watcher = Callable[[str, float, float], Any]
"""Opens a watch from a resourceVersion (`quiet_s` read timeout, `max_s` server timeout); a urllib3 response."""

GONE: Final = 410


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _version(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


class _Stale(Exception):
    """The watch cannot continue from the kept version: relist."""


@dataclass
class WatchedList:
    """One kind's objects by (namespace, name), and the resourceVersion they are current to."""

    compact: Callable[[Mapping[str, Any]], Manifest]
    quiet_s: float = 0.15
    max_s: float = 5.0
    items: dict[Key, Manifest] = field(default_factory=dict)
    version: str | None = None
    relists: int = 0
    catch_ups: int = 0  # watches read (a quiet wait each, unless `read_together` shares it)
    read_at: float = 0.0  # time.monotonic() when the last read ended
    _keys: list[Key] = field(default_factory=list, repr=False)  # the keys of `items`, sorted
    _listed: list[Manifest] = field(default_factory=list, repr=False)  # their objects, in that order
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def read(self, lister: Lister, watcher: Watcher) -> list[Manifest]:
        """Every object, current as of a moment ago (see the module docstring)."""
        with self._lock:
            if self.version is not None:
                try:
                    self._catch_up(watcher, self.version)
                except _Stale:
                    self.version = None
            if self.version is None:
                items, version = lister()
                self.items = {_key(obj): obj for obj in items}
                self._keys = sorted(self.items)
                self._listed = list(map(self.items.__getitem__, self._keys))
                self.version = version or None
                self.relists += 1
            self.read_at = time.monotonic()
            return list(self._listed)

    def _catch_up(self, watcher: Watcher, version: str) -> None:
        self.catch_ups += 1
        try:
            response = watcher(version, self.quiet_s, self.max_s)
        except (ApiException, HTTPError, OSError) as error:  # 410, 504 too large, or no connection
            raise _Stale(str(getattr(error, "status", None) or error)) from error
        deadline = time.monotonic() + self.max_s
        try:
            for line in response:
                if line.strip():
                    self._apply(json.loads(line))
                if time.monotonic() > deadline:
                    break
        except (ReadTimeoutError, ProtocolError):
            pass  # quiet for quiet_s (caught up), or the stream dropped: what was applied stands
        finally:  # the server may still be streaming: close, never hand the connection back half read
            response.close()
            response.release_conn()

    def _apply(self, event: Mapping[str, Any]) -> None:
        """Apply one event to `items` and to the sorted `_keys` and `_listed` beside it (a bisection, and a
        move of the pointers after it when a key comes or goes: at 150,000 pods, sorting every key again
        took about a third of a warm provisioner pass, and listing them again from `items` a tenth)."""
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            raise _Stale("an event without an object")
        if kind == "ERROR":
            raise _Stale(str(obj.get("code") or obj.get("message") or "watch error"))
        keys, listed = self._keys, self._listed
        if kind in ("ADDED", "MODIFIED"):
            key = _key(obj)
            compact = self.items[key] = self.compact(obj)
            at = bisect.bisect_left(keys, key)
            if at < len(keys) and keys[at] == key:
                listed[at] = compact
            else:
                keys.insert(at, key)
                listed.insert(at, compact)
        elif kind == "DELETED":
            key = _key(obj)
            if self.items.pop(key, None) is not None:
                at = bisect.bisect_left(keys, key)
                del keys[at], listed[at]
        version = _version(obj)
        if version:
            self.version = version


def read_together(
    first: WatchedList,
    first_from: tuple[Lister, Watcher],
    then: WatchedList,
    then_from: tuple[Lister, Watcher],
) -> tuple[list[Manifest], list[Manifest]]:
    """`first.read(...)` then `then.read(...)`, the two catch-ups at once (see the module docstring)."""
    found: dict[str, Any] = {}

    def read_first() -> None:
        try:
            found["items"] = first.read(*first_from)
        except BaseException as error:  # handed to the caller below
            found["error"] = error

    worker = threading.Thread(target=read_first, name="read-together", daemon=True)
    worker.start()
    second = then.read(*then_from)
    worker.join()
    if "error" in found:
        raise found["error"]
    if then.read_at < first.read_at:  # ended before the first kind's catch-up: read after it
        second = then.read(*then_from)
    return found["items"], second


@dataclass
class ClusterCache:
    """Pods and nodes of one cluster, for the passes of one warm container."""

    pods: WatchedList
    nodes: WatchedList


_SHARED: dict[str, ClusterCache] = {}
_SHARED_LOCK = threading.Lock()


def shared_cache(endpoint: str, factory: Callable[[], ClusterCache]) -> ClusterCache:
    """The container's cache for the cluster at `endpoint` (made by `factory` on first use)."""
    with _SHARED_LOCK:
        found = _SHARED.get(endpoint)
        if found is None:
            found = _SHARED[endpoint] = factory()
        return found
