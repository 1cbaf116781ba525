"""Pydantic models of the five EventBridge events Longshore acts on, shaped exactly as AWS publishes them.

Theory of operation: every model subclasses `Envelope`, which requires only the envelope fields Longshore
reads (id, detail-type, source, time; `detail` for the known events) and keeps `version`, `account`,
`region` and `resources` optional: an event AWS or a replay tool sends without one of them is still the
event it says it is (an EC2 state change without `version` is a state change). Each model narrows
`source`, `detail-type` and `detail`. `MODELS` maps (source, detail-type) to the model, which is how `parse.py` picks one. Field
formats follow the source: EC2 events carry RFC 3339 times in the envelope only; AWS Health carries RFC 1123
strings ("Wed, 20 Mar 2024 06:00:00 GMT") in `detail`, parsed here into aware datetimes. Unknown fields
are ignored so that AWS adding one does not turn every message into a malformed one; the fields the
policy reads are required and validated (instance ids must look like `i-` plus 8 or 17 hex digits).
"""

from __future__ import annotations

from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

INSTANCE_ID_PATTERN: Final = r"^i-([0-9a-f]{8}|[0-9a-f]{17})$"

EC2: Final = "aws.ec2"
HEALTH: Final = "aws.health"
SPOT_WARNING: Final = "EC2 Spot Instance Interruption Warning"
REBALANCE: Final = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE: Final = "EC2 Instance State-change Notification"
HEALTH_EVENT: Final = "AWS Health Event"
CAPACITY_RESERVATION_WARNING: Final = "EC2 Capacity Reservation Instance Interruption Warning"

InstanceId = Annotated[str, Field(pattern=INSTANCE_ID_PATTERN)]


def _rfc1123(value: Any) -> Any:
    """Parse an AWS Health time ("Fri, 27 Jan 2023 06:00:00 GMT"); leave other values to pydantic."""
    if isinstance(value, str) and value[:3].isalpha():
        try:
            return parsedate_to_datetime(value)
        except (TypeError, ValueError) as error:
            raise ValueError("expected an RFC 1123 time such as 'Wed, 20 Mar 2024 06:00:00 GMT'") from error
    return value


Rfc1123Time = Annotated[datetime, BeforeValidator(_rfc1123)]


class Envelope(BaseModel):
    """The EventBridge envelope, as far as Longshore reads it (AWS's full list is in the EventBridge docs)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    id: str
    source: str
    detail_type: str = Field(alias="detail-type")
    time: datetime
    version: str | None = None
    account: str | None = None
    region: str | None = None
    resources: list[str] = Field(default_factory=list)
    detail: Any = None


class _Detail(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class InstanceDetail(_Detail):
    instance_id: InstanceId = Field(alias="instance-id")


class InstanceActionDetail(InstanceDetail):
    instance_action: str = Field(alias="instance-action")  # terminate | stop | hibernate


class StateChangeDetail(InstanceDetail):
    state: str  # pending | running | stopping | stopped | shutting-down | terminated


class AffectedEntity(_Detail):
    entity_value: str = Field(alias="entityValue")
    status: str | None = None


class EventDescription(_Detail):
    language: str = ""
    latest_description: str = Field("", alias="latestDescription")


class HealthDetail(_Detail):
    event_arn: str = Field(alias="eventArn")
    service: str
    event_type_code: str = Field(alias="eventTypeCode")
    event_type_category: str = Field(alias="eventTypeCategory")
    start_time: Rfc1123Time | None = Field(None, alias="startTime")
    end_time: Rfc1123Time | None = Field(None, alias="endTime")
    event_description: list[EventDescription] = Field(default_factory=list, alias="eventDescription")
    affected_entities: list[AffectedEntity] = Field(default_factory=list, alias="affectedEntities")


class SpotInterruptionWarning(Envelope):
    source: Literal["aws.ec2"]
    detail_type: Literal["EC2 Spot Instance Interruption Warning"] = Field(alias="detail-type")
    detail: InstanceActionDetail  # type: ignore[assignment]


class RebalanceRecommendation(Envelope):
    source: Literal["aws.ec2"]
    detail_type: Literal["EC2 Instance Rebalance Recommendation"] = Field(alias="detail-type")
    detail: InstanceDetail  # type: ignore[assignment]


class InstanceStateChange(Envelope):
    source: Literal["aws.ec2"]
    detail_type: Literal["EC2 Instance State-change Notification"] = Field(alias="detail-type")
    detail: StateChangeDetail  # type: ignore[assignment]


class HealthEvent(Envelope):
    source: Literal["aws.health"]
    detail_type: Literal["AWS Health Event"] = Field(alias="detail-type")
    detail: HealthDetail  # type: ignore[assignment]


class CapacityReservationInterruptionWarning(Envelope):
    source: Literal["aws.ec2"]
    detail_type: Literal["EC2 Capacity Reservation Instance Interruption Warning"] = Field(
        alias="detail-type"
    )
    detail: InstanceActionDetail  # type: ignore[assignment]


KnownEvent = (
    SpotInterruptionWarning
    | RebalanceRecommendation
    | InstanceStateChange
    | HealthEvent
    | CapacityReservationInterruptionWarning
)

MODELS: Final[dict[tuple[str, str], type[KnownEvent]]] = {
    (EC2, SPOT_WARNING): SpotInterruptionWarning,
    (EC2, REBALANCE): RebalanceRecommendation,
    (EC2, STATE_CHANGE): InstanceStateChange,
    (HEALTH, HEALTH_EVENT): HealthEvent,
    (EC2, CAPACITY_RESERVATION_WARNING): CapacityReservationInterruptionWarning,
}
