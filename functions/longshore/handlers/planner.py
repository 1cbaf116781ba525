"""The disruption planner Lambda: every minute and by the trigger, planner passes while one is due.

EventBridge invokes it once a minute, and the trigger function whenever a bound pod is deleted. Each invocation
takes the container's planner (`wiring.planner`: built at the cold start, rebuilt when the cluster config
changed) and runs passes while `next_pass_at` asks for one within the remaining time, each later pass on the
config as it is then (rebuilt by `CONTAINER.refresh` when it changed). Decisions are logged at
INFO with their reason and $/h saved, metrics go out as EMF, the invocation is traced.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from longshore.wiring.observability import entry_point, logger
from longshore.wiring.planner import CONTAINER, process


@entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point: `longshore.handlers.planner.handler`."""

    def remaining() -> float:
        return context.get_remaining_time_in_millis() / 1000.0

    planner = CONTAINER.get()
    CONTAINER.ends_with(context)  # no Kubernetes call outlives the invocation (stopped "out-of-time")
    report = process(planner, remaining, time.sleep, owner=context.aws_request_id, reload=CONTAINER.refresh)
    logger.info("planner invocation finished", extra=report.to_dict())
    return report.to_dict()
