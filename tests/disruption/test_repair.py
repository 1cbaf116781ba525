"""Node auto-repair (core/disruption/repair.py): tolerations, the 20 % pool rule, EC2 status checks and events.

Karpenter's semantics (kubernetes-sigs/karpenter pkg/controllers/node/health/controller.go and the AWS
provider's RepairPolicies), except that the removal drains through the workflow (see the module docstring).
"""

from __future__ import annotations

from longshore.core.commands import DisruptionReason
from longshore.core.disruption import repair
from longshore.core.disruption.decisions import PassedOverKind
from longshore.core.disruption.state import InstanceStatus, NodeCondition
from longshore.core.model import Budget
from tests.builders import pod
from tests.disruption.test_planner import NOW, a_pool, managed, run

MINUTE = 60.0
KEEP = a_pool(after=None)  # never consolidates: the nodes' only story is repair


def sick(name: str, condition: str = "Ready", status: str = "Unknown", minutes: float = 31, **extra: object):  # type: ignore[no-untyped-def]
    return managed(name, conditions=(NodeCondition(condition, status, NOW - minutes * MINUTE),), **extra)


def test_ready_unknown_past_30_minutes_is_repaired_forcefully_with_its_pods_rescheduled() -> None:
    node = sick("a", pods=(pod("web-1", cpu="3"),))
    busy = managed("b", pods=(pod("db-1", cpu="3"),))
    result = run(node, busy, pools=(a_pool(budgets=(Budget(nodes="0"),)),))
    (decision,) = [d for d in result.decisions if d.reason == DisruptionReason.UNHEALTHY]
    assert decision.node_names == ("a",)
    assert decision.forceful  # no budget applies (nodes=0 above)
    assert decision.explanation == "condition Ready=Unknown for 1860s (tolerated 1800s)"
    assert decision.replacements, "its pod needs a new node, launched first"


def test_a_bad_condition_inside_its_toleration_waits_and_says_when() -> None:
    result = run(sick("a", minutes=20), *(managed(f"n{i}") for i in range(4)), pools=(KEEP,))
    assert not [d for d in result.decisions if d.reason == DisruptionReason.UNHEALTHY]
    (passed,) = [p for p in result.passed_over if p.node == "a"]
    assert passed.kind is PassedOverKind.TRANSIENT
    assert passed.retry_at == NOW + 10 * MINUTE
    assert "repaired if it lasts 600s more" in passed.reason


def test_accelerated_hardware_is_tolerated_10_minutes_the_agent_conditions_30() -> None:
    gpu = sick("gpu", "AcceleratedHardwareReady", "False", minutes=11)
    kernel = sick("kernel", "KernelReady", "False", minutes=11)
    result = run(gpu, kernel, *(managed(f"n{i}") for i in range(8)))
    repaired = {n for d in result.decisions if d.reason == DisruptionReason.UNHEALTHY for n in d.node_names}
    assert repaired == {"gpu"}


def test_healthy_conditions_and_unwatched_ones_do_nothing() -> None:
    fine = managed(
        "a", conditions=(NodeCondition("Ready", "True", NOW - 3600), NodeCondition("DiskPressure", "True", 0))
    )
    assert repair.signals(fine) == ()


def test_more_than_20_percent_unhealthy_holds_repair_off_and_reports_the_pool() -> None:
    # 5 nodes: 20 % rounds up to 1; two unhealthy (one not yet due) is too many.
    result = run(sick("a"), sick("b", minutes=5), *(managed(f"n{i}") for i in range(3)), pools=(KEEP,))
    assert not [d for d in result.decisions if d.reason == DisruptionReason.UNHEALTHY]
    (passed,) = [p for p in result.passed_over if p.node == "a"]
    assert passed.kind is PassedOverKind.REPAIR_BLOCKED
    assert "2 of the 5 nodes of pool default are unhealthy, more than 20% (1)" in passed.reason
    (blocked,) = result.repair_blocked
    assert (blocked.pool, blocked.unhealthy, blocked.nodes, blocked.allowed) == ("default", 2, 5, 1)


def test_one_unhealthy_node_of_three_is_repaired_as_upstream_rounds_up() -> None:
    result = run(sick("a"), managed("b"), managed("c"))
    assert [d.node_names for d in result.decisions if d.reason == DisruptionReason.UNHEALTHY] == [("a",)]
    assert result.repair_blocked == ()


def test_a_node_already_disrupting_or_not_initialized_is_left_alone() -> None:
    result = run(
        sick("a", disrupting=True), sick("b", initialized_at=None), *(managed(f"n{i}") for i in range(8))
    )
    assert not [d for d in result.decisions if d.reason == DisruptionReason.UNHEALTHY]


def test_failed_ec2_status_check_past_10_minutes_is_repaired() -> None:
    status = InstanceStatus(system="impaired", instance="ok", impaired_since=NOW - 11 * MINUTE)
    result = run(managed("a", instance_status=status), managed("b"), managed("c"))
    (decision,) = [d for d in result.decisions if d.reason == DisruptionReason.UNHEALTHY]
    assert decision.explanation.startswith("EC2 system status check impaired for 660s")
    young = InstanceStatus(system="ok", instance="impaired", impaired_since=NOW - 5 * MINUTE)
    assert repair.earliest(managed("x", instance_status=young)).due_at == NOW + 5 * MINUTE  # type: ignore[union-attr]


def test_a_scheduled_retirement_is_repaired_at_once_draining_by_its_start_minus_15_minutes() -> None:
    status = InstanceStatus(events=(("system-reboot", NOW + 3600), ("instance-retirement", NOW + 7200)))
    result = run(managed("a", instance_status=status), managed("b"), managed("c"))
    (decision,) = [d for d in result.decisions if d.reason == DisruptionReason.UNHEALTHY]
    assert decision.deadline == NOW + 7200 - 15 * MINUTE
    reboot_only = InstanceStatus(events=(("system-reboot", NOW + 3600),))
    assert repair.signals(managed("r", instance_status=reboot_only)) == ()


def test_allowed_unhealthy_rounds_up() -> None:
    assert [repair.allowed_unhealthy(n) for n in (1, 3, 5, 6, 10, 11)] == [1, 1, 1, 2, 2, 3]
