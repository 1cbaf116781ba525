"""EC2 CreateFleet for one node claim (`ports.cloud.Fleet`): the request, the call, and the answer parsed.

What one call sends (`Type=instant`, `TotalTargetCapacity=1`): up to 60 overrides of one capacity type
(instance type x the zone's subnet with the most free IPs), cheapest first by `Priority`, with `lowest-price`
on-demand or `price-capacity-optimized` spot; tags for the instance, its volumes and the fleet; and the
`ClientToken` of the claim's recorded attempt (`core.claims.client_token`), so EC2 itself de-duplicates a
retried call. Overrides are grouped into content-addressed launch templates (one per image x kubelet
settings); a template deleted under us is recreated once and the call repeated, as Karpenter does. The
template carries the node class's network interfaces, `ipPrefixCount` and placement group (resolved once per
node class by DescribePlacementGroups), the option's EFA interfaces, and the RAID0 instance-store setup in the
user data (`launch_templates`, `userdata_render`); a node in a placement group registers with
`karpenter.k8s.aws/placement-group-id`, as Karpenter labels it. A claim narrowed to some partitions of a
partition group launches with `Placement.PartitionNumber` (the lowest, `core.placement_groups.launch_partition`)
and its node registers with `karpenter.k8s.aws/placement-group-partition`; a claim left open leaves the
partition to EC2 (the lifecycle labels the node at registration).
A reserved option launches as Karpenter does (aws provider `pkg/providers/instance/`): its own launch template
targets the reservation (`CapacityReservationSpecification`, preference `capacity-reservations-only`; a
Capacity Block adds `InstanceMarketOptions.MarketType: capacity-block`), and the fleet is `on-demand`
(`capacity-block` for a block, without `OnDemandOptions`); the node is labelled `capacity-type=reserved`,
`karpenter.k8s.aws/capacity-reservation-id`, `-type` and `-interruptible`.
Throttling is retried by botocore and then by `retry.call_with_backoff` on the injected sleep; an error that
refuses the whole call becomes `ports.cloud.FleetCallError`. Deciding what to launch, owning the claim,
falling back and recording the result is `services.launch.ClaimLauncher`'s job, not this module's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from longshore.adapters.aws import tags as tagnames
from longshore.adapters.aws.amis import (
    AmiResolver,
    bottlerocket_version,
    effective_family,
    supports_default_bind,
)
from longshore.adapters.aws.launch_templates import LaunchTemplates, TemplateSpec, default_block_devices
from longshore.adapters.aws.network import (
    Ec2PlacementGroups,
    Subnet,
    select_security_groups,
    select_subnets,
    subnet_per_zone,
)
from longshore.adapters.aws.retry import ClientError, call_with_backoff, error_code, is_throttle
from longshore.adapters.aws.userdata import BOTTLEROCKET_LEGACY_BIND_DIRS, Bootstrap, ClusterInfo
from longshore.adapters.aws.userdata_render import encode_user_data, render_user_data
from longshore.core import labels as wellknown
from longshore.core.catalog import WINDOWS_BUILDS
from longshore.core.claims import FleetOutcome, LaunchOption, NodeClaim, OfferingFailure, client_token
from longshore.core.model import NodeClass, NodePool, Taint
from longshore.core.placement_groups import PlacementGroup, launch_partition
from longshore.core.requirements import Requirements
from longshore.core.taints import UNREGISTERED_TAINT
from longshore.ports.cloud import FleetCallError

log = logging.getLogger(__name__)

RESERVED: Final = wellknown.CAPACITY_TYPE_RESERVED
CAPACITY_BLOCK: Final = "capacity-block"
SPOT_STRATEGY: Final = "price-capacity-optimized"
ON_DEMAND_STRATEGY: Final = "lowest-price"
IDEMPOTENT_MISMATCH: Final = "IdempotentParameterMismatch"
TEMPLATE_NOT_FOUND: Final = (
    "InvalidLaunchTemplateName.NotFoundException",
    "InvalidLaunchTemplateId.NotFound",
)


def node_bootstrap(
    pool: NodePool,
    node_class: NodeClass,
    option: LaunchOption,
    family: str,
    labels: Iterable[tuple[str, str]] = (),
    ephemeral_bind_dirs: tuple[str, ...] = (),
) -> Bootstrap:
    """The labels, taints and kubelet values a node launched for `option` registers with, and its instance-store
    setup (`ephemeral_bind_dirs`: what Bottlerocket's RAID0 bind names, empty for the OS's defaults)."""
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
    if option.reservation_id:  # Karpenter's labels of a node launched into a capacity reservation
        node_labels[wellknown.CAPACITY_RESERVATION_ID] = option.reservation_id
        node_labels[wellknown.CAPACITY_RESERVATION_TYPE] = option.reservation_type or "default"
        node_labels[wellknown.CAPACITY_RESERVATION_INTERRUPTIBLE] = str(
            bool(option.reservation_interruptible)
        ).lower()
    if family != "Custom":
        node_labels[wellknown.DO_NOT_SYNC_TAINTS] = "true"
    if family in WINDOWS_BUILDS:  # the kubelet may set node.kubernetes.io/* on itself (NodeRestriction)
        node_labels[wellknown.WINDOWS_BUILD] = WINDOWS_BUILDS[family]
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
        instance_store_raid0=node_class.instance_store_policy == "RAID0",
        ephemeral_bind_dirs=ephemeral_bind_dirs if node_class.instance_store_policy == "RAID0" else (),
    )


class Ec2Fleet:
    """`ports.cloud.Fleet` on EC2 CreateFleet (see the module docstring)."""

    def __init__(
        self,
        *,
        ec2: Any,
        ssm: Any,
        cluster: ClusterInfo,
        sleep: Callable[[float], None],
        iam: Any = None,
    ) -> None:
        self._ec2 = ec2
        self._iam = iam
        self._cluster = cluster
        self._sleep = sleep
        self._amis = AmiResolver(ssm, ec2)
        self._template_images: dict[str, str] = {}
        self._user_data: dict[object, str] = {}  # rendered user data by its inputs (rendering is pure)
        self.templates = LaunchTemplates(ec2, cluster.name)
        self._subnets: dict[str, dict[str, Subnet]] = {}
        self._security_groups: dict[str, tuple[str, ...]] = {}
        self._profiles: dict[str, str | None] = {}
        self._placement_groups = Ec2PlacementGroups(ec2)

    def forget_images(self) -> None:
        """Drop the AMI resolver's answers, as a cold container would start (the next launch asks SSM)."""
        self._amis.forget()

    def zones(self, node_class: NodeClass) -> frozenset[str]:
        try:
            return frozenset(self._subnet_per_zone(node_class))
        except ClientError as error:
            raise _call_error(error) from error

    def create(
        self,
        claim: NodeClaim,
        pool: NodePool,
        node_class: NodeClass,
        labels: Iterable[tuple[str, str]],
        options: Sequence[LaunchOption],
        now: float,
    ) -> FleetOutcome:
        try:
            return self._create_fleet(claim, pool, node_class, tuple(labels), options, now)
        except ClientError as error:
            raise _call_error(error) from error

    def _create_fleet(
        self,
        claim: NodeClaim,
        pool: NodePool,
        node_class: NodeClass,
        labels: tuple[tuple[str, str], ...],
        batch: Sequence[LaunchOption],
        now: float,
    ) -> FleetOutcome:
        subnets = self._subnet_per_zone(node_class)
        family = effective_family(node_class)
        partition = launch_partition(Requirements.of(claim.requirements), self._placement_group(node_class))
        configs: dict[str, list[dict[str, Any]]] = {}
        for rank, option in enumerate(batch):
            template = self._template_for(
                pool, node_class, family, option, labels, now, tenancy_of(claim), partition
            )
            configs.setdefault(template, []).append(
                {
                    "InstanceType": option.instance_type,
                    "SubnetId": subnets[option.zone].subnet_id,
                    "AvailabilityZone": option.zone,
                    "Priority": float(rank),
                }
            )
        capacity_type = batch[0].capacity_type
        block = capacity_type == RESERVED and batch[0].reservation_type == CAPACITY_BLOCK
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
                "DefaultTargetCapacityType": target_capacity_type(capacity_type, block),
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
        elif not block:
            params["OnDemandOptions"] = {"AllocationStrategy": ON_DEMAND_STRATEGY}
        if node_class.context:
            params["Context"] = node_class.context
        try:
            response = call_with_backoff(lambda: self._ec2.create_fleet(**params), self._sleep)
        except ClientError as error:
            if error_code(error) not in TEMPLATE_NOT_FOUND:
                raise
            for name in configs:  # deleted under us (GC): recreate once, as Karpenter does
                self.templates.forget(name)
            for option in batch:
                self._template_for(
                    pool, node_class, family, option, labels, now, tenancy_of(claim), partition
                )
            response = call_with_backoff(lambda: self._ec2.create_fleet(**params), self._sleep)
        return self._parse_fleet(response, subnets, capacity_type)

    def _parse_fleet(
        self, response: dict[str, Any], subnets: dict[str, Subnet], capacity_type: str
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
                    # a reserved launch is an on-demand fleet: its refusals belong to the reserved offering
                    capacity_type=(
                        capacity_type
                        if capacity_type == RESERVED
                        else str(error.get("Lifecycle") or capacity_type)
                    ),
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
            image = self._template_images.get(template or "")  # the claim records the AMI it boots (drift)
            return FleetOutcome(str(ids[0]), item.get("InstanceType"), zone, template, tuple(failures), image)
        return FleetOutcome(None, None, None, None, tuple(failures))

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

    def _placement_group(self, node_class: NodeClass) -> PlacementGroup | None:
        return self._placement_groups.resolve(node_class)

    def _bind_dirs(self, node_class: NodeClass, family: str, image: str) -> tuple[str, ...]:
        """Bottlerocket RAID0: the directories to bind on images older than 1.46 (Karpenter's version rule)."""
        if family != "Bottlerocket" or node_class.instance_store_policy != "RAID0":
            return ()
        version = bottlerocket_version(node_class, self._amis.image_name(node_class, image))
        return () if supports_default_bind(version) else BOTTLEROCKET_LEGACY_BIND_DIRS

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

    def _render(self, family: str, bootstrap: Any, kubelet: Any, own: str | None) -> str:
        """`render_user_data`, memoised by its inputs (it is pure; an unhashable input is not memoised)."""
        key = (family, self._cluster, bootstrap, kubelet, own)
        try:
            text = self._user_data.get(key)
        except TypeError:
            return render_user_data(family, self._cluster, bootstrap, kubelet, own)  # type: ignore[arg-type]
        if text is None:
            text = render_user_data(family, self._cluster, bootstrap, kubelet, own)  # type: ignore[arg-type]
            if len(self._user_data) >= 256:
                self._user_data.clear()
            self._user_data[key] = text
        return text

    def _template_for(
        self,
        pool: NodePool,
        node_class: NodeClass,
        family: str,
        option: LaunchOption,
        labels: Iterable[tuple[str, str]],
        now: float,
        tenancy: str = "default",
        partition: int | None = None,
    ) -> str:
        self._amis.refresh_if_stale(now)
        image = self._amis.resolve(node_class, self._cluster.version, option.arch, option.accelerator)
        group = self._placement_group(node_class)
        if group is not None:
            labels = (*labels, (wellknown.PLACEMENT_GROUP_ID, group.group_id))
        # the partition the claim launches in (else EC2 picks it, and the lifecycle labels it at registration)
        if partition is not None:
            labels = (*labels, (wellknown.PLACEMENT_GROUP_PARTITION, str(partition)))
        bind_dirs = self._bind_dirs(node_class, family, image)
        bootstrap = node_bootstrap(pool, node_class, option, family, labels, bind_dirs)
        kubelet = pool.effective_kubelet(node_class)
        text = self._render(family, bootstrap, kubelet, node_class.user_data)
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
            tenancy=tenancy,
            network_interfaces=node_class.network_interfaces,
            efa_count=option.efa,
            ip_prefix_count=node_class.ip_prefix_count,
            ip_family=self._cluster.ip_family,
            placement_group_id=group.group_id if group is not None else None,
            placement_partition=partition,
            associate_public_ip=node_class.associate_public_ip_address,
            connection_tracking=node_class.connection_tracking,
            cpu_options=node_class.cpu_options,
            capacity_reservation_id=option.reservation_id if option.capacity_type == RESERVED else None,
            capacity_block=option.capacity_type == RESERVED and option.reservation_type == CAPACITY_BLOCK,
        )
        name = self.templates.ensure(spec, now)
        self._template_images[name] = image  # the claim records the AMI it boots (drift detection)
        return name


def _call_error(error: ClientError) -> FleetCallError:
    code = error_code(error) or "ClientError"
    message = str(error.response.get("Error", {}).get("Message", ""))
    return FleetCallError(code, message, throttled=is_throttle(error), settled=code == IDEMPOTENT_MISMATCH)


def target_capacity_type(capacity_type: str, capacity_block: bool) -> str:
    """The fleet's `DefaultTargetCapacityType`: a reserved launch is `on-demand`, or `capacity-block` for a
    Capacity Block (aws provider `CreateFleetInputBuilder.defaultTargetCapacityType`)."""
    if capacity_type != RESERVED:
        return capacity_type
    return CAPACITY_BLOCK if capacity_block else "on-demand"


def tenancy_of(claim: NodeClaim) -> str:
    """The claim's tenancy: `default` whenever its requirements allow it (aws provider `getTenancyType`),
    else `dedicated`."""
    allowed = Requirements.of(claim.requirements)
    if allowed.allows(wellknown.INSTANCE_TENANCY, "default"):
        return "default"
    return "dedicated" if allowed.allows(wellknown.INSTANCE_TENANCY, "dedicated") else "default"
