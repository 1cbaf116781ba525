"""Launch templates: content-addressed, created on demand, reused, and deleted when no claim references them.

Theory of operation: a launch template is an immutable artefact named after the hash of everything in it
(`longshore/<sha256 prefix>` of the canonical JSON of its data and tags), as Karpenter does. Two launches that
need the same image, security groups, user data (labels, taints, max pods, reserved resources...) and block
devices share one template; any change yields a new name, so a template is never edited in place and never
drifts. `ensure` looks the name up (cached for the object's lifetime), and creates it when absent, treating
"already exists" from a concurrent creator as success. `collect_unused` deletes cluster-tagged templates that no
claim references and that are older than a grace period (by the `longshore.io/created-at` tag, on our clock),
so a template created a moment ago for a launch still in progress survives.

Network interfaces and placement (Karpenter `pkg/providers/launchtemplate/launchtemplate.go`
`generateNetworkInterfaces`, `types.go` `buildPlacement`): the node class's `networkInterfaces` are written as
they are (each with the security groups; `efa-only` ones without prefixes or public addresses); without them, a
claim that requests `vpc.amazonaws.com/efa` gets one `efa` interface per EFA the type supports (card i, device
0 on card 0 and 1 on the others); `ipPrefixCount` sets `Ipv4PrefixCount` (`Ipv6PrefixCount` in an IPv6
cluster), `associatePublicIPAddress` sets `AssociatePublicIpAddress` and `connectionTracking` the
`ConnectionTrackingSpecification` of every interface that carries addresses (not the `efa-only` ones); with
none of the lists, any of these three is written on a lone primary interface. When any interface is written
the security groups move into them (`SecurityGroupIds` is left out, as EC2 requires). Karpenter writes that
primary interface even when it carries nothing; Longshore then keeps `SecurityGroupIds`, which launches the
same instance and keeps the names of existing templates. The resolved placement group goes in
`Placement.GroupId` (with `PartitionNumber` for a claim launched into one partition of a partition group),
next to `Tenancy` when the claim is dedicated; `cpuOptions.nestedVirtualization` in
`CpuOptions.NestedVirtualization`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from longshore.adapters.aws import tags as tagnames
from longshore.adapters.aws.retry import ClientError
from longshore.core.model import BlockDevice, MetadataOptions, NetworkInterface, Pairs

NAME_PREFIX: Final = "longshore/"
_TRACKING: Final = {
    "tcpEstablishedTimeout": "TcpEstablishedTimeout",
    "udpStreamTimeout": "UdpStreamTimeout",
    "udpTimeout": "UdpTimeout",
}
GC_GRACE_S: Final = 300.0


@dataclass(frozen=True, slots=True)
class TemplateSpec:
    """Everything that goes into one launch template."""

    image_id: str
    security_group_ids: tuple[str, ...]
    user_data_b64: str
    block_devices: tuple[BlockDevice, ...]
    metadata: MetadataOptions
    instance_profile: str | None = None
    detailed_monitoring: bool = False
    tags: tuple[tuple[str, str], ...] = ()
    tenancy: str = "default"  # `karpenter.k8s.aws/instance-tenancy` of the claim
    network_interfaces: tuple[NetworkInterface, ...] = ()  # the node class's `networkInterfaces`
    efa_count: int = 0  # EFA interfaces for a claim requesting vpc.amazonaws.com/efa (no node class list)
    ip_prefix_count: int | None = None  # the node class's `ipPrefixCount`
    ip_family: str = "ipv4"  # the cluster's
    placement_group_id: str | None = None  # the node class's resolved `placementGroupSelector`
    placement_partition: int | None = None  # the partition of a partition group the claim launches in
    associate_public_ip: bool | None = None  # the node class's `associatePublicIPAddress`
    connection_tracking: Pairs = ()  # the node class's `connectionTracking` timeouts (seconds)
    cpu_options: Pairs = ()  # the node class's `cpuOptions` (`nestedVirtualization`)
    capacity_reservation_id: str | None = None  # a reserved launch: the reservation it targets
    capacity_block: bool = False  # the reservation is a Capacity Block

    def data(self) -> dict[str, Any]:
        """The `LaunchTemplateData` of CreateLaunchTemplate."""
        data: dict[str, Any] = {
            "ImageId": self.image_id,
            "SecurityGroupIds": list(self.security_group_ids),
            "UserData": self.user_data_b64,
            "MetadataOptions": {
                "HttpEndpoint": self.metadata.http_endpoint,
                "HttpProtocolIpv6": self.metadata.http_protocol_ipv6,
                "HttpPutResponseHopLimit": self.metadata.http_put_response_hop_limit,
                "HttpTokens": self.metadata.http_tokens,
                "InstanceMetadataTags": "disabled",
            },
            "Monitoring": {"Enabled": self.detailed_monitoring},
            "BlockDeviceMappings": [_block_device(b) for b in self.block_devices],
            "TagSpecifications": [
                {"ResourceType": "network-interface", "Tags": tagnames.as_ec2(dict(self.tags))}
            ],
        }
        if self.instance_profile:
            data["IamInstanceProfile"] = {"Name": self.instance_profile}
        interfaces = self.interfaces()
        if interfaces:
            data["NetworkInterfaces"] = interfaces
            del data["SecurityGroupIds"]
        placement: dict[str, Any] = {}
        if self.tenancy != "default":
            placement["Tenancy"] = self.tenancy
        if self.placement_group_id:
            placement["GroupId"] = self.placement_group_id
            if self.placement_partition is not None:
                placement["PartitionNumber"] = self.placement_partition
        if placement:
            data["Placement"] = placement
        nested = dict(self.cpu_options).get("nestedVirtualization")
        if nested is not None:
            data["CpuOptions"] = {"NestedVirtualization": nested}
        if self.capacity_reservation_id:
            data["CapacityReservationSpecification"] = {
                "CapacityReservationPreference": "capacity-reservations-only",
                "CapacityReservationTarget": {"CapacityReservationId": self.capacity_reservation_id},
            }
            if self.capacity_block:
                data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
        return data

    def interfaces(self) -> list[dict[str, Any]]:
        """The `NetworkInterfaces` of the template (empty: none written, see the module docstring)."""
        if self.network_interfaces:
            return [
                self._interface(n.network_card_index, n.device_index, n.interface_type)
                for n in self.network_interfaces
            ]
        if self.efa_count > 0:
            return [self._interface(i, 0 if i == 0 else 1, "efa") for i in range(self.efa_count)]
        if (
            self.ip_prefix_count is not None
            or self.associate_public_ip is not None
            or self.connection_tracking
        ):
            return [self._interface(None, 0, None)]
        return []

    def _interface(self, card: int | None, device: int, kind: str | None) -> dict[str, Any]:
        spec: dict[str, Any] = {"DeviceIndex": device, "Groups": list(self.security_group_ids)}
        if card is not None:
            spec["NetworkCardIndex"] = card
        if kind is not None:
            spec["InterfaceType"] = kind
        if kind == "efa-only":  # no addresses: prefixes, IPv6 or a public IP on it make RunInstances fail
            return spec
        if self.associate_public_ip is not None:
            spec["AssociatePublicIpAddress"] = self.associate_public_ip
        if self.connection_tracking:
            spec["ConnectionTrackingSpecification"] = {
                _TRACKING[key]: int(value) for key, value in self.connection_tracking if key in _TRACKING
            }
        if self.ip_family == "ipv6":
            spec["PrimaryIpv6"] = True
            spec["Ipv6AddressCount"] = 1
            if self.ip_prefix_count is not None:
                spec["Ipv6PrefixCount"] = self.ip_prefix_count
        elif self.ip_prefix_count is not None:
            spec["Ipv4PrefixCount"] = self.ip_prefix_count
        return spec

    def name(self) -> str:
        canonical = json.dumps(
            {"data": self.data(), "tags": sorted(self.tags)}, sort_keys=True, separators=(",", ":")
        )
        return NAME_PREFIX + hashlib.sha256(canonical.encode()).hexdigest()[:40]


def _block_device(device: BlockDevice) -> dict[str, Any]:
    ebs: dict[str, Any] = {}
    for key, value in (
        ("VolumeSize", device.volume_size_gib),
        ("VolumeType", device.volume_type),
        ("Encrypted", device.encrypted),
        ("DeleteOnTermination", device.delete_on_termination),
        ("Iops", device.iops),
        ("Throughput", device.throughput),
        ("KmsKeyId", device.kms_key_id),
        ("SnapshotId", device.snapshot_id),
    ):
        if value is not None:
            ebs[key] = value
    return {"DeviceName": device.device_name, "Ebs": ebs}


def default_block_devices(family: str) -> tuple[BlockDevice, ...]:
    """Karpenter's defaults: a 20 GiB encrypted gp3 root; Bottlerocket adds its 20 GiB data volume."""
    if family == "Bottlerocket":
        return (
            BlockDevice("/dev/xvda", 4, "gp3", True, True),
            BlockDevice("/dev/xvdb", 20, "gp3", True, True, root_volume=True),
        )
    return (BlockDevice("/dev/xvda", 20, "gp3", True, True, root_volume=True),)


def _is_code(error: ClientError, *codes: str) -> bool:
    return error.response.get("Error", {}).get("Code", "") in codes


class LaunchTemplates:
    """Creates and garbage-collects this cluster's launch templates."""

    def __init__(self, ec2: Any, cluster: str) -> None:
        self._ec2 = ec2
        self._cluster = cluster
        self._known: set[str] = set()

    def ensure(self, spec: TemplateSpec, now: float) -> str:
        """The template's name, after making sure it exists."""
        name = spec.name()
        if name in self._known:
            return name
        try:
            found = self._ec2.describe_launch_templates(LaunchTemplateNames=[name]).get("LaunchTemplates", [])
        except ClientError as error:
            if not _is_code(
                error, "InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateName.NotFound"
            ):
                raise
            found = []
        if not found:
            template_tags = {
                **dict(spec.tags),
                tagnames.CLUSTER: self._cluster,
                tagnames.CREATED_AT: repr(float(now)),
            }
            try:
                self._ec2.create_launch_template(
                    LaunchTemplateName=name,
                    LaunchTemplateData=spec.data(),
                    TagSpecifications=[
                        {"ResourceType": "launch-template", "Tags": tagnames.as_ec2(template_tags)}
                    ],
                )
            except ClientError as error:
                if not _is_code(error, "InvalidLaunchTemplateName.AlreadyExistsException"):
                    raise
        self._known.add(name)
        return name

    def forget(self, name: str) -> None:
        """Drop a name from the cache (after EC2 said the template is gone)."""
        self._known.discard(name)

    def owned(self) -> tuple[dict[str, Any], ...]:
        """This cluster's launch templates as DescribeLaunchTemplates returns them."""
        templates: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"Filters": [{"Name": f"tag:{tagnames.CLUSTER}", "Values": [self._cluster]}]}
        while True:
            response = self._ec2.describe_launch_templates(**kwargs)
            templates.extend(response.get("LaunchTemplates", []))
            if not response.get("NextToken"):
                return tuple(templates)
            kwargs["NextToken"] = response["NextToken"]

    def collect_unused(
        self, referenced: Iterable[str], now: float, grace_s: float = GC_GRACE_S
    ) -> tuple[str, ...]:
        """Delete this cluster's templates that no claim references and that are older than `grace_s`."""
        keep = set(referenced)
        deleted: list[str] = []
        for template in self.owned():
            name = str(template["LaunchTemplateName"])
            if name in keep:
                continue
            created = tagnames.from_ec2(template.get("Tags")).get(tagnames.CREATED_AT)
            if created is not None and now - float(created) < grace_s:
                continue
            try:
                self._ec2.delete_launch_template(LaunchTemplateName=name)
            except ClientError as error:
                if not _is_code(
                    error, "InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound"
                ):
                    raise
            self._known.discard(name)
            deleted.append(name)
        return tuple(sorted(deleted))
