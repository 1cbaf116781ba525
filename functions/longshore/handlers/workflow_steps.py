"""The workflow-steps Lambda: one function behind every Task of the disruption and rotation state machines.

Each Task event runs one step (`wiring.workflow_steps.process_step`) against the container's ports (built at
the cold start, rebuilt when the cluster config changed) and returns the new state; a step that raises fails the
invocation with `errorType` = the exception's class, on which the state machine retries, rolls back or fails.
"""

from __future__ import annotations

import warnings
from typing import Any

from longshore.adapters.powertools_metrics import PowertoolsMetricsSink
from longshore.wiring.observability import metrics, metrics_entry_point
from longshore.wiring.workflow_steps import CONTAINER, process_step

# Most steps emit no metric; Powertools would warn on every such invocation.
warnings.filterwarnings("ignore", message="No application metrics to publish")


@metrics_entry_point
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point: `longshore.handlers.workflow_steps.handler`."""
    ports = CONTAINER.get()
    # No Kubernetes call outlives the invocation: one that runs out raises ClusterUnavailableError, retried.
    CONTAINER.ends_with(context)
    return process_step(event, ports, PowertoolsMetricsSink(metrics()))
