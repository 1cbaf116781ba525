"""cdk-nag AwsSolutions checks, and the findings we acknowledge, each with its reason.

Theory of operation: app.py (and the tests) add `AwsSolutionsChecks` to the app, so `cdk synth` reports any
finding as an error. The few findings that are deliberate are acknowledged here, each on the one construct it
concerns and, for wildcard findings (IAM5), only for the exact resource patterns listed, so a new wildcard
anywhere else still fails the synth.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from cdk_nag import AwsSolutionsChecks, NagPackSuppression, NagSuppressions, RegexAppliesTo

from infra.cluster import LongshoreCluster

REGION = "[a-z0-9-]+"
ACCOUNT = r"(<AWS::AccountId>|[0-9]{12})"
"""The stack's account: a token when the stack is environment-agnostic, digits when it is pinned."""


def check(app: cdk.App) -> None:
    """Run the AwsSolutions rules on everything in the app."""
    cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True))


def _resources(*patterns: str) -> list[str | RegexAppliesTo | dict[str, object]]:
    """IAM5 `appliesTo` entries matching exactly these resource patterns (regular expressions)."""
    return [RegexAppliesTo(regex=f"/^Resource::{pattern}$/g") for pattern in patterns]


def _ec2(kinds: str, account: str) -> str:
    return rf"arn:<AWS::Partition>:ec2:{REGION}:{account}:({kinds})/\*"


def acknowledge(stack: cdk.Stack, cluster: LongshoreCluster) -> None:
    """Acknowledge the deliberate findings on `cluster`'s constructs."""
    del stack
    for role in cluster.roles.values():
        _acknowledge_function_role(role)
    NagSuppressions.add_resource_suppressions(
        cluster.webhook.secret,
        [
            NagPackSuppression(
                id="AwsSolutions-SMG4",
                reason=(
                    "The webhook secret is also written into the cluster's ValidatingWebhookConfiguration, which "
                    "a rotation Lambda cannot update; rotation is a documented two-command procedure "
                    "(docs/security.md), and a mismatch only costs latency (failurePolicy Ignore)."
                ),
            )
        ],
    )
    topic = cluster.alarm_topic.node.default_child
    if topic is not None:
        NagSuppressions.add_resource_suppressions(
            cluster.alarm_topic,
            [
                NagPackSuppression(
                    id="AwsSolutions-SNS2",
                    reason=(
                        "Alarm notifications carry alarm names and states only. CloudWatch cannot publish to a "
                        "topic encrypted with the AWS-managed SNS key, and a customer-managed key costs $1/month "
                        "per cluster; pass -c alarmTopicArn= to use an encrypted topic of your own."
                    ),
                )
            ],
        )
    _acknowledge_runtime(cluster)


def _acknowledge_function_role(role: iam.IRole) -> None:
    NagSuppressions.add_resource_suppressions(
        role,
        [
            NagPackSuppression(
                id="AwsSolutions-IAM5",
                reason=(
                    "Resource '*' only for actions AWS cannot scope to a resource: ec2:Describe* (limited to the "
                    "cluster's region by aws:RequestedRegion), pricing:GetProducts (read-only) and "
                    "xray:PutTraceSegments/PutTelemetryRecords (Lambda active tracing)."
                ),
                applies_to=["Resource::*"],
            ),
            NagPackSuppression(
                id="AwsSolutions-IAM5",
                reason=(
                    "RunInstances/CreateFleet must reference the image, snapshot, subnet, security group, "
                    "capacity reservation and placement group they launch from; these are used, not changed, and which ones is decided "
                    "at run time by the node class selector terms (Karpenter's controller policy does the same)."
                ),
                applies_to=_resources(
                    _ec2("image|snapshot", ""),
                    _ec2("subnet|security-group|capacity-reservation|placement-group", r"\*"),
                ),
            ),
            NagPackSuppression(
                id="AwsSolutions-IAM5",
                reason=(
                    "Instances, volumes, network interfaces, fleets, spot requests and launch templates do not "
                    "exist before launch, so their ARNs are patterns; every statement on them requires the "
                    "longshore.io/cluster tag of this cluster (aws:RequestTag on create, aws:ResourceTag on "
                    "terminate/delete, ec2:CreateAction on CreateTags)."
                ),
                applies_to=_resources(
                    _ec2(
                        "instance|volume|network-interface|fleet|spot-instances-request|launch-template",
                        ACCOUNT,
                    )
                ),
                # With VPC placement the same network-interface pattern also serves Lambda's own interfaces:
                # created only in the configured subnets and security groups, deleted only there (ec2:Subnet).
            ),
            NagPackSuppression(
                id="AwsSolutions-IAM5",
                reason=(
                    "The AMI of a node class is read from AWS's public EKS and Bottlerocket SSM parameters; the "
                    "exact name depends on the Kubernetes version and the instance architecture at run time."
                ),
                applies_to=_resources(
                    rf"arn:<AWS::Partition>:ssm:{REGION}::parameter/aws/service/(eks|bottlerocket)/\*"
                ),
            ),
            NagPackSuppression(
                id="AwsSolutions-IAM5",
                reason=(
                    "Execution ARNs are created per run; DescribeExecution is limited to executions of this "
                    "cluster's own two state machines."
                ),
                applies_to=_resources(
                    rf"arn:<AWS::Partition>:states:{REGION}:{ACCOUNT}:execution:[A-Za-z0-9_-]+:\*"
                ),
            ),
            NagPackSuppression(
                id="AwsSolutions-IAM5",
                reason="The claim store queries its own table's by-instance index (the only index of the table).",
                applies_to=_resources(r"<[A-Za-z0-9]+\.Arn>/index/\*"),
            ),
        ],
        apply_to_children=True,
    )


def _acknowledge_runtime(cluster: LongshoreCluster) -> None:
    for function in (*cluster.functions.values(), cluster.webhook.function):
        NagSuppressions.add_resource_suppressions(
            function,
            [
                NagPackSuppression(
                    id="AwsSolutions-L1",
                    reason=(
                        "Python 3.11 on purpose: the bundle ships bytecode compiled by the same interpreter the "
                        "project is tested on (cold start: 0.4 s instead of 1.8 s to import the Kubernetes "
                        "client). Moving runtimes is one constant in infra/bundling.py (see docs/deploy.md)."
                    ),
                )
            ],
        )
    for machine in (cluster.disruption_state_machine, cluster.rotation_state_machine):
        NagSuppressions.add_resource_suppressions(
            machine.role,
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason=(
                        "Resource '*' only for what AWS requires unscoped: CloudWatch Logs vended delivery "
                        "(logs:*LogDelivery, PutResourcePolicy, Describe*) for state machine logging and X-Ray "
                        "tracing (xray:Put*/GetSampling*)."
                    ),
                    applies_to=["Resource::*"],
                ),
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason="Invoking the steps function's versions and aliases (`<arn>:*`) is what CDK grants for it.",
                    applies_to=_resources(r"<[A-Za-z0-9]+\.Arn>:\*"),
                ),
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason=(
                        "startExecution.sync:2 polls and stops the nested executions it started; those are "
                        "executions of this cluster's disruption state machine only."
                    ),
                    applies_to=_resources(
                        rf"arn:<AWS::Partition>:states:{REGION}:{ACCOUNT}:execution:[A-Za-z0-9_-]+:\*"
                    ),
                ),
            ],
            apply_to_children=True,
        )
