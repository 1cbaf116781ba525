"""The interruption Lambda: SQS batches of EventBridge events in, partial batch failures out.

Each batch goes through `wiring.interruption.process_batch` with the container's interruption service (built at
the cold start, rebuilt when the cluster config changed): every message is acted on, acknowledged as a no-op
(malformed ones logged at WARNING and counted), or reported in `batchItemFailures` for SQS to redeliver.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from longshore.adapters.clock import WallClock
from longshore.adapters.powertools_metrics import PowertoolsMetricsSink
from longshore.wiring.interruption import CONTAINER, process_batch
from longshore.wiring.observability import entry_point, metrics


@entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point: `longshore.handlers.interruption.handler`."""
    service = CONTAINER.get()
    CONTAINER.ends_with(context)  # no Kubernetes call outlives the invocation
    return process_batch(event, service, WallClock(), PowertoolsMetricsSink(metrics()), context)
