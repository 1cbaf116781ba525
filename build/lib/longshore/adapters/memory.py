"""In-memory implementations of the store ports, for unit tests of services and handlers.

Theory of operation: each fake keeps plain dicts behind a lock and applies exactly the conditions the DynamoDB
adapter applies (create-if-absent, compare-and-put and delete-if on `version`, lease owner/expiry), so a service tested
against these behaves the same against `adapters.aws.dynamodb`. They hold state only; nothing here launches
instances (use moto and `sim.aws` for that).
"""

from __future__ import annotations

import threading
from dataclasses import replace

from longshore.core.claims import NodeClaim
from longshore.core.offerings import UnavailableOfferings


class MemoryClaimStore:
    """`ports.store.ClaimStore` in memory."""

    def __init__(self) -> None:
        self._claims: dict[str, NodeClaim] = {}
        self._lock = threading.Lock()

    def create_if_absent(self, claim: NodeClaim) -> bool:
        with self._lock:
            if claim.id in self._claims:
                return False
            self._claims[claim.id] = claim
            return True

    def get(self, claim_id: str) -> NodeClaim | None:
        with self._lock:
            return self._claims.get(claim_id)

    def by_instance(self, instance_id: str) -> NodeClaim | None:
        with self._lock:
            return next((c for c in self._claims.values() if c.instance_id == instance_id), None)

    def list(self) -> tuple[NodeClaim, ...]:
        with self._lock:
            return tuple(self._claims[k] for k in sorted(self._claims))

    def put(self, claim: NodeClaim) -> None:
        with self._lock:
            self._claims[claim.id] = claim

    def compare_and_put(self, claim: NodeClaim) -> NodeClaim | None:
        with self._lock:
            stored = self._claims.get(claim.id)
            if stored is None or stored.version != claim.version:
                return None
            written = replace(claim, version=claim.version + 1)
            self._claims[claim.id] = written
            return written

    def delete(self, claim_id: str) -> None:
        with self._lock:
            self._claims.pop(claim_id, None)

    def delete_if(self, claim_id: str, expected_version: int) -> bool:
        with self._lock:
            stored = self._claims.get(claim_id)
            if stored is None or stored.version != expected_version:
                return False
            del self._claims[claim_id]
            return True


class MemoryOfferingAvailability:
    """`ports.store.OfferingAvailability` in memory."""

    def __init__(self) -> None:
        self._offerings = UnavailableOfferings()
        self._lock = threading.Lock()

    def mark_unavailable(self, instance_type: str, zone: str, capacity_type: str, until_epoch: float) -> None:
        with self._lock:
            self._offerings = self._offerings.mark((instance_type, zone, capacity_type), until_epoch)

    def unavailable(self, now: float) -> frozenset[tuple[str, str, str]]:
        with self._lock:
            return self._offerings.active(now)


class MemoryLease:
    """`ports.store.Lease` in memory."""

    def __init__(self) -> None:
        self._leases: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def acquire(self, name: str, owner: str, now: float, ttl_s: float) -> bool:
        with self._lock:
            held = self._leases.get(name)
            if held is not None and held[0] != owner and held[1] > now:
                return False
            self._leases[name] = (owner, now + ttl_s)
            return True

    def release(self, name: str, owner: str) -> None:
        with self._lock:
            held = self._leases.get(name)
            if held is not None and held[0] == owner:
                del self._leases[name]

    def holder(self, name: str, now: float) -> str | None:
        """Who holds the lease at `now` (for tests and diagnostics)."""
        with self._lock:
            held = self._leases.get(name)
            return held[0] if held is not None and held[1] > now else None
