"""Fault injection: make chosen routes slow, fail with 5xx or 429, time out, or drop watch streams mid-way.

Theory of operation: a test adds `Fault` rules to the emulator's `FaultInjector`; every request is described
by a `Route` (resource with optional subresource, verb, namespace, name) and each rule that matches it fires.
A rule fires `times` times (None: until removed) and counts its `hits`, so a test can make "the next two
pod lists fail with 503" and later check that its code really went through them. Effects combine: latency
(wall seconds, so client timeouts can be exercised) is served first, then an error status (with
`Retry-After` for 429), and for watches `drop_after` closes the stream after that many events without the
terminating chunk, as a load balancer cutting a connection would.

A `timeout` rule is not the server's to fire: the answer never reaches the client, whose read timeout passes.
The client side consumes it (`fire_timeout`, used by `kubeapi.timeouts`, which raises urllib3's
`ReadTimeoutError` after the read timeout of virtual time); with `served` the server still carries the request
out first (a write applied whose answer was lost), otherwise it never sees it. `fire` ignores timeout rules.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Route:
    """What a request addresses: `resource` is "pods", "pods/eviction", "nodes/status"...; verb is
    get, list, watch, create, update, patch, delete or deletecollection."""

    resource: str
    verb: str
    namespace: str = ""
    name: str = ""


@dataclass
class Fault:
    """One injected misbehaviour; fields left None match anything."""

    resource: str | None = None
    verb: str | None = None
    namespace: str | None = None
    name: str | None = None
    status: int | None = None
    latency: float = 0.0
    drop_after: int | None = None
    times: int | None = None
    retry_after: int = 1
    message: str = "injected fault"
    timeout: bool = False
    served: bool = False
    hits: int = field(default=0, init=False)

    def matches(self, route: Route) -> bool:
        return (
            (self.resource is None or self.resource == route.resource)
            and (self.verb is None or self.verb == route.verb)
            and (self.namespace is None or self.namespace == route.namespace)
            and (self.name is None or self.name == route.name)
        )


@dataclass(frozen=True, slots=True)
class Effect:
    """The combined effect of the faults that fired for one request."""

    latency: float = 0.0
    status: int | None = None
    retry_after: int = 1
    message: str = ""
    drop_after: int | None = None


class FaultInjector:
    """Thread-safe set of fault rules."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault | None = None, /, **fields: object) -> Fault:
        """Add a rule (`add(Fault(...))` or `add(resource="pods", verb="list", status=503, times=2)`)."""
        rule = fault if fault is not None else Fault(**fields)  # type: ignore[arg-type]
        with self._lock:
            self._faults.append(rule)
        return rule

    def remove(self, fault: Fault) -> None:
        with self._lock:
            if fault in self._faults:
                self._faults.remove(fault)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def fire(self, route: Route) -> Effect:
        """Consume one use of every rule matching `route` and return their combined effect."""
        latency, status, retry_after, message, drop_after = 0.0, None, 1, "", None
        with self._lock:
            for fault in list(self._faults):
                if fault.timeout or not fault.matches(route):
                    continue
                self._use(fault)
                latency += fault.latency
                if fault.status is not None and status is None:
                    status, retry_after, message = fault.status, fault.retry_after, fault.message
                if fault.drop_after is not None and route.verb == "watch":
                    drop_after = fault.drop_after if drop_after is None else min(drop_after, fault.drop_after)
        return Effect(latency, status, retry_after, message, drop_after)

    def fire_timeout(self, route: Route) -> Fault | None:
        """Consume one use of the first timeout rule matching `route` (the client's side of the fault)."""
        with self._lock:
            for fault in self._faults:
                if fault.timeout and fault.matches(route):
                    self._use(fault)
                    return fault
        return None

    def _use(self, fault: Fault) -> None:
        fault.hits += 1
        if fault.times is not None:
            fault.times -= 1
            if fault.times <= 0:
                self._faults.remove(fault)
