"""`LongshoreStack`: one CloudFormation stack per cluster, a thin wrapper around `LongshoreCluster`.

Theory of operation: the stack's region is the cluster's (from its config); the account comes from the
`account` context value or is left to deploy time (an environment-agnostic template), so synth needs no
credentials and makes no AWS calls. cdk-nag's AwsSolutions checks run on the stack (nag.py).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import nag
from infra.cluster import LongshoreCluster
from infra.config_source import ClusterSource
from infra.settings import DeploymentSettings
from infra.state_machines import WorkflowDefinitions


def stack_name(cluster: str) -> str:
    return f"Longshore-{cluster}"


class LongshoreStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        source: ClusterSource,
        settings: DeploymentSettings,
        *,
        code: lambda_.Code | None = None,
        definitions: WorkflowDefinitions | None = None,
    ) -> None:
        config = source.config
        super().__init__(
            scope,
            stack_name(config.name),
            env=cdk.Environment(account=settings.account, region=config.region),
            description=f"Longshore: serverless Karpenter-compatible node autoscaler for EKS cluster {config.name}",
        )
        self.cluster = LongshoreCluster(
            self,
            "Longshore",
            config=config,
            config_bundle=source.bundle,
            settings=settings,
            code=code,
            definitions=definitions,
        )
        nag.acknowledge(self, self.cluster)
        outputs = {
            **{f"{name.capitalize()}RoleArn": role.role_arn for name, role in self.cluster.roles.items()},
            "TriggerRoleArn": self.cluster.webhook.role.role_arn,
            "WebhookSecretArn": self.cluster.webhook.secret.secret_arn,
            "AlarmTopicArn": self.cluster.alarm_topic.topic_arn,
            "DisruptionStateMachineArn": self.cluster.disruption_state_machine.state_machine_arn,
            "RotationStateMachineArn": self.cluster.rotation_state_machine.state_machine_arn,
            "InterruptionQueueUrl": self.cluster.interruption.queue.queue_url,
            "WebhookUrl": self.cluster.webhook.url.url,
        }
        for name, value in outputs.items():
            cdk.CfnOutput(self, name, value=value)
