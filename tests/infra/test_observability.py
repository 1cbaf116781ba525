"""The dashboard and the alarms read only metrics the code emits (telemetry.py) and AWS's own namespaces.

The dashboard body is an `Fn::Join` of JSON text and tokens; the tests resolve the tokens to `<logical id>`
placeholders and parse the body, then walk every widget's metrics.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from longshore.core import telemetry
from tests.infra.conftest import Synthesis, function_by_handler, resources

pytestmark = [pytest.mark.slow, pytest.mark.cdk]

SEARCH = re.compile(
    r"""^SEARCH\('Namespace="(\w+)" MetricName="(\w+)" service="([\w-]+)"', '(\w+)', \d+\)$"""
)
INSIGHTS = re.compile(
    r"""^SELECT (MAX|MIN|AVG|SUM|COUNT)\((\w+)\) FROM "(\w+)" WHERE service = '([\w-]+)'(?: AND (\w+) = '([\w-]+)')?$"""
)
AWS_NAMESPACES = {"AWS/Lambda", "AWS/SQS", "AWS/States"}
ROLES = ("provisioner", "planner", "interruption", "steps")


def _resolve(value: Any) -> str:
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        return "".join(_resolve(part) for part in value["Fn::Join"][1])
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::GetAtt" in value:
        return f"<{value['Fn::GetAtt'][0]}>"
    raise AssertionError(f"unexpected intrinsic {value}")


def _dashboard(template: dict[str, Any]) -> dict[str, Any]:
    (dashboard,) = resources(template, "AWS::CloudWatch::Dashboard").values()
    assert dashboard["DashboardName"] == "Longshore-demo"
    body: dict[str, Any] = json.loads(_resolve(dashboard["DashboardBody"]))
    return body


def _dashboard_metrics(template: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    """(widget title, metric entry) for every metric of every graph."""
    for widget in _dashboard(template)["widgets"]:
        for entry in widget["properties"].get("metrics", []):
            yield widget["properties"]["title"], entry


def _expressions(template: dict[str, Any]) -> list[str]:
    found = [entry[0]["expression"] for _, entry in _dashboard_metrics(template) if "expression" in entry[0]]
    for alarm in resources(template, "AWS::CloudWatch::Alarm").values():
        found += [m["Expression"] for m in alarm.get("Metrics", []) if "Expression" in m]
    return found


def _longshore_metrics_read(template: dict[str, Any]) -> set[str]:
    names = set()
    for expression in _expressions(template):
        search, insights = SEARCH.match(expression), INSIGHTS.match(expression)
        if search:
            assert search.group(1) == telemetry.NAMESPACE
            names.add(search.group(2))
        elif insights:
            assert insights.group(3) == telemetry.NAMESPACE
            names.add(insights.group(2))
        else:
            assert re.fullmatch(r"[a-zA-Z +]+", expression), f"unrecognised expression {expression!r}"
    return names


def test_every_longshore_metric_read_is_one_the_code_can_emit(synthesis: Synthesis) -> None:
    read = _longshore_metrics_read(synthesis.demo)
    assert read, "the dashboard and alarms read no Longshore metric"
    assert read - telemetry.ALL_METRICS == set()


def test_plain_metrics_come_only_from_aws_namespaces(synthesis: Synthesis) -> None:
    namespaces = {entry[0] for _, entry in _dashboard_metrics(synthesis.demo) if isinstance(entry[0], str)}
    namespaces |= {
        a["Namespace"]
        for a in resources(synthesis.demo, "AWS::CloudWatch::Alarm").values()
        if "Namespace" in a
    }
    for alarm in resources(synthesis.demo, "AWS::CloudWatch::Alarm").values():
        namespaces |= {
            m["MetricStat"]["Metric"]["Namespace"] for m in alarm.get("Metrics", []) if "MetricStat" in m
        }
    assert namespaces == AWS_NAMESPACES


def test_dashboard_shows_what_issue_7_lists(synthesis: Synthesis) -> None:
    titles_by_metric: dict[str, set[str]] = {}
    for title, entry in _dashboard_metrics(synthesis.demo):
        match = SEARCH.match(entry[0]["expression"]) if "expression" in entry[0] else None
        if match:
            titles_by_metric.setdefault(match.group(2), set()).add(title)
    assert "Pending pods" in titles_by_metric[telemetry.PENDING_PODS]
    assert "Decision latency (ms)" in titles_by_metric[telemetry.DECISION_LATENCY_MS]
    assert "Nodes by pool and capacity type" in titles_by_metric[telemetry.NODES]
    assert "Launches" in titles_by_metric[telemetry.CLAIMS_CREATED]
    assert "Launch failures by reason" in titles_by_metric[telemetry.LAUNCH_FAILURES]
    assert "Interruptions by type" in titles_by_metric[telemetry.MESSAGES_RECEIVED]
    assert "Disruptions by reason" in titles_by_metric[telemetry.NODES_DISRUPTED]
    assert "Drain duration (s)" in titles_by_metric[telemetry.DRAIN_DURATION_S]
    assert "Cost per hour per pool (USD)" in titles_by_metric[telemetry.NODEPOOL_COST_PER_HOUR]
    functions = {
        f"<{function_by_handler(synthesis.demo, handler)[0]}>"
        for handler in (
            "longshore.handlers.provisioner.handler",
            "longshore.handlers.planner.handler",
            "longshore.handlers.interruption.handler",
            "longshore.handlers.workflow_steps.handler",
            "longshore.handlers.trigger.handler",
        )
    }
    for metric in ("Errors", "Duration", "Throttles"):
        shown = {
            entry[3]
            for _, entry in _dashboard_metrics(synthesis.demo)
            if entry[:3] == ["AWS/Lambda", metric, "FunctionName"]
        }
        assert shown == functions
    dlq = [e for t, e in _dashboard_metrics(synthesis.demo) if t == "Dead-letter queue depth"]
    assert ["AWS/SQS", "ApproximateNumberOfMessagesVisible"] in [e[:2] for e in dlq]


def test_queries_filter_on_the_service_name_the_functions_publish_under(synthesis: Synthesis) -> None:
    services = {
        p["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
        for p in resources(synthesis.demo, "AWS::Lambda::Function").values()
    }
    queried = set()
    for expression in _expressions(synthesis.demo):
        for pattern, group in ((SEARCH, 3), (INSIGHTS, 4)):
            match = pattern.match(expression)
            if match:
                queried.add(match.group(group))
    assert queried == services == {"longshore-demo"}


ALARMS = 14  # DLQ, pending > 10 min, 5 function errors, trigger throttles, malformed, unknown-kind,
# mass orphans, node repair held off, and one per state machine


def test_the_alarms_fire_above_zero(synthesis: Synthesis) -> None:
    alarms = list(resources(synthesis.demo, "AWS::CloudWatch::Alarm").values())
    assert len(alarms) == ALARMS
    for alarm in alarms:
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
        assert alarm["Threshold"] == 0
        assert alarm["TreatMissingData"] == "notBreaching"
    (dlq,) = [a for a in alarms if a.get("MetricName") == "ApproximateNumberOfMessagesVisible"]
    queues = resources(synthesis.demo, "AWS::SQS::Queue")
    assert (
        queues[dlq["Dimensions"][0]["Value"]["Fn::GetAtt"][0]]["QueueName"]
        == "longshore-demo-interruption-dlq"
    )
    functions = {lid for lid in resources(synthesis.demo, "AWS::Lambda::Function")}
    errors = [a for a in alarms if a.get("MetricName") == "Errors"]
    assert {a["Namespace"] for a in errors} == {"AWS/Lambda"}
    assert {a["Dimensions"][0]["Value"]["Ref"] for a in errors} == functions, "every function's errors"
    trigger, _ = function_by_handler(synthesis.demo, "longshore.handlers.trigger.handler")
    (throttles,) = [a for a in alarms if a.get("MetricName") == "Throttles"]
    assert throttles["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": trigger}}]
    queries = {
        INSIGHTS.match(m["Expression"]).group(1, 2, 5, 6)  # type: ignore[union-attr]
        for a in alarms
        for m in a.get("Metrics", [])
        if INSIGHTS.match(m.get("Expression", ""))
    }
    assert queries == {
        ("MAX", telemetry.PODS_PENDING_OVER_10_MIN, None, None),
        ("SUM", telemetry.MESSAGES_MALFORMED, None, None),
        ("SUM", telemetry.MESSAGES_IGNORED, telemetry.DIM_REASON, "unknown-kind"),
        ("MAX", telemetry.ORPHANS_MASS_DETECTED, None, None),
        ("MAX", telemetry.NODE_REPAIR_BLOCKED, None, None),
    }
    workflows = [a for a in alarms if "ExecutionsFailed" in json.dumps(a)]
    assert len(workflows) == 2
    for alarm in workflows:
        metrics = {m["MetricStat"]["Metric"]["MetricName"] for m in alarm["Metrics"] if "MetricStat" in m}
        assert metrics == {"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"}


def test_every_alarm_notifies_the_stacks_topic_by_default(synthesis: Synthesis) -> None:
    (topic,) = resources(synthesis.demo, "AWS::SNS::Topic")
    alarms = resources(synthesis.demo, "AWS::CloudWatch::Alarm").values()
    assert alarms and all(a["AlarmActions"] == [{"Ref": topic}] for a in alarms)
    (policy,) = resources(synthesis.demo, "AWS::SNS::TopicPolicy").values()
    assert "aws:SecureTransport" in json.dumps(policy)  # TLS only


def test_alarm_actions_notify_the_configured_topic_only(synthesis: Synthesis) -> None:
    assert resources(synthesis.private, "AWS::SNS::Topic") == {}
    private = list(resources(synthesis.private, "AWS::CloudWatch::Alarm").values())
    assert private and all(
        a["AlarmActions"] == ["arn:aws:sns:eu-west-1:123456789012:oncall"] for a in private
    )


def test_dashboard_can_be_left_out_keeping_the_alarms(synthesis: Synthesis) -> None:
    assert resources(synthesis.private, "AWS::CloudWatch::Dashboard") == {}
    assert len(resources(synthesis.private, "AWS::CloudWatch::Alarm")) == ALARMS


def test_each_karpenter_metric_has_a_graph_titled_with_its_name_reading_its_longshore_metric(
    synthesis: Synthesis,
) -> None:
    shown: dict[str, set[tuple[str, str]]] = {}
    for title, entry in _dashboard_metrics(synthesis.demo):
        match = SEARCH.match(entry[0]["expression"]) if "expression" in entry[0] else None
        if match:
            statistic = re.search(r"', '(\w+)', \d+\)$", entry[0]["expression"])
            assert statistic is not None
            shown.setdefault(title, set()).add((match.group(2), statistic.group(1)))
    for karpenter, (metric, statistic, _) in telemetry.KARPENTER_EQUIVALENTS.items():
        assert shown.get(karpenter) == {(metric, statistic)}, karpenter
    (table,) = [w for w in _dashboard(synthesis.demo)["widgets"] if "Coming from Karpenter" in str(w)]
    assert all(f"`{k}`" in table["properties"]["markdown"] for k in telemetry.KARPENTER_EQUIVALENTS)
