"""The provisioner Lambda: started every minute and by the trigger, provisioning passes until a quiet one.

EventBridge invokes it once a minute, and the trigger function when an unbound pod is created (reserved
concurrency 1). Each invocation takes the container's provisioner (`wiring.provisioner`: built at the cold
start, rebuilt when the cluster config changed, and again before any later pass that finds it changed), runs
`services.provisioner.run_invocation` with the request id as lease owner, until a quiet pass or the deadline,
then brings Karpenter's objects in step.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from longshore.services.provisioner import run_invocation
from longshore.wiring.observability import entry_point, logger
from longshore.wiring.provisioner import CONTAINER, reloader


@entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Schedule and trigger entry point: run provisioner passes until a quiet one (or the deadline)."""
    current = CONTAINER.get()
    CONTAINER.ends_with(context)  # no Kubernetes call outlives the invocation
    service = current.service(owner=context.aws_request_id)
    report = run_invocation(
        service,
        remaining_s=lambda: context.get_remaining_time_in_millis() / 1000.0,
        idle_wait=current.clock.sleep,
        reload=reloader(CONTAINER, context.aws_request_id),
    )
    CONTAINER.current().publish_objects()  # on the config of the last pass
    logger.info("provisioner invocation finished", extra=report.to_dict())
    return report.to_dict()
