"""How an `event` step turns an AWS sample into the event EventBridge would deliver now (pure, fast)."""

from __future__ import annotations

import json
from pathlib import Path

from longshore.adapters.events.parse import parse_event
from longshore_sim.scenario_steps import instance_ids_in, retime, substitute_instances

EVENTS = Path(__file__).resolve().parents[1] / "events"
NOW = 1_767_225_720.0  # 2026-01-01T00:02:00Z


def sample(name: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((EVENTS / name).read_text())
    return loaded


def test_a_spot_warning_names_the_chosen_instance_and_is_dated_now() -> None:
    event = retime(
        substitute_instances(sample("spot-interruption-warning.json"), ["i-0123456789abcdef0"]), NOW
    )
    parsed = parse_event(json.dumps(event))
    assert parsed.instance_ids == ("i-0123456789abcdef0",)
    assert parsed.time == NOW and parsed.deadline == NOW + 120
    assert "i-0b662ef9931388ba0" not in json.dumps(event)


def test_a_health_event_keeps_its_lead_time_and_names_both_instances() -> None:
    original = sample("health-scheduled-change-ec2.json")
    first = parse_event(json.dumps(original))
    event = retime(substitute_instances(original, ["i-00000000000000001", "i-00000000000000002"]), NOW)
    parsed = parse_event(json.dumps(event))
    assert parsed.instance_ids == ("i-00000000000000001", "i-00000000000000002")
    assert first.deadline is not None and parsed.deadline is not None
    assert parsed.deadline - parsed.time == first.deadline - first.time  # RFC 1123 startTime moved too


def test_no_chosen_instance_keeps_the_file_s_ids() -> None:
    original = sample("state-change-terminated.json")
    assert instance_ids_in(substitute_instances(original, [])) == instance_ids_in(original)
