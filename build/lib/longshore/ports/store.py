"""Durable state the provisioner shares between runs: node claims, unavailable offerings, and leases.

Theory of operation: every Lambda run is stateless; what must survive it lives behind these ports (DynamoDB
in production, `adapters.memory` in unit tests). Writes that decide ownership are conditional:
`create_if_absent` lets exactly one run create a claim, `compare_and_put` replaces a claim only if nobody
changed it since it was read (its `version`), `delete_if` forgets a claim only if nobody changed it since it
was read (a claim another run just registered or took over is never deleted), and `Lease.acquire` succeeds only when the lease is free,
expired, or already ours. Times are epoch seconds passed in by the caller (never read from a clock here).
"""

from __future__ import annotations

from typing import Protocol

from longshore.core.claims import NodeClaim


class ClaimStore(Protocol):
    def create_if_absent(self, claim: NodeClaim) -> bool:
        """Write `claim` if no claim with its id exists; True when this call created it."""
        ...

    def get(self, claim_id: str) -> NodeClaim | None: ...

    def by_instance(self, instance_id: str) -> NodeClaim | None:
        """The claim whose `instance_id` is this instance, if any."""
        ...

    def list(self) -> tuple[NodeClaim, ...]:
        """All claims, in id order."""
        ...

    def put(self, claim: NodeClaim) -> None:
        """Write `claim` unconditionally (its version is stored as given)."""
        ...

    def compare_and_put(self, claim: NodeClaim) -> NodeClaim | None:
        """Write `claim` with `version + 1` only if the stored claim still has `claim.version`.

        Returns the written claim, or None when the claim changed or vanished since it was read.
        """
        ...

    def delete(self, claim_id: str) -> None:
        """Forget a claim (idempotent)."""
        ...

    def delete_if(self, claim_id: str, expected_version: int) -> bool:
        """Forget a claim only if the stored claim still has `expected_version`.

        True when this call deleted it; False when the claim changed (another run wrote it since it was read)
        or is already gone.
        """
        ...


class OfferingAvailability(Protocol):
    def mark_unavailable(
        self, instance_type: str, zone: str, capacity_type: str, until_epoch: float
    ) -> None: ...

    def unavailable(self, now: float) -> frozenset[tuple[str, str, str]]:
        """(instance type, zone, capacity type) keys still unavailable at `now`."""
        ...


class Lease(Protocol):
    def acquire(self, name: str, owner: str, now: float, ttl_s: float) -> bool:
        """Take or renew the lease `name` until `now + ttl_s`; False when another owner holds it unexpired."""
        ...

    def release(self, name: str, owner: str) -> None:
        """Give the lease up if `owner` holds it (otherwise do nothing)."""
        ...
