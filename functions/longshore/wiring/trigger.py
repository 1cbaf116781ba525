"""The trigger function's plumbing: authenticate a function URL request, parse the AdmissionReview, wake.

Rules, for each request (`serve`):
1. A request whose path is not `/<secret>` is refused with 403 before anything is parsed (constant-time
   comparison; the secret is read from Secrets Manager once per container per 5 minutes, never per request);
   a secret that cannot be read gives 503, which the API server treats like a timeout (`failurePolicy: Ignore`).
2. The function URL event and its `AdmissionReview` are parsed (`adapters.events.admission`); a request that is
   not one gets a 400 naming the field and the value, and a log line, never a traceback.
3. `core.triggers.admission_targets` says which functions to wake and, for each, the `WakeGate` (a DynamoDB
   conditional write: at most one wake per target per 10 s across all containers) whether this request is the
   one that wakes it; only that one invokes the target asynchronously (`adapters.aws.lambda_trigger`).
4. The answer is always "allowed". A trigger or gate that fails is logged and swallowed: the schedule runs both
   functions every minute anyway, so a lost wake costs latency, never a pod.
`deploy/webhook.yaml`'s `matchConditions` already drop what wakes nothing, so the API server sends only
creations of unscheduled pods and deletions of bound pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from longshore.core.triggers import PLANNER, PROVISIONER, admission_targets
from longshore.ports.triggers import Trigger, WakeGate, WebhookSecret
from longshore.wiring.observability import logger


@dataclass(frozen=True, slots=True)
class TriggerPorts:
    """What one container of the trigger function uses."""

    secret: WebhookSecret
    gate: WakeGate
    triggers: Mapping[str, Trigger]


def serve(event: Any, ports: TriggerPorts) -> dict[str, Any]:
    """Handle one function URL request: authenticate, then `process`."""
    from longshore.adapters.events.admission import error_response, forbidden_response, path_matches_secret

    try:
        secret = ports.secret.current()
    except Exception as error:
        logger.error("cannot read the webhook secret", extra={"error": str(error)})
        return error_response("the webhook secret cannot be read", 503)
    if not path_matches_secret(event, secret):
        logger.debug("refused a request without the webhook secret")  # per request: never at INFO (cost)
        return forbidden_response()
    return process(event, ports.triggers, ports.gate)


def process(event: Any, triggers: Mapping[str, Trigger], gate: WakeGate | None = None) -> dict[str, Any]:
    """Handle one authenticated request; `triggers` maps `core.triggers` target names to their triggers."""
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
        if trigger is not None and _claimed(gate, target, request.key):
            _wake(trigger, target, f"pod {request.key} {request.operation.lower()}d", request.key)
    return admission_response(request.uid)


def _claimed(gate: WakeGate | None, target: str, pod: str) -> bool:
    if gate is None:
        return True
    try:
        return gate.claim(target)
    except Exception as error:  # the gate is an optimisation: fail open (the reserved concurrency still caps)
        logger.warning("wake gate unavailable; waking anyway", extra={"target": target, "error": str(error)})
        return True


def _wake(trigger: Trigger, target: str, reason: str, pod: str) -> None:
    try:
        trigger.trigger(reason)
    except Exception as error:
        logger.warning(
            "could not trigger a run; the schedule will start it",
            extra={"target": target, "pod": pod, "error": str(error)},
        )
    else:
        logger.debug("triggered", extra={"target": target, "pod": pod})


def build_ports() -> TriggerPorts:
    """Production wiring: the secret in Secrets Manager, the gate in the table, asynchronous invokes."""
    import boto3

    from longshore.adapters.aws.dynamodb import DynamoLease, DynamoTable
    from longshore.adapters.aws.lambda_trigger import LambdaTrigger
    from longshore.adapters.aws.secrets import CachedSecret
    from longshore.adapters.clock import WallClock
    from longshore.adapters.wake_gate import LeaseWakeGate
    from longshore.config.settings import RuntimeSettings

    settings = RuntimeSettings.from_env()
    session = boto3.session.Session(region_name=settings.region)
    invoke = session.client("lambda")
    now = WallClock().now
    table = DynamoTable(session.client("dynamodb"), settings.table_name)
    return TriggerPorts(
        secret=CachedSecret(session.client("secretsmanager"), settings.require("webhook_secret_arn"), now),
        gate=LeaseWakeGate(DynamoLease(table), now),
        triggers={
            PROVISIONER: LambdaTrigger(invoke, settings.require("provisioner_function_name")),
            PLANNER: LambdaTrigger(invoke, settings.require("planner_function_name")),
        },
    )


class _Ports:
    """The trigger's ports, built once per container (the trigger reads no cluster config)."""

    def __init__(self) -> None:
        self._ports: TriggerPorts | None = None

    def install(self, ports: TriggerPorts | None) -> None:
        self._ports = ports

    def get(self) -> TriggerPorts:
        if self._ports is None:
            self._ports = build_ports()
        return self._ports


CONTAINER = _Ports()
