"""The instances we own, read from EC2 by id or by tag, and terminated by id (`ports.cloud.Instances`).

Theory of operation: an instance is ours when it carries `longshore.io/cluster=<cluster>`; its claim is the
`karpenter.sh/nodeclaim` tag. DescribeInstances is filtered by those tags server-side (tag filters are the
ones every EC2 implementation supports; `instance-lifecycle` is not, so the capacity type is read from
`InstanceLifecycle`, reserved from `CapacityReservationId`). `created_at` is the `longshore.io/created-at` tag (our clock) when present, else EC2's
LaunchTime. Terminate is idempotent: unknown ids are dropped and the call is retried once without them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from longshore.adapters.aws import tags as tagnames
from longshore.adapters.aws.retry import ClientError
from longshore.core.claims import CloudInstance
from longshore.core.disruption.state import InstanceStatus

LIVE_STATES: Final = ("pending", "running", "stopping", "stopped", "shutting-down")


def to_cloud_instance(item: dict[str, Any]) -> CloudInstance:
    tags = tagnames.from_ec2(item.get("Tags"))
    created = tags.get(tagnames.CREATED_AT)
    launch_time: Any = item.get("LaunchTime")
    created_at = (
        float(created) if created else (float(launch_time.timestamp()) if launch_time is not None else 0.0)
    )
    return CloudInstance(
        instance_id=str(item["InstanceId"]),
        state=str(item.get("State", {}).get("Name", "unknown")),
        instance_type=str(item.get("InstanceType", "")),
        zone=str(item.get("Placement", {}).get("AvailabilityZone", "")),
        capacity_type=capacity_type_of(item),
        claim_id=tags.get(tagnames.NODECLAIM),
        nodepool=tags.get(tagnames.NODEPOOL),
        created_at=created_at,
        image_id=item.get("ImageId"),
        reservation_id=reservation if (reservation := _reservation_of(item)) else None,
        reservation_type=(
            ("capacity-block" if item.get("InstanceLifecycle") == "capacity-block" else "default")
            if reservation
            else None
        ),
        partition=int(number) if (number := item.get("Placement", {}).get("PartitionNumber")) else None,
    )


def _reservation_of(item: dict[str, Any]) -> str | None:
    """The reservation the instance runs in as Karpenter counts it: a `CapacityReservationId` with the
    preference `capacity-reservations-only` (an instance that fell into an open ODCR is on-demand)."""
    found = item.get("CapacityReservationId")
    preference = item.get("CapacityReservationSpecification", {}).get("CapacityReservationPreference")
    return str(found) if found and preference == "capacity-reservations-only" else None


def capacity_type_of(item: dict[str, Any]) -> str:
    """spot, reserved (aws provider `capacityTypeFromInstance`), else on-demand: an instance whose
    reservation expired or was cancelled no longer shows `CapacityReservationId` and is on-demand."""
    if item.get("InstanceLifecycle") == "spot":
        return "spot"
    return "reserved" if _reservation_of(item) else "on-demand"


class Ec2Instances:
    """`ports.cloud.Instances` on EC2, for one cluster."""

    def __init__(self, ec2: Any, cluster: str) -> None:
        self._ec2 = ec2
        self._cluster = cluster

    def _describe(self, **kwargs: Any) -> tuple[CloudInstance, ...]:
        found: list[CloudInstance] = []
        while True:
            response = self._ec2.describe_instances(**kwargs)
            for reservation in response.get("Reservations", []):
                found.extend(to_cloud_instance(item) for item in reservation.get("Instances", []))
            token = response.get("NextToken")
            if not token:
                return tuple(sorted(found, key=lambda i: i.instance_id))
            kwargs["NextToken"] = token

    def describe(self, instance_ids: Iterable[str]) -> tuple[CloudInstance, ...]:
        ids = sorted(set(instance_ids))
        if not ids:
            return ()
        return self._describe(Filters=[{"Name": "instance-id", "Values": ids}])

    def list_owned(self) -> tuple[CloudInstance, ...]:
        return self._describe(
            Filters=[
                {"Name": f"tag:{tagnames.CLUSTER}", "Values": [self._cluster]},
                {"Name": "instance-state-name", "Values": list(LIVE_STATES[:-1])},
            ]
        )

    def find_by_claim(self, claim_id: str) -> CloudInstance | None:
        found = self._describe(
            Filters=[
                {"Name": f"tag:{tagnames.CLUSTER}", "Values": [self._cluster]},
                {"Name": f"tag:{tagnames.NODECLAIM}", "Values": [claim_id]},
                {"Name": "instance-state-name", "Values": list(LIVE_STATES[:-1])},
            ]
        )
        return found[0] if found else None

    def terminate(self, instance_ids: Iterable[str]) -> None:
        ids = sorted(set(instance_ids))
        if not ids:
            return
        try:
            self._ec2.terminate_instances(InstanceIds=ids)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "InvalidInstanceID.NotFound":
                raise
            known = [i.instance_id for i in self.describe(ids)]
            if known:
                self._ec2.terminate_instances(InstanceIds=known)


class Ec2InstanceTags:
    """`ports.cloud.InstanceTags` on EC2 CreateTags (only `longshore adopt` tags instances)."""

    def __init__(self, ec2: Any) -> None:
        self._ec2 = ec2

    def tag(self, instance_ids: Iterable[str], tags: Iterable[tuple[str, str]]) -> None:
        ids = sorted(set(instance_ids))
        if ids:
            self._ec2.create_tags(Resources=ids, Tags=[{"Key": k, "Value": v} for k, v in tags])


STATUS_BATCH: Final = 100


def _when(value: Any) -> float | None:
    return float(value.timestamp()) if value is not None and hasattr(value, "timestamp") else None


def to_instance_status(item: dict[str, Any]) -> InstanceStatus:
    """One DescribeInstanceStatus entry as `core` sees it: the two checks, the earliest `ImpairedSince` of a
    failed one, and the scheduled events not completed or canceled (EC2 prefixes their description)."""
    system, instance = item.get("SystemStatus") or {}, item.get("InstanceStatus") or {}
    impaired = [
        since
        for check in (system, instance)
        if check.get("Status") == "impaired"
        for detail in check.get("Details") or ()
        if (since := _when(detail.get("ImpairedSince"))) is not None
    ]
    events = tuple(
        sorted(
            (str(event.get("Code", "")), not_before)
            for event in item.get("Events") or ()
            if not str(event.get("Description", "")).startswith(("[Completed]", "[Canceled]"))
            and (not_before := _when(event.get("NotBefore"))) is not None
        )
    )
    return InstanceStatus(
        system=str(system.get("Status", "ok")),
        instance=str(instance.get("Status", "ok")),
        impaired_since=min(impaired) if impaired else None,
        events=events,
    )


class Ec2InstanceStatuses:
    """`ports.cloud.InstanceStatuses` on EC2 DescribeInstanceStatus (node auto-repair's status checks).

    Ids are asked in batches of 100; a batch EC2 refuses (an id it no longer knows, throttling past the
    client's retries) is left out, so its nodes look healthy this pass and are read again at the next one.
    """

    def __init__(self, ec2: Any) -> None:
        self._ec2 = ec2

    def statuses(self, instance_ids: Iterable[str]) -> dict[str, InstanceStatus]:
        ids = sorted(set(instance_ids))
        found: dict[str, InstanceStatus] = {}
        for start in range(0, len(ids), STATUS_BATCH):
            kwargs: dict[str, Any] = {"InstanceIds": ids[start : start + STATUS_BATCH]}
            try:
                while True:
                    response = self._ec2.describe_instance_status(**kwargs)
                    for item in response.get("InstanceStatuses", []):
                        found[str(item["InstanceId"])] = to_instance_status(item)
                    token = response.get("NextToken")
                    if not token:
                        break
                    kwargs["NextToken"] = token
            except ClientError:
                continue
        return found
