"""The cluster's CloudWatch dashboard and alarms, read from the metric names the code emits.

Theory of operation: the functions publish metrics with Powertools (embedded metric format) in the
`telemetry.NAMESPACE` namespace, named only by `longshore.core.telemetry` constants. Powertools adds the
`service` dimension to every metric; the stack sets it per cluster (`naming.service_name`), so one
account can run several clusters without mixing their numbers. Some metrics carry more dimensions
(NodePool, CapacityType, Reason, Kind...), and which ones may grow, so the queries do not pin the full
dimension set:

- dashboard graphs use `SEARCH` expressions (any dimension set, one line per combination, full history);
- the pending-pods alarm uses a Metrics Insights query (`SELECT MAX(...) FROM "Longshore" WHERE service=...`),
  which aggregates over whatever other dimensions exist.

AWS's own metrics (Lambda, SQS, Step Functions) come from the constructs' metric helpers.

Every alarm notifies someone by default: the construct creates an SNS topic (TLS-only; e-mail
subscriptions from the `alarmEmail` context) unless `alarmTopicArn` names an existing one, and every alarm
has that topic as its alarm action (tests/infra/test_observability.py checks both). The test
tests/infra/test_observability.py reads every metric name out of the synthesised dashboard and alarms and
checks it against `telemetry.ALL_METRICS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from longshore.core import telemetry

MINUTE = cdk.Duration.minutes(1)
FIVE_MINUTES = cdk.Duration.minutes(5)
WIDE = 12
FULL = 24
HEIGHT = 6


def search(
    service: str, metric: str, statistic: str, label: str, period: cdk.Duration = MINUTE
) -> cloudwatch.MathExpression:
    """Every time series of `metric` for this cluster, whatever its other dimensions (one line each)."""
    query = f'Namespace="{telemetry.NAMESPACE}" MetricName="{metric}" service="{service}"'
    return cloudwatch.MathExpression(
        expression=f"SEARCH('{query}', '{statistic}', {int(period.to_seconds())})",
        label=label or None,
        period=period,
        using_metrics={},
    )


def insights(
    service: str, metric: str, function: str, period: cdk.Duration, label: str
) -> cloudwatch.MathExpression:
    """One series: `function` of `metric` over all of this cluster's dimension combinations."""
    return cloudwatch.MathExpression(
        expression=f"SELECT {function}({metric}) FROM \"{telemetry.NAMESPACE}\" WHERE service = '{service}'",
        label=label,
        period=period,
        using_metrics={},
    )


class Observability(Construct):
    """Dashboard `Longshore-<cluster>`, the alarms, and the topic they notify (`topic`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: str,
        service: str,
        functions: Mapping[str, lambda_.IFunction],
        queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        state_machines: Mapping[str, sfn.IStateMachine],
        alarm_topic_arn: str | None,
        alarm_emails: Sequence[str] = (),
        dashboard: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        self.alarms = self._alarms(service, functions, dead_letter_queue, state_machines)
        self.topic: sns.ITopic
        if alarm_topic_arn:
            self.topic = sns.Topic.from_topic_arn(self, "AlarmTopic", alarm_topic_arn)
        else:
            topic = sns.Topic(
                self, "AlarmTopic", display_name=f"Longshore alarms of cluster {cluster}", enforce_ssl=True
            )
            for address in alarm_emails:
                topic.add_subscription(subscriptions.EmailSubscription(address))
            self.topic = topic
        for alarm in self.alarms:
            alarm.add_alarm_action(actions.SnsAction(self.topic))
        self.dashboard: cloudwatch.Dashboard | None = None
        if not dashboard:
            return
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"Longshore-{cluster}",
            default_interval=cdk.Duration.hours(3),
            widgets=self._rows(cluster, service, functions, queue, dead_letter_queue, state_machines),
        )

    def _alarms(
        self,
        service: str,
        functions: Mapping[str, lambda_.IFunction],
        dead_letter_queue: sqs.IQueue,
        state_machines: Mapping[str, sfn.IStateMachine],
    ) -> list[cloudwatch.Alarm]:
        above_zero = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD
        alarms = [
            cloudwatch.Alarm(
                self,
                "DeadLetterQueueNotEmpty",
                alarm_description="Interruption messages failed maxReceiveCount times and wait in the DLQ.",
                metric=dead_letter_queue.metric_approximate_number_of_messages_visible(
                    statistic="Maximum", period=MINUTE
                ),
                threshold=0,
                comparison_operator=above_zero,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
            cloudwatch.Alarm(
                self,
                "PodsPendingOverTenMinutes",
                alarm_description="Pods have been pending for more than 10 minutes (`longshore explain` says why).",
                metric=insights(
                    service, telemetry.PODS_PENDING_OVER_10_MIN, "MAX", FIVE_MINUTES, "pods pending > 10 min"
                ),
                threshold=0,
                comparison_operator=above_zero,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
        ]
        for name, function in functions.items():
            alarms.append(
                cloudwatch.Alarm(
                    self,
                    f"{name.capitalize()}Errors",
                    alarm_description=f"The {name} function failed (see its log group).",
                    metric=function.metric_errors(statistic="Sum", period=FIVE_MINUTES),
                    threshold=0,
                    comparison_operator=above_zero,
                    evaluation_periods=1,
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                )
            )
        if "trigger" in functions:
            alarms.append(
                cloudwatch.Alarm(
                    self,
                    "TriggerThrottles",
                    alarm_description=(
                        "The webhook's trigger function hit its reserved concurrency: a flood of requests "
                        "(docs/security.md); pods still start, woken by the schedule."
                    ),
                    metric=functions["trigger"].metric_throttles(statistic="Sum", period=FIVE_MINUTES),
                    threshold=0,
                    comparison_operator=above_zero,
                    evaluation_periods=1,
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                )
            )
        for construct_id, description, expression in (
            (
                "InterruptionMessagesMalformed",
                "Interruption queue messages that are not EventBridge events Longshore understands.",
                insights(service, telemetry.MESSAGES_MALFORMED, "SUM", FIVE_MINUTES, "malformed messages"),
            ),
            (
                "InterruptionMessagesIgnoredUnknownKind",
                "Interruption messages of a kind the handler does not know: a rule and the handler disagree.",
                cloudwatch.MathExpression(
                    expression=(
                        f'SELECT SUM({telemetry.MESSAGES_IGNORED}) FROM "{telemetry.NAMESPACE}" '
                        f"WHERE service = '{service}' AND {telemetry.DIM_REASON} = 'unknown-kind'"
                    ),
                    label="messages ignored: unknown kind",
                    period=FIVE_MINUTES,
                    using_metrics={},
                ),
            ),
            (
                "OrphansMassDetected",
                "A pass found more orphan instances than it may terminate at once and terminated none: check "
                "the claim table and the cluster tag before anything else.",
                insights(
                    service, telemetry.ORPHANS_MASS_DETECTED, "MAX", FIVE_MINUTES, "mass orphans detected"
                ),
            ),
            (
                "NodeRepairBlocked",
                "Node auto-repair is held off: more than 20 % of a NodePool's nodes are unhealthy (the Events "
                "NodeRepairBlocked name the nodes). Look for a common cause (AMI, subnet, AZ) before replacing.",
                insights(service, telemetry.NODE_REPAIR_BLOCKED, "MAX", FIVE_MINUTES, "repair held off"),
            ),
        ):
            alarms.append(
                cloudwatch.Alarm(
                    self,
                    construct_id,
                    alarm_description=description,
                    metric=expression,
                    threshold=0,
                    comparison_operator=above_zero,
                    evaluation_periods=1,
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                )
            )
        for name, machine in state_machines.items():
            failed = cloudwatch.MathExpression(
                expression="failed + timedOut + aborted",
                label=f"{name} executions failed, timed out or aborted",
                period=FIVE_MINUTES,
                using_metrics={
                    "failed": machine.metric_failed(statistic="Sum", period=FIVE_MINUTES),
                    "timedOut": machine.metric_timed_out(statistic="Sum", period=FIVE_MINUTES),
                    "aborted": machine.metric_aborted(statistic="Sum", period=FIVE_MINUTES),
                },
            )
            alarms.append(
                cloudwatch.Alarm(
                    self,
                    f"{name.capitalize()}WorkflowFailed",
                    alarm_description=f"A {name} workflow execution failed, timed out or was aborted.",
                    metric=failed,
                    threshold=0,
                    comparison_operator=above_zero,
                    evaluation_periods=1,
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                )
            )
        return alarms

    @staticmethod
    def _karpenter_rows(service: str) -> list[list[cloudwatch.IWidget]]:
        """One graph per Karpenter metric of `telemetry.KARPENTER_EQUIVALENTS`, titled with its Karpenter name
        and showing the Longshore metric that answers it, read with the mapped statistic (4 to a row)."""
        graphs: list[cloudwatch.IWidget] = []
        for karpenter, (metric, statistic, _) in sorted(telemetry.KARPENTER_EQUIVALENTS.items()):
            period = FIVE_MINUTES if statistic == "Sum" else MINUTE
            graphs.append(
                cloudwatch.GraphWidget(
                    title=karpenter,
                    left=[search(service, metric, statistic, "", period)],
                    width=FULL // 4,
                    height=5,
                    left_y_axis=cloudwatch.YAxisProps(label=metric, show_units=False, min=0),
                )
            )
        return [graphs[i : i + 4] for i in range(0, len(graphs), 4)]

    def _rows(
        self,
        cluster: str,
        service: str,
        functions: Mapping[str, lambda_.IFunction],
        queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        state_machines: Mapping[str, sfn.IStateMachine],
    ) -> list[list[cloudwatch.IWidget]]:
        def graph(
            title: str, left: Sequence[cloudwatch.IMetric], width: int = WIDE, unit: str = ""
        ) -> cloudwatch.GraphWidget:
            return cloudwatch.GraphWidget(
                title=title,
                left=list(left),
                width=width,
                height=HEIGHT,
                left_y_axis=cloudwatch.YAxisProps(label=unit, show_units=False, min=0),
            )

        def each_function(title: str, metric: str, statistic: str) -> cloudwatch.GraphWidget:
            series = [
                fn.metric(metric, statistic=statistic, period=MINUTE, label=name)
                for name, fn in functions.items()
            ]
            return graph(title, series, width=8)

        s = service
        return [
            [
                cloudwatch.TextWidget(
                    markdown=(
                        f"# Longshore: cluster `{cluster}`\n"
                        "Pending pods and decision latency come from the provisioner, every minute; nodes and cost "
                        "per pool from its view of the cluster. Interruptions arrive through the queue; disruptions "
                        "and drains run in the disruption state machine. See docs/deploy.md, 'Reading the dashboard'."
                    ),
                    width=FULL,
                    height=2,
                )
            ],
            [
                cloudwatch.TextWidget(
                    markdown="## Coming from Karpenter\n| Karpenter metric | Longshore metric | read it as |\n|---|---|---|\n"
                    + "\n".join(
                        f"| `{k}` | `{name}` | {note} |" for k, (name, _, note) in sorted(telemetry.KARPENTER_EQUIVALENTS.items())
                    ),
                    width=FULL,
                    height=9,
                )
            ],
            *self._karpenter_rows(s),
            [
                graph("Pending pods", [
                    search(s, telemetry.PENDING_PODS, "Maximum", "pending"),
                    search(s, telemetry.PODS_PENDING_OVER_10_MIN, "Maximum", "pending > 10 min"),
                ], unit="pods"),
                graph("Decision latency (ms)", [
                    search(s, telemetry.DECISION_LATENCY_MS, "Average", "average"),
                    search(s, telemetry.DECISION_LATENCY_MS, "Maximum", "maximum"),
                ], unit="ms"),
            ],
            [
                graph("Nodes by pool and capacity type", [search(s, telemetry.NODES, "Maximum", "")], unit="nodes"),
                graph("Cost per hour per pool (USD)", [
                    search(s, telemetry.NODEPOOL_COST_PER_HOUR, "Maximum", ""),
                    search(s, telemetry.CLUSTER_COST_PER_HOUR, "Maximum", "cluster"),
                ], unit="USD/h"),
            ],
            [
                graph("Launches", [search(s, telemetry.CLAIMS_CREATED, "Sum", "", FIVE_MINUTES)], width=8),
                graph("Launch failures by reason", [
                    search(s, telemetry.LAUNCH_FAILURES, "Sum", "", FIVE_MINUTES),
                    search(s, telemetry.LAUNCH_TIMEOUTS, "Sum", "launch timeouts", FIVE_MINUTES),
                    search(s, telemetry.REGISTRATION_TIMEOUTS, "Sum", "registration timeouts", FIVE_MINUTES),
                ], width=8),
                graph("Interruptions by type", [
                    search(s, telemetry.MESSAGES_RECEIVED, "Sum", "", FIVE_MINUTES),
                ], width=8),
            ],
            [
                graph("Disruptions by reason", [search(s, telemetry.NODES_DISRUPTED, "Sum", "", FIVE_MINUTES)], width=8),
                graph("Drain duration (s)", [
                    search(s, telemetry.DRAIN_DURATION_S, "Average", "average", FIVE_MINUTES),
                    search(s, telemetry.DRAIN_DURATION_S, "Maximum", "maximum", FIVE_MINUTES),
                ], width=8, unit="s"),
                graph("Dead-letter queue depth", [
                    dead_letter_queue.metric_approximate_number_of_messages_visible(
                        statistic="Maximum", period=MINUTE, label="DLQ messages"
                    ),
                    queue.metric_approximate_number_of_messages_visible(
                        statistic="Maximum", period=MINUTE, label="queue messages"
                    ),
                ], width=8),
            ],
            [
                each_function("Lambda errors", "Errors", "Sum"),
                each_function("Lambda duration (ms, p95)", "Duration", "p95"),
                each_function("Lambda throttles", "Throttles", "Sum"),
            ],
            [
                graph("Workflow executions", [
                    metric
                    for name, machine in state_machines.items()
                    for metric in (
                        machine.metric_started(statistic="Sum", period=FIVE_MINUTES, label=f"{name} started"),
                        machine.metric_failed(statistic="Sum", period=FIVE_MINUTES, label=f"{name} failed"),
                    )
                ]),
                cloudwatch.AlarmStatusWidget(alarms=self.alarms, title="Alarms", width=WIDE, height=HEIGHT),
            ],
        ]  # fmt: skip
