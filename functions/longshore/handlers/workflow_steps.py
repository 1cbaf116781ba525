"""The workflow-steps Lambda: one function behind every Task of the disruption and rotation state machines.

Theory of operation: each Task sends `{"step": <name>, "execution": <execution name>, "state": {...}}`
(see `workflow.definition`). The handler puts the execution name into the state, runs the named step from
`workflow.steps` against the ports, emits the step's metrics and returns the new state, which Step Functions
stores as the state's output. A step that raises makes the invocation fail with `errorType` = the exception's
class name; the state machine retries, rolls back or fails on that name.

`process_step` is the entry point without the wiring (tests and the simulation pass their own ports and
metric sink); `handler` wires the production adapters once per container (`build_ports`), unless `configure`
installed other ports first.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping
from typing import Any, Protocol

from aws_lambda_powertools import Logger, Metrics, single_metric
from aws_lambda_powertools.metrics import MetricUnit

from longshore.core import telemetry
from longshore.workflow.errors import StepInputError
from longshore.workflow.steps import StepPorts, run_step

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "longshore"))
metrics = Metrics(namespace=telemetry.NAMESPACE)
# Most steps emit no metric; Powertools would warn on every such invocation.
warnings.filterwarnings("ignore", message="No application metrics to publish")


class MetricSink(Protocol):
    def put(
        self, name: str, value: float, unit: str, dimensions: Mapping[str, str] | None = None
    ) -> None: ...


class PowertoolsMetricSink:
    """Metrics as CloudWatch EMF through Powertools (dimensioned ones one blob each)."""

    def put(self, name: str, value: float, unit: str, dimensions: Mapping[str, str] | None = None) -> None:
        if not dimensions:
            metrics.add_metric(name=name, unit=MetricUnit(unit), value=value)
            return
        with single_metric(
            name=name, unit=MetricUnit(unit), value=value, namespace=telemetry.NAMESPACE
        ) as metric:
            for key, dimension in dimensions.items():
                metric.add_dimension(name=key, value=dimension)


class _WallClock:
    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _report(
    step: str, before: Mapping[str, Any], after: Mapping[str, Any], ports: StepPorts, sink: MetricSink
) -> None:
    """Metrics of one step: PDB refusals and drain duration (drain), nodes disrupted (finalize)."""
    drain, previous = _mapping(after.get("drain")), _mapping(before.get("drain"))
    if step == "drain":
        blocked = drain.get("passBlocked") or 0
        if blocked and drain.get("status") != "drained":
            sink.put(telemetry.EVICTIONS_BLOCKED_BY_PDB, float(blocked), "Count")
        started = drain.get("startedAt")
        if drain.get("status") == "drained" and previous.get("status") != "drained" and started is not None:
            sink.put(telemetry.DRAIN_DURATION_S, max(0.0, ports.clock.now() - float(started)), "Seconds")
    if step == "finalize" and after.get("outcome") == "disrupted":
        reason = str(after.get("reason") or "unknown")
        sink.put(telemetry.NODES_DISRUPTED, 1.0, "Count", {telemetry.DIM_REASON: reason})


def process_step(event: Mapping[str, Any], ports: StepPorts, sink: MetricSink) -> dict[str, Any]:
    """Run one workflow step for a Task event; returns the new state."""
    step = event.get("step")
    state = event.get("state")
    if not isinstance(step, str):
        raise StepInputError(f"workflow step event: field 'step' has value {step!r}; expected a step name")
    if not isinstance(state, Mapping):
        raise StepInputError(f"workflow step event: field 'state' has value {state!r}; expected an object")
    execution = event.get("execution")
    before = dict(state)
    if isinstance(execution, str) and execution:
        before["executionName"] = execution
    context = {"step": step, "execution": execution, "instance_id": before.get("instanceId")}
    try:
        after = run_step(step, before, ports)
    except Exception as error:
        logger.warning(
            "workflow step failed", extra={**context, "error": type(error).__name__, "detail": str(error)}
        )
        raise
    logger.info(
        "workflow step done",
        extra={
            **context,
            "drain": after.get("drain"),
            "outcome": after.get("outcome"),
            "rollback": after.get("rollback"),
        },
    )
    _report(step, before, after, ports, sink)
    return after


_ports: StepPorts | None = None


def configure(ports: StepPorts | None) -> None:
    """Install the ports `handler` uses (None: build the production ones on the next call)."""
    global _ports
    _ports = ports


def build_ports() -> StepPorts:
    """Production wiring from the Lambda environment (names in docs/contracts.md)."""
    import boto3  # type: ignore[import-untyped]

    from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoOfferingAvailability, DynamoTable
    from longshore.adapters.aws.eks import TokenSource, api_client, describe_cluster
    from longshore.adapters.aws.fleet import Ec2Launcher
    from longshore.adapters.aws.instance_types import load_catalog
    from longshore.adapters.aws.instances import Ec2Instances
    from longshore.adapters.kube.cluster import KubeCluster
    from longshore.adapters.powertools_metrics import PowertoolsMetricsSink
    from longshore.config.loader import load_cluster_text
    from longshore.config.settings import RuntimeSettings
    from longshore.services.replacement import ClusterReplacementLauncher

    settings = RuntimeSettings.from_env()
    session = boto3.session.Session(region_name=settings.region)
    clock = _WallClock()
    parameter = session.client("ssm").get_parameter(Name=settings.config_parameter)["Parameter"]["Value"]
    config = load_cluster_text(
        parameter,
        f"ssm:{settings.config_parameter}",
        region=settings.region,
        cluster_name=settings.cluster_name,
    )
    info = describe_cluster(session.client("eks"), settings.cluster_name)
    tokens = TokenSource.for_cluster(session.client("sts"), settings.cluster_name, clock.now)
    cluster = KubeCluster(api_client(info, tokens), component="longshore-disruption")
    table = DynamoTable(session.client("dynamodb"), settings.table_name)
    claims, offerings = DynamoClaimStore(table), DynamoOfferingAvailability(table)
    ec2 = session.client("ec2")
    instances = Ec2Instances(ec2, settings.cluster_name)
    pricing = session.client("pricing", region_name="us-east-1")  # the Pricing API answers in us-east-1
    replacements = ClusterReplacementLauncher(
        cluster=cluster,
        store=claims,
        offerings=offerings,
        launcher=Ec2Launcher(
            ec2=ec2,
            ssm=session.client("ssm"),
            iam=session.client("iam"),
            cluster=info,
            config=config,
            store=claims,
            offerings=offerings,
            instances=instances,
            sleep=clock.sleep,
        ),
        config=config,
        catalog=lambda: load_catalog(ec2, pricing, settings.region, clock),  # read only when a surge plans
        metrics=PowertoolsMetricsSink(metrics),
    )
    return StepPorts(
        cluster_name=settings.cluster_name,
        cluster=cluster,
        claims=claims,
        instances=instances,
        replacements=replacements,
        clock=clock,
        termination_grace_periods={p.name: p.termination_grace_period_seconds for p in config.node_pools},
    )


@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point: `longshore.handlers.workflow_steps.handler`."""
    global _ports
    if _ports is None:
        _ports = build_ports()
    return process_step(event, _ports, PowertoolsMetricSink())
