"""The pure policy table (`core.interruption.decide`): every row, ownership, deadlines and idempotency keys."""

from __future__ import annotations

import pytest

from longshore.core.interruption import (
    SCHEDULED_CHANGE_GRACE_SECONDS,
    CleanUp,
    InterruptionEvent,
    MarkUnavailable,
    Notify,
    OwnedInstance,
    StartDisruption,
    decide,
    kind_action,
)

NOW = 1_000_000.0
T = NOW - 2.0
I1, I2 = "i-0aaaaaaaaaaaaaaa1", "i-0aaaaaaaaaaaaaaa2"


def owned(instance_id: str = I1, **changes: object) -> OwnedInstance:
    values: dict[str, object] = {
        "instance_id": instance_id,
        "claim_id": f"default-{instance_id[-1]}",
        "nodepool": "default",
        "instance_type": "m5.large",
        "zone": "us-east-1a",
        "capacity_type": "spot",
        "node_name": f"node-{instance_id[-1]}",
    } | changes
    return OwnedInstance(**values)  # type: ignore[arg-type]


def event(kind: str, *ids: str, state: str | None = None, deadline: float | None = None) -> InterruptionEvent:
    return InterruptionEvent(kind, "evt-1", "detail type", T, ids, state=state, deadline=deadline)  # type: ignore[arg-type]


def commands_of(plan, instance_id=I1):  # type: ignore[no-untyped-def]
    return next(d for d in plan.decisions if d.instance_id == instance_id).commands


def test_spot_warning_marks_the_offering_and_starts_an_urgent_interruption_bounded_by_the_warning() -> None:
    plan = decide(event("spot-interruption", I1, deadline=T + 120), {I1: owned()}, NOW)
    mark, start = commands_of(plan)
    assert mark == MarkUnavailable("m5.large", "us-east-1a", "spot", NOW + 180)
    assert isinstance(start, StartDisruption)
    command = start.command
    assert (command.reason, command.urgent, command.replace) == ("interruption", True, False)
    assert (command.deadline_epoch, command.requested_at) == (T + 120, T)
    assert (command.node_name, command.claim_id) == ("node-1", "default-1")
    assert plan.trigger_provisioner and plan.decisions[0].action == "interrupt"


def test_spot_warning_without_a_deadline_gets_two_minutes_from_the_event() -> None:
    plan = decide(event("spot-interruption", I1), {I1: owned()}, NOW)
    (start,) = [c for c in commands_of(plan) if isinstance(c, StartDisruption)]
    assert start.command.deadline_epoch == T + 120


@pytest.mark.parametrize(
    ("kind", "state"),
    [
        ("scheduled-change", None),
        ("state-change", "stopping"),
        ("state-change", "shutting-down"),
        ("capacity-reservation-interruption", None),
    ],
)
def test_warning_like_events_drain_without_marking_the_offering(kind: str, state: str | None) -> None:
    plan = decide(event(kind, I1, state=state), {I1: owned()}, NOW)
    (start,) = commands_of(plan)
    assert isinstance(start, StartDisruption)
    assert (start.command.reason, start.command.urgent) == ("interruption", True)
    assert plan.decisions[0].action == "drain" and plan.trigger_provisioner


def test_all_warning_like_events_share_one_execution_name_per_node() -> None:
    names = set()
    for kind, state in [
        ("spot-interruption", None),
        ("scheduled-change", None),
        ("state-change", "stopping"),
        ("state-change", "shutting-down"),
        ("capacity-reservation-interruption", None),
    ]:
        plan = decide(event(kind, I1, state=state), {I1: owned()}, NOW)
        names |= {c.command.execution_name() for c in commands_of(plan) if isinstance(c, StartDisruption)}
    assert names == {f"interruption-{I1}"}


def test_health_deadline_is_the_scheduled_start_less_the_grace() -> None:
    plan = decide(event("scheduled-change", I1, I2, deadline=T + 86_400), {I1: owned(), I2: owned(I2)}, NOW)
    deadlines = {
        c.command.deadline_epoch for d in plan.decisions for c in d.commands if isinstance(c, StartDisruption)
    }
    assert deadlines == {T + 86_400 - SCHEDULED_CHANGE_GRACE_SECONDS}
    assert [d.action for d in plan.decisions] == ["drain", "drain"]


def test_a_scheduled_change_two_weeks_away_keeps_its_deadline_two_weeks_away() -> None:
    far = T + 14 * 86_400
    plan = decide(event("scheduled-change", I1, deadline=far), {I1: owned()}, NOW)
    (start,) = plan.decisions[0].commands
    assert isinstance(start, StartDisruption)
    assert start.command.deadline_epoch == far - SCHEDULED_CHANGE_GRACE_SECONDS


def test_a_health_start_time_in_the_past_falls_back_to_two_minutes() -> None:
    plan = decide(event("scheduled-change", I1, deadline=T - 3600), {I1: owned()}, NOW)
    (start,) = commands_of(plan)
    assert isinstance(start, StartDisruption) and start.command.deadline_epoch == T + 120


@pytest.mark.parametrize(("state", "terminate"), [("stopped", True), ("terminated", False)])
def test_gone_instances_are_cleaned_up_directly(state: str, terminate: bool) -> None:
    plan = decide(event("state-change", I1, state=state), {I1: owned()}, NOW)
    assert commands_of(plan) == (CleanUp(I1, "default-1", "node-1", terminate_instance=terminate),)
    assert plan.trigger_provisioner


def test_a_gone_instance_whose_claim_is_already_being_disrupted_is_left_to_the_workflow() -> None:
    plan = decide(event("state-change", I1, state="terminated"), {I1: owned(disrupting=True)}, NOW)
    assert plan.decisions[0].action == "defer"
    assert commands_of(plan) == ()
    assert plan.trigger_provisioner


@pytest.mark.parametrize("state", ["pending", "running", "rebooting"])
def test_other_states_are_no_ops(state: str) -> None:
    plan = decide(event("state-change", I1, state=state), {I1: owned()}, NOW)
    assert [(d.action, d.ignore_reason) for d in plan.decisions] == [("ignore", "no-op-state")]
    assert not plan.acted


def test_unknown_events_are_no_ops() -> None:
    plan = decide(event("unknown"), {}, NOW)
    assert [(d.instance_id, d.action, d.ignore_reason) for d in plan.decisions] == [
        (None, "ignore", "unknown-kind")
    ]


def test_a_health_event_naming_no_instance_is_a_no_op() -> None:
    plan = decide(event("scheduled-change"), {}, NOW)
    assert [(d.action, d.ignore_reason) for d in plan.decisions] == [("ignore", "no-instances")]
    assert not plan.trigger_provisioner


def test_foreign_instances_are_untouched_while_owned_ones_in_the_same_event_are_handled() -> None:
    plan = decide(event("scheduled-change", I1, I2), {I2: owned(I2)}, NOW)
    assert [(d.instance_id, d.action, d.ignore_reason) for d in plan.decisions] == [
        (I1, "foreign", "foreign"),
        (I2, "drain", None),
    ]
    assert commands_of(plan, I1) == ()


def test_an_event_only_about_foreign_instances_does_not_trigger_the_provisioner() -> None:
    plan = decide(event("state-change", I1, state="terminated"), {}, NOW)
    assert not plan.trigger_provisioner and not plan.acted


def test_rebalance_follows_the_pool_policy() -> None:
    ignore = decide(event("rebalance-recommendation", I1), {I1: owned(rebalance="ignore")}, NOW)
    assert [(d.action, d.ignore_reason) for d in ignore.decisions] == [("ignore", "rebalance-ignored")]

    notify = decide(event("rebalance-recommendation", I1), {I1: owned(rebalance="notify")}, NOW)
    (note,) = commands_of(notify)
    assert isinstance(note, Notify) and (note.node_name, note.reason) == ("node-1", "RebalanceRecommendation")

    replace = decide(event("rebalance-recommendation", I1), {I1: owned(rebalance="replace")}, NOW)
    (start,) = commands_of(replace)
    assert isinstance(start, StartDisruption)
    assert (start.command.reason, start.command.replace, start.command.urgent) == ("rebalance", True, False)
    assert start.command.execution_name() == f"rebalance-{I1}"
    assert not any(p.trigger_provisioner for p in (ignore, notify, replace))


def test_on_demand_and_unknown_offerings_are_never_marked() -> None:
    for instance in (owned(capacity_type="on-demand"), owned(zone="")):
        plan = decide(event("spot-interruption", I1), {I1: instance}, NOW)
        assert not any(isinstance(c, MarkUnavailable) for c in commands_of(plan))


def test_kind_action_is_the_table_row_before_ownership() -> None:
    rows = {
        (kind, state): kind_action(event(kind, I1, state=state))
        for kind, state in [
            ("spot-interruption", None),
            ("scheduled-change", None),
            ("capacity-reservation-interruption", None),
            ("state-change", "stopping"),
            ("state-change", "stopped"),
            ("state-change", "running"),
            ("rebalance-recommendation", None),
            ("unknown", None),
        ]
    }
    assert rows == {
        ("spot-interruption", None): "interrupt",
        ("scheduled-change", None): "drain",
        ("capacity-reservation-interruption", None): "drain",
        ("state-change", "stopping"): "drain",
        ("state-change", "stopped"): "clean-up",
        ("state-change", "running"): "ignore",
        ("rebalance-recommendation", None): "per-pool",
        ("unknown", None): "ignore",
    }
