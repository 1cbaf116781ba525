"""The functions' IAM permissions: what the code calls, scoped to this cluster's resources.

Theory of operation: the seeds' Karpenter controller policy is the starting point (TerminateInstances only
on tagged instances, PassRole only for the node role, DescribeCluster only for this cluster), tightened
the way Karpenter v1's policy is: every write is bound either to a resource ARN pattern or to the
`longshore.io/cluster=<cluster>` tag that the launcher puts on everything it creates
(`longshore.adapters.aws.tags`):

- creating instances, fleets, volumes, network interfaces and launch templates requires the request to
  carry the cluster tag (`aws:RequestTag`), and `CreateTags` is allowed only as part of those creations
  (`ec2:CreateAction`);
- terminating instances and deleting launch templates requires the resource to carry it
  (`aws:ResourceTag`);
- using existing images, snapshots, subnets, security groups, capacity reservations and placement groups is allowed by ARN
  pattern (those resources are read, not changed);
- reads that AWS cannot scope (`ec2:Describe*`) are limited to the cluster's region.

The table statement is in cluster.py; queue and log permissions come from CDK grants on those exact
resources. Each statement has a Sid so reviews and tests can talk about it by name. These statements are the
most any function may get: each function's role receives them cut down to its own actions
(`permissions.restrict`, from the table in permissions.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

CLUSTER_TAG = "longshore.io/cluster"
"""The ownership tag (same value as `longshore.adapters.aws.tags.CLUSTER`; a test keeps them equal)."""

EC2_READ_ACTIONS = (
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceStatus",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeInstances",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribePlacementGroups",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets",
)
LAUNCH_ACTIONS = ("ec2:RunInstances", "ec2:CreateFleet")
CREATED_RESOURCE_TYPES = (
    "fleet",
    "instance",
    "volume",
    "network-interface",
    "launch-template",
    "spot-instances-request",
)
"""What a launch creates; each must be tagged with the cluster tag in the request."""
CREATE_ACTIONS_THAT_TAG = ("RunInstances", "CreateFleet", "CreateLaunchTemplate")
PUBLIC_AMI_PARAMETER_PATHS = ("/aws/service/eks/*", "/aws/service/bottlerocket/*")


@dataclass(frozen=True, slots=True)
class ControllerScope:
    """The names the controller's permissions are scoped to."""

    cluster: str
    node_roles: tuple[str, ...]
    config_parameter: str
    state_machines: tuple[str, ...]
    provisioner_function: str
    custom_ami_parameters: tuple[str, ...] = ()
    unmanaged_launch_templates: bool = False


def controller_statements(stack: cdk.Stack, scope: ControllerScope) -> list[iam.PolicyStatement]:
    """The controller policy (everything except the table, the queue and the log groups)."""
    cluster_tag_equals = {f"aws:RequestTag/{CLUSTER_TAG}": scope.cluster}
    statements = [
        iam.PolicyStatement(
            sid="Ec2RegionalReads",
            actions=list(EC2_READ_ACTIONS),
            resources=["*"],
            conditions={"StringEquals": {"aws:RequestedRegion": stack.region}},
        ),
        iam.PolicyStatement(
            sid="Ec2LaunchFromExistingResources",
            actions=list(LAUNCH_ACTIONS),
            resources=[
                _ec2(stack, "image", account=""),
                _ec2(stack, "snapshot", account=""),
                _ec2(stack, "subnet", account="*"),
                _ec2(stack, "security-group", account="*"),
                _ec2(stack, "capacity-reservation", account="*"),
                _ec2(stack, "placement-group", account="*"),  # placementGroupSelector
            ],
        ),
        iam.PolicyStatement(
            sid="Ec2LaunchFromOwnLaunchTemplates",
            actions=list(LAUNCH_ACTIONS),
            resources=[_ec2(stack, "launch-template")],
            conditions=(
                None
                if scope.unmanaged_launch_templates
                else {"StringEquals": {f"aws:ResourceTag/{CLUSTER_TAG}": scope.cluster}}
            ),
        ),
        iam.PolicyStatement(
            sid="Ec2CreateTaggedResources",
            actions=[*LAUNCH_ACTIONS, "ec2:CreateLaunchTemplate"],
            resources=[_ec2(stack, kind) for kind in CREATED_RESOURCE_TYPES],
            conditions={"StringEquals": cluster_tag_equals},
        ),
        iam.PolicyStatement(
            sid="Ec2TagOnlyOnCreate",
            actions=["ec2:CreateTags"],
            resources=[_ec2(stack, kind) for kind in CREATED_RESOURCE_TYPES],
            conditions={
                "StringEquals": {**cluster_tag_equals, "ec2:CreateAction": list(CREATE_ACTIONS_THAT_TAG)},
            },
        ),
        iam.PolicyStatement(
            sid="Ec2DeleteOnlyOwnResources",
            actions=["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            resources=[_ec2(stack, "instance"), _ec2(stack, "launch-template")],
            conditions={"StringEquals": {f"aws:ResourceTag/{CLUSTER_TAG}": scope.cluster}},
        ),
        iam.PolicyStatement(
            sid="PassOnlyTheNodeRole",
            actions=["iam:PassRole"],
            resources=[role_arn(stack, name) for name in scope.node_roles],
            conditions={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        ),
        iam.PolicyStatement(
            sid="FindTheNodeRoleInstanceProfile",
            actions=["iam:ListInstanceProfilesForRole"],
            resources=[role_arn(stack, name) for name in scope.node_roles],
        ),
        iam.PolicyStatement(
            sid="DescribeOnlyThisCluster",
            actions=["eks:DescribeCluster"],
            resources=[stack.format_arn(service="eks", resource="cluster", resource_name=scope.cluster)],
        ),
        iam.PolicyStatement(
            sid="ReadAmiAndConfigParameters",
            actions=["ssm:GetParameter"],
            resources=[
                *(_public_parameter(stack, path) for path in PUBLIC_AMI_PARAMETER_PATHS),
                *(parameter_arn(stack, name) for name in scope.custom_ami_parameters),
                parameter_arn(stack, scope.config_parameter),
            ],
        ),
        iam.PolicyStatement(sid="ReadPrices", actions=["pricing:GetProducts"], resources=["*"]),
        iam.PolicyStatement(
            sid="StartOwnWorkflows",
            actions=["states:StartExecution"],
            resources=[state_machine_arn(stack, name) for name in scope.state_machines],
        ),
        iam.PolicyStatement(
            sid="ReadOwnWorkflowExecutions",
            actions=["states:DescribeExecution"],
            resources=[execution_arns(stack, name) for name in scope.state_machines],
        ),
        iam.PolicyStatement(
            sid="TriggerTheProvisioner",
            actions=["lambda:InvokeFunction"],
            resources=[function_arn(stack, scope.provisioner_function)],
        ),
    ]
    return statements


def vpc_access_statements(
    stack: cdk.Stack, subnet_ids: Iterable[str], security_group_ids: Iterable[str]
) -> list[iam.PolicyStatement]:
    """What Lambda needs to place the functions' network interfaces in the given subnets."""
    subnets = [_ec2(stack, "subnet", name=subnet) for subnet in subnet_ids]
    groups = [_ec2(stack, "security-group", name=group) for group in security_group_ids]
    return [
        iam.PolicyStatement(
            sid="LambdaVpcReads",
            actions=["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups"],
            resources=["*"],
            conditions={"StringEquals": {"aws:RequestedRegion": stack.region}},
        ),
        iam.PolicyStatement(
            sid="LambdaVpcCreateInterfaces",
            actions=["ec2:CreateNetworkInterface"],
            resources=[_ec2(stack, "network-interface"), *subnets, *groups],
        ),
        iam.PolicyStatement(
            sid="LambdaVpcManageInterfaces",
            actions=[
                "ec2:DeleteNetworkInterface",
                "ec2:AssignPrivateIpAddresses",
                "ec2:UnassignPrivateIpAddresses",
            ],
            resources=[_ec2(stack, "network-interface")],
            conditions={"ArnEquals": {"ec2:Subnet": subnets}},
        ),
    ]


def role_arn(stack: cdk.Stack, name: str) -> str:
    return stack.format_arn(service="iam", region="", resource="role", resource_name=name)


def parameter_arn(stack: cdk.Stack, name: str) -> str:
    """ARN of an SSM parameter by name; AWS's public parameters live in no account."""
    if name.startswith("/aws/service/"):
        return _public_parameter(stack, name)
    return stack.format_arn(service="ssm", resource="parameter", resource_name=name.lstrip("/"))


def state_machine_arn(stack: cdk.Stack, name: str) -> str:
    return stack.format_arn(
        service="states",
        resource="stateMachine",
        resource_name=name,
        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
    )


def execution_arns(stack: cdk.Stack, state_machine: str) -> str:
    """Every execution of the named state machine."""
    return stack.format_arn(
        service="states",
        resource="execution",
        resource_name=f"{state_machine}:*",
        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
    )


def function_arn(stack: cdk.Stack, name: str) -> str:
    return stack.format_arn(
        service="lambda",
        resource="function",
        resource_name=name,
        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
    )


def _public_parameter(stack: cdk.Stack, path: str) -> str:
    return stack.format_arn(service="ssm", account="", resource="parameter", resource_name=path.lstrip("/"))


def _ec2(stack: cdk.Stack, kind: str, *, name: str = "*", account: str | None = None) -> str:
    return stack.format_arn(service="ec2", account=account, resource=kind, resource_name=name)
