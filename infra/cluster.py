"""`LongshoreCluster`: everything one EKS cluster's autoscaler needs, as one reusable construct.

Theory of operation: the construct takes a validated `ClusterConfig` (for the names, roles and settings the
infrastructure depends on) and the validated config text (stored in SSM for the functions to read at run
time), and wires:

    EventBridge rate(1 min) ──> provisioner λ, planner λ            (reserved concurrency 1 each)
    EventBridge 5 rules ──> SQS interruption queue ──> interruption λ  (DLQ + alarm)
    planner/interruption λ ──StartExecution──> disruption state machine ──> steps λ
    rotation state machine (started by hand) ──> disruption state machine
    DynamoDB table (claims, capacity errors, leases)   SSM parameter (config)   dashboard + alarms

Names that resources need to know about each other are fixed (naming.py) so that nothing depends on
something that depends on it. The construct makes no AWS calls and has no lookups; it can be placed in any
stack (`LongshoreStack` is the thin wrapper app.py uses).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_eks as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra import bundling, naming, permissions
from infra import iam as policies
from infra.functions import FUNCTIONS, POWERTOOLS_LOG_LEVEL, Functions
from infra.interruption import InterruptionQueue
from infra.observability import Observability
from infra.settings import LOG_RETENTION_DAYS, DeploymentSettings
from infra.state_machines import StateMachines, WorkflowDefinitions
from infra.webhook import TriggerWebhook
from longshore.core import telemetry
from longshore.core.model import ClusterConfig

STANDARD_PARAMETER_LIMIT = 4096
ADVANCED_PARAMETER_LIMIT = 8192
SCHEDULE = cdk.Duration.minutes(1)
PARAMETER_CACHE_SECONDS = 300
TABLE_ACTIONS = ("GetItem", "PutItem", "DeleteItem", "Query", "Scan")
"""What the claim store, the capacity-error cache and the leases do (adapters/aws/dynamodb.py)."""


class DeploymentError(ValueError):
    """The config is valid but cannot be deployed as is; the message names the field and the value."""


class LongshoreCluster(Construct):
    """The autoscaler for one EKS cluster."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: ClusterConfig,
        config_bundle: str,
        settings: DeploymentSettings | None = None,
        code: lambda_.Code | None = None,
        definitions: WorkflowDefinitions | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        settings = settings or DeploymentSettings()
        stack = cdk.Stack.of(self)
        cluster = config.name
        log_retention = retention(settings.log_retention_days)
        function_names = {spec.role: naming.function_name(cluster, spec.role) for spec in FUNCTIONS}
        disruption_name = naming.state_machine_name(cluster, "disruption")
        rotation_name = naming.state_machine_name(cluster, "rotation")
        parameter_name = naming.config_parameter_name(cluster)

        self.config_parameter = ssm.StringParameter(
            self,
            "Config",
            parameter_name=parameter_name,
            description=f"Longshore: validated cluster config of {cluster}",
            string_value=config_bundle,
            tier=_parameter_tier(config_bundle),
        )
        self.table = dynamodb.Table(
            self,
            "State",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute="ttl",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=cdk.RemovalPolicy.RETAIN,
            deletion_protection=True,
        )
        self.table.add_global_secondary_index(
            index_name="by-instance",
            partition_key=dynamodb.Attribute(name="instance_id", type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.ALL,
        )
        self.interruption = InterruptionQueue(
            self,
            "Interruption",
            queue_name=config.interruption.queue_name or naming.queue_name(cluster, "interruption"),
            max_receive_count=config.interruption.max_receive_count,
            function_timeout_s=next(spec.timeout_s for spec in FUNCTIONS if spec.role == "interruption"),
        )

        scope_of_policy = policies.ControllerScope(
            cluster=cluster,
            node_roles=node_roles(config, settings),
            config_parameter=parameter_name,
            state_machines=(disruption_name, rotation_name),
            provisioner_function=function_names["provisioner"],
            custom_ami_parameters=tuple(
                sorted(
                    {
                        t.ssm_parameter
                        for nc in config.node_classes
                        for t in nc.ami_selector_terms
                        if t.ssm_parameter
                    }
                )
            ),
            unmanaged_launch_templates=any(nc.launch_template_name for nc in config.node_classes),
        )
        statements = [
            *policies.controller_statements(stack, scope_of_policy),
            iam.PolicyStatement(
                sid="UseOwnTable",
                actions=[f"dynamodb:{action}" for action in TABLE_ACTIONS],
                resources=[self.table.table_arn, f"{self.table.table_arn}/index/*"],
            ),
        ]
        self.roles: dict[str, iam.Role] = {}
        for spec in FUNCTIONS:
            role = iam.Role(
                self,
                f"{spec.role.capitalize()}Role",
                assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                description=f"Longshore {spec.role} function of cluster {cluster}",
            )
            for statement in permissions.restrict(statements, spec.role):
                role.add_to_principal_policy(statement)
            if settings.vpc is not None:
                vpc_statements = policies.vpc_access_statements(
                    stack, settings.vpc.subnet_ids, settings.vpc.security_group_ids
                )
                for statement in vpc_statements:
                    role.add_to_principal_policy(statement)
            self.roles[spec.role] = role

        environment = {
            "LONGSHORE_CLUSTER_NAME": cluster,
            "LONGSHORE_CONFIG_PARAMETER": parameter_name,
            "LONGSHORE_TABLE_NAME": self.table.table_name,
            "LONGSHORE_DISRUPTION_STATE_MACHINE_ARN": policies.state_machine_arn(stack, disruption_name),
            "LONGSHORE_ROTATION_STATE_MACHINE_ARN": policies.state_machine_arn(stack, rotation_name),
            "LONGSHORE_INTERRUPTION_QUEUE_URL": self.interruption.queue.queue_url,
            "LONGSHORE_PROVISIONER_FUNCTION_NAME": function_names["provisioner"],
            "LONGSHORE_PLANNER_FUNCTION_NAME": function_names["planner"],
            "LONGSHORE_MODE": settings.mode,  # shadow: decide and measure, write nothing (adapters.shadow)
            "POWERTOOLS_SERVICE_NAME": naming.service_name(cluster),
            "POWERTOOLS_METRICS_NAMESPACE": telemetry.NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": POWERTOOLS_LOG_LEVEL,
            "POWERTOOLS_PARAMETERS_MAX_AGE": str(PARAMETER_CACHE_SECONDS),
        }
        code = code or bundling.lambda_code()
        self.functions = Functions(
            self,
            "Functions",
            code=code,
            roles=self.roles,
            names=function_names,
            environment=environment,
            log_retention=log_retention,
            vpc=settings.vpc,
            cluster_memory_mb=settings.function_memory_mb,
        ).by_role
        # Functions depend on the role's policy (CDK adds it); the policy names functions only by ARN strings.
        for role_name in ("provisioner", "planner"):
            function = self.functions[role_name]
            function.configure_async_invoke(max_event_age=cdk.Duration.seconds(60), retry_attempts=0)
            events.Rule(
                self,
                f"{role_name.capitalize()}Schedule",
                description=f"Longshore: run the {role_name} of {cluster} every minute",
                schedule=events.Schedule.rate(SCHEDULE),
                targets=[
                    targets.LambdaFunction(function, retry_attempts=0, max_event_age=cdk.Duration.seconds(60))
                ],
            )
        self.webhook = TriggerWebhook(
            self,
            "Webhook",
            code=code,
            function_name=naming.function_name(cluster, "trigger"),
            targets={role_name: self.functions[role_name] for role_name in ("provisioner", "planner")},
            table=self.table,
            environment=environment,
            log_retention=log_retention,
        )
        self.functions["interruption"].add_event_source(
            sources.SqsEventSource(self.interruption.queue, batch_size=10, report_batch_item_failures=True)
        )

        machines = StateMachines(
            self,
            "Workflows",
            definitions=definitions or WorkflowDefinitions.from_workflow_package(),
            steps_function=self.functions["steps"],
            disruption_name=disruption_name,
            rotation_name=rotation_name,
            log_retention=log_retention,
        )
        self.disruption_state_machine = machines.disruption
        self.rotation_state_machine = machines.rotation

        self.access_entries: dict[str, eks.CfnAccessEntry] = {}
        if settings.access_entry:
            for role_name, role in self.roles.items():
                self.access_entries[role_name] = eks.CfnAccessEntry(
                    self,
                    f"{role_name.capitalize()}AccessEntry",
                    cluster_name=cluster,
                    principal_arn=role.role_arn,
                    type="STANDARD",
                    kubernetes_groups=[naming.kubernetes_group(role_name)],
                )

        observability = Observability(
            self,
            "Observability",
            cluster=cluster,
            service=naming.service_name(cluster),
            functions={**self.functions, "trigger": self.webhook.function},
            queue=self.interruption.queue,
            dead_letter_queue=self.interruption.dead_letter_queue,
            state_machines={"disruption": machines.disruption, "rotation": machines.rotation},
            alarm_topic_arn=settings.alarm_topic_arn,
            alarm_emails=settings.alarm_emails,
            dashboard=settings.dashboard,
        )
        self.dashboard = observability.dashboard
        self.alarms = observability.alarms
        self.alarm_topic = observability.topic


def node_roles(config: ClusterConfig, settings: DeploymentSettings) -> tuple[str, ...]:
    """The IAM role names nodes run as: PassRole is granted for these and nothing else."""
    roles = {nc.role for nc in config.node_classes if nc.role}
    without_role = [nc.name for nc in config.node_classes if not nc.role]
    if settings.node_role:
        roles.add(settings.node_role)
    elif without_role:
        raise DeploymentError(
            f"node classes {', '.join(without_role)} name an instance profile but no role; PassRole must "
            "name the role, so pass the role inside that instance profile: cdk synth -c nodeRole=ROLE_NAME"
        )
    if not roles:
        raise DeploymentError(f"cluster {config.name}: no node class, so there is no node role to pass")
    return tuple(sorted(roles))


def _parameter_tier(bundle: str) -> ssm.ParameterTier:
    size = len(bundle.encode())
    if size > ADVANCED_PARAMETER_LIMIT:
        raise DeploymentError(
            f"the validated cluster config is {size} bytes; an SSM parameter holds at most "
            f"{ADVANCED_PARAMETER_LIMIT} bytes (split large manifests out of the cluster file)"
        )
    return ssm.ParameterTier.ADVANCED if size > STANDARD_PARAMETER_LIMIT else ssm.ParameterTier.STANDARD


def retention(days: int) -> logs.RetentionDays:
    """CloudWatch's retention enum for a number of days (settings.py has already checked the number)."""
    members = dict(zip(LOG_RETENTION_DAYS, list(logs.RetentionDays)[: len(LOG_RETENTION_DAYS)], strict=True))
    return members[days]
