"""The cloud as the provisioner sees it: launch a node claim, and read or terminate the instances we own.

Theory of operation: `Launcher.launch` turns one `LaunchRequest` into at most one instance, idempotently (the
claim id, written to the store before the launch, is the key); `services.launch.ClaimLauncher` implements it
over `Fleet`, the single cloud call that starts an instance. `Instances` reads and terminates instances by id
and lists those tagged as ours, which the lifecycle uses for registration timeouts and orphan collection.
All speak core types only; the EC2 implementations live in `adapters.aws`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from longshore.core.claims import (
    CloudInstance,
    FleetOutcome,
    LaunchOption,
    LaunchRequest,
    LaunchResult,
    NodeClaim,
)
from longshore.core.disruption.state import InstanceStatus
from longshore.core.model import NodeClass, NodePool
from longshore.core.placement_groups import PlacementGroup
from longshore.core.reservations import Reservation


class Launcher(Protocol):
    def launch(self, request: LaunchRequest, now: float) -> LaunchResult:
        """At most one instance for `request.claim`, however often and however concurrently it is called."""
        ...


class InstanceTags(Protocol):
    def tag(self, instance_ids: Iterable[str], tags: Iterable[tuple[str, str]]) -> None:
        """Add (or overwrite) tags on instances; idempotent."""
        ...


class FleetCallError(Exception):
    """The cloud refused a fleet call as a whole (not per override): `code` is its error code, `throttled` says
    whether retrying later may succeed, `settled` that the ClientToken was already used with other parameters
    (an earlier attempt of this claim reached the cloud)."""

    def __init__(
        self, code: str, message: str = "", *, throttled: bool = False, settled: bool = False
    ) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.throttled = throttled
        self.settled = settled


class Fleet(Protocol):
    """The one cloud call that starts an instance, and what it needs to know about the node class."""

    def zones(self, node_class: NodeClass) -> frozenset[str]:
        """The zones `node_class` has a subnet in (offerings elsewhere cannot launch). Raises `ValueError` when
        the node class cannot be launched at all (no subnet matches)."""
        ...

    def create(
        self,
        claim: NodeClaim,
        pool: NodePool,
        node_class: NodeClass,
        labels: Iterable[tuple[str, str]],
        options: Sequence[LaunchOption],
        now: float,
    ) -> FleetOutcome:
        """One instant fleet of one instance over `options` (all of one capacity type, in priority order),
        tagged with the claim and de-duplicated by the claim's ClientToken (`core.claims.client_token` of its
        recorded attempt): a repeated call with the same attempt answers with the same instance. Per-override
        refusals come back in `FleetOutcome.failures`; a refusal of the whole call raises `FleetCallError`;
        a node class that cannot be launched (no AMI, security group or instance profile, bad user data)
        raises `ValueError` before any instance exists."""
        ...


class Instances(Protocol):
    def describe(self, instance_ids: Iterable[str]) -> tuple[CloudInstance, ...]:
        """The instances that exist among `instance_ids` (any state; unknown ids are left out)."""
        ...

    def terminate(self, instance_ids: Iterable[str]) -> None:
        """Terminate instances (idempotent; already-terminated or unknown ids are ignored)."""
        ...

    def list_owned(self) -> tuple[CloudInstance, ...]:
        """Live (not terminated) instances tagged for this cluster."""
        ...

    def find_by_claim(self, claim_id: str) -> CloudInstance | None:
        """The live instance tagged with this claim id, if any."""
        ...


class InstanceStatuses(Protocol):
    def statuses(self, instance_ids: Iterable[str]) -> Mapping[str, InstanceStatus]:
        """EC2's status checks and scheduled events of the running instances among `instance_ids`; ids without a
        status (unknown, not running, or the call failed) are left out, so they look healthy."""
        ...


class CapacityReservations(Protocol):
    """The capacity reservations node classes select (`core.reservations`)."""

    def list(self, node_class: NodeClass, now: float) -> tuple[Reservation, ...]:
        """The active reservations `node_class.capacity_reservation_selector_terms` select in the node class's
        zones, each with its room as last read or since decremented, and its state at `now`; () when the node
        class selects none. Never raises for an EC2 error: it logs it and answers what it last knew (or ())."""
        ...

    def mark_launched(self, reservation_id: str) -> None:
        """One instance was launched into the reservation: its room shrinks by one until the next read."""
        ...

    def failure(self, node_class: NodeClass) -> str:
        """Why the last `list` of `node_class` could not read everything it asked for ("" when it could): each
        selector term (by its index in `capacityReservationSelectorTerms`) or the zone lookup that failed, with
        the error. A term whose id EC2 does not know is not a failure (it selects nothing)."""
        ...


class PlacementGroups(Protocol):
    """The placement group each node class selects (`core.placement_groups`)."""

    def group(self, node_class: NodeClass) -> PlacementGroup | None:
        """The available group `node_class.placement_group` selects, with its strategy and partition count;
        None when the node class selects none, or when it cannot be resolved now (logged; the launch then
        fails with the error naming the node class and the field). Never raises."""
        ...
