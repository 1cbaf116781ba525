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

Only the fields Longshore reads are required (see `models.Envelope`); a `version` other than "0" makes a
known event unknown, a missing one does not. Hostile bodies end in outcome 3 too, never in another
exception: a body past `MAX_BODY_CHARS`, JSON nested past `MAX_DEPTH`, a number too long for Python's
int/str limit, `NaN`/`Infinity` (not JSON), and values shown in messages are cut to a few characters.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ValidationError

from longshore.adapters.events import models
from longshore.core.interruption import NOTICE_SECONDS, EventKind, InterruptionEvent

SUPPORTED_VERSION: Final = "0"
_INSTANCE_ID = re.compile(models.INSTANCE_ID_PATTERN)
_MAX_VALUE_CHARS: Final = 80
#: The largest SQS message is 1 MiB; an EventBridge event is at most 256 KB.
MAX_BODY_CHARS: Final = 1024 * 1024
#: EventBridge events nest a few levels (AWS Health: detail.affectedEntities[].tags); 64 is far beyond.
MAX_DEPTH: Final = 64
_Model = TypeVar("_Model", bound=BaseModel)
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 2, _MAX_VALUE_CHARS, _MAX_VALUE_CHARS, 40


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
    version = document.get("version", SUPPORTED_VERSION)
    if model is None or version != SUPPORTED_VERSION:
        envelope = _validate(models.Envelope, document)
        note = f"{envelope.source} / {envelope.detail_type} is not an interruption event"
        if model is not None:
            note = f"{envelope.detail_type} schema version {_show(version)} is not supported (expected '0')"
        return _unknown(envelope, note)
    return _convert(_validate(model, document))


def format_validation_error(error: ValidationError) -> str:
    """One line per problem: the field path (as AWS spells it), what is wrong, and the value found."""
    problems = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"]) or "(event)"
        problem = f"{path}: {item['msg']}"
        if item["type"] != "missing":
            problem += f" (value {_show(item.get('input'))})"
        problems.append(problem)
    return "; ".join(problems)


def _show(value: object) -> str:
    """A short repr: strings and containers cut, a huge int or a deep structure never expanded."""
    try:
        text = _REPR.repr(value)
    except (ValueError, RecursionError):
        return f"<a {type(value).__name__} too large to show>"
    return text if len(text) <= _MAX_VALUE_CHARS else f"{text[:_MAX_VALUE_CHARS]}..."


def _decode(body: str | bytes) -> Any:
    if len(body) > MAX_BODY_CHARS:
        raise MalformedEventError(
            f"the body holds {len(body):,} characters; an event is at most {MAX_BODY_CHARS:,}"
        )
    try:
        document = json.loads(body, parse_constant=_not_json)
    except json.JSONDecodeError as error:
        raise MalformedEventError(
            f"not JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from error
    except UnicodeDecodeError as error:
        raise MalformedEventError(f"not UTF-8 text: {error.reason}") from error
    except RecursionError as error:
        raise MalformedEventError(f"not an event: JSON nested more than {MAX_DEPTH} levels deep") from error
    except ValueError as error:  # an integer past sys.get_int_max_str_digits(), NaN, Infinity
        raise MalformedEventError(f"not JSON: {_first_line(error)}") from error
    if _depth_exceeds(document, MAX_DEPTH):
        raise MalformedEventError(f"not an event: JSON nested more than {MAX_DEPTH} levels deep")
    return document


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def _first_line(error: Exception) -> str:
    return str(error).split("\n", 1)[0][:200]


def _depth_exceeds(value: Any, limit: int) -> bool:
    """True when `value` nests deeper than `limit` (iterative, so it cannot itself recurse too far)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _validate(model: type[_Model], document: Mapping[str, Any]) -> _Model:
    if _depth_exceeds(document, MAX_DEPTH):
        raise MalformedEventError(f"not an event: nested more than {MAX_DEPTH} levels deep")
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise MalformedEventError(format_validation_error(error)) from error
    except (RecursionError, ValueError, OverflowError) as error:
        raise MalformedEventError(f"not an event: {_first_line(error)}") from error


def _epoch(moment: datetime) -> float:
    if moment.tzinfo is None:  # EventBridge times are UTC even when the offset is left out
        return moment.replace(tzinfo=UTC).timestamp()
    return moment.timestamp()


def _unknown(envelope: models.Envelope, note: str) -> InterruptionEvent:
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
