"""Which AWS actions each Longshore function may call: the one table the stack grants from and the tests check.

Theory of operation: every function has its own IAM role (and its own Kubernetes group, `naming`). A role is
given exactly the actions its entry below lists, each through the resource-scoped statement of `iam.py` that
grants it (a statement whose actions are all absent from the entry is left out). The entries are the actions
of the boto3 calls the function's code can reach, plus the actions AWS checks on a call without the code
naming them (`IMPLIED_BY`). tests/infra/test_function_permissions.py derives the calls from the code and
fails when an entry differs in either direction: a new call needs a new entry, a removed call must give up
its permission.

Permissions CDK adds for the functions' own plumbing (their log groups, X-Ray tracing, VPC network
interfaces) are not listed here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from aws_cdk import aws_iam as iam

IMPLIED_BY: Final[Mapping[str, tuple[str, ...]]] = {
    # CreateFleet (type instant) launches through RunInstances and tags at creation; the instance profile in
    # the launch template passes the node role.
    "ec2:CreateFleet": ("ec2:RunInstances", "ec2:CreateTags", "iam:PassRole"),
    "ec2:CreateLaunchTemplate": ("ec2:CreateTags",),
}
"""Actions AWS authorises as part of another call (the code never names them)."""

_TABLE: Final = (
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:Scan",
)
_EC2_LAUNCH: Final = (
    "ec2:CreateFleet",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateTags",
    "ec2:DeleteLaunchTemplate",
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeInstances",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribePlacementGroups",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets",
    "ec2:RunInstances",
    "ec2:TerminateInstances",
    "iam:ListInstanceProfilesForRole",
    "iam:PassRole",
    "pricing:GetProducts",
)
_CLUSTER: Final = ("eks:DescribeCluster", "ssm:GetParameter")

FUNCTION_ACTIONS: Final[Mapping[str, frozenset[str]]] = {
    # StartExecution/DescribeExecution: a Node deleted with kubectl is drained through the disruption workflow.
    # DescribeCapacityReservations: the node classes' capacityReservationSelectorTerms (core.reservations).
    "provisioner": frozenset(
        (
            *_TABLE,
            *_EC2_LAUNCH,
            *_CLUSTER,
            "ec2:DescribeCapacityReservations",
            "states:DescribeExecution",
            "states:StartExecution",
        )
    ),
    # DescribeInstanceStatus: node auto-repair reads the EC2 status checks.
    "planner": frozenset(
        (
            *_TABLE,
            *_EC2_LAUNCH,
            *_CLUSTER,
            "ec2:DescribeInstanceStatus",
            "states:DescribeExecution",
            "states:StartExecution",
        )
    ),
    "interruption": frozenset(
        (
            *_TABLE,
            *_CLUSTER,
            "ec2:DescribeInstances",
            "ec2:TerminateInstances",
            "lambda:InvokeFunction",
            "states:DescribeExecution",
            "states:StartExecution",
        )
    ),
    "steps": frozenset((*_TABLE, *_EC2_LAUNCH, *_CLUSTER)),
    # The wake gate's lease (DynamoLease: acquire and release), only on `lease#wake-*` keys (webhook.py).
    "trigger": frozenset(
        ("dynamodb:DeleteItem", "dynamodb:PutItem", "lambda:InvokeFunction", "secretsmanager:GetSecretValue")
    ),
}
"""Function role (infra/functions.py FUNCTIONS, plus the webhook's "trigger") -> the IAM actions it may call."""

EVENT_SOURCE_ACTIONS: Final[Mapping[str, frozenset[str]]] = {
    "interruption": frozenset(
        (
            "sqs:ChangeMessageVisibility",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
            "sqs:GetQueueUrl",
            "sqs:ReceiveMessage",
        )
    ),
}
"""What CDK grants for an event source: Lambda's SQS poller runs as the function's role, on that queue only."""

HANDLER_MODULES: Final[Mapping[str, str]] = {
    "provisioner": "longshore.handlers.provisioner",
    "planner": "longshore.handlers.planner",
    "interruption": "longshore.handlers.interruption",
    "steps": "longshore.handlers.workflow_steps",
    "trigger": "longshore.handlers.trigger",
}


def with_implied(actions: Iterable[str]) -> frozenset[str]:
    """`actions` plus what AWS authorises along with them."""
    found = set(actions)
    for action in list(found):
        found.update(IMPLIED_BY.get(action, ()))
    return frozenset(found)


def restrict(statements: Iterable[iam.PolicyStatement], role: str) -> list[iam.PolicyStatement]:
    """The statements cut down to `role`'s actions (a statement left with none is dropped)."""
    allowed = FUNCTION_ACTIONS[role]
    kept = []
    for statement in statements:
        actions = [a for a in statement.actions if a in allowed]
        if actions:
            kept.append(
                iam.PolicyStatement(
                    sid=statement.sid,
                    actions=actions,
                    resources=list(statement.resources),
                    conditions=statement.conditions or None,
                )
            )
    return kept
