"""The workflow-steps function's plumbing: one function behind every Task of the disruption and rotation machines.

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

import warnings
from collections.abc import Mapping
from typing import Any

from longshore.core import telemetry
from longshore.ports.metrics import MetricsSink
from longshore.wiring.container import Container
from longshore.wiring.observability import logger
from longshore.wiring.runtime import Runtime
from longshore.workflow.context import StepPorts
from longshore.workflow.errors import StepInputError
from longshore.workflow.steps import run_step

# Most steps emit no metric; Powertools would warn on every such invocation.
warnings.filterwarnings("ignore", message="No application metrics to publish")


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _report(
    step: str, before: Mapping[str, Any], after: Mapping[str, Any], ports: StepPorts, sink: MetricsSink
) -> None:
    """Metrics of one step: PDB refusals and drain duration (drain), nodes disrupted (finalize)."""
    drain, previous = _mapping(after.get("drain")), _mapping(before.get("drain"))
    if step == "drain":
        blocked = drain.get("passBlocked") or 0
        if blocked and drain.get("status") != "drained":
            sink.emit(telemetry.EVICTIONS_BLOCKED_BY_PDB, float(blocked), "Count")
        started = drain.get("startedAt")
        if drain.get("status") == "drained" and previous.get("status") != "drained" and started is not None:
            sink.emit(telemetry.DRAIN_DURATION_S, max(0.0, ports.clock.now() - float(started)), "Seconds")
    if step == "finalize" and after.get("outcome") == "disrupted":
        reason = str(after.get("reason") or "unknown")
        sink.emit(telemetry.NODES_DISRUPTED, 1.0, "Count", {telemetry.DIM_REASON: reason})


def process_step(event: Mapping[str, Any], ports: StepPorts, sink: MetricsSink) -> dict[str, Any]:
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


def build_workflow_steps(wiring: Runtime) -> StepPorts:
    """The workflow steps' ports of one container, on the production adapters (names in docs/contracts.md)."""
    from longshore.adapters.aws.network import Ec2PlacementGroups
    from longshore.services.replacement import ClusterReplacementLauncher

    cluster = wiring.kube_cluster("longshore-disruption")
    replacements = ClusterReplacementLauncher(
        cluster=cluster,
        store=wiring.claims,
        offerings=wiring.offerings,
        launcher=wiring.launcher,
        config=wiring.config,
        catalog=wiring.catalog_loader(),  # read only when a surge plans
        metrics=wiring.metrics,
        placement_groups=Ec2PlacementGroups(wiring.client("ec2")),  # partitions, as the provisioner's
    )
    return StepPorts(
        cluster_name=wiring.settings.cluster_name,
        cluster=cluster,
        claims=wiring.claims,
        instances=wiring.instances,
        replacements=replacements,
        clock=wiring.clock,
        termination_grace_periods={
            p.name: p.termination_grace_period_seconds for p in wiring.config.node_pools
        },
    )


CONTAINER: Container[StepPorts] = Container(build_workflow_steps)
