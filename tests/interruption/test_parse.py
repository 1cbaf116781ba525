"""Parsing EventBridge events exactly as AWS publishes them (tests/events/*.json) into `InterruptionEvent`s."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from longshore.adapters.events.parse import MalformedEventError, parse_event
from tests.interruption.fakes import EVENTS, load_event


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def parse_sample(name: str):  # type: ignore[no-untyped-def]
    return parse_event((EVENTS / name).read_text())


def test_spot_warning_gives_the_instance_and_a_two_minute_deadline() -> None:
    event = parse_sample("spot-interruption-warning.json")
    assert event.kind == "spot-interruption"
    assert event.instance_ids == ("i-0b662ef9931388ba0",)
    assert event.time == epoch("2024-03-18T15:38:08")
    assert event.deadline == epoch("2024-03-18T15:40:08")
    assert event.event_id == "1e5527d7-bb36-4607-3370-4164db56a40e"


def test_rebalance_recommendation() -> None:
    event = parse_sample("rebalance-recommendation.json")
    assert (event.kind, event.instance_ids, event.deadline) == (
        "rebalance-recommendation",
        ("i-0b662ef9931388ba0",),
        None,
    )


@pytest.mark.parametrize(
    "state", ["pending", "running", "stopping", "stopped", "shutting-down", "terminated"]
)
def test_state_change_keeps_the_state(state: str) -> None:
    event = parse_sample(f"state-change-{state}.json")
    assert (event.kind, event.state, event.instance_ids) == ("state-change", state, ("i-0b662ef9931388ba0",))


def test_health_scheduled_change_reads_rfc1123_times_and_every_affected_instance() -> None:
    event = parse_sample("health-scheduled-change-ec2.json")
    assert event.kind == "scheduled-change"
    assert event.instance_ids == ("i-0b662ef9931388ba0", "i-05f3ab9c6e0d47a11")
    assert event.time == epoch("2024-03-18T01:43:21")
    assert event.deadline == epoch("2024-03-20T06:00:00")  # "Wed, 20 Mar 2024 06:00:00 GMT"


def test_health_event_skips_entities_that_are_not_instances_and_duplicates() -> None:
    document = load_event("health-scheduled-change-ec2.json")
    entities = document["detail"]["affectedEntities"]
    document["detail"]["affectedEntities"] = [
        *entities,
        {"entityValue": "vol-0123456789abcdef0"},
        entities[0],
    ]
    event = parse_event(json.dumps(document))
    assert event.instance_ids == ("i-0b662ef9931388ba0", "i-05f3ab9c6e0d47a11")
    assert "vol-0123456789abcdef0" in event.note


@pytest.mark.parametrize("name", ["health-issue-ec2.json", "health-scheduled-change-rds.json"])
def test_health_events_other_than_ec2_scheduled_changes_are_unknown(name: str) -> None:
    event = parse_sample(name)
    assert event.kind == "unknown"
    assert event.instance_ids == ()
    assert "not an EC2 scheduledChange" in event.note


def test_capacity_reservation_interruption_warning() -> None:
    event = parse_sample("capacity-reservation-interruption-warning.json")
    assert event.kind == "capacity-reservation-interruption"
    assert event.instance_ids == ("i-0b662ef9931388ba0",)
    assert event.deadline == event.time + 120


def test_an_unknown_detail_type_is_a_no_op_not_an_error() -> None:
    event = parse_sample("unknown-ami-state-change.json")
    assert (event.kind, event.instance_ids) == ("unknown", ())
    assert "EC2 AMI State Change" in event.note


def test_an_unsupported_schema_version_is_unknown() -> None:
    document = load_event("spot-interruption-warning.json") | {"version": "1"}
    event = parse_event(json.dumps(document))
    assert event.kind == "unknown"
    assert "version '1'" in event.note


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("malformed-truncated.json", "not JSON: Unterminated string"),
        ("malformed-missing-instance-id.json", "detail.instance-id: Field required"),
        (
            "malformed-bad-health-time.json",
            "detail.startTime: Value error, expected an RFC 1123 time such as 'Wed, 20 Mar 2024 06:00:00 GMT' (value 'next tuesday')",
        ),
        ("malformed-not-eventbridge.json", "detail-type: Field required"),
    ],
)
def test_malformed_messages_name_the_field_and_the_value(name: str, expected: str) -> None:
    with pytest.raises(MalformedEventError) as raised:
        parse_sample(name)
    assert expected in str(raised.value)


def test_an_invalid_instance_id_is_malformed_and_quoted() -> None:
    document = load_event("spot-interruption-warning.json")
    document["detail"]["instance-id"] = "i-NOTANID"
    with pytest.raises(
        MalformedEventError, match=r"detail\.instance-id: String should match pattern .*'i-NOTANID'"
    ):
        parse_event(json.dumps(document))


@pytest.mark.parametrize("field", ["version", "account", "region", "resources"])
def test_an_envelope_without_a_field_longshore_does_not_read_is_still_its_event(field: str) -> None:
    document = load_event("state-change-terminated.json")
    del document[field]
    event = parse_event(json.dumps(document))
    assert (event.kind, event.state, event.instance_ids) == (
        "state-change",
        "terminated",
        ("i-0b662ef9931388ba0",),
    )


@pytest.mark.parametrize("field", ["id", "time", "detail-type", "source"])
def test_an_envelope_without_a_field_longshore_reads_is_malformed(field: str) -> None:
    document = load_event("state-change-terminated.json")
    del document[field]
    with pytest.raises(MalformedEventError, match=f"{field}: Field required"):
        parse_event(json.dumps(document))


@pytest.mark.parametrize("body", ["[]", '"text"', "42", "null"])
def test_json_that_is_not_an_object_is_malformed(body: str) -> None:
    with pytest.raises(MalformedEventError, match="expected a JSON object"):
        parse_event(body)


def test_unknown_extra_fields_from_aws_are_tolerated() -> None:
    document = load_event("spot-interruption-warning.json")
    document["detail"]["some-new-field"] = {"x": 1}
    document["replay-name"] = "archive-replay"
    assert parse_event(json.dumps(document)).kind == "spot-interruption"


def test_an_unknown_state_is_kept_for_the_policy_to_ignore() -> None:
    document = load_event("state-change-running.json")
    document["detail"]["state"] = "hibernating"
    assert parse_event(json.dumps(document)).state == "hibernating"


def test_bytes_and_decoded_objects_parse_the_same() -> None:
    raw = (EVENTS / "spot-interruption-warning.json").read_bytes()
    assert parse_event(raw) == parse_event(json.loads(raw))
