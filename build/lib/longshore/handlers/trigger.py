"""The trigger Lambda: the cluster's admission webhook, behind a function URL, waking the provisioner and planner.

Theory of operation: `deploy/webhook.yaml` registers this function's URL as a validating admission webhook
for pod CREATE and DELETE, with `failurePolicy: Ignore` and a 2 s timeout, so it can never block or slow a
pod for long. For each request `process` parses the function URL event and its `AdmissionReview`
(`adapters.events.admission`), asks `core.triggers.admission_targets` which functions to wake, triggers them
(an asynchronous Lambda invoke each: `adapters.aws.lambda_trigger`) and always answers "allowed". A trigger
that fails is logged and swallowed: the schedule runs both functions every minute anyway. A request that is
not an AdmissionReview gets a 400 naming the field and the value, and a log line.

This is what lets the provisioner and the planner stop after a quiet pass instead of idling in a loop that
Lambda bills by the second (docs/deploy.md, "Control-plane cost"). The function is small on purpose: no
kubernetes client, no cluster config; its cold start is Powertools' Logger, pydantic and boto3's Lambda
client.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from longshore.core.triggers import PLANNER, PROVISIONER, admission_targets
from longshore.ports.triggers import Trigger

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "longshore"))


def process(event: Any, triggers: Mapping[str, Trigger]) -> dict[str, Any]:
    """Handle one function URL request; `triggers` maps `core.triggers` target names to their triggers."""
    from longshore.adapters.events.admission import (
        MalformedAdmissionError,
        admission_response,
        error_response,
        parse_admission,
    )

    try:
        review = parse_admission(event)
    except MalformedAdmissionError as error:
        logger.warning("rejected a request that is not an AdmissionReview", extra={"error": str(error)})
        return error_response(str(error))
    request = review.request
    if request.dry_run:  # `sideEffects: NoneOnDryRun`: a dry run changes nothing, so it wakes nothing
        return admission_response(request.uid)
    targets = admission_targets(request.operation, request.kind.kind, request.object, request.old_object)
    for target in targets:
        trigger = triggers.get(target)
        if trigger is None:
            continue
        reason = f"pod {request.key} {request.operation.lower()}d"
        try:
            trigger.trigger(reason)
        except Exception as error:
            logger.warning(
                "could not trigger a run; the schedule will start it",
                extra={"target": target, "pod": request.key, "error": str(error)},
            )
        else:
            logger.debug("triggered", extra={"target": target, "pod": request.key})
    return admission_response(request.uid)


_triggers: dict[str, Trigger] | None = None


def configure(triggers: Mapping[str, Trigger] | None) -> None:
    """Install the triggers `handler` uses (None: build the production ones on the next call)."""
    global _triggers
    _triggers = None if triggers is None else dict(triggers)


def build_triggers() -> dict[str, Trigger]:
    """Production wiring: asynchronous invokes of the provisioner and planner functions."""
    import boto3

    from longshore.adapters.aws.lambda_trigger import LambdaTrigger
    from longshore.config.settings import RuntimeSettings

    settings = RuntimeSettings.from_env()
    client = boto3.client("lambda", region_name=settings.region)
    return {
        PROVISIONER: LambdaTrigger(client, settings.require("provisioner_function_name")),
        PLANNER: LambdaTrigger(client, settings.require("planner_function_name")),
    }


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point: `longshore.handlers.trigger.handler` (function URL, auth NONE)."""
    global _triggers
    if _triggers is None:
        _triggers = build_triggers()
    return process(event, _triggers)
