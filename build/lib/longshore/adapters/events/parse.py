"""Turn one SQS message body (an EventBridge event as JSON) into the core's `InterruptionEvent`.

Theory of operation: parsing has exactly three outcomes, and the SQS handler relies on them:
1. a known event (the five kinds in `models.MODELS`) becomes an `InterruptionEvent` with its instance ids;
2. a well-formed EventBridge envelope of any other (source, detail-type), an AWS Health event that is not an
   EC2 `scheduledChange`, or an envelope of an unsupported schema version becomes an event of kind `unknown`
   (a no-op that is counted);
3. anything else (not JSON, not an object, a missing or ill-typed field) raises `MalformedEventError`
   whose message names the field and the value, so the handler can log it and acknowledge the message: a
   message that cannot be parsed now never will be, so retrying it would only delay the DLQ.
Times become epoch seconds here, at the edge, so the core never sees a datetime.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import ValidationError

from longshore.adapters.events import models
from longshore.core.interruption import NOTICE_SECONDS, EventKind, InterruptionEvent

SUPPORTED_VERSION: Final = "0"
_INSTANCE_ID = re.compile(models.INSTANCE_ID_PATTERN)
_MAX_VALUE_CHARS: Final = 80
_Model = TypeVar("_Model", bound=EventBridgeModel)


class MalformedEventError(ValueError):
    """The message is not a valid EventBridge event, or a known event lacks a field the policy needs."""


def parse_event(body: str | bytes | Mapping[str, Any]) -> InterruptionEvent:
    """Parse one EventBridge event (a JSON text or an already-decoded object)."""
    document = _decode(body) if isinstance(body, str | bytes) else body
    if not isinstance(document, Mapping):
        raise MalformedEventError(
            f"expected a JSON object (an EventBridge event), got {type(document).__name__}"
        )
    source, detail_type = document.get("source"), document.get("detail-type")
    model = (
        models.MODELS.get((source, detail_type))
        if isinstance(source, str) and isinstance(detail_type, str)
        else None
    )
    if model is None or document.get("version") != SUPPORTED_VERSION:
        envelope = _validate(EventBridgeModel, document)
        note = f"{envelope.source} / {envelope.detail_type} is not an interruption event"
        if model is not None:
            note = (
                f"{envelope.detail_type} schema version {envelope.version!r} is not supported (expected '0')"
            )
        return _unknown(envelope, note)
    return _convert(_validate(model, document))


def format_validation_error(error: ValidationError) -> str:
    """One line per problem: the field path (as AWS spells it), what is wrong, and the value found."""
    problems = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"]) or "(event)"
        problem = f"{path}: {item['msg']}"
        if item["type"] != "missing":
            value = repr(item.get("input"))
            problem += f" (value {value[:_MAX_VALUE_CHARS]}{'...' if len(value) > _MAX_VALUE_CHARS else ''})"
        problems.append(problem)
    return "; ".join(problems)


def _decode(body: str | bytes) -> Any:
    try:
        return json.loads(body)
    except json.JSONDecodeError as error:
        raise MalformedEventError(
            f"not JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from error
    except UnicodeDecodeError as error:
        raise MalformedEventError(f"not UTF-8 text: {error.reason}") from error


def _validate(model: type[_Model], document: Mapping[str, Any]) -> _Model:
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise MalformedEventError(format_validation_error(error)) from error


def _epoch(moment: datetime) -> float:
    if moment.tzinfo is None:  # EventBridge times are UTC even when the offset is left out
        return moment.replace(tzinfo=UTC).timestamp()
    return moment.timestamp()


def _unknown(envelope: EventBridgeModel, note: str) -> InterruptionEvent:
    return InterruptionEvent("unknown", envelope.id, envelope.detail_type, _epoch(envelope.time), note=note)


def _convert(event: models.KnownEvent) -> InterruptionEvent:
    time = _epoch(event.time)
    if isinstance(event, models.HealthEvent):
        return _convert_health(event, time)
    instance_ids = (event.detail.instance_id,)
    if isinstance(event, models.SpotInterruptionWarning | models.CapacityReservationInterruptionWarning):
        kind: EventKind = (
            "spot-interruption"
            if isinstance(event, models.SpotInterruptionWarning)
            else "capacity-reservation-interruption"
        )
        return InterruptionEvent(
            kind,
            event.id,
            event.detail_type,
            time,
            instance_ids,
            deadline=time + NOTICE_SECONDS,
            note=f"instance-action {event.detail.instance_action}",
        )
    if isinstance(event, models.InstanceStateChange):
        state = event.detail.state
        return InterruptionEvent(
            "state-change",
            event.id,
            event.detail_type,
            time,
            instance_ids,
            state=state,
            note=f"state {state}",
        )
    return InterruptionEvent("rebalance-recommendation", event.id, event.detail_type, time, instance_ids)


def _convert_health(event: models.HealthEvent, time: float) -> InterruptionEvent:
    detail = event.detail
    if detail.service != "EC2" or detail.event_type_category != "scheduledChange":
        note = (
            f"AWS Health event {detail.event_type_code} (service {detail.service}, category "
            f"{detail.event_type_category}) is not an EC2 scheduledChange"
        )
        return InterruptionEvent("unknown", event.id, event.detail_type, time, note=note)
    values = [entity.entity_value for entity in detail.affected_entities]
    instance_ids = tuple(dict.fromkeys(value for value in values if _INSTANCE_ID.match(value)))
    skipped = [value for value in values if not _INSTANCE_ID.match(value)]
    note = detail.event_type_code + (
        f"; entities that are not instances skipped: {skipped}" if skipped else ""
    )
    start = _epoch(detail.start_time) if detail.start_time is not None else None
    return InterruptionEvent(
        "scheduled-change", event.id, event.detail_type, time, instance_ids, deadline=start, note=note
    )
