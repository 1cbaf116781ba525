"""The moto kit: seed a cluster's AWS world, and emulate what moto lacks (fleet allocation, capacity errors).

Theory of operation. `seed_cluster` builds, through ordinary boto3 calls against moto, everything Longshore's
production code reads: a VPC with one subnet per zone tagged `karpenter.sh/discovery=<cluster>`, a security
group with the same tag, the node IAM role and its instance profile, an EKS cluster (endpoint, CA, version,
service CIDR), the DynamoDB table of docs/contracts.md and the SQS interruption queue with its DLQ. Two things
moto refuses through its API are written into its backends directly: images with an architecture
(`RegisterImage` drops it) and the EKS-optimised public SSM parameters (`PutParameter` rejects `/aws/...`
names). Parameters are seeded for AL2, AL2023 and Bottlerocket, x86_64 and arm64, standard and GPU variants,
each pointing at a registered image.

What moto's CreateFleet does, and what `FleetEmulator` adds (it is attached to an EC2 client with botocore
event hooks, so production code is unchanged and moto is unpatched):

- moto launches from the *first* override and ignores the allocation strategy, priorities and zones, and
  never reports an error. The emulator's `before-parameter-build` hook orders the overrides as EC2's strategy
  would (by `price_of(type, zone, capacity type)` when a price function is given, else by `Priority`, else in
  the order sent: both `lowest-price` and `price-capacity-optimized` then mean "cheapest pool with capacity"),
  walks them, turns every pool made unavailable (`make_unavailable`) into an `Errors` entry with its code (as a
  real instant fleet reports refused pools in its response, not as an exception), and hands moto only the first
  pool that has capacity, so moto launches exactly that one, in that override's subnet. When every pool is
  refused, a `before-call` hook answers for moto: no instances, all the errors (HTTP 200, like EC2).
- EC2 de-duplicates CreateFleet calls by `ClientToken`; moto does not. The emulator remembers each token's
  answer and returns it again for a repeated token, without launching.
- A `crash_after_create_fleet` switch raises `SimulatedCrash` after moto has launched the instance and before
  the caller sees the answer: the "Lambda killed between CreateFleet and the record" fault.

Throttling (`ThrottleInjector`) lives in `longshore_sim.throttle`.
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from longshore.adapters.aws import tags as tagnames
from longshore.adapters.aws.amis import ssm_parameter_name

ACCOUNT_ID: Final = "123456789012"
EKS_AMI_OWNER: Final = "602401143452"
DEFAULT_ZONES: Final = ("us-east-1a", "us-east-1b", "us-east-1c")
SERVICE_CIDR: Final = "10.100.0.0/16"

#: (family, arch, accelerator) variants seeded for every cluster.
AMI_VARIANTS: Final = (
    ("AL2", "x86_64", ""),
    ("AL2", "arm64", ""),
    ("AL2", "x86_64", "nvidia"),
    ("AL2023", "x86_64", ""),
    ("AL2023", "arm64", ""),
    ("AL2023", "x86_64", "nvidia"),
    ("AL2023", "arm64", "nvidia"),
    ("AL2023", "x86_64", "neuron"),
    ("Bottlerocket", "x86_64", ""),
    ("Bottlerocket", "arm64", ""),
    ("Bottlerocket", "x86_64", "nvidia"),
    ("Bottlerocket", "arm64", "nvidia"),
    ("Windows2019", "x86_64", ""),
    ("Windows2022", "x86_64", ""),
    ("Windows2025", "x86_64", ""),
)


class SimulatedCrash(RuntimeError):
    """Raised by the fleet emulator to stand for a Lambda killed right after CreateFleet returned."""


@dataclass(frozen=True, slots=True)
class SeededCluster:
    """Ids and names of everything `seed_cluster` created."""

    name: str
    region: str
    kubernetes_version: str
    vpc_id: str
    subnets: Mapping[str, str]  # zone -> subnet id
    security_group_id: str
    role_name: str
    instance_profile: str
    endpoint: str
    ca_data: str
    table_name: str
    queue_url: str
    dlq_url: str
    images: Mapping[tuple[str, str, str], str] = field(default_factory=dict)  # (family, arch, accel) -> ami


def create_table(dynamodb: Any, table_name: str) -> None:
    """The Longshore table of docs/contracts.md: pk/sk, TTL `ttl`, GSI `by-instance` on `instance_id`."""
    dynamodb.create_table(
        TableName=table_name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "instance_id", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-instance",
                "KeySchema": [{"AttributeName": "instance_id", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    dynamodb.update_time_to_live(
        TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"}
    )


def _image_name(family: str, version: str, arch: str, accelerator: str) -> str:
    if family == "AL2":
        suffix = {"arm64": "-arm64"}.get(arch, "-gpu" if accelerator else "")
        return f"amazon-eks{suffix}-node-{version}-v20260101"
    if family == "AL2023":
        return f"amazon-eks-node-al2023-{arch}-{accelerator or 'standard'}-{version}-v20260101"
    return f"bottlerocket-aws-k8s-{version}{'-nvidia' if accelerator else ''}-{arch}-v1.30.0"


def register_image(
    ec2_client: Any, name: str, arch: str, owner: str = EKS_AMI_OWNER, tags: Mapping[str, str] | None = None
) -> str:
    """Register an available image with an architecture in moto's EC2 backend (RegisterImage drops it)."""
    from moto.ec2.models import ec2_backends  # the kit is moto-only by design
    from moto.ec2.models.amis import Ami
    from moto.ec2.utils import random_ami_id

    backend = ec2_backends[ACCOUNT_ID][ec2_client.meta.region_name]
    ami_id = random_ami_id()
    backend.amis[ami_id] = Ami(
        backend,
        ami_id,
        name=name,
        owner_id=owner,
        owner_alias="amazon" if owner == EKS_AMI_OWNER else None,
        architecture=arch,
        virtualization_type="hvm",
        root_device_name="/dev/xvda",
        region_name=f"{ec2_client.meta.region_name}a",
        tags=dict(tags or {}),
    )
    return ami_id


def put_public_parameter(region: str, name: str, value: str) -> None:
    """Write an `/aws/service/...` parameter into moto's SSM backend (PutParameter refuses those names)."""
    from moto.ssm.models import Parameter, ssm_backends

    backend = ssm_backends[ACCOUNT_ID][region]
    versions = backend._parameters[name]
    versions.append(
        Parameter(  # type: ignore[abstract]  # moto's own loaders build it the same way
            account_id=ACCOUNT_ID,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=dt.datetime.now(dt.UTC),
            version=len(versions) + 1,
            data_type="aws:ec2:image",
        )
    )


def seed_amis(ec2: Any, region: str, version: str) -> dict[tuple[str, str, str], str]:
    """Images and public SSM parameters for every `AMI_VARIANTS` entry of Kubernetes `version`."""
    images: dict[tuple[str, str, str], str] = {}
    for family, arch, accelerator in AMI_VARIANTS:
        image = register_image(ec2, _image_name(family, version, arch, accelerator), arch)
        put_public_parameter(region, ssm_parameter_name(family, version, arch, accelerator), image)
        images[(family, arch, accelerator)] = image
    return images


def seed_cluster(
    session: Any,
    name: str = "demo-cluster",
    *,
    kubernetes_version: str = "1.30",
    zones: Iterable[str] = DEFAULT_ZONES,
    table_name: str = "longshore",
    queue_name: str | None = None,
) -> SeededCluster:
    """Create the AWS side of a cluster in moto (call inside `mock_aws()` or against a moto server)."""
    region = session.region_name or "us-east-1"
    ec2 = session.client("ec2", region_name=region)
    discovery = [{"Key": tagnames.DISCOVERY, "Value": name}]
    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets: dict[str, str] = {}
    for index, zone in enumerate(zones):
        subnet = ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=f"10.0.{index * 16}.0/20",
            AvailabilityZone=zone,
            TagSpecifications=[
                {
                    "ResourceType": "subnet",
                    "Tags": [*discovery, {"Key": "Name", "Value": f"{name}-private-{zone}"}],
                }
            ],
        )
        subnets[zone] = subnet["Subnet"]["SubnetId"]
    security_group = ec2.create_security_group(
        GroupName=f"{name}-nodes",
        Description=f"nodes of {name}",
        VpcId=vpc_id,
        TagSpecifications=[{"ResourceType": "security-group", "Tags": discovery}],
    )["GroupId"]

    iam = session.client("iam", region_name=region)
    role_name = f"KarpenterNodeRole-{name}"
    iam.create_role(
        RoleName=role_name,
        AssumeRolePolicyDocument='{"Version":"2012-10-17","Statement":[{"Effect":"Allow",'
        '"Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}',
    )
    iam.create_instance_profile(InstanceProfileName=role_name)
    iam.add_role_to_instance_profile(InstanceProfileName=role_name, RoleName=role_name)

    eks = session.client("eks", region_name=region)
    eks.create_cluster(
        name=name,
        version=kubernetes_version,
        roleArn=f"arn:aws:iam::{ACCOUNT_ID}:role/{name}-cluster",
        resourcesVpcConfig={"subnetIds": list(subnets.values()), "securityGroupIds": [security_group]},
        kubernetesNetworkConfig={"serviceIpv4Cidr": SERVICE_CIDR},
    )
    cluster = eks.describe_cluster(name=name)["cluster"]

    create_table(session.client("dynamodb", region_name=region), table_name)
    sqs = session.client("sqs", region_name=region)
    queue = queue_name or name
    dlq_url = sqs.create_queue(QueueName=f"{queue}-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    queue_url = sqs.create_queue(
        QueueName=queue,
        Attributes={
            "MessageRetentionPeriod": "300",
            "RedrivePolicy": f'{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"5"}}',
        },
    )["QueueUrl"]

    return SeededCluster(
        name=name,
        region=region,
        kubernetes_version=kubernetes_version,
        vpc_id=vpc_id,
        subnets=subnets,
        security_group_id=security_group,
        role_name=role_name,
        instance_profile=role_name,
        endpoint=str(cluster["endpoint"]).rstrip("/"),
        ca_data=str(cluster["certificateAuthority"]["data"]),
        table_name=table_name,
        queue_url=queue_url,
        dlq_url=dlq_url,
        images=seed_amis(ec2, region, kubernetes_version),
    )


# --------------------------------------------------------------------------------------------------------------
# CreateFleet emulation


class _FakeHttpResponse:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code
        self.headers: dict[str, str] = {}
        self.content = b""


_ICE_KEY: Final = "longshore.ice.errors"
_SHORT_CIRCUIT_KEY: Final = "longshore.ice.short_circuit"
_TOKEN_KEY: Final = "longshore.ice.token"


def _error_message(code: str) -> str:
    return {
        "InsufficientInstanceCapacity": "We currently do not have sufficient capacity in the Availability Zone you requested.",
        "MaxSpotInstanceCountExceeded": "Max spot instance count exceeded.",
        "UnfulfillableCapacity": "Unable to fulfill capacity due to your request configuration.",
    }.get(code, code)


class FleetEmulator:
    """Realistic CreateFleet on moto: allocation order, capacity errors, ClientToken idempotency, crash injection.

    Thread-safe; switch pools on and off at any time with `make_unavailable` / `make_available` / `clear`.
    """

    def __init__(self, price_of: Callable[[str, str, str], float | None] | None = None) -> None:
        self.price_of = price_of
        self._unavailable: dict[tuple[str, str, str], str] = {}
        self._answers: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._fleet_ids = itertools.count(1)
        self.crash_after_create_fleet = 0  # crash after this many next successful CreateFleet calls (0 = off)
        self.calls = 0
        self.errors_returned = 0

    # -- switches --------------------------------------------------------------------------------------------

    def make_unavailable(
        self, instance_type: str, zone: str, capacity_type: str, code: str = "InsufficientInstanceCapacity"
    ) -> None:
        with self._lock:
            self._unavailable[(instance_type, zone, capacity_type)] = code

    def make_available(self, instance_type: str, zone: str, capacity_type: str) -> None:
        with self._lock:
            self._unavailable.pop((instance_type, zone, capacity_type), None)

    def clear(self) -> None:
        with self._lock:
            self._unavailable.clear()

    def unavailable(self) -> frozenset[tuple[str, str, str]]:
        with self._lock:
            return frozenset(self._unavailable)

    # -- wiring ----------------------------------------------------------------------------------------------

    def attach(self, target: Any) -> FleetEmulator:
        """Hook into one EC2 client, or into a boto3 session so that every EC2 client it creates afterwards has
        the hooks (how a simulation reaches the clients a handler builds for itself). Returns self."""
        events = target.meta.events if hasattr(target, "meta") else target.events
        uid = f"longshore-fleet-emulator-{id(self)}"
        events.register(
            "before-parameter-build.ec2.CreateFleet", self._before_parameter_build, unique_id=uid + "-p"
        )
        events.register("before-call.ec2.CreateFleet", self._before_call, unique_id=uid + "-c")
        events.register("after-call.ec2.CreateFleet", self._after_call, unique_id=uid + "-a")
        return self

    def _sort_key(
        self, capacity_type: str, index: int, override: Mapping[str, Any], zone: str
    ) -> tuple[float, float, int]:
        price = (
            self.price_of(str(override.get("InstanceType")), zone, capacity_type) if self.price_of else None
        )
        priority = override.get("Priority")
        return (
            float(price) if price is not None else float("inf"),
            float(priority) if priority is not None else float("inf"),
            index,
        )

    def _before_parameter_build(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        token = params.get("ClientToken")
        with self._lock:
            self.calls += 1
            if token and token in self._answers:
                context[_SHORT_CIRCUIT_KEY] = self._answers[token]
                return
            unavailable = dict(self._unavailable)
        context[_TOKEN_KEY] = token
        region = str(context.get("client_region") or "us-east-1")
        capacity_type = str(
            params.get("TargetCapacitySpecification", {}).get("DefaultTargetCapacityType", "on-demand")
        )
        flat: list[tuple[int, dict[str, Any], dict[str, Any], str]] = []
        for config in params.get("LaunchTemplateConfigs", []):
            for override in config.get("Overrides") or [{}]:
                subnet = str(override.get("SubnetId", ""))
                zone = str(override.get("AvailabilityZone") or _zone_of_subnet(region, subnet))
                flat.append((len(flat), config, override, zone))
        flat.sort(key=lambda item: self._sort_key(capacity_type, item[0], item[2], item[3]))
        errors: list[dict[str, Any]] = []
        chosen: tuple[dict[str, Any], dict[str, Any]] | None = None
        for _index, pool_config, override, zone in flat:
            code = unavailable.get((str(override.get("InstanceType")), zone, capacity_type))
            if code is None:
                chosen = (pool_config, override)
                break
            errors.append(
                {
                    "LaunchTemplateAndOverrides": {
                        "LaunchTemplateSpecification": pool_config["LaunchTemplateSpecification"],
                        "Overrides": dict(override),
                    },
                    "Lifecycle": capacity_type,
                    "ErrorCode": code,
                    "ErrorMessage": _error_message(code),
                }
            )
        context[_ICE_KEY] = errors
        if chosen is None:
            context[_SHORT_CIRCUIT_KEY] = {
                "FleetId": f"fleet-{next(self._fleet_ids):08x}-0000-0000-0000-000000000000",
                "Errors": errors,
                "Instances": [],
            }
        else:
            config, override = chosen
            params["LaunchTemplateConfigs"] = [
                {
                    "LaunchTemplateSpecification": config["LaunchTemplateSpecification"],
                    "Overrides": [override],
                }
            ]

    def _before_call(self, context: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]] | None:
        answer = context.get(_SHORT_CIRCUIT_KEY)
        if answer is None:
            return None
        return _FakeHttpResponse(200), {**answer, "ResponseMetadata": {"HTTPStatusCode": 200}}

    def _after_call(
        self, http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        if http_response.status_code >= 300:
            return  # EC2 rejected the request: nothing launched, nothing to remember
        errors = context.get(_ICE_KEY) or []
        if errors and context.get(_SHORT_CIRCUIT_KEY) is None:
            parsed.setdefault("Errors", []).extend(errors)
        crash = False
        with self._lock:
            self.errors_returned += len(errors)
            token = context.get(_TOKEN_KEY)
            if token and token not in self._answers:
                self._answers[token] = {k: v for k, v in parsed.items() if k != "ResponseMetadata"}
            if parsed.get("Instances") and self.crash_after_create_fleet > 0:
                self.crash_after_create_fleet -= 1
                crash = True
        if crash:
            raise SimulatedCrash("simulated crash after CreateFleet launched an instance")


def _zone_of_subnet(region: str, subnet_id: str) -> str:
    """The zone of a subnet, read from moto's backend (for overrides that name only a subnet)."""
    if not subnet_id:
        return ""
    from moto.ec2.models import ec2_backends

    return str(ec2_backends[ACCOUNT_ID][region].get_subnet(subnet_id).availability_zone)
