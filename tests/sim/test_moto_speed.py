"""`longshore_sim.moto_speed`: moto's answers with the memoised member picker are byte for byte moto's own."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longshore_sim import moto_speed

REGION = "us-east-1"


@pytest.fixture
def session() -> Iterator[Any]:
    with mock_aws():
        yield boto3.session.Session(region_name=REGION)
    moto_speed.uninstall()


def _bodies(client: Any, calls: list[Callable[[], Any]]) -> list[bytes]:
    """The raw answer of each call (request ids, which moto draws at random, blanked)."""
    seen: list[bytes] = []

    def keep(http_response: Any, **_: Any) -> None:
        seen.append(_without_ids(http_response.content))

    client.meta.events.register("after-call", keep)
    for call in calls:
        with contextlib.suppress(client.exceptions.ClientError):  # an error's answer is compared too
            call()
    client.meta.events.unregister("after-call", keep)
    return seen


def _same_with_and_without(client: Any, calls: list[Callable[[], Any]]) -> None:
    moto_speed.uninstall()
    plain = _bodies(client, calls)
    assert moto_speed.install()
    fast = _bodies(client, calls)
    assert len(plain) == len(calls)
    assert fast == plain


def test_dynamodb_answers_are_motos(session: Any) -> None:
    db = session.client("dynamodb", region_name=REGION)
    db.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    item = {
        "pk": {"S": "claim#a"},
        "sk": {"S": "claim"},
        "n": {"N": "3"},
        "flag": {"BOOL": True},
        "none": {"NULL": True},
        "tags": {"SS": ["x", "y"]},
        "doc": {"M": {"l": {"L": [{"S": "v"}, {"N": "1"}]}}},
    }
    db.put_item(TableName="t", Item=item)
    key = {"pk": {"S": "claim#a"}, "sk": {"S": "claim"}}
    _same_with_and_without(
        db,
        [
            lambda: db.scan(TableName="t", ConsistentRead=True),
            lambda: db.get_item(TableName="t", Key=key, ConsistentRead=True),
            lambda: db.query(
                TableName="t",
                KeyConditionExpression="pk = :p",
                ExpressionAttributeValues={":p": {"S": "claim#a"}},
            ),
            lambda: db.put_item(TableName="t", Item=item, ConditionExpression="attribute_not_exists(pk)"),
            lambda: db.describe_table(TableName="t"),
        ],
    )


def test_ec2_and_ssm_answers_are_motos(session: Any) -> None:
    ec2 = session.client("ec2", region_name=REGION)
    ec2.run_instances(
        ImageId="ami-12345678",
        MinCount=2,
        MaxCount=2,
        InstanceType="m5.large",
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "k", "Value": "v"}]}],
    )
    _same_with_and_without(
        ec2,
        [
            lambda: ec2.describe_instances(),
            lambda: ec2.describe_instance_status(IncludeAllInstances=True),
            lambda: ec2.describe_instance_types(InstanceTypes=["m5.large", "c6g.xlarge"]),
            lambda: ec2.describe_subnets(),
            lambda: ec2.describe_availability_zones(),
            lambda: ec2.describe_instances(InstanceIds=["i-00000000000000000"]),
        ],
    )
    ssm = session.client("ssm", region_name=REGION)
    ssm.put_parameter(Name="/p", Value="v", Type="String")
    _same_with_and_without(ssm, [lambda: ssm.get_parameter(Name="/p"), lambda: ssm.get_parameter(Name="/q")])


def test_every_service_of_the_world_is_routed_as_moto_routes_it(session: Any) -> None:
    """The kept routes (the service of a URL, the handler of a backend URL) give moto's answers, for the
    services of the simulated world, a global endpoint (IAM) among them."""
    iam = session.client("iam", region_name=REGION)
    iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")
    _same_with_and_without(iam, [lambda: iam.get_role(RoleName="r"), lambda: iam.get_role(RoleName="none")])
    sqs = session.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    _same_with_and_without(sqs, [lambda: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])])
    eks = session.client("eks", region_name=REGION)
    _same_with_and_without(eks, [lambda: eks.list_clusters(), lambda: eks.describe_cluster(name="none")])


def _without_ids(body: bytes) -> bytes:
    return re.sub(rb"<(RequestId|requestId)>[^<]*</(RequestId|requestId)>", b"<requestId/>", body)
