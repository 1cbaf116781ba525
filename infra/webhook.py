"""The trigger function behind a function URL: the cluster's admission webhook target.

Theory of operation: `deploy/webhook.yaml` (applied to the cluster with this construct's URL) sends every pod
CREATE and DELETE to `longshore.handlers.trigger.handler`, which starts the provisioner or the planner at
once with an asynchronous invoke. That is what lets those two stop after a quiet pass instead of idling in a
billed loop (docs/deploy.md, "Control-plane cost").

The function is deliberately apart from the other four:
- **Its own role**, allowed only to write its logs and to invoke the provisioner and the planner: it never
  reads the cluster, EC2 or the table, so it gets none of the controller's permissions.
- **A public function URL with auth NONE**: the EKS API server cannot sign SigV4 requests. What an outsider
  can do with the URL is ask for provisioner and planner passes; both are singletons (reserved concurrency 1)
  whose queued asynchronous events expire after 60 s, so the worst case is the old always-looping cost, not
  an unbounded one. Its own reserved concurrency caps its share of the account.
- **Small and untraced**: 256 MB, a 5 s timeout (the webhook waits 2 s at most), no X-Ray (one trace per pod
  event would cost more than the function).
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import bundling

HANDLER = "longshore.handlers.trigger.handler"
MEMORY_MB = 256
TIMEOUT_S = 5
RESERVED_CONCURRENCY = 10


class TriggerWebhook(Construct):
    """The trigger function, its role, its log group and its URL (`url`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code: lambda_.Code,
        function_name: str,
        targets: Mapping[str, lambda_.IFunction],
        environment: Mapping[str, str],
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Longshore trigger function {function_name}: invoke the provisioner and the planner",
        )
        log_group = logs.LogGroup(
            self,
            "Logs",
            log_group_name=f"/aws/lambda/{function_name}",
            retention=log_retention,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        log_group.grant_write(self.role)
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="TriggerProvisionerAndPlanner",
                actions=["lambda:InvokeFunction"],
                resources=[targets[name].function_arn for name in sorted(targets)],
            )
        )
        self.function = lambda_.Function(
            self,
            "Function",
            function_name=function_name,
            description="Longshore trigger: the admission webhook that wakes the provisioner and the planner",
            code=code,
            handler=HANDLER,
            runtime=bundling.RUNTIME,
            architecture=bundling.ARCHITECTURE,
            memory_size=MEMORY_MB,
            timeout=cdk.Duration.seconds(TIMEOUT_S),
            reserved_concurrent_executions=RESERVED_CONCURRENCY,
            role=self.role,
            log_group=log_group,
            tracing=lambda_.Tracing.DISABLED,
            environment=dict(environment),
        )
        self.url = self.function.add_function_url(auth_type=lambda_.FunctionUrlAuthType.NONE)
