"""Launching a node claim idempotently, falling back across offerings (`ports.cloud.Launcher` over `Fleet`).

Rules, for one `LaunchRequest`:

1. Own the launch. The claim record is written in state `launching` with a launch-attempt lease *before* any
   cloud call (`ClaimStore.create_if_absent`). If it already exists: a launched claim is answered from the
   record (`exists`), a `launching` claim whose lease still runs belongs to another run (`in_progress`), and a
   `launching` claim whose lease ran out (its run crashed, or its fleet call is slower than the lease) is taken
   over with a compare-and-put on its version.
2. Adopt before launching. The owner first looks for a live instance tagged with the claim id: a run that
   crashed after the fleet call and before its record update left one, and it is adopted, never duplicated.
3. Launch. Options already marked unavailable in the shared store, or in a zone the node class has no subnet
   in, are dropped. Each fleet call takes the capacity type of the cheapest remaining option and up to
   `MAX_OVERRIDES` options of that type, cheapest first (the caller's order breaks ties).
4. Fall back. Per-override errors with an unfulfillable code mark (type, zone, capacity type) unavailable for
   `core.offerings.UNAVAILABLE_TTL_S` in the shared store (with the keys `offering_keys_for_error` widens them
   to); the claim retries at once with the options left (another capacity type when one is exhausted), up to
   `MAX_FLEET_CALLS` calls.
5. Record or forget. On success the record moves to `launched` with the instance, type, zone, capacity type,
   price, image and template. On failure the record is deleted so the pods are planned again next pass, and
   the result says why (`InsufficientCapacity` when every option was refused for capacity).

Fencing: two runs never both launch one claim. Every write after step 1 is conditional on the version this run
last wrote: before each fleet call the attempt number is recorded and the attempt lease renewed (from the time
elapsed since the launch began, on the injected clock) in one compare-and-put, the launched record is a
compare-and-put, and the failure clean-up is `ClaimStore.delete_if`. A run whose claim was taken over while
its call was slow therefore makes no further call, never overwrites the new owner's record and never deletes
it; it answers with what the store holds (`exists` or `in_progress`). The window that conditions cannot close,
the call already in flight when the takeover happens, is closed by the ClientToken: the run that takes over
repeats the recorded attempt's token on its first call, so the cloud answers both runs with one instance (if
the cloud refuses the token because the parameters changed, `FleetCallError.settled`, the previous call reached
it: its instance is adopted when visible, else the record is left for the lifecycle to adopt or time out).

A node class that cannot be launched (`ValueError` from the fleet: no AMI, subnet or instance profile matches,
bad user data) fails that claim with the error's message. Other unexpected exceptions propagate with the record
left in `launching`: whether the instance exists is unknown, and step 2 of a later run, or the lifecycle's
launch timeout, settles it. This module decides; `adapters.aws.fleet.Ec2Fleet` makes the call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Final

from longshore.core.claims import (
    LAUNCH_ATTEMPT_LEASE_S,
    CloudInstance,
    FleetOutcome,
    LaunchOption,
    LaunchRequest,
    LaunchResult,
    NodeClaim,
    OfferingFailure,
    launch_metrics,
    provider_id,
    transition,
)
from longshore.core.model import ClusterConfig
from longshore.core.offerings import UNAVAILABLE_TTL_S, is_unfulfillable, offering_keys_for_error
from longshore.ports.clock import Clock
from longshore.ports.cloud import Fleet, FleetCallError, Instances
from longshore.ports.store import ClaimStore, OfferingAvailability

log = logging.getLogger(__name__)

MAX_OVERRIDES: Final = 60
"""Options per fleet call: EC2 CreateFleet accepts at most this many overrides per request."""
MAX_FLEET_CALLS: Final = 6
"""Fleet calls per launch before the claim is given up (and planned again next pass)."""
INSUFFICIENT_CAPACITY: Final = "InsufficientCapacity"
NO_LAUNCHABLE_OFFERING: Final = "NoLaunchableOffering"


class ClaimLauncher:
    """`ports.cloud.Launcher`: the launch protocol of the module docstring, over the claim store and a fleet."""

    def __init__(
        self,
        *,
        fleet: Fleet,
        config: ClusterConfig,
        store: ClaimStore,
        offerings: OfferingAvailability,
        instances: Instances,
        clock: Clock,
    ) -> None:
        self.fleet = fleet
        self._config = config
        self._store = store
        self._offerings = offerings
        self._instances = instances
        self._clock = clock

    def launch(self, request: LaunchRequest, now: float) -> LaunchResult:
        started = self._clock.now()
        owned, answer = self._own(request.claim, now)
        if answer is not None:
            return answer
        assert owned is not None
        found = self._instances.find_by_claim(owned.id)
        if found is not None:
            return self._adopt(owned, found, request.options, 0, ())
        return self._launch_owned(owned, request, now, lambda: now + (self._clock.now() - started))

    # -- step 1: own the launch -----------------------------------------------------------------------------

    def _own(self, claim: NodeClaim, now: float) -> tuple[NodeClaim | None, LaunchResult | None]:
        record = replace(
            claim,
            state="launching",
            created_at=claim.created_at or now,
            attempt_until=now + LAUNCH_ATTEMPT_LEASE_S,
            version=0,
        )
        if self._store.create_if_absent(record):
            return record, None
        existing = self._store.get(claim.id)
        if existing is None:
            return None, LaunchResult(
                claim.id, "in_progress", reason="the claim was removed while we looked at it"
            )
        if existing.state != "launching" or existing.instance_id:
            return None, LaunchResult(claim.id, "exists", claim=existing)
        if existing.attempt_until is not None and existing.attempt_until > now:
            return None, LaunchResult(
                claim.id, "in_progress", claim=existing, reason="another run is launching this claim"
            )
        taken = self._store.compare_and_put(replace(existing, attempt_until=now + LAUNCH_ATTEMPT_LEASE_S))
        if taken is None:
            return None, LaunchResult(claim.id, "in_progress", reason="another run took the launch over")
        log.info("took over launch of node claim", extra={"claim": claim.id, "attempts": existing.attempts})
        return taken, None

    # -- step 2: adopt ------------------------------------------------------------------------------------------

    def _adopt(
        self,
        claim: NodeClaim,
        found: CloudInstance,
        options: Iterable[LaunchOption],
        calls: int,
        failures: Sequence[OfferingFailure],
    ) -> LaunchResult:
        adopted = self._record_launched(claim, found, options, None, None)
        if adopted is None:
            return self._answer_from_store(claim.id, failures, calls)
        log.info("adopted instance for node claim", extra={"claim": claim.id, "instance": found.instance_id})
        return LaunchResult(
            claim.id, "adopted", claim=adopted, fleet_calls=calls, metrics=launch_metrics(adopted, (), "")
        )

    # -- steps 3 and 4: launch with fallback -------------------------------------------------------------------

    def _launch_owned(
        self, owned: NodeClaim, request: LaunchRequest, now: float, current_time: Callable[[], float]
    ) -> LaunchResult:
        failures: list[OfferingFailure] = []
        calls = 0
        claim = owned
        # A claim taken over from a run whose fleet call may still be in flight (`attempts` > 0): the first
        # call repeats that attempt's ClientToken, so the cloud answers both runs with the same instance.
        resume = owned.attempts > 0
        try:
            pool = self._config.pool(owned.nodepool)
            node_class = self._config.node_class_of(pool)
            zones = self.fleet.zones(node_class)
            unavailable = self._offerings.unavailable(now)
            ordered = sorted(request.options, key=lambda o: o.price)  # stable: the caller's order breaks ties
            remaining = [o for o in ordered if o.key not in unavailable and o.zone in zones]
            all_keys = [o.key for o in request.options]
            while remaining and calls < MAX_FLEET_CALLS:
                capacity_type = remaining[0].capacity_type
                batch = [o for o in remaining if o.capacity_type == capacity_type][:MAX_OVERRIDES]
                renewed = self._renew_attempt(claim, current_time(), next_attempt=not resume)
                resume = False
                if renewed is None:
                    log.warning(
                        "lost the launch of node claim to another run; no further fleet call",
                        extra={"claim": claim.id, "fleet_calls": calls},
                    )
                    return self._answer_from_store(claim.id, failures, calls)
                claim = renewed
                try:
                    outcome = self.fleet.create(claim, pool, node_class, request.labels, batch, now)
                except FleetCallError as error:
                    if error.settled:
                        return self._settle_mismatch(claim, request, failures, calls + 1)
                    if not error.throttled:
                        raise
                    log.warning("launch throttled", extra={"claim": claim.id})
                    return self._give_up(claim, error.code, failures, calls + 1, failed_call=True)
                calls += 1
                failures.extend(outcome.failures)
                refused = self._mark_refused(claim, outcome.failures, all_keys, now)
                if outcome.instance_id is not None:
                    return self._launched(claim, request, outcome, batch[0], pool.name, failures, calls, now)
                if not outcome.failures:
                    break  # no instance and no reason: do not loop
                remaining = [o for o in remaining if o.key not in refused]
        except FleetCallError as error:
            return self._give_up(claim, error.code or "ClientError", failures, calls, failed_call=True)
        except ValueError as error:
            # The node class cannot be launched (no AMI, subnet or instance profile matches, bad user data):
            # raised before any fleet call succeeded, so no instance exists. Fail this claim with the error's
            # message and let the run go on with the others.
            return self._give_up(claim, str(error), failures, calls, kind=type(error).__name__)
        return self._give_up(claim, self._failure_reason(request, failures, zones), failures, calls)

    @staticmethod
    def _failure_reason(
        request: LaunchRequest, failures: Sequence[OfferingFailure], zones: frozenset[str]
    ) -> str:
        if not request.options or not any(o.zone in zones for o in request.options):
            return NO_LAUNCHABLE_OFFERING
        capacity_only = bool(failures) and all(is_unfulfillable(f.code) for f in failures)
        return INSUFFICIENT_CAPACITY if capacity_only or not failures else failures[-1].code

    def _mark_refused(
        self,
        claim: NodeClaim,
        refusals: Sequence[OfferingFailure],
        all_keys: Sequence[tuple[str, str, str]],
        now: float,
    ) -> set[tuple[str, str, str]]:
        """Mark what the cloud refused unavailable in the shared store; the keys this call rules out."""
        refused: set[tuple[str, str, str]] = set()
        for failure in refusals:
            key = (failure.instance_type, failure.zone, failure.capacity_type)
            refused.add(key)
            for marked in offering_keys_for_error(failure.code, key, all_keys):
                self._offerings.mark_unavailable(*marked, now + UNAVAILABLE_TTL_S)
                refused.add(marked)
            log.info(
                "removing offering from offerings",
                extra={"claim": claim.id, "offering": key, "code": failure.code, "ttl_s": UNAVAILABLE_TTL_S},
            )
        return refused

    def _launched(
        self,
        claim: NodeClaim,
        request: LaunchRequest,
        outcome: FleetOutcome,
        first: LaunchOption,
        pool: str,
        failures: Sequence[OfferingFailure],
        calls: int,
        now: float,
    ) -> LaunchResult:
        instance = CloudInstance(
            instance_id=outcome.instance_id or "",
            state="pending",
            instance_type=outcome.instance_type or first.instance_type,
            zone=outcome.zone or first.zone,
            capacity_type=first.capacity_type,
            claim_id=claim.id,
            nodepool=pool,
            created_at=now,
            reservation_id=first.reservation_id,
            reservation_type=first.reservation_type,
        )
        launched = self._record_launched(
            claim, instance, request.options, outcome.launch_template, outcome.image_id
        )
        if launched is None:
            return self._answer_from_store(claim.id, failures, calls)
        log.info(
            "launched nodeclaim",
            extra={
                "claim": claim.id,
                "provider_id": launched.provider_id,
                "instance_type": launched.instance_type,
                "zone": launched.zone,
                "capacity_type": launched.capacity_type,
            },
        )
        return LaunchResult(
            claim.id,
            "launched",
            claim=launched,
            failures=tuple(failures),
            fleet_calls=calls,
            metrics=launch_metrics(launched, failures, ""),
        )

    def _renew_attempt(self, claim: NodeClaim, now: float, *, next_attempt: bool) -> NodeClaim | None:
        """Before each fleet call: prove we still own the claim and extend its attempt lease, in one
        conditional write. `next_attempt` moves to a new attempt number (a new ClientToken); without it the
        call repeats the recorded attempt's token. None when another run changed the claim since we wrote it."""
        attempts = claim.attempts + 1 if next_attempt else claim.attempts
        return self._store.compare_and_put(
            replace(claim, attempts=attempts, attempt_until=now + LAUNCH_ATTEMPT_LEASE_S)
        )

    def _give_up(
        self,
        claim: NodeClaim,
        reason: str,
        failures: Sequence[OfferingFailure],
        calls: int,
        *,
        failed_call: bool = False,
        kind: str | None = None,
    ) -> LaunchResult:
        """No instance from this run: forget the claim so its pods are planned again, unless another run
        changed it meanwhile (it took the launch over), in which case its record is the answer."""
        if not self._store.delete_if(claim.id, claim.version):
            log.warning(
                "launch failed but another run owns node claim now; record kept",
                extra={"claim": claim.id, "reason": reason},
            )
            return self._answer_from_store(claim.id, failures, calls)
        log.warning(
            "launch failed; node claim forgotten",
            extra={"claim": claim.id, "reason": reason, "failures": len(failures)},
        )
        if kind is not None:
            metrics = launch_metrics(None, (), kind)
        elif failed_call:
            metrics = launch_metrics(None, failures, reason)
        else:
            metrics = launch_metrics(None, failures, reason if not failures else "")
        return LaunchResult(
            claim.id, "failed", failures=tuple(failures), reason=reason, fleet_calls=calls, metrics=metrics
        )

    def _answer_from_store(
        self, claim_id: str, failures: Sequence[OfferingFailure], calls: int = 0
    ) -> LaunchResult:
        """The answer of a run that lost the claim to another: what the store now says (never `launched`)."""
        stored = self._store.get(claim_id)
        if stored is not None and stored.instance_id:
            return LaunchResult(claim_id, "exists", claim=stored, failures=tuple(failures), fleet_calls=calls)
        return LaunchResult(
            claim_id,
            "in_progress",
            claim=stored,
            failures=tuple(failures),
            reason="another run took the launch over",
            fleet_calls=calls,
        )

    def _settle_mismatch(
        self, claim: NodeClaim, request: LaunchRequest, failures: Sequence[OfferingFailure], calls: int
    ) -> LaunchResult:
        """The cloud refused the repeated ClientToken with other parameters: the previous owner's call reached
        it. Adopt its instance if it is visible; otherwise leave the record `launching` (the lifecycle adopts
        the instance or forgets the claim after the launch timeout) rather than risk a second instance."""
        found = self._instances.find_by_claim(claim.id)
        if found is not None:
            return self._adopt(claim, found, request.options, calls, failures)
        log.warning(
            "previous launch attempt of node claim reached EC2 with other parameters; waiting for it",
            extra={"claim": claim.id, "attempt": claim.attempts},
        )
        return LaunchResult(
            claim.id,
            "in_progress",
            claim=claim,
            failures=tuple(failures),
            reason="a previous launch attempt is settling",
            fleet_calls=calls,
        )

    # -- step 5: record ---------------------------------------------------------------------------------------

    def _record_launched(
        self,
        claim: NodeClaim,
        instance: CloudInstance,
        options: Iterable[LaunchOption],
        template: str | None,
        template_image: str | None,
    ) -> NodeClaim | None:
        """Record the instance on the claim, only if nobody changed the claim since we last wrote it (None then:
        another run took the launch over; with the ClientToken repeated on takeover, it holds this instance)."""
        key = (instance.instance_type, instance.zone, instance.capacity_type)
        chosen = next((o for o in options if o.key == key), None)
        price = chosen.price if chosen is not None else claim.price
        launched = transition(
            claim,
            "launched",
            instance_id=instance.instance_id,
            instance_type=instance.instance_type,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
            price=price,
            provider_id=provider_id(instance.zone, instance.instance_id),
            image_id=instance.image_id or claim.image_id or template_image,
            launch_template=template or claim.launch_template,
            launched_at=instance.created_at or claim.created_at,
            attempt_until=None,
            reservation_id=instance.reservation_id,
            reservation_type=instance.reservation_type,
            reservation_end=chosen.reservation_end
            if chosen is not None and instance.reservation_id
            else None,
            reservation_interruptible=bool(chosen.reservation_interruptible)
            if chosen is not None and instance.reservation_id
            else None,
        )
        return self._store.compare_and_put(launched)
