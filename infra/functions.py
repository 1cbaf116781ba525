"""The four Lambda functions: provisioner, planner, interruption and the workflow steps.

Theory of operation: all four run the same code asset (our package and its dependencies, bundling.py) with a
different handler string (docs/contracts.md), on arm64 and the Python runtime the bytecode was compiled
for. Each has its own role (permissions.py: only the actions its code calls; the cluster's access entries map
each role to its own Kubernetes group, naming.kubernetes_group) and they share the same environment: the contract's `LONGSHORE_*` variables plus Powertools' service name, metrics namespace and
log level. Each writes to its own log group with a fixed retention. The provisioner and the planner are
singletons (reserved concurrency 1): a second concurrent run would plan against the same pending pods.
The functions that read the whole cluster (`reads_cluster`: provisioner, planner, steps) take their memory
from the `functionMemoryMb` context value (`settings.DeploymentSettings.function_memory_mb`, default 1024);
the interruption handler reads single nodes and keeps its own size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import bundling
from infra.settings import VpcPlacement


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """One function: its contract handler and its sizing."""

    role: str  # "provisioner", "planner", "interruption", "steps"
    handler: str
    description: str
    memory_mb: int  # the default; `reads_cluster` functions take `functionMemoryMb`
    timeout_s: int
    reserved_concurrency: int | None = None
    reads_cluster: bool = False  # lists every pod and node at a container's first pass


FUNCTIONS = (
    FunctionSpec("provisioner", "longshore.handlers.provisioner.handler",
                 "Longshore provisioner: pending pods to node claims to EC2 launches", 1024, 120, 1, True),
    FunctionSpec("planner", "longshore.handlers.planner.handler",
                 "Longshore disruption planner: emptiness, expiry, drift and consolidation", 1024, 120, 1, True),
    FunctionSpec("interruption", "longshore.handlers.interruption.handler",
                 "Longshore interruption handler: spot, rebalance, health and state-change messages", 512, 30),
    FunctionSpec("steps", "longshore.handlers.workflow_steps.handler",
                 "Longshore workflow steps: launch replacements, cordon, drain, terminate (called by the state machines)", 1024, 120, None, True),
)  # fmt: skip
POWERTOOLS_LOG_LEVEL = "INFO"


class Functions(Construct):
    """The functions, keyed by role."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code: lambda_.Code,
        roles: Mapping[str, iam.IRole],
        names: Mapping[str, str],
        environment: Mapping[str, str],
        log_retention: logs.RetentionDays,
        vpc: VpcPlacement | None,
        cluster_memory_mb: int = 1024,
    ) -> None:
        super().__init__(scope, construct_id)
        self.by_role: dict[str, lambda_.Function] = {}
        for spec in FUNCTIONS:
            role = roles[spec.role]
            log_group = logs.LogGroup(
                self,
                f"{spec.role.capitalize()}Logs",
                log_group_name=f"/aws/lambda/{names[spec.role]}",
                retention=log_retention,
                removal_policy=cdk.RemovalPolicy.DESTROY,
            )
            function = lambda_.Function(
                self,
                spec.role.capitalize(),
                function_name=names[spec.role],
                description=spec.description,
                code=code,
                handler=spec.handler,
                runtime=bundling.RUNTIME,
                architecture=bundling.ARCHITECTURE,
                memory_size=cluster_memory_mb if spec.reads_cluster else spec.memory_mb,
                timeout=cdk.Duration.seconds(spec.timeout_s),
                reserved_concurrent_executions=spec.reserved_concurrency,
                role=role,
                log_group=log_group,
                tracing=lambda_.Tracing.ACTIVE,
                environment=dict(environment),
            )
            log_group.grant_write(role)
            if vpc is not None:
                cfn = function.node.default_child
                assert isinstance(cfn, lambda_.CfnFunction)
                cfn.vpc_config = lambda_.CfnFunction.VpcConfigProperty(
                    subnet_ids=list(vpc.subnet_ids), security_group_ids=list(vpc.security_group_ids)
                )
            self.by_role[spec.role] = function
