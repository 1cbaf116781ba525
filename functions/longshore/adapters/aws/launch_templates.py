"""Launch templates: content-addressed, created on demand, reused, and deleted when no claim references them.

Theory of operation: a launch template is an immutable artefact named after the hash of everything in it
(`longshore/<sha256 prefix>` of the canonical JSON of its data and tags), as Karpenter does. Two launches that
need the same image, security groups, user data (labels, taints, max pods, reserved resources...) and block
devices share one template; any change yields a new name, so a template is never edited in place and never
drifts. `ensure` looks the name up (cached for the object's lifetime), and creates it when absent, treating
"already exists" from a concurrent creator as success. `collect_unused` deletes cluster-tagged templates that no
claim references and that are older than a grace period (by the `longshore.io/created-at` tag, on our clock),
so a template created a moment ago for a launch still in progress survives.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from longshore.adapters.aws import tags as tagnames
from longshore.adapters.aws.retry import ClientError
from longshore.core.model import BlockDevice, MetadataOptions

NAME_PREFIX: Final = "longshore/"
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
        if self.tenancy != "default":
            data["Placement"] = {"Tenancy": self.tenancy}
        if self.capacity_reservation_id:
            data["CapacityReservationSpecification"] = {
                "CapacityReservationPreference": "capacity-reservations-only",
                "CapacityReservationTarget": {"CapacityReservationId": self.capacity_reservation_id},
            }
            if self.capacity_block:
                data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
        return data

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
