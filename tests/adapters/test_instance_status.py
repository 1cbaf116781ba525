"""EC2 status checks for node auto-repair (`adapters.aws.instances.Ec2InstanceStatuses`): on moto, and the
parsing of what moto cannot produce (an impaired check, a scheduled event)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from longshore.adapters.aws.instances import Ec2InstanceStatuses, to_instance_status
from longshore.core.disruption.state import InstanceStatus
from tests.adapters.conftest import World, request

NOW = 2_000_000.0


@pytest.mark.slow
def test_a_running_instance_reads_healthy_on_moto_and_unknown_ids_are_left_out(world: World) -> None:
    result = world.launcher().launch(request(pods=("default/a",)), NOW)
    assert result.instance_id
    statuses = Ec2InstanceStatuses(world.ec2).statuses([result.instance_id, "i-0123456789abcdef0"])
    assert statuses.get(result.instance_id, InstanceStatus()) == InstanceStatus()
    assert "i-0123456789abcdef0" not in statuses


def test_impaired_checks_and_pending_events_are_parsed() -> None:
    t = datetime(2030, 1, 1, tzinfo=UTC)
    item: dict[str, Any] = {
        "InstanceId": "i-1",
        "SystemStatus": {
            "Status": "impaired",
            "Details": [{"Name": "reachability", "Status": "failed", "ImpairedSince": t}],
        },
        "InstanceStatus": {"Status": "ok", "Details": [{"Name": "reachability", "Status": "passed"}]},
        "Events": [
            {
                "Code": "instance-retirement",
                "Description": "The instance is running on degraded hardware",
                "NotBefore": t,
            },
            {"Code": "system-reboot", "Description": "[Completed] scheduled reboot", "NotBefore": t},
        ],
    }
    status = to_instance_status(item)
    assert status == InstanceStatus(
        "impaired", "ok", t.timestamp(), (("instance-retirement", t.timestamp()),)
    )


class _Refusing:
    def describe_instance_status(self, **_: Any) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        raise ClientError(
            {"Error": {"Code": "InvalidInstanceID.NotFound", "Message": "gone"}}, "DescribeInstanceStatus"
        )


def test_a_refused_batch_reads_as_no_status() -> None:
    assert Ec2InstanceStatuses(_Refusing()).statuses(["i-1"]) == {}
