"""Launching a node claim with an instant EC2 fleet, idempotently, falling back across offerings (`ports.cloud.Launcher`).

Theory of operation, for one `LaunchRequest`:

1. Own the launch. The claim record is written in state `launching` with a launch-attempt lease *before* any
   EC2 call (`ClaimStore.create_if_absent`). If it already exists: a launched claim is answered from the record
   (`exists`), a `launching` claim whose lease still runs belongs to another run (`in_progress`), and a
   `launching` claim whose lease ran out (its run crashed, or its CreateFleet is slower than the lease) is
   taken over with a compare-and-put on its version.
2. Adopt before launching. The owner first looks for a live instance tagged with the claim id: a run that
   crashed after CreateFleet and before its record update left one, and it is adopted, never duplicated.
3. Launch. Options already marked unavailable in the shared store are dropped. Each CreateFleet call
   (Type=instant, TotalTargetCapacity=1) takes the capacity type of the cheapest remaining option and up to 60
   overrides of that type (instance type x the zone's subnet with the most free IPs), cheapest first, with
   `lowest-price` on-demand or `price-capacity-optimized` spot, tags for the instance, its volumes and the fleet,
   and a `ClientToken` derived from the claim id and attempt number, so EC2 itself de-duplicates a retried call.
   Overrides are grouped into content-addressed launch templates (one per image x kubelet settings).
4. Fall back. Per-override errors with an unfulfillable code mark (type, zone, capacity type) unavailable for
   3 minutes in the shared store; the claim retries at once with the options left (another capacity type when
   one is exhausted), up to `MAX_FLEET_CALLS` calls. Throttling is retried by botocore and then by
   `retry.call_with_backoff` on the injected sleep.
5. Record or forget. On success the record moves to `launched` with the instance, type, zone, capacity type,
   price, image and template. On failure the record is deleted so the pods are planned again next pass, and
   the result says why (`InsufficientCapacity` when every option was refused for capacity).

Fencing: two runs never both launch one claim. Every write after step 1 is conditional on the version this run
last wrote: before each CreateFleet the attempt number is recorded and the attempt lease renewed (from the
time elapsed since the launch began) in one compare-and-put, the launched record is a compare-and-put, and
the failure clean-up is `ClaimStore.delete_if`. A run whose claim was taken over while its CreateFleet was
slow therefore makes no further call, never overwrites the new owner's record and never deletes it; it answers
with what the store holds (`exists` or `in_progress`). The window that conditions cannot close, the call
already in flight when the takeover happens, is closed by the ClientToken: the run that takes over repeats the
recorded attempt's token on its first call, so EC2 answers both runs with one fleet and one instance (if EC2
refuses the token because the parameters changed, `IdempotentParameterMismatch`, the previous call reached
EC2: its instance is adopted when visible, else the record is left for the lifecycle to adopt or time out).
The orphan collector (`services.lifecycle`) stays the last line: an instance tagged with a claim that records
another instance is terminated after its grace period.

A node class that cannot be launched (`ValueError`: no AMI, subnet or instance profile matches, bad user
data) fails that claim with the error's message, like an EC2 error answer. Other unexpected exceptions
propagate with the record left in `launching`: whether the instance exists is unknown, and step 2 of a later
run, or the lifecycle's launch timeout, settles it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from longshore.adapters.aws import tags as tagnames
from longshore.adapters.aws.amis import AmiResolver, effective_family
from longshore.adapters.aws.launch_templates import LaunchTemplates, TemplateSpec, default_block_devices
from longshore.adapters.aws.network import Subnet, select_security_groups, select_subnets, subnet_per_zone
from longshore.adapters.aws.retry import ClientError, call_with_backoff, error_code, is_throttle
from longshore.adapters.aws.userdata import Bootstrap, ClusterInfo, encode_user_data, render_user_data
from longshore.core import labels as wellknown
from longshore.core.claims import (
    LAUNCH_ATTEMPT_LEASE_S,
    CloudInstance,
    LaunchOption,
    LaunchRequest,
    LaunchResult,
    NodeClaim,
    OfferingFailure,
    client_token,
    launch_metrics,
    provider_id,
    transition,
)
from longshore.core.model import ClusterConfig, NodeClass, NodePool, Taint
from longshore.core.offerings import UNAVAILABLE_TTL_S, is_unfulfillable, offering_keys_for_error
from longshore.core.taints import UNREGISTERED_TAINT
from longshore.ports.cloud import Instances
from longshore.ports.store import ClaimStore, OfferingAvailability

log = logging.getLogger(__name__)

MAX_OVERRIDES: Final = 60
MAX_FLEET_CALLS: Final = 6
SPOT_STRATEGY: Final = "price-capacity-optimized"
ON_DEMAND_STRATEGY: Final = "lowest-price"
INSUFFICIENT_CAPACITY: Final = "InsufficientCapacity"
IDEMPOTENT_MISMATCH: Final = "IdempotentParameterMismatch"


@dataclass(frozen=True, slots=True)
class FleetOutcome:
    """One CreateFleet call: the instance it launched (if any) and the overrides it refused."""

    instance_id: str | None
    instance_type: str | None
    zone: str | None
    launch_template: str | None
    failures: tuple[OfferingFailure, ...]


def node_bootstrap(
    pool: NodePool,
    node_class: NodeClass,
    option: LaunchOption,
    family: str,
    labels: Iterable[tuple[str, str]] = (),
) -> Bootstrap:
    """The labels, taints and kubelet values a node launched for `option` registers with."""
    kubelet = pool.effective_kubelet(node_class)
    node_labels = dict(pool.labels)
    node_labels.update(labels)
    node_labels.update(
        {
            wellknown.NODEPOOL: pool.name,
            wellknown.NODECLASS: node_class.name,
            wellknown.CAPACITY_TYPE: option.capacity_type,
        }
    )
    if family != "Custom":
        node_labels[wellknown.DO_NOT_SYNC_TAINTS] = "true"
    taints: list[Taint] = [*pool.taints, *pool.startup_taints]
    if UNREGISTERED_TAINT not in taints:
        taints.append(UNREGISTERED_TAINT)
    settings = option.kubelet
    return Bootstrap(
        # The kubelet refuses to start with kubernetes.io / k8s.io labels it may not self-set (v1 pools may use
        # them since Karpenter 1.9); the lifecycle service puts the pool's labels on the Node at registration.
        labels=tuple(sorted((k, v) for k, v in node_labels.items() if wellknown.kubelet_may_set(k))),
        taints=tuple(taints),
        max_pods=settings.max_pods if settings.max_pods is not None else kubelet.max_pods,
        kube_reserved=settings.kube_reserved or kubelet.kube_reserved,
        system_reserved=settings.system_reserved or kubelet.system_reserved,
        eviction_hard=settings.eviction_hard or kubelet.eviction_hard,
    )


class Ec2Launcher:
    """`ports.cloud.Launcher` on EC2 CreateFleet, with the claim store as the idempotency key."""

    def __init__(
        self,
        *,
        ec2: Any,
        ssm: Any,
        cluster: ClusterInfo,
        config: ClusterConfig,
        store: ClaimStore,
        offerings: OfferingAvailability,
        instances: Instances,
        sleep: Callable[[float], None],
        iam: Any = None,
    ) -> None:
        self._ec2 = ec2
        self._iam = iam
        self._cluster = cluster
        self._config = config
        self._store = store
        self._offerings = offerings
        self._instances = instances
        self._sleep = sleep
        self._amis = AmiResolver(ssm, ec2)
        self._template_images: dict[str, str] = {}
        self.templates = LaunchTemplates(ec2, cluster.name)
        self._subnets: dict[str, dict[str, Subnet]] = {}
        self._security_groups: dict[str, tuple[str, ...]] = {}
        self._profiles: dict[str, str | None] = {}

    # -- step 1: own the launch -------------------------------------------------------------------------------

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

    def launch(self, request: LaunchRequest, now: float) -> LaunchResult:
        started = time.monotonic()
        owned, answer = self._own(request.claim, now)
        if answer is not None:
            return answer
        assert owned is not None
        # -- step 2: adopt an instance a crashed (or slow) run launched
        found = self._instances.find_by_claim(owned.id)
        if found is not None:
            adopted = self._record_launched(owned, found, request.options, None)
            if adopted is None:
                return self._answer_from_store(owned.id, ())
            log.info(
                "adopted instance for node claim", extra={"claim": owned.id, "instance": found.instance_id}
            )
            return LaunchResult(owned.id, "adopted", claim=adopted, metrics=launch_metrics(adopted, (), ""))
        return self._launch_owned(owned, request, now, lambda: now + (time.monotonic() - started))

    # -- steps 3 and 4: launch with fallback -----------------------------------------------------------------------

    def _launch_owned(
        self, owned: NodeClaim, request: LaunchRequest, now: float, current_time: Callable[[], float]
    ) -> LaunchResult:
        failures: list[OfferingFailure] = []
        calls = 0
        claim = owned
        # A claim taken over from a run whose CreateFleet may still be in flight (`attempts` > 0): the first
        # call repeats that attempt's ClientToken, so EC2 answers both runs with the same fleet.
        resume = owned.attempts > 0
        try:
            pool = self._config.pool(owned.nodepool)
            node_class = self._config.node_class_of(pool)
            subnets = self._subnet_per_zone(node_class)
            unavailable = self._offerings.unavailable(now)
            ordered = sorted(request.options, key=lambda o: o.price)  # stable: the caller's order breaks ties
            remaining = [o for o in ordered if o.key not in unavailable and o.zone in subnets]
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
                    outcome = self._create_fleet(claim, pool, node_class, request, batch, subnets, now)
                except ClientError as error:
                    if error_code(error) == IDEMPOTENT_MISMATCH:
                        return self._settle_mismatch(claim, request, failures, calls + 1)
                    if not is_throttle(error):
                        raise
                    log.warning("launch throttled", extra={"claim": claim.id})
                    return self._give_up(claim, error_code(error), failures, calls + 1, failed_call=True)
                calls += 1
                failures.extend(outcome.failures)
                refused = set()
                for failure in outcome.failures:
                    key = (failure.instance_type, failure.zone, failure.capacity_type)
                    refused.add(key)
                    for marked in offering_keys_for_error(failure.code, key, all_keys):
                        self._offerings.mark_unavailable(*marked, now + UNAVAILABLE_TTL_S)
                        refused.add(marked)
                    log.info(
                        "removing offering from offerings",
                        extra={
                            "claim": claim.id,
                            "offering": key,
                            "code": failure.code,
                            "ttl_s": UNAVAILABLE_TTL_S,
                        },
                    )
                if outcome.instance_id is not None:
                    instance = CloudInstance(
                        instance_id=outcome.instance_id,
                        state="pending",
                        instance_type=outcome.instance_type or batch[0].instance_type,
                        zone=outcome.zone or batch[0].zone,
                        capacity_type=capacity_type,
                        claim_id=claim.id,
                        nodepool=pool.name,
                        created_at=now,
                    )
                    launched = self._record_launched(
                        claim, instance, request.options, outcome.launch_template
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
                if not outcome.failures:
                    break  # no instance and no reason: do not loop
                remaining = [o for o in remaining if o.key not in refused]
        except ClientError as error:
            return self._give_up(claim, error_code(error) or "ClientError", failures, calls, failed_call=True)
        except ValueError as error:
            # The node class cannot be launched (no AMI, subnet or instance profile matches, bad user data):
            # raised before any CreateFleet succeeded, so no instance exists. Fail this claim with the error's
            # message and let the run go on with the others.
            return self._give_up(claim, str(error), failures, calls, kind=type(error).__name__)
        capacity_only = bool(failures) and all(is_unfulfillable(f.code) for f in failures)
        reason = INSUFFICIENT_CAPACITY if capacity_only or not failures else failures[-1].code
        if not request.options or not any(o.zone in subnets for o in request.options):
            reason = "NoLaunchableOffering"
        return self._give_up(claim, reason, failures, calls)

    def _renew_attempt(self, claim: NodeClaim, now: float, *, next_attempt: bool) -> NodeClaim | None:
        """Before each CreateFleet: prove we still own the claim and extend its attempt lease, in one
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
        """EC2 refused the repeated ClientToken with other parameters: the previous owner's call reached EC2.
        Adopt its instance if it is visible; otherwise leave the record `launching` (the lifecycle adopts the
        instance or forgets the claim after the launch timeout) rather than risk a second instance."""
        found = self._instances.find_by_claim(claim.id)
        if found is not None:
            adopted = self._record_launched(claim, found, request.options, None)
            if adopted is not None:
                return LaunchResult(
                    claim.id,
                    "adopted",
                    claim=adopted,
                    fleet_calls=calls,
                    metrics=launch_metrics(adopted, (), ""),
                )
            return self._answer_from_store(claim.id, failures, calls)
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

    def _create_fleet(
        self,
        claim: NodeClaim,
        pool: NodePool,
        node_class: NodeClass,
        request: LaunchRequest,
        batch: Sequence[LaunchOption],
        subnets: dict[str, Subnet],
        now: float,
    ) -> FleetOutcome:
        family = effective_family(node_class)
        configs: dict[str, list[dict[str, Any]]] = {}
        for rank, option in enumerate(batch):
            template = self._template_for(pool, node_class, family, option, request.labels, now)
            configs.setdefault(template, []).append(
                {
                    "InstanceType": option.instance_type,
                    "SubnetId": subnets[option.zone].subnet_id,
                    "AvailabilityZone": option.zone,
                    "Priority": float(rank),
                }
            )
        capacity_type = batch[0].capacity_type
        tags = tagnames.as_ec2(
            tagnames.claim_tags(
                self._cluster.name, pool.name, node_class.name, claim.id, claim.created_at, node_class.tags
            )
        )
        params: dict[str, Any] = {
            "Type": "instant",
            "ClientToken": client_token(claim.id, claim.attempts, claim.created_at),
            "TargetCapacitySpecification": {
                "TotalTargetCapacity": 1,
                "DefaultTargetCapacityType": capacity_type,
            },
            "LaunchTemplateConfigs": [
                {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                    "Overrides": overrides,
                }
                for name, overrides in configs.items()
            ],
            "TagSpecifications": [
                {"ResourceType": kind, "Tags": tags} for kind in ("instance", "volume", "fleet")
            ],
        }
        if capacity_type == "spot":
            params["SpotOptions"] = {"AllocationStrategy": SPOT_STRATEGY}
        else:
            params["OnDemandOptions"] = {"AllocationStrategy": ON_DEMAND_STRATEGY}
        if node_class.context:
            params["Context"] = node_class.context
        try:
            response = call_with_backoff(lambda: self._ec2.create_fleet(**params), self._sleep)
        except ClientError as error:
            if error_code(error) not in (
                "InvalidLaunchTemplateName.NotFoundException",
                "InvalidLaunchTemplateId.NotFound",
            ):
                raise
            for name in configs:  # deleted under us (GC): recreate once, as Karpenter does
                self.templates.forget(name)
            for option in batch:
                self._template_for(pool, node_class, family, option, request.labels, now)
            response = call_with_backoff(lambda: self._ec2.create_fleet(**params), self._sleep)
        return self._parse_fleet(response, subnets, capacity_type)

    @staticmethod
    def _parse_fleet(
        response: dict[str, Any], subnets: dict[str, Subnet], capacity_type: str
    ) -> FleetOutcome:
        zone_of_subnet = {s.subnet_id: zone for zone, s in subnets.items()}
        failures: list[OfferingFailure] = []
        for error in response.get("Errors", []):
            spec = error.get("LaunchTemplateAndOverrides", {})
            override = spec.get("Overrides", {})
            zone = override.get("AvailabilityZone") or zone_of_subnet.get(override.get("SubnetId", ""), "")
            failures.append(
                OfferingFailure(
                    instance_type=str(override.get("InstanceType", "")),
                    zone=str(zone),
                    capacity_type=str(error.get("Lifecycle") or capacity_type),
                    code=str(error.get("ErrorCode", "")),
                    message=str(error.get("ErrorMessage", "")),
                )
            )
        for item in response.get("Instances", []):
            ids = item.get("InstanceIds") or []
            if not ids:
                continue
            spec = item.get("LaunchTemplateAndOverrides", {})
            override = spec.get("Overrides", {})
            zone = override.get("AvailabilityZone") or zone_of_subnet.get(override.get("SubnetId", ""))
            template = spec.get("LaunchTemplateSpecification", {}).get("LaunchTemplateName")
            return FleetOutcome(str(ids[0]), item.get("InstanceType"), zone, template, tuple(failures))
        return FleetOutcome(None, None, None, None, tuple(failures))

    # -- step 5: record -----------------------------------------------------------------------------------------

    def _record_launched(
        self, claim: NodeClaim, instance: CloudInstance, options: Iterable[LaunchOption], template: str | None
    ) -> NodeClaim | None:
        """Record the instance on the claim, only if nobody changed the claim since we last wrote it (None then:
        another run took the launch over; with the ClientToken repeated on takeover, it holds this instance)."""
        price = next(
            (
                o.price
                for o in options
                if o.key == (instance.instance_type, instance.zone, instance.capacity_type)
            ),
            claim.price,
        )
        launched = transition(
            claim,
            "launched",
            instance_id=instance.instance_id,
            instance_type=instance.instance_type,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
            price=price,
            provider_id=provider_id(instance.zone, instance.instance_id),
            image_id=instance.image_id or claim.image_id or self._template_images.get(template or ""),
            launch_template=template or claim.launch_template,
            launched_at=instance.created_at or claim.created_at,
            attempt_until=None,
        )
        return self._store.compare_and_put(launched)

    # -- launch context ---------------------------------------------------------------------------------------

    def _subnet_per_zone(self, node_class: NodeClass) -> dict[str, Subnet]:
        if node_class.name not in self._subnets:
            self._subnets[node_class.name] = subnet_per_zone(
                select_subnets(self._ec2, node_class.subnet_selector_terms, node_class.name)
            )
        return self._subnets[node_class.name]

    def _security_group_ids(self, node_class: NodeClass) -> tuple[str, ...]:
        if node_class.name not in self._security_groups:
            self._security_groups[node_class.name] = select_security_groups(
                self._ec2, node_class.security_group_selector_terms, node_class.name
            )
        return self._security_groups[node_class.name]

    def _instance_profile(self, node_class: NodeClass) -> str | None:
        if node_class.instance_profile or not node_class.role:
            return node_class.instance_profile
        if node_class.name not in self._profiles:
            profile: str | None = node_class.role
            if self._iam is not None:
                found = self._iam.list_instance_profiles_for_role(RoleName=node_class.role).get(
                    "InstanceProfiles", []
                )
                profile = str(found[0]["InstanceProfileName"]) if found else None
                if profile is None:
                    raise ValueError(
                        f"EC2NodeClass {node_class.name}: spec.role {node_class.role} has no instance profile"
                    )
            self._profiles[node_class.name] = profile
        return self._profiles[node_class.name]

    def _template_for(
        self,
        pool: NodePool,
        node_class: NodeClass,
        family: str,
        option: LaunchOption,
        labels: Iterable[tuple[str, str]],
        now: float,
    ) -> str:
        self._amis.refresh_if_stale(now)
        image = self._amis.resolve(node_class, self._cluster.version, option.arch, option.accelerator)
        bootstrap = node_bootstrap(pool, node_class, option, family, labels)
        text = render_user_data(
            family,  # type: ignore[arg-type]
            self._cluster,
            bootstrap,
            pool.effective_kubelet(node_class),
            node_class.user_data,
        )
        spec = TemplateSpec(
            image_id=image,
            security_group_ids=self._security_group_ids(node_class),
            user_data_b64=encode_user_data(text),
            block_devices=node_class.block_device_mappings or default_block_devices(family),
            metadata=node_class.metadata_options,
            instance_profile=self._instance_profile(node_class),
            detailed_monitoring=node_class.detailed_monitoring,
            tags=tuple(
                sorted(
                    tagnames.ownership_tags(
                        self._cluster.name, pool.name, node_class.name, node_class.tags
                    ).items()
                )
            ),
        )
        name = self.templates.ensure(spec, now)
        self._template_images[name] = image  # the claim records the AMI it boots (drift detection)
        return name
