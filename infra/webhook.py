"""The trigger function behind a function URL: the cluster's admission webhook target.

Theory of operation: `deploy/webhook.yaml` (applied to the cluster with this construct's URL) sends every pod
CREATE and DELETE to `longshore.handlers.trigger.handler`, which starts the provisioner or the planner at
once with an asynchronous invoke. That is what lets those two stop after a quiet pass instead of idling in a
billed loop (docs/deploy.md, "Control-plane cost").

The function is deliberately apart from the other four:
- **A public function URL (auth NONE) guarded by a secret path.** The EKS API server cannot sign SigV4
  requests, so the stack generates a per-cluster secret (Secrets Manager, 48 alphanumerics) that the
  webhook's URL carries as its path; the function answers 403 to any other path, in constant time, before
  parsing the body or touching anything else (docs/security.md says how to rotate it).
- **Its own role**, allowed only to write its logs, read that secret, invoke the provisioner and the planner,
  and write its wake-gate leases (`lease#wake-*` items of the table, enforced by `dynamodb:LeadingKeys`).
- **Bounded by construction**: reserved concurrency caps its share of the account (and a flood's cost, see
  docs/deploy.md "Webhook flood"); the wake gate turns any burst into one invocation per target per 10 s;
  the targets are singletons whose queued asynchronous events expire after 60 s.
- **Small and untraced**: 256 MB, a 5 s timeout (the webhook waits 2 s at most), no X-Ray (one trace per pod
  event would cost more than the function).
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra import bundling

HANDLER = "longshore.handlers.trigger.handler"
MEMORY_MB = 256
TIMEOUT_S = 5
RESERVED_CONCURRENCY = 2
"""Enough for the filtered webhook traffic (one request per unscheduled pod created or bound pod deleted, a few
ms each, so hundreds per second); beyond it Lambda answers 429, the API server ignores the failure and the
wake has already happened. It is also what bounds a flood's cost: bench/trigger_flood.py."""
SECRET_LENGTH = 48
WAKE_LEASE_KEYS = "lease#wake-*"
"""The table items the trigger may write: its wake-gate leases (`adapters.wake_gate`, `adapters.aws.dynamodb`)."""


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
        table: dynamodb.ITable,
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
        self.secret = secretsmanager.Secret(
            self,
            "Secret",
            description=f"Longshore: the URL path that authenticates the API server to {function_name}",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                exclude_punctuation=True, include_space=False, password_length=SECRET_LENGTH
            ),
        )
        log_group = logs.LogGroup(
            self,
            "Logs",
            log_group_name=f"/aws/lambda/{function_name}",
            retention=log_retention,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        log_group.grant_write(self.role)
        for statement in (
            iam.PolicyStatement(
                sid="TriggerProvisionerAndPlanner",
                actions=["lambda:InvokeFunction"],
                resources=[targets[name].function_arn for name in sorted(targets)],
            ),
            iam.PolicyStatement(
                sid="ReadTheWebhookSecret",
                actions=["secretsmanager:GetSecretValue"],
                resources=[self.secret.secret_arn],
            ),
            iam.PolicyStatement(
                sid="WriteOnlyWakeGateLeases",
                actions=["dynamodb:PutItem", "dynamodb:DeleteItem"],
                resources=[table.table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [WAKE_LEASE_KEYS]}},
            ),
        ):
            self.role.add_to_principal_policy(statement)
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
            # No START/END/REPORT line per request: a flood must not turn into a CloudWatch Logs bill.
            logging_format=lambda_.LoggingFormat.JSON,
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            environment={**environment, "LONGSHORE_WEBHOOK_SECRET_ARN": self.secret.secret_arn},
        )
        self.url = self.function.add_function_url(auth_type=lambda_.FunctionUrlAuthType.NONE)
