"""The change log behind watches: every write appends one event, and watchers read from a resourceVersion.

Theory of operation: the store stamps each write with the next global resourceVersion (an increasing
integer) and appends a `Change` here holding the object before and after. A watch started at resourceVersion
N replays the retained changes after N and then waits for new ones, which is how the API server's watch
cache behaves; a watch from a version older than the retained window gets 410 Gone ("too old resource
version") so the client relists. The log keeps the most recent `capacity` changes.

Filtering happens per watcher (`WatchFilter.translate`): a MODIFIED change becomes ADDED when the object starts
matching the watcher's selectors and DELETED when it stops matching, exactly as a filtered watch does in
Kubernetes, so a watcher's view is always consistent with a list using the same selectors.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from longshore_sim.kubeapi.errors import ApiError, gone
from longshore_sim.kubeapi.meta import labels_of, namespace_of
from longshore_sim.kubeapi.selectors import ALL_FIELDS, EVERYTHING, FieldSelector, LabelSelector

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Change:
    """One write: `type` is ADDED, MODIFIED or DELETED; `old` is the object before (None for ADDED)."""

    resource_version: int
    type: str
    plural: str
    obj: JSON
    old: JSON | None


@dataclass(frozen=True, slots=True)
class WatchFilter:
    """What one watcher asked for: a resource, optionally one namespace, and selectors."""

    plural: str
    namespace: str | None = None
    labels: LabelSelector = EVERYTHING
    fields: FieldSelector = ALL_FIELDS

    def matches(self, obj: JSON) -> bool:
        if self.namespace and namespace_of(obj) != self.namespace:
            return False
        return self.labels.matches(labels_of(obj)) and self.fields.matches(obj)

    def translate(self, change: Change) -> tuple[str, JSON] | None:
        """The event this watcher sees for `change`, or None when it is outside the watcher's view."""
        if change.plural != self.plural:
            return None
        now_matches = self.matches(change.obj)
        if change.type == "MODIFIED" and change.old is not None:
            was_matching = self.matches(change.old)
            if was_matching and not now_matches:
                return "DELETED", change.obj
            if now_matches and not was_matching:
                return "ADDED", change.obj
        return (change.type, change.obj) if now_matches else None


class ChangeLog:
    """A bounded, thread-safe log of changes that watchers can wait on."""

    def __init__(self, lock: threading.RLock, capacity: int = 200_000) -> None:
        self.condition = threading.Condition(lock)
        self._capacity = capacity
        self._changes: list[Change] = []
        self._versions: list[int] = []
        self._trimmed_through = 0
        self._listeners: list[Callable[[Change], None]] = []

    def append(self, change: Change) -> None:
        """Record a change (the caller holds the store lock) and wake the watchers."""
        self._changes.append(change)
        self._versions.append(change.resource_version)
        if len(self._changes) > self._capacity + self._capacity // 4:
            drop = len(self._changes) - self._capacity
            self._trimmed_through = self._versions[drop - 1]
            del self._changes[:drop]
            del self._versions[:drop]
        for listener in self._listeners:
            listener(change)
        self.condition.notify_all()

    def add_listener(self, listener: Callable[[Change], None]) -> None:
        """Call `listener(change)` synchronously on every write (under the store lock: keep it short)."""
        self._listeners.append(listener)

    def since(self, resource_version: int) -> list[Change]:
        """Changes after `resource_version` (caller holds the lock); 410 Gone if they are no longer retained."""
        if resource_version < self._trimmed_through:
            raise gone(f"too old resource version: {resource_version} ({self._trimmed_through + 1})")
        start = bisect.bisect_right(self._versions, resource_version)
        return self._changes[start:]

    def wait(self, timeout: float) -> None:
        """Block until the next append or `timeout` wall seconds (caller holds the lock)."""
        self.condition.wait(timeout)

    def wake(self) -> None:
        with self.condition:
            self.condition.notify_all()


def check_resource_version(value: str | None) -> int | None:
    """Parse a `resourceVersion` query parameter: None/""/"0" mean "any" (start from the current state)."""
    if value in (None, "", "0"):
        return None
    try:
        return int(str(value))
    except ValueError:
        raise ApiError(400, "BadRequest", f"invalid resource version: {value!r}") from None
